"""The Diagnostic type every stage reports with, and the registry of rule ids.

A rule id is a stable public name: users grep for it, CI annotations show it and
the docs table (docs/rules.md) is generated from this registry, so ids are never
reused or renumbered.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .vocabulary import Severity

__all__ = ["Severity"]   # re-exported: the stages name it from here
# Where a finding stands in a file (YAML or JSON alike): 1-based (line, column, end_line,
# end_column), end exclusive; a Path_ names a key or value inside a document.
Span = tuple[int, int, int, int]
Path_ = tuple[str | int, ...]


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One finding at a 1-based position in a user's file.

    ``end_line``/``end_column`` delimit the offending key or value (exclusive end
    column, like LSP ranges); they equal ``line``/``column`` when only a point is known.
    """

    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    rule: str
    severity: Severity
    message: str
    # The request ("<pipeline>/<step>") the finding is about, when it is about one:
    # the plan marks that step rejected. Not part of the JSON output.
    request: str | None = field(default=None, compare=False)

    def as_dict(self) -> dict:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
        }

    def as_text(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.severity}[{self.rule}] {self.message}"


@dataclass(frozen=True)
class Rule:
    """A rule's public identity: id, default severity and a one-line summary."""

    id: str
    severity: Severity
    summary: str
    family: str = field(default="")


RULES: dict[str, Rule] = {}


def rule(id: str, severity: Severity, summary: str, family: str) -> Rule:
    """Register a rule id once; duplicate ids are a programming error."""
    if id in RULES:
        raise ValueError(f"rule id {id} registered twice")
    RULES[id] = Rule(id, severity, summary, family)
    return RULES[id]


def report_order(x: Diagnostic) -> tuple:
    """The order diagnostics are reported in: file, line, column, rule, message; the
    remaining fields break ties, so the order never depends on which check ran first."""
    return (x.file, x.line, x.column, x.rule, x.message, x.end_line, x.end_column, x.severity)


def has_errors(diagnostics: list[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diagnostics)


# --- The rule table. Families: Y (reading YAML), S (structure / schema),
# --- N (names and references), P (pools and policies), K (stacks and components),
# --- R (requests built from steps), A (allocations / state), T (targets), O (the cluster's reports).
# --- C (code and run configurations a Pipeline takes its steps from: spec.source).
Y001 = rule("Y001", "error", "file cannot be read or is not valid UTF-8", "yaml")
Y002 = rule("Y002", "error", "YAML syntax error", "yaml")
Y003 = rule("Y003", "error", "duplicate key in a mapping", "yaml")
Y004 = rule("Y004", "error", "YAML tag that is not plain data (e.g. !!python/object)", "yaml")
Y005 = rule("Y005", "error", "alias expansion too large or recursive (billion-laughs guard)", "yaml")
Y006 = rule("Y006", "error", "nesting too deep", "yaml")
Y007 = rule("Y007", "error", "file too large", "yaml")
Y008 = rule("Y008", "error", "a sequence of poolc documents (write one document per item, separated by ---)", "yaml")
Y009 = rule("Y009", "error", "number that is not finite (.inf, .nan)", "yaml")

S001 = rule("S001", "error", "unknown field", "structure")
S002 = rule("S002", "error", "missing required field", "structure")
S003 = rule("S003", "error", "value has the wrong type or format", "structure")
S004 = rule("S004", "error", "unsupported apiVersion or kind", "structure")
S005 = rule("S005", "error", "unknown component flavor", "structure")
S006 = rule("S006", "error", "two spellings of one field given together (cpu/mcpu, memory/memory_mb, a ZenML "
            "0.98 name and its v1 name)", "structure")
S007 = rule("S007", "error", "retired in v1.2, never emitted (was: ZenML 0.98 field with no meaning in poolc; "
            "those fields are now accepted with ZenML 0.98's meaning)", "structure")

N001 = rule("N001", "error", "duplicate name within a kind", "names")
N002 = rule("N002", "error", "reference to an unknown pool, stack or component", "names")

P001 = rule("P001", "error", "policy names a key the pool does not meter", "pools")
P002 = rule("P002", "error", "policy reserves more than its limit", "pools")
P003 = rule("P003", "error", "policy reserves or limits more than the pool's capacity", "pools")
P004 = rule("P004", "error", "reserved shares of a pool add up to more than its capacity", "pools")
P005 = rule("P005", "error", "two policies for the same subject and pool", "pools")
P006 = rule("P006", "warning", "custom resource key is not enforced by Kueue at runtime", "pools")

K001 = rule("K001", "error", "component listed in several stacks with different settings", "stacks")
K002 = rule("K002", "error", "step operator is not part of the pipeline's stack", "stacks")
K004 = rule("K004", "warning", "allow-listed SageMaker instance type is not in poolc's catalog", "stacks")
K003 = rule("K003", "error", "step has no container image (neither the step nor its component sets one)", "stacks")

R001 = rule("R001", "error", "invalid resource quantity in step settings", "requests")
R002 = rule("R002", "error", "min_replicas is above max_replicas", "requests")
R003 = rule("R003", "error", "step is eligible on no pool: it needs more than any capacity or limit", "requests")
R004 = rule("R004", "error", "non-preemptible step asks more than every reserved share", "requests")
R005 = rule("R005", "warning", "requester has no policy on any pool (unmanaged)", "requests")
R006 = rule("R006", "error", "step fits no allowed SageMaker instance type", "requests")
R007 = rule("R007", "warning", "ZenML 0.98 spelling of a ResourceSettings field (accepted; names the v1 field)",
            "requests")

A001 = rule("A001", "warning", "running allocation of a subject with no policy on its pool", "state")
A002 = rule("A002", "warning", "pool is over capacity with its running allocations", "state")

A003 = rule("A003", "warning", "an Allocation document and the state disagree about a step (the state wins)",
            "state")
A004 = rule("A004", "error", "an allocation's Kueue Workload is not in its own subject's namespace (apply would "
            "stop another team's work)", "state")

O001 = rule("O001", "error", "a cluster report entry is malformed or listed twice", "observed")
O002 = rule("O002", "warning", "a cluster report entry poolc cannot place or trust as a step's (unknown step or "
            "pool, another namespace, queue or role, a partial label, a contradiction); ignored or counted as "
            "foreign work", "observed")
O003 = rule("O003", "error", "an empty report for a target with running allocations (--allow-empty to accept)",
            "observed")

T001 = rule("T001", "warning", "the cluster (Kueue) will do otherwise than the plan for this step", "targets")
N003 = rule("N003", "error", "two steps or pools map to one generated file, allocation or job name", "names")
P007 = rule("P007", "error", "quantity too large to plan (above 10^15 in its unit)", "pools")
T002 = rule("T002", "warning", "a pool a GPU step may use does not say its GPU model (gpu_type unchecked there)",
           "targets")
T003 = rule("T003", "warning", "Kubernetes components of different policies submit from one namespace", "targets")
R008 = rule("R008", "error", "max_runtime beyond what the step's target allows (SageMaker: 28 days; anywhere: "
            "10^12 seconds)", "requests")
R010 = rule("R010", "error", "no pool the step may use offers its GPU model (gpu_type)", "requests")
R011 = rule("R011", "error", "step fits on no node of the pools it may use (multi-node steps are not supported)",
            "requests")
P010 = rule("P010", "warning", "policy reserves a share but no step_run on a pool that meters it: every step "
            "borrows", "pools")
P008 = rule("P008", "error", "capacity row above what the pool's node groups hold", "pools")
P009 = rule("P009", "error", "node groups that contradict each other or the pool (names, GPU models, labels)",
            "pools")
F001 = rule("F001", "error", "expected_runtime or max_runtime more than 10^6 times the forecast's horizon", "forecast")

R009 = rule("R009", "warning", "ZenML 0.98 capacity class or selector (gpu_class, a demand's class or selectors): "
            "poolc has none and ignores it", "requests")

C001 = rule("C001", "error", "a source file named in spec.source cannot be read (missing, not a regular file, "
            "too large, not UTF-8)", "sources")
C002 = rule("C002", "error", "syntax error in a Python source file or a run configuration (its line is not "
            "quoted)", "sources")
C003 = rule("C003", "error", "a resource value in Python source that is not a literal (poolc reads the code "
            "without running it)", "sources")
E001 = rule("E001", "error", "a scenario names a step, pipeline, team, pool or allocation the inputs do not have",
            "scenarios")
C004 = rule("C004", "error", "the pipeline, step or task a source names is not there (or is there twice)", "sources")
C005 = rule("C005", "error", "a run configuration or source value of the wrong shape, or one the library itself "
            "refuses (an unknown argument or settings key, a quantity Kubernetes refuses)", "sources")
C006 = rule("C006", "error", "a source path or import poolc cannot follow inside the repository (absolute, "
            "above its root, a link out of it, .git, or a module that is not in it)", "sources")
C007 = rule("C007", "error", "steps or their settings decided when the code runs (a factory, a conditional, "
            "a loop, a helper, a dynamic workflow, an override built at run time)", "sources")
