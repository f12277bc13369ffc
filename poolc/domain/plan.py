"""The Plan: the typed value every later stage takes (apply, the state, the targets
and every renderer), declared once for its JSON form too (`poolc plan --format
json`, the PLANFILE).

A plan says, for every step, whether it is allocated (on which pool, through
which policy, borrowing what), queued (and why) or rejected (and why); which
running allocations are preempted and for whom; each pool's capacity, use and
free room; the diagnostics; and the solver's verdict.

Each record below is the one declaration of its part of the plan file: the
planner builds it as a plain frozen dataclass (no validation cost on 50,000
requests), and ``PLAN_FILE``, a pydantic TypeAdapter over the same classes,
writes it and reads it back. What the file holds beyond the fields (a request's
team, a tier's proof, the runtime's verdict) is computed by the record's own
serializer; what a file says is checked by the field's type (integers within
±10^18, closed vocabularies, strict strings) and the record's validators. The
JSON is byte-identical for the same inputs on every run and machine: lists
sorted by id/name, map keys sorted, no timings.

``free`` is ``capacity - used`` and may be negative: running allocations can
already hold more than a pool's capacity; such a pool admits nothing that needs
the over-full key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
    model_validator,
)
from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only from Python 3.12

from ..diagnostics import Diagnostic
from ..text.escape import json_text
from ..text.jsontext import dumps_sorted
from ..vocabulary import ChangeAction, RequestStatus, Severity, StateAction, Strategy, SubmitMode, TierKind
from .amounts import DECIMAL, DEFAULT, Units
from .change import BaseComparison
from .file_values import MAX_VALUE, Flag, Int, Ints, Message, Names, OptionalStr, Str
from .naming import allocation_name

# The plan file's version and vocabularies, each declared once.
PlanVersion = Literal[1]
FORMAT_VERSION: int = get_args(PlanVersion)[0]
ALLOCATED: Final = "allocated"
QUEUED: Final = "queued"
REJECTED: Final = "rejected"
STATUSES: Final[tuple[RequestStatus, ...]] = (ALLOCATED, QUEUED, REJECTED)
UNMANAGED = "UNMANAGED"


class PlanFormatError(ValueError):
    """A plan file that is not a plan this poolc wrote; the message says what is wrong."""


def _without(found: dict[str, Any], **defaults: Any) -> dict[str, Any]:
    """``found`` less the keys whose value is the given default: the file leaves out an
    optional field that is not set, so a plan that uses nothing new reads as before."""
    for key, default in defaults.items():
        if found.get(key) == default:
            del found[key]
    return found


def _not_read(_: object) -> None:
    """A field the planner sets and the file never carries: a value in a file is dropped."""
    return None


@dataclass(frozen=True)
class PlannedRequest:
    id: Str
    requester: OptionalStr
    preemptible: Flag
    demand: Ints
    status: RequestStatus
    pool: OptionalStr
    policy: OptionalStr
    borrowed: Ints
    reason: OptionalStr               # rejected: a rule id; queued: the binding rule's text; UNMANAGED; else None
    message: Message
    # the allocation that already runs this step (the forecast's; not in the file)
    running: Annotated[str | None, Field(exclude=True), AfterValidator(_not_read)] = None


@dataclass(frozen=True)
class External:
    """A running allocation of work poolc did not write (a foreign Kueue Workload),
    counted against its queue's policy and pool."""

    name: Str
    policy: Str
    pool: Str
    holds: Ints


@dataclass(frozen=True)
class Preemption:
    id: Str                           # the running allocation's name
    pool: Str
    for_: Annotated[Names, Field(alias="for")]    # request ids it makes room for, sorted
    message: Message
    workload: Str | None = None       # the Kueue Workload apply stops, <namespace>/<name>, when known
    subject: Str | None = None        # the component it runs under: the team of work that is no step's

    @model_serializer(mode="wrap")
    def _written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without(handler(self), workload=None, subject=None)


def _covers(name: str, table: Mapping[str, int], keys: Mapping[str, int], what: str) -> None:
    """Every key of ``keys`` has a value in ``table``: the renderers read one for each."""
    missing = sorted(set(keys) - set(table))
    if missing:
        shown = repr(missing[0]) if len(repr(missing[0])) < 60 else repr(missing[0])[:60] + "…"
        raise ValueError(f"{name!r} has no {what} for the key {shown} (the renderers read one for every key)")


@dataclass(frozen=True)
class PoolUsage:
    name: Str
    capacity: Ints
    used: Ints
    free: Ints                        # capacity - used; negative on an over-full pool

    @model_validator(mode="after")
    def _every_key(self) -> PoolUsage:
        _covers("used", self.used, self.capacity, "value")
        _covers("free", self.free, self.capacity, "value")
        return self


@dataclass(frozen=True)
class PolicyUsage:
    """One policy on its pool, per metered key, once the plan is carried out: its
    reserved share and limit (from the configuration, so a saved plan can show
    them), what its steps hold (running and admitted) and how much of that lies
    above the reserved share."""

    name: Str
    pool: Str
    priority: Int
    reserved: Ints
    limit: Ints
    used: Ints
    borrowed: Ints

    @model_validator(mode="after")
    def _every_key(self) -> PolicyUsage:
        for name, table in (("reserved", self.reserved), ("limit", self.limit), ("borrowed", self.borrowed)):
            _covers(name, table, self.used, "value")
        return self


@dataclass(frozen=True)
class Tier:
    """What one objective value counts: ``in-share``, ``admitted`` (at
    ``priority``), ``preempted`` (at ``priority``), ``arrival``, ``start-rank`` or
    ``preference``; the report layer says it in words."""

    kind: TierKind
    priority: Int | None = None
    bound: Int | None = None          # the best bound the solver proved (the value itself when proven)

    @model_serializer(mode="wrap")
    def _written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without(handler(self), bound=None)

    def gap(self, value: int) -> float:
        """How far the bound is from ``value``, relative (0.0 when proven or unknown)."""
        return 0.0 if self.bound is None else abs(self.bound - value) / max(1, abs(value))


def _finite(value: Any) -> Any:
    """A gap is a finite number (NaN and 10^400 are no gap); the type check says the rest."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, int) and abs(value) > MAX_VALUE or isinstance(value, float) and not math.isfinite(value):
        raise ValueError("gap must be a finite number")
    return float(value)


@dataclass(frozen=True)
class SolverInfo:
    strategy: Strategy
    status: Str
    objective: tuple[Int, ...]
    gap: Annotated[float, BeforeValidator(_finite)]
    tiers: tuple[Tier, ...] = ()      # what each objective value counts; () when unknown (zenml, kueue)
    in_share: Names = ()              # new grants counted inside their reserved share (optimal), sorted

    @model_validator(mode="after")
    def _tiers_match(self) -> SolverInfo:
        if self.tiers and len(self.tiers) != len(self.objective):
            raise ValueError("'tiers' must name every objective value")
        return self

    @model_serializer(mode="wrap")
    def _written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # `apply --plan` orders new grants by in_share without solving again; each tier
        # with a bound says whether it is proven and how far from it the value is
        found = _without(handler(self), in_share=[], tiers=[])
        found["gap"] = float(self.gap)
        if self.tiers:
            found["tiers"] = [{**written, **({} if tier.bound is None else
                                             {"proven": tier.bound == value, "gap": tier.gap(value)})}
                              for written, tier, value in zip(found["tiers"], self.tiers, self.objective,
                                                              strict=True)]
        return found


@dataclass(frozen=True)
class FileChange:
    """A generated file the plan would create, update or delete."""

    path: Str         # relative to the output directory
    action: ChangeAction


@dataclass(frozen=True)
class AllocationChanges:
    """Running allocations the plan starts (``added``), stops (``removed``), releases
    because their step's request changed (``resized``: planned again, so restarted
    or left waiting) and keeps (``unchanged``): names, sorted.

    Of the kept ones, ``restarted`` are those whose Kubernetes Job apply replaces
    (its spec changed: an image, a command, a runtime), which stops the running
    pod and starts the step again; ``restart_unknown`` those whose Job file
    changed where poolc cannot read the one apply wrote (no output directory),
    so it cannot tell. Both are in the JSON only when not empty."""

    added: Names = ()
    removed: Names = ()
    resized: Names = ()
    unchanged: Names = ()
    restarted: Names = ()
    restart_unknown: Names = ()

    @model_serializer(mode="wrap")
    def _written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without(handler(self), restarted=[], restart_unknown=[])


def _newer_keys_kept(data: Any) -> Any:
    """A changes section's keys this poolc does not know (a newer one wrote them) go to
    ``extra`` as they are, so `apply --plan` writes them back unchanged."""
    if not isinstance(data, dict):
        return data
    known = {k: data[k] for k in _CHANGES_FIELDS if k in data}
    return {**known, "extra": {k: v for k, v in data.items() if k not in _CHANGES_FIELDS}}


@dataclass(frozen=True)
class PlanChanges:
    """What applying the plan changes against the state: allocations, generated files
    (sorted by path) and the state file (``create``, ``update`` or None: unchanged).
    ``extra``: keys a newer poolc wrote into a saved plan's section, kept as they are."""

    allocations: AllocationChanges = AllocationChanges()
    files: tuple[FileChange, ...] = ()
    state: StateAction | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def any(self) -> bool:
        """Anything changes: an allocation starts, stops or is resized, a file or the state."""
        a = self.allocations
        return bool(a.added or a.removed or a.resized or self.files or self.state)

    @model_validator(mode="before")
    @classmethod
    def _read(cls, data: Any) -> Any:
        return _newer_keys_kept(data)

    @model_serializer(mode="wrap")
    def _written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        found = handler(self)
        return {**found.pop("extra"), **found}


_CHANGES_FIELDS = ("allocations", "files", "state")


@dataclass(frozen=True)
class RuntimeDifference:
    """A request or running allocation for which the cluster will do otherwise."""

    id: Str           # request id, or allocation name
    plan: Str         # allocated | queued | running | preempted
    cluster: Str      # admitted | pending | running | preempted
    message: Message


@dataclass(frozen=True)
class Runtime:
    """What the cluster's own scheduler will do with what apply writes, against the plan."""

    engine: Str                                   # "kueue"
    differences: tuple[RuntimeDifference, ...]    # sorted by id
    notes: Names = ()                             # where the cluster cannot follow poolc by construction
    stopped: Str = ""                             # why the replay stopped before it settled ("" if it did)
    submit: SubmitMode = "gate"                   # how apply hands Jobs to the cluster

    @property
    def agrees(self) -> bool:
        return not self.differences

    @model_serializer(mode="wrap")
    def _written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {**_without(handler(self), notes=[], stopped=""), "agrees": self.agrees}


class _WrittenDiagnostic(TypedDict):
    """A diagnostic as a plan file holds it: a point, no range."""

    file: Str
    line: Int
    column: Int
    rule: Str
    severity: Severity
    message: Str


def _diagnostics_read(data: Any) -> Any:
    return tuple(Diagnostic(x["file"], x["line"], x["column"], x["line"], x["column"], x["rule"], x["severity"],
                            x["message"]) for x in _written_diagnostics().validate_python(data))


def _diagnostics_written(diagnostics: tuple[Diagnostic, ...]) -> list[dict[str, Any]]:
    return [{"file": x.file, "line": x.line, "column": x.column, "rule": x.rule, "severity": x.severity,
             "message": x.message} for x in diagnostics]


@cache
def _written_diagnostics() -> TypeAdapter[list[_WrittenDiagnostic]]:
    return TypeAdapter(list[_WrittenDiagnostic])


Diagnostics = Annotated[tuple[Diagnostic, ...], BeforeValidator(_diagnostics_read),
                        PlainSerializer(_diagnostics_written)]
UnitsWritten = Annotated[Units, BeforeValidator(lambda data: Units(_memory_unit(data))),
                         PlainSerializer(lambda units: units.as_dict())]


MemoryUnit = Literal["decimal", "binary"]


@cache
def _units_adapter() -> TypeAdapter[dict[Literal["memory_mb"], MemoryUnit]]:
    return TypeAdapter(dict[Literal["memory_mb"], MemoryUnit])


def _memory_unit(data: Any) -> str:
    """The memory family a file's ``units`` names (decimal when it names none)."""
    return data.memory if isinstance(data, Units) else _units_adapter().validate_python(data).get("memory_mb", DECIMAL)


@dataclass(frozen=True)
class Plan:
    solver: SolverInfo                        # first: a file that is no plan is told so by its first error
    inputs_digest: Str
    requests: tuple[PlannedRequest, ...]      # sorted by id
    preempted: tuple[Preemption, ...]         # sorted by id
    pools: tuple[PoolUsage, ...]              # sorted by name
    diagnostics: Diagnostics
    changes: PlanChanges | None = None        # what applying it changes; None when the state was unreadable
    runtime: Runtime | None = None
    finished: Names = ()                      # steps released as finished, not requested again
    inputs: Mapping[str, Str] | None = None   # "<Kind>/<name>" -> digest of that input (stale plans name it)
    policies: tuple[PolicyUsage, ...] = ()    # sorted by name
    external: tuple[External, ...] = ()       # foreign work the cluster runs through poolc's queues, by name
    # pipeline -> its team (metadata.labels.team), for the people reading the plan
    teams: Mapping[str, Str] = field(default_factory=dict)
    base: BaseComparison | None = None        # what the change does against a base plan (`plan --base`)
    units: UnitsWritten = DEFAULT             # how people read its quantities (domain.amounts)
    format_version: PlanVersion = 1           # the file's; one value, so a plan needs no other

    def team_of(self, request_id: str) -> str | None:
        """A step's team, the one definition every output uses (docs/cli.md#teams):
        its pipeline's ``metadata.labels.team``, else the component that runs it."""
        team = self.teams.get(request_id.partition("/")[0])
        if team:
            return team
        request = self._requests_by_id.get(request_id)
        return request.requester if request is not None else None

    def team_of_allocation(self, name: str) -> str | None:
        """A running allocation's team: its step's, else (written by hand) its component,
        where the plan records it (a preempted allocation)."""
        step = self.step_of_allocation(name)
        if step is not None:
            return self.team_of(step)
        return next((p.subject for p in self.preempted if p.id == name), None)

    @cached_property
    def _requests_by_id(self) -> dict[str, PlannedRequest]:
        return {r.id: r for r in self.requests}

    def step_of_allocation(self, name: str) -> str | None:
        """The step a running allocation stands for (apply names it after the step);
        None for an allocation written by hand."""
        return self._steps_by_allocation.get(name)

    @cached_property
    def _steps_by_allocation(self) -> dict[str, str]:
        return {allocation_name(r.id): r.id for r in self.requests}

    def diagnostics_list(self) -> list[Diagnostic]:
        """Validation and state diagnostics, in report order."""
        return list(self.diagnostics)

    def by_status(self, status: RequestStatus) -> list[PlannedRequest]:
        return [r for r in self.requests if r.status == status]

    @model_serializer(mode="wrap")
    def _written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # each request says its team (worked out again on reading); the optional
        # sections are in the file only when set
        found = _without(handler(self), changes=None, runtime=None, finished=[], external=[], inputs=None,
                         teams={}, base=None, units=DEFAULT.as_dict())
        for written, request in zip(found["requests"], self.requests, strict=True):
            written["team"] = self.team_of(request.id)
        return found

    def as_dict(self) -> dict:
        """The plan file's content (JSON values), written from this declaration."""
        return plan_file_adapter().dump_python(self, mode="json", by_alias=True)


@cache
def plan_file_adapter() -> TypeAdapter[Plan]:
    """Writes and reads a Plan as a plan file; built on first use (the plan's commands
    pay for it, `poolc validate` never does)."""
    return TypeAdapter(Plan)


def to_json(plan: Plan) -> str:
    """The plan's JSON: keys sorted, two-space indents, UTF-8 text as it is."""
    return json_text(dumps_sorted(plan.as_dict(), ensure_ascii=False) + "\n")
