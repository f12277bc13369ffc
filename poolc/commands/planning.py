"""`poolc plan` as a library call: validate, read the state, solve, assemble the
Plan, and say what it changes (allocations, generated files, the state).

The CLI (`plan`, `apply`) calls ``plan_paths`` and only renders what it returns.
It is a row of steps that each return a value (``load``, ``read_inputs_state``,
``prepare``, ``decide_strategy``, ``decide``, ``replay_runtime``, ``what_changes``);
the Plan the strategy's decisions give is completed once, at the end, and `apply
--plan` (poolc.commands.saved_plan) reuses the steps before the solve and after it.
The strategy module is imported here, on demand, so importing this module never
imports OR-Tools.

Steps that already run: `apply` records every admitted step as an allocation
named ``allocation_name(step id)``. While the step's request is the one that
allocation holds (demand, preemptible, requester) and its policy still admits it,
the step is that allocation, not a new request, so planning again after `apply`
changes nothing. When the request changed, the allocation is released and the
step planned again (``resized``). A step `poolc state rm` released as finished is
not requested again until its inputs change.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import import_module
from typing import Any

from .. import diagnostics as d
from ..config import Config, display_units
from ..diagnostics import Diagnostic, report_order
from ..domain.borrowing import grant_order
from ..domain.comparison import compare, state_difference
from ..domain.eligibility import check_placement, check_policy
from ..domain.naming import allocation_name, step_label
from ..domain.plan import (
    AllocationChanges,
    External,
    FileChange,
    Plan,
    PlanChanges,
    PlannedRequest,
    Runtime,
)
from ..domain.problem import Problem, Running
from ..domain.said import Said, its_allocation, pairs, said
from ..inputs import problem_from_config, request_of
from ..model import Allocation
from ..planner.assemble import assemble, digest_of, input_digests, inputs_digest
from ..planner.solution import Solution
from ..requests import StepRequest, step_inputs  # noqa: F401 - step_inputs kept importable from here
from ..state.records import (
    DEFAULT_STATE,
    StateInputs,
    StateRead,
    changes,
    documents_against_state,
    dump_state,
    read_state,
    state_from_plan,
    step_of,
)
from ..targets.context import TargetContext
from ..text.textdiff import unified_diff
from ..vocabulary import STRATEGIES, StateAction, SubmitMode
from ..vocabulary import Strategy as StrategyName
from ..writer import Tree, UnsafePath, sha256_text
from .validate import Validation, validate_paths

# Errors in a step that mean it can never run as written. R003/R004 are not here:
# eligibility is decided on the Problem itself (plan.assemble).
_STEP_RULES = {d.R001.id, d.R002.id, d.R006.id, d.K002.id, d.K003.id}
# A step's own rejection: the step can never run on this platform, the rest of the
# configuration is sound, so the plan is still made (it lists the step as rejected).
# Any other error means the configuration is not what its authors meant (a
# misspelt stack, a broken indent): a plan of it would be a plan of another platform.
STEP_REJECTIONS = frozenset({d.R003.id, d.R004.id, d.R006.id})


# A scenario that names what the inputs no longer have fails `validate` and `poolc test`,
# never the plan or the apply of the platform it tests (docs/decisions.md#scenarios-44).
SCENARIO_ONLY = frozenset({"E001"})


def blocking_errors(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """The errors that stop `poolc plan` before it plans: all but a step's own rejection
    and a scenario's reference to something the inputs do not have."""
    return [x for x in diagnostics if x.severity == "error" and x.rule not in STEP_REJECTIONS | SCENARIO_ONLY]


class InvalidConfiguration(Exception):
    """The configuration has errors other than step rejections: no plan is made."""

    def __init__(self, validation: Validation, errors: list[Diagnostic]) -> None:
        super().__init__(f"{len(errors)} error(s) in the configuration")
        self.validation = validation
        self.errors = errors


class BaseMismatch(ValueError):
    """A base plan (`plan --base`) that cannot be compared with this one; the message says why."""


@dataclass(frozen=True, slots=True)
class PlanResult:
    """One plan and what it was made from, built once (``result_of``) when the plan is final."""

    validation: Validation
    state: StateRead                    # what the state file held
    state_path: str
    problem: Problem
    solution: Solution
    plan: Plan
    previous: list[Allocation]          # running Allocation documents the plan started from (files win)
    released: list[str]                 # allocations of steps whose request changed (planned again)
    files: dict[str, str] = field(default_factory=dict)   # what apply would write: relative path -> text
    output_dir: str | None = None       # where the generated files live, when known
    state_text: str = ""                # the new state file's bytes
    state_action: StateAction | None = None   # None: unchanged
    diffs: dict[str, str] = field(default_factory=dict)   # path -> unified diff, for files known on disk
    # path -> its text in the output directory as read (None: absent, or not a regular
    # file), so apply compares with it instead of reading every file again
    on_disk: dict[str, str | None] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No error diagnostics (a rejected step is one)."""
        return not any(x.severity == "error" for x in self.plan.diagnostics)

    @property
    def changes(self) -> PlanChanges:
        return self.plan.changes or PlanChanges()

    @property
    def changed(self) -> bool:
        """Anything would change: an allocation, a generated file or the state."""
        return self.changes.any or bool(self.state_action)

    @property
    def previous_state_files(self) -> dict[str, str]:
        """Generated file -> digest, as the state file recorded them."""
        return dict(self.state.files)


def result_of(prepared: Prepared, solution: Solution, plan: Plan, rendered: Changes | None = None) -> PlanResult:
    """The PlanResult of a final ``plan``, with what apply would write when ``rendered``."""
    found = PlanResult(prepared.validation, prepared.state, prepared.state_path, prepared.problem, solution, plan,
                       prepared.previous, sorted(prepared.released))
    if rendered is None:
        return found
    return dataclasses.replace(found, files=rendered.files, output_dir=rendered.output_dir,
                               state_text=rendered.state_text, state_action=rendered.state_action,
                               diffs=rendered.diffs, on_disk=rendered.on_disk)


@dataclass(frozen=True)
class Prepared:
    """Everything a plan is made from before a strategy decides anything: the
    validated inputs, the state, and which steps are requests, run already,
    finished or were released. `apply --plan` starts from it too (no solve)."""

    validation: Validation
    config: Config                      # without the allocations that no longer run
    state: StateRead
    state_path: str
    live: list[StepRequest]             # every step not recorded finished
    rejected: dict[str, tuple[str, str]]
    inputs: dict[str, str]              # step id -> digest of its inputs
    finished: tuple[str, ...]
    running: dict[str, Running]         # step id -> the allocation that still runs it
    released: dict[str, Said]           # allocation -> why it no longer describes its step
    previous: list[Allocation]
    problem: Problem
    digests: dict[str, str]             # the plan's per-input digests
    disagree: list[Diagnostic]          # A003: documents that give way to the state

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [*self.validation.diagnostics, *self.state.diagnostics, *self.disagree]


def resolve_now(now: str | datetime | None = None) -> datetime:
    """When the apply happens: ``now`` (RFC 3339, or a datetime), else
    ``SOURCE_DATE_EPOCH`` (seconds), else the clock; whole seconds, UTC."""
    from ..model import parse_timestamp

    if isinstance(now, datetime):
        when = now
    elif now:
        when = parse_timestamp(now)
    elif os.environ.get("SOURCE_DATE_EPOCH", "").strip().isdigit():
        when = datetime.fromtimestamp(int(os.environ["SOURCE_DATE_EPOCH"]), tz=UTC)
    else:
        when = datetime.now(UTC)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).replace(microsecond=0)


Strategy = Callable[[Problem], Solution]


def load_strategy(name: StrategyName | Strategy, progress: Callable[[str], None] | None = None) -> Strategy:
    """The solve function of a named strategy (imported now, not before), or a
    caller's own ``solve(problem) -> Solution`` as it is."""
    if callable(name):
        return name
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    solve = import_module(f"..planner.{name}", __package__).solve
    if name == "optimal":
        return lambda problem: solve(problem, progress=progress)
    return solve


def step_errors(config: Config, requests: list[StepRequest],
                diagnostics: Iterable[Diagnostic]) -> dict[str, tuple[str, str]]:
    """Steps that can never run as written: request id -> (rule id, message).

    A step whose pipeline names a missing stack has no requester (N002); a step an
    error diagnostic is about (its ``request``) takes that diagnostic's rule and
    message (the first, in report order)."""
    found: dict[str, tuple[str, str]] = {}
    for x in diagnostics:
        if x.severity == "error" and x.rule in _STEP_RULES and x.request is not None:
            found.setdefault(x.request, (x.rule, x.message))
    for request in requests:
        stack = request.entry.obj.spec.stack
        if stack not in config.stacks:
            found[request.id] = (d.N002.id, f"pipeline {request.pipeline} uses stack {stack}, which is not "
                                 "defined in the files given; define the stack or fix its name")
    known = {r.id for r in requests}
    return {rid: found[rid] for rid in sorted(found) if rid in known}


def _still_describes(request: StepRequest, alloc: Running, problem: Problem) -> Said | None:
    """None while a running allocation still describes its step; else why not."""
    if alloc.subject != request.requester:
        return said(f"its requester is now {request.requester}, not {alloc.subject}")
    if alloc.preemptible != request.preemptible:
        return said("it is now " + ("preemptible" if request.preemptible else "non-preemptible"))
    demand = {k: v for k, v in request.demand.items() if v > 0}
    if dict(alloc.holds) != demand:
        return said("it now asks ", pairs(demand), " (the allocation holds ", pairs(alloc.holds), ")")
    policy = problem.policy_for(alloc.subject, alloc.pool)
    pool = problem.find_pool(alloc.pool)
    if policy is not None and pool is not None:
        why = (check_placement(pool, policy, request_of(request, 0, request.demand))   # model, selector, node
               or check_policy(pool, policy, request.demand, request.preemptible))
        if why is not None:
            return said(f"policy {policy.name} no longer admits it: ", why.sentence())
    return None


def _running_steps(requests: list[StepRequest], running: Iterable[Running], problem: Problem,
                   recorded: Mapping[str, str | None], declared: Mapping[str, str] | None = None
                   ) -> tuple[dict[str, Running], dict[str, Said]]:
    """(step id -> the allocation that still runs it, allocation name -> why it no
    longer describes its step). ``recorded``: allocation name -> the step label
    apply recorded on it (a user's own allocation matches a step only by name and
    subject, and is never released). ``declared``: allocation document name -> the
    step its ``spec.step`` (or its name) says it runs; such a document is that step's."""
    by_name = {a.name: a for a in running}
    by_step = {step: by_name[name] for name, step in (declared or {}).items() if name in by_name}
    found: dict[str, Running] = {}
    released: dict[str, Said] = {}
    for request in requests:
        if request.id in by_step:
            found[request.id] = by_step[request.id]
            continue
        alloc = by_name.get(allocation_name(request.id))
        if alloc is None:
            continue
        mine = recorded.get(alloc.name) is not None
        if not mine and alloc.subject != request.requester:
            continue
        why = _still_describes(request, alloc, problem)
        if why is None:
            found[request.id] = alloc
        elif mine:
            released[alloc.name] = why
        else:
            found[request.id] = alloc
    return found, released


def _without_allocations(config: Config, names: set[str]) -> Config:
    kept = {name: entry for name, entry in config.allocations.items() if name not in names}
    return dataclasses.replace(config, allocations=kept)


def _kueue_strategy(prepared: Prepared, optimal: Strategy) -> Solution:
    """What Kueue will do: every Job waits in the queue of its first eligible
    policy, the cluster decides; steps outside Kubernetes are planned as the
    optimal strategy would, since nothing but the plan gates them."""
    from .runtime_check import kueue_solution, replay

    problem = prepared.problem
    waiting = decide(prepared, Solution(strategy="kueue", admitted={}, status="SIMULATED"))
    replayed = replay(prepared.config, waiting, prepared.live, problem, prepared.running,
                      submit="all")  # Kueue decides everything
    kubernetes_ids = {r.id for r in waiting.requests if r.id in replayed.simulation.outcomes}
    return kueue_solution(replayed, optimal(problem), kubernetes_ids, {a.name for a in problem.running})


def plan_paths(paths: Iterable[str], *, state_file: str | None = None, strategy: StrategyName | Strategy = "optimal",
               progress: Callable[[str], None] | None = None, runtime_check: bool = True,
               output_dir: str | None = None, now: str | datetime | None = None,
               observed: Iterable[str] | None = None, submit: SubmitMode = "gate", refuse_invalid: bool = False,
               base: Plan | None = None, validation: Validation | None = None) -> PlanResult:
    """Plan the configuration under ``paths`` against the state in ``state_file``
    (default ``poolc.state.json`` in the working directory).

    ``strategy``: "optimal" (default), "zenml", "kueue", or a ``solve(problem) ->
    Solution`` function; ``progress`` receives the optimal solver's progress lines.
    ``runtime_check`` replays the plan through Kueue's scheduler (the plan's
    ``runtime`` section). ``output_dir``: where the generated files are (default:
    the one the state records), to compare them with what the plan would write.
    ``now``: the start time of the allocations an apply would create. ``observed``:
    the cluster's report files; the plan starts from the state they imply
    (poolc.cluster.observe) instead of the state file, which is not written. ``submit``:
    how apply hands Jobs to Kueue, "gate" (only the allocated steps' Jobs, and stop
    objects for the victims) or "all" (every Job; Kueue decides).
    ``refuse_invalid``: raise InvalidConfiguration instead of planning when an
    error other than a step's rejection is found. ``base``: a plan of the base
    branch's inputs against the same state; the plan's ``base`` section says what
    this one changes against it (BaseMismatch when it was made against another state).
    ``validation``: the inputs already validated (apply validates before it plans).

    The steps: load -> state -> prepare (requests) -> solve -> decide -> runtime
    replay -> changes -> the Plan, built once at the end."""
    solve = load_strategy("optimal" if strategy == "kueue" else strategy, progress)
    validation = validation or load(paths, refuse_invalid=refuse_invalid)
    state_path = state_file or DEFAULT_STATE
    prepared = prepare(validation, read_inputs_state(validation, state_path, observed), state_path)
    return plan_prepared(prepared, strategy=strategy, solve=solve, progress=progress, runtime_check=runtime_check,
                         output_dir=output_dir, now=now, submit=submit, base=base)


def plan_prepared(prepared: Prepared, *, strategy: StrategyName | Strategy, solve: Strategy,
                  progress: Callable[[str], None] | None = None, runtime_check: bool = True,
                  output_dir: str | None = None, now: str | datetime | None = None, submit: SubmitMode = "gate",
                  base: Plan | None = None) -> PlanResult:
    """solve -> decide -> runtime replay -> changes -> the Plan (see ``plan_paths``)."""
    if base is not None:
        check_base(base, prepared)
    solution = decide_strategy(prepared, strategy, solve, progress)
    decided = decide(prepared, solution)
    # one rendering of the targets for the runtime check and the file changes
    # (they read only which steps run and through which policy, which is final here)
    context = TargetContext.of(prepared.validation.config, decided, prepared.live, submit=submit)
    runtime = replay_runtime(prepared, decided, context) if runtime_check else None
    plan = with_sections(prepared, decided, runtime)
    requests = waits(plan, prepared.live, submit)
    changes = None
    if prepared.state.ok:
        changes = what_changes(plan, prepared, output_dir=output_dir, now=resolve_now(now), context=context,
                               grants=grant_positions(prepared.problem, solution))
    plan = dataclasses.replace(plan, changes=changes.section if changes else None)
    # against the base after the changes: what the change ends of running work is read from them
    comparison = compare(base, plan, _victim_policies(prepared.problem).get) if base is not None else None
    final = dataclasses.replace(plan, base=comparison, requests=requests,
                                diagnostics=plan.diagnostics + (changes.refused if changes else ()))
    return result_of(prepared, solution, final, changes)


def load(paths: Iterable[str], *, refuse_invalid: bool = False) -> Validation:
    """The validated inputs; InvalidConfiguration (when ``refuse_invalid``) before any planning."""
    validation = validate_paths(list(paths) or ["."])
    if refuse_invalid:
        errors = blocking_errors(validation.diagnostics)
        if errors:
            raise InvalidConfiguration(validation, errors)
    return validation


def read_inputs_state(validation: Validation, state_path: str, observed: Iterable[str] | None) -> StateRead:
    """The state a plan starts from: the state file, or what the cluster's reports imply."""
    state = read_state(state_path)
    if observed is not None and state.ok:
        from ..cluster.observe import observe_files

        state = observe_files(state, list(observed), validation.config, validation.requests)
    return state


def prepare(validation: Validation, state: StateRead, state_path: str) -> Prepared:
    """Which steps are requests, which run already (and which allocations were
    released because their step changed), which finished; the Problem to solve."""
    config = validation.config
    if state.preempted:  # config allocations an applied plan preempted no longer run
        config = _without_allocations(config, set(state.preempted))
    requests = validation.requests  # requests do not depend on allocations
    rejected = step_errors(config, requests, validation.diagnostics)
    inputs = {r.id: step_inputs(r) for r in requests}
    dropped, document_steps, disagree = documents_against_state(config, state, inputs)
    if dropped:
        config = _without_allocations(config, dropped)
    finished = tuple(sorted(r.id for r in requests if state.finished.get(step_label(r.id)) == inputs[r.id]))
    live = [r for r in requests if r.id not in finished]
    everything = problem_from_config(config, [], state.allocations)
    recorded = {a.metadata.name: step_of(a) for a in state.allocations}
    recorded.update({name: step_of(entry.obj) for name, entry in config.allocations.items()})
    running, released = _running_steps([r for r in live if r.id not in rejected], everything.running,
                                       everything, recorded, document_steps)
    if released:
        config = _without_allocations(config, set(released))
    state_allocations = [a for a in state.allocations if a.metadata.name not in released]
    previous = sorted([entry.obj for entry in config.allocations.values()]
                      + [a for a in state_allocations if a.metadata.name not in config.allocations],
                      key=lambda a: a.metadata.name)
    plannable = [r for r in live if r.id not in rejected and r.id not in running]
    problem = problem_from_config(config, plannable, state_allocations)
    digests = input_digests(config, state.allocations)   # computed once: the plan's and its inputs'
    return Prepared(validation, config, state, state_path, live, rejected, inputs, finished, running, released,
                    previous, problem, digests, disagree)


def check_base(base: Plan, prepared: Prepared) -> None:
    """BaseMismatch when the base plan was made against another state."""
    if not prepared.state.ok:
        return
    mismatch = state_difference(base, prepared.digests)
    if mismatch is not None:
        raise BaseMismatch(f"the base plan cannot be compared with this one: {mismatch}; plan the base "
                           "branch against the same state file (`poolc plan --state FILE --out PLANFILE`)")


def decide_strategy(prepared: Prepared, strategy: StrategyName | Strategy, solve: Strategy,
                    progress: Callable[[str], None] | None) -> Solution:
    """The strategy's decisions (the only step that solves)."""
    if strategy == "kueue":
        return _kueue_strategy(prepared, load_strategy("optimal", progress))
    return solve(prepared.problem)


def decide(prepared: Prepared, solution: Solution) -> Plan:
    """The plan's decisions and explanations: each step's fate, the preemptions, the
    pools' and policies' use, and the notes on released and timed-out steps."""
    plan = assemble(prepared.problem, solution, prepared.live, rejected=prepared.rejected,
                    running=prepared.running, diagnostics=prepared.diagnostics, digest=digest_of(prepared.digests))
    return _with_wait_timeouts(_with_released(plan, prepared.released), prepared.live)


def replay_runtime(prepared: Prepared, decided: Plan, context: TargetContext) -> tuple[Runtime, list[Diagnostic]]:
    """The runtime section (the plan's objects replayed on the Kueue simulator) and its T-rule diagnostics."""
    from .runtime_check import replay, runtime_diagnostics, runtime_of

    replayed = replay(prepared.config, decided, prepared.live, prepared.problem, prepared.running, context=context)
    runtime = runtime_of(decided, replayed)
    return runtime, runtime_diagnostics(runtime, prepared.live, prepared.config)


def with_sections(prepared: Prepared, decided: Plan, runtime: tuple[Runtime, list[Diagnostic]] | None) -> Plan:
    """The decisions with what the plan records beside them: the runtime section,
    finished steps, per-input digests, foreign work and teams."""
    sections: dict[str, Any] = {}
    if runtime is not None:
        sections["runtime"] = runtime[0]
        sections["diagnostics"] = tuple(sorted([*decided.diagnostics, *runtime[1]], key=report_order))
    return dataclasses.replace(decided, **sections, finished=prepared.finished, inputs=prepared.digests,
                               external=_external(prepared.state.allocations),
                               teams=_teams(prepared.validation.config),
                               units=display_units(prepared.validation.config))


def waits(plan: Plan, live: list[StepRequest], submit: SubmitMode) -> tuple[PlannedRequest, ...]:
    """The requests, with how long each waited for this reconcile cycle: only in gate
    mode and with the cycle's time given (same inputs, same plan)."""
    if submit == "gate" and os.environ.get("SOURCE_DATE_EPOCH", "").strip().isdigit():
        from .waiting import with_waits

        return with_waits(plan, live, resolve_now(None)).requests
    return plan.requests


def _teams(config: Config) -> dict[str, str]:
    """Pipeline -> its ``metadata.labels.team``, where it has one."""
    return {name: entry.obj.metadata.labels["team"] for name, entry in sorted(config.pipelines.items())
            if "team" in entry.obj.metadata.labels}


def _victim_policies(problem: Problem) -> dict[str, str]:
    """Running allocation -> the policy it runs through (preemptions are counted per policy)."""
    found = {}
    for alloc in problem.running:
        policy = problem.policy_for(alloc.subject, alloc.pool)
        if policy is not None:
            found[alloc.name] = policy.name
    return found


def _external(allocations: Iterable[Allocation]) -> tuple[External, ...]:
    """The state's allocations of foreign work (poolc.cluster.observe), for the plan to list."""
    from ..cluster.observe import EXTERNAL_LABEL, POLICY_LABEL

    return tuple(External(a.metadata.name, a.metadata.labels.get(POLICY_LABEL, "?"), a.spec.pool, dict(a.spec.holds))
                 for a in sorted(allocations, key=lambda a: a.metadata.name) if a.metadata.labels.get(EXTERNAL_LABEL))


def _with_released(plan: Plan, released: Mapping[str, Said]) -> Plan:
    """Say, on each re-planned step, why its running allocation was released."""
    if not released:
        return plan
    by_alloc = {allocation_name(r.id): r for r in plan.requests}
    notes = {by_alloc[name].id: why for name, why in released.items() if name in by_alloc}
    requests = tuple(dataclasses.replace(r, message=said("resized: ", its_allocation(allocation_name(r.id)),
                                                         " was released because ", notes[r.id], "; ", r.message))
                     if r.id in notes else r for r in plan.requests)
    return dataclasses.replace(plan, requests=requests)


def _with_wait_timeouts(plan: Plan, requests: list[StepRequest]) -> Plan:
    """Say, on each queued step that sets ZenML 0.98's allocation_wait_timeout_seconds,
    that it waits without a bound poolc can give, and ZenML stops waiting at that time."""
    timeouts = {r.id: r.settings.allocation_wait_timeout_seconds for r in requests
                if r.settings.allocation_wait_timeout_seconds is not None}
    if not timeouts:
        return plan
    requests_ = tuple(dataclasses.replace(r, message=said(r.message, "; note: it sets allocation_wait_timeout_seconds="
                                                          f"{timeouts[r.id]}, so ZenML gives up on it if it waits "
                                                          f"longer than {timeouts[r.id]:,} seconds for capacity"))
                      if r.status == "queued" and r.id in timeouts else r for r in plan.requests)
    return dataclasses.replace(plan, requests=requests_)


def grant_positions(problem: Problem, solution: Solution) -> dict[str, int]:
    """Request id -> its place among the plan's new grants, in the order the plan
    walked the reserved shares (in-share first, then by arrival)."""
    ranks = {r.id: r.rank for r in problem.requests}
    ordered = sorted((rid for rid in solution.admitted if rid in ranks),
                     key=lambda rid: grant_order(rid in solution.in_share, ranks[rid], rid))
    return {rid: place for place, rid in enumerate(ordered)}


def _output_dir(prepared: Prepared, given: str | None) -> str | None:
    if given:
        return given
    recorded = prepared.state.output_dir
    if recorded is None:
        return None
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(prepared.state_path)), recorded))


@dataclass(frozen=True, slots=True)
class Changes:
    """What applying a plan changes: the plan's ``changes`` section, the diagnostics
    of generated paths apply would refuse to replace, and what apply would write."""

    section: PlanChanges
    refused: tuple[Diagnostic, ...]
    files: dict[str, str]               # relative path -> text
    output_dir: str | None              # where the generated files live, when known
    state_text: str                     # the new state file's bytes
    state_action: StateAction | None    # None: unchanged
    diffs: dict[str, str]               # path -> unified diff, for files known on disk
    on_disk: dict[str, str | None]      # path -> its text in the output directory as read


def what_changes(plan: Plan, prepared: Prepared, *, output_dir: str | None, now: datetime,
                 context: TargetContext, grants: Mapping[str, int]) -> Changes:
    """Render what apply would write for ``plan`` and compare it with the state's
    record and, where the output directory is known, the files on disk (each read
    once, kept in ``on_disk``): the files, diffs and new state. ``grants``: request
    id -> its place among the new grants."""
    from ..model import KINDS
    from ..targets import render_all

    config, previous_state = prepared.validation.config, prepared.state
    released = sorted(prepared.released)
    files = render_all(config, plan, prepared.live, context=context)
    file_digests = {p: sha256_text(t) for p, t in files.items()}
    out_dir = _output_dir(prepared, output_dir)
    recorded = previous_state.files
    file_changes: list[FileChange] = []
    tree = Tree(out_dir) if out_dir else None
    refused: list[Diagnostic] = []
    on_disk_texts: dict[str, str | None] = {}
    diffs: dict[str, str] = {}
    for path, text in files.items():
        try:
            on_disk = tree.read_text(path) if tree is not None else None
        except UnsafePath as exc:   # a link (to .git/config?) or a device where a generated file goes
            refused.append(Diagnostic(exc.path, 1, 1, 1, 1, d.Y001.id, "error",
                                      f"{exc.why}; apply replaces only regular files it wrote: remove it"))
            file_changes.append(FileChange(path, "update"))
            on_disk_texts[path] = None
            continue
        if tree is not None:
            on_disk_texts[path] = on_disk
        if on_disk is not None:
            if on_disk != text:
                file_changes.append(FileChange(path, "update" if path in recorded else "create"))
                diffs[path] = unified_diff(on_disk, text, path)
        elif path not in recorded:
            file_changes.append(FileChange(path, "create"))
        elif recorded[path] != file_digests[path] or out_dir:
            file_changes.append(FileChange(path, "update"))
    file_changes += [FileChange(path, "delete") for path in recorded if path not in files]
    relative_out = None
    if out_dir:
        relative_out = os.path.relpath(os.path.abspath(out_dir),
                                       os.path.dirname(os.path.abspath(prepared.state_path)))
    # The configuration's digest without the state: the plan's inputs hold each of
    # its documents' digests already, unless plan_paths left allocations out of
    # what it planned (released, preempted); then their names differ from the config's.
    documents = {k: v for k, v in (plan.inputs or {}).items() if not k.startswith("state/")}
    same = documents.keys() == {f"{kind}/{name}" for kind in KINDS for name in config.by_kind(kind)}
    digest = digest_of(documents) if same else inputs_digest(config)
    state = state_from_plan(plan, prepared.previous, StateInputs(
        files=file_digests, digest=digest, from_files=frozenset(config.allocations),
        preempted_before=tuple(previous_state.preempted), released=tuple(released), started_at=now,
        step_inputs=prepared.inputs, finished=previous_state.finished, grant_order=grants,
        output_dir=relative_out.replace(os.sep, "/") if relative_out else None))
    state_text = dump_state(state)
    current = previous_state.text   # the state file as plan_paths read it: not read again
    state_action: StateAction | None = None if current == state_text else (
        "update" if current is not None else "create")
    allocations = changes(prepared.previous + [a for a in previous_state.allocations if a.metadata.name in released],
                          state.allocations, released)
    restarted, unknown = restarted_jobs(plan, context, files, on_disk_texts if tree is not None else None,
                                        recorded, file_digests)
    section = PlanChanges(AllocationChanges(tuple(allocations["added"]), tuple(allocations["removed"]),
                                            tuple(allocations["resized"]), tuple(allocations["unchanged"]),
                                            restarted, unknown),
                          tuple(sorted(file_changes, key=lambda x: x.path)), state_action)
    return Changes(section, tuple(refused), files, out_dir, state_text, state_action, diffs, on_disk_texts)


_JOB_NAME = re.compile(r"^metadata:\n  name: (\S+)$", re.MULTILINE)


def restarted_jobs(plan: Plan, context: TargetContext, files: Mapping[str, str],
                   on_disk: Mapping[str, str | None] | None, recorded: Mapping[str, str],
                   digests: Mapping[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(running allocations whose Kubernetes Job apply replaces, those whose Job file
    changes where the file apply wrote cannot be read). A Job's name ends in a digest
    of its spec (targets/kubernetes.py), so a new name is a new Job: `kubectl apply
    --prune` deletes the old one, which stops the running pod. ``on_disk``: the files
    read from the output directory, None when it is not known."""
    from ..targets.kubernetes import job_paths

    restarted, unknown = [], []
    paths = job_paths(context)
    for request in plan.requests:
        path = paths.get(request.id)
        if request.running is None or request.status != "allocated" or path is None or path not in files:
            continue
        if recorded.get(path) == digests[path]:
            continue                                  # the file apply wrote: the same Job
        old = on_disk.get(path) if on_disk is not None else None
        if old is None:
            if path in recorded:
                unknown.append(request.running)
            continue
        before, after = _JOB_NAME.search(old), _JOB_NAME.search(files[path])
        if before is None or after is None:
            unknown.append(request.running)
        elif before[1] != after[1]:
            restarted.append(request.running)
    return tuple(sorted(restarted)), tuple(sorted(unknown))
