"""Reading a PLANFILE back: one typed model (pydantic) for `poolc show` and
`poolc apply --plan`.

A plan file may come from anywhere (an artifact of another CI run, an edited
copy), so every field is checked before a renderer sees it: the types, the
closed vocabularies (status, action, strategy, tier kind), integers within
±10^18 (a huge ``used`` would overflow the comment's bars), a finite ``gap``, a
``changes`` section of the shape `poolc plan` writes. What is wrong is one
PlanFormatError naming the field (``requests[3].demand.gpu``), never a crash;
read from its text, a ``PlanFileError`` that also knows the line and column.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..text.jsonpos import JsonScan
from ..vocabulary import RequestStatus, Strategy, SubmitMode, TierKind
from .amounts import DECIMAL, Units
from .plan import (
    FORMAT_VERSION,
    AllocationChanges,
    External,
    FileChange,
    Plan,
    PlanChanges,
    PlanFormatError,
    PlannedRequest,
    PlanVersion,
    PolicyUsage,
    PoolUsage,
    Preemption,
    Runtime,
    RuntimeDifference,
    SolverInfo,
    Tier,
)

MAX_VALUE = 10**18
_SHOWN_ERRORS = 3

Int = Annotated[int, Field(strict=True, ge=-MAX_VALUE, le=MAX_VALUE)]
Ints = dict[str, Int]
Str = Annotated[str, Field(strict=True)]


class _Model(BaseModel):
    # unknown keys are ignored, as before: a newer poolc may add fields
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class RequestModel(_Model):
    id: Str
    requester: Str | None = None
    preemptible: bool
    demand: Ints
    status: RequestStatus
    pool: Str | None = None
    policy: Str | None = None
    borrowed: Ints
    reason: Str | None = None
    message: Str
    team: Str | None = None          # Plan.team_of, written for readers of the JSON; worked out again


class PreemptionModel(_Model):
    id: Str
    pool: Str
    for_: list[Str] = Field(alias="for")
    message: Str
    workload: Str | None = None
    subject: Str | None = None


def _covers(name: str, table: dict[str, int], keys: dict[str, int], what: str) -> None:
    missing = sorted(set(keys) - set(table))
    if missing:
        shown = repr(missing[0]) if len(repr(missing[0])) < 60 else repr(missing[0])[:60] + "…"
        raise ValueError(f"{name!r} has no {what} for the key {shown} (the renderers read one for every key)")


class PoolModel(_Model):
    name: Str
    capacity: Ints
    used: Ints
    free: Ints

    @model_validator(mode="after")
    def _every_key(self) -> PoolModel:
        _covers("used", self.used, self.capacity, "value")
        _covers("free", self.free, self.capacity, "value")
        return self


class PolicyModel(_Model):
    name: Str
    pool: Str
    priority: Int
    reserved: Ints
    limit: Ints
    used: Ints
    borrowed: Ints

    @model_validator(mode="after")
    def _every_key(self) -> PolicyModel:
        for name, table in (("reserved", self.reserved), ("limit", self.limit), ("borrowed", self.borrowed)):
            _covers(name, table, self.used, "value")
        return self


class DiagnosticModel(_Model):
    file: Str
    line: Int
    column: Int
    rule: Str
    severity: Literal["error", "warning"]
    message: Str


class TierModel(_Model):
    kind: TierKind
    priority: Int | None = None
    bound: Int | None = None


class SolverModel(_Model):
    strategy: Strategy
    status: Str
    objective: list[Int]
    gap: float
    tiers: list[TierModel] = []
    in_share: list[Str] = []

    @field_validator("gap", mode="before")
    @classmethod
    def _finite(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return value   # the type check says what is wrong
        if isinstance(value, int) and abs(value) > MAX_VALUE or isinstance(value, float) and not math.isfinite(value):
            raise ValueError("gap must be a finite number")
        return float(value)

    @model_validator(mode="after")
    def _tiers_match(self) -> SolverModel:
        if self.tiers and len(self.tiers) != len(self.objective):
            raise ValueError("'tiers' must name every objective value")
        return self


class AllocationChangesModel(_Model):
    added: list[Str] = []
    removed: list[Str] = []
    resized: list[Str] = []
    unchanged: list[Str] = []
    restarted: list[Str] = []
    restart_unknown: list[Str] = []


class FileChangeModel(_Model):
    path: Str
    action: Literal["create", "update", "delete"]


class ChangesModel(_Model):
    allocations: AllocationChangesModel = AllocationChangesModel()
    files: list[FileChangeModel] = []
    state: Literal["create", "update"] | None = None


class DifferenceModel(_Model):
    id: Str
    plan: Str
    cluster: Str
    message: Str


class RuntimeModel(_Model):
    engine: Str
    differences: list[DifferenceModel]
    notes: list[Str] = []
    stopped: Str = ""
    submit: SubmitMode = "gate"


class ExternalModel(_Model):
    name: Str
    policy: Str
    pool: Str
    holds: Ints


class PlanModel(_Model):
    """A plan file as `poolc plan --out` writes it; ``solver`` first, so a file that
    is no plan at all is told so by its first error."""

    format_version: PlanVersion
    solver: SolverModel
    inputs_digest: Str
    requests: list[RequestModel]
    preempted: list[PreemptionModel]
    pools: list[PoolModel]
    policies: list[PolicyModel] = []
    diagnostics: list[DiagnosticModel]
    changes: ChangesModel | None = None
    runtime: RuntimeModel | None = None
    finished: list[Str] = []
    external: list[ExternalModel] = []
    inputs: dict[str, Str] | None = None
    teams: dict[str, Str] = {}
    units: dict[Literal["memory_mb"], Literal["decimal", "binary"]] = {}


def _where(loc: tuple[int | str, ...]) -> tuple[str, str]:
    """(``requests[3].demand``, ``gpu``): the place and the field of an error."""
    path = ""
    for part in loc[:-1]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    last = loc[-1] if loc else "plan"
    return path or "plan", f"[{last}]" if isinstance(last, int) else str(last)


_TYPES = {"list_type": "list", "dict_type": "dict", "string_type": "str", "int_type": "int", "bool_type": "bool",
          "float_type": "a number", "model_type": "dict", "dict_attributes_type": "dict", "none_required": "null"}


def _sentence(error: Any) -> str:
    where, key = _where(tuple(error["loc"]))
    kind = error["type"]
    if kind in _TYPES:
        return f"{where}: {key!r} must be {_TYPES[kind]}"
    if kind == "missing":
        return f"{where}: {key!r} is missing"
    if kind == "literal_error":
        shown = repr(error["input"])
        if len(shown) > 60:
            shown = shown[:60] + "…"
        return f"{where}: {key} {shown} is not one of {error['ctx']['expected']}"
    if kind in ("greater_than_equal", "less_than_equal"):
        return f"{where}: {key!r} is out of range (at most 10^18 either way)"
    if kind == "value_error":
        return f"{where}: {error['ctx']['error']}"
    return f"{where}: {key}: {error['msg']}"


class PlanFileError(PlanFormatError):
    """What is wrong with a plan file's text, and where: 1-based line and column."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.line, self.column = line, column


def problem(file: str, exc: PlanFormatError) -> str:
    """``plan.json:12:7: not a poolc plan file: ...``, like a YAML file's diagnostics
    (``plan.json: ...`` when the error knows no position)."""
    if isinstance(exc, PlanFileError):
        return f"{file}:{exc.line}:{exc.column}: {exc}"
    return f"{file}: {exc}"


def _at(text: str | None, loc: tuple[str | int, ...], message: str) -> PlanFormatError:
    """The error, placed at ``loc`` in ``text`` when the text is known (scanned only now:
    a valid plan file, 40 MB at 50,000 requests, is never scanned)."""
    if text is None:
        return PlanFormatError(message)
    line, column = JsonScan(text).span(loc)[:2]
    return PlanFileError(message, line, column)


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > 30:
        raise ValueError("an integer of more than 30 digits")
    return int(digits)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no number a plan file holds")


def parse_json(text: str) -> Any:
    """A plan file's JSON, with every number bounded: an integer of at most 30 digits, no
    NaN or Infinity (PlanFormatError, never an OverflowError later)."""
    try:
        return json.loads(text.removeprefix("\ufeff"), parse_int=_bounded_int, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise PlanFileError(f"not a plan file: {exc.msg}", exc.lineno, exc.colno) from None
    except (RecursionError, ValueError) as exc:
        raise PlanFormatError(f"not a plan file: {exc}") from None


def read_plan(data: str | Any, text: str | None = None) -> Plan:
    """The Plan in a plan file's text (or its parsed JSON, and the ``text`` it was parsed
    from when known, for positions); PlanFormatError says what is wrong with anything else."""
    if isinstance(data, str):
        text = data.removeprefix("\ufeff")
        data = parse_json(text)
    if not isinstance(data, dict):
        raise _at(text, (), "not a poolc plan file (a JSON object, as `poolc plan --out` writes it)")
    version = data.get("format_version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        shown = repr(version) if len(repr(version)) < 40 else repr(version)[:40] + "…"
        raise _at(text, ("format_version",), f"not a poolc plan file: format_version {shown} is not "
                  f"{FORMAT_VERSION}, the version this poolc reads")
    try:
        model = PlanModel.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        more = f" (and {len(errors) - _SHOWN_ERRORS} more)" if len(errors) > _SHOWN_ERRORS else ""
        raise _at(text, tuple(errors[0]["loc"]), "not a poolc plan file: " + "; ".join(
            _sentence(e) for e in errors[:_SHOWN_ERRORS]) + more) from None
    base = None
    if "base" in data:   # `plan --base`'s comparison, read by its own module
        from . import change

        base = change.from_dict(data["base"])
        if base is None:
            raise _at(text, ("base",), "not a poolc plan file: 'base' is not the comparison `plan --base` writes")
    return dataclasses.replace(_plan(model, data), teams=dict(model.teams), base=base,
                               units=Units(model.units.get("memory_mb", DECIMAL)))


def _plan(model: PlanModel, data: dict[str, Any]) -> Plan:
    solver = model.solver
    runtime = None
    if model.runtime is not None:
        runtime = Runtime(model.runtime.engine, tuple(RuntimeDifference(x.id, x.plan, x.cluster, x.message)
                                                      for x in model.runtime.differences), tuple(model.runtime.notes),
                          model.runtime.stopped, model.runtime.submit)
    return Plan(
        inputs_digest=model.inputs_digest,
        requests=tuple(PlannedRequest(r.id, r.requester, r.preemptible, dict(r.demand), r.status, r.pool, r.policy,
                                      dict(r.borrowed), r.reason, r.message) for r in model.requests),
        preempted=tuple(Preemption(p.id, p.pool, tuple(p.for_), p.message, p.workload, p.subject)
                        for p in model.preempted),
        pools=tuple(PoolUsage(p.name, dict(p.capacity), dict(p.used), dict(p.free)) for p in model.pools),
        policies=tuple(PolicyUsage(q.name, q.pool, q.priority, dict(q.reserved), dict(q.limit), dict(q.used),
                                   dict(q.borrowed)) for q in model.policies),
        diagnostics=tuple(_diagnostic(x) for x in model.diagnostics),
        solver=SolverInfo(solver.strategy, solver.status, tuple(solver.objective), solver.gap,
                          tuple(Tier(t.kind, t.priority, t.bound) for t in solver.tiers), tuple(solver.in_share)),
        changes=_changes(model.changes, data["changes"]) if model.changes is not None else None,
        runtime=runtime, finished=tuple(model.finished),
        external=tuple(External(x.name, x.policy, x.pool, dict(x.holds)) for x in model.external),
        inputs=dict(model.inputs) if model.inputs is not None else None)


def _changes(model: ChangesModel, data: dict[str, Any]) -> PlanChanges:
    """The typed section; keys a newer poolc added stay as written (``extra``)."""
    a = model.allocations
    return PlanChanges(AllocationChanges(tuple(a.added), tuple(a.removed), tuple(a.resized), tuple(a.unchanged),
                                         tuple(a.restarted), tuple(a.restart_unknown)),
                       tuple(FileChange(f.path, f.action) for f in model.files), model.state,
                       {k: v for k, v in data.items() if k not in ChangesModel.model_fields})


def _diagnostic(x: DiagnosticModel) -> Any:
    from ..diagnostics import Diagnostic

    return Diagnostic(x.file, x.line, x.column, x.line, x.column, x.rule, x.severity, x.message)
