"""The Plan: the typed value every later stage takes (apply, the state, the targets
and every renderer), and its JSON form (`poolc plan --format json`, the PLANFILE).

A plan says, for every step, whether it is allocated (on which pool, through
which policy, borrowing what), queued (and why) or rejected (and why); which
running allocations are preempted and for whom; each pool's capacity, use and
free room; the diagnostics; and the solver's verdict. The JSON is byte-identical
for the same inputs on every run and machine: lists sorted by id/name, map keys
sorted, no timings. ``plan_file.read_plan`` reads back what ``to_json`` wrote.

``free`` is ``capacity - used`` and may be negative: running allocations can
already hold more than a pool's capacity; such a pool admits nothing that needs
the over-full key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, get_args

from ..diagnostics import Diagnostic
from ..text.escape import json_text
from ..text.jsontext import dumps_sorted
from ..vocabulary import Strategy, SubmitMode
from .amounts import DEFAULT, Units
from .change import BaseComparison
from .naming import allocation_name

# The plan file's version and vocabularies, each declared once: the typed model a plan
# file is read through (plan_file) takes these types, the writers these values.
PlanVersion = Literal[1]
FORMAT_VERSION: int = get_args(PlanVersion)[0]
ALLOCATED, QUEUED, REJECTED = "allocated", "queued", "rejected"
STATUSES = (ALLOCATED, QUEUED, REJECTED)
UNMANAGED = "UNMANAGED"


class PlanFormatError(ValueError):
    """A plan file that is not a plan this poolc wrote; the message says what is wrong."""


@dataclass(frozen=True)
class PlannedRequest:
    id: str
    requester: str | None
    preemptible: bool
    demand: Mapping[str, int]
    status: str                       # allocated | queued | rejected
    pool: str | None
    policy: str | None
    borrowed: Mapping[str, int]
    reason: str | None                # rejected: a rule id; queued: the binding rule's text; UNMANAGED; else None
    message: str
    running: str | None = None        # the allocation that already runs this step (not in the JSON)

    def as_dict(self) -> dict:
        return {"id": self.id, "requester": self.requester, "preemptible": self.preemptible,
                "demand": dict(self.demand), "status": self.status, "pool": self.pool, "policy": self.policy,
                "borrowed": dict(self.borrowed), "reason": self.reason, "message": self.message}


@dataclass(frozen=True)
class External:
    """A running allocation of work poolc did not write (a foreign Kueue Workload),
    counted against its queue's policy and pool."""

    name: str
    policy: str
    pool: str
    holds: Mapping[str, int]

    def as_dict(self) -> dict:
        return {"name": self.name, "policy": self.policy, "pool": self.pool, "holds": dict(self.holds)}


@dataclass(frozen=True)
class Preemption:
    id: str                           # the running allocation's name
    pool: str
    for_: tuple[str, ...]             # request ids it makes room for, sorted
    message: str
    workload: str | None = None       # the Kueue Workload apply stops, <namespace>/<name>, when known
    subject: str | None = None        # the component it runs under: the team of work that is no step's

    def as_dict(self) -> dict:
        found = {"id": self.id, "pool": self.pool, "for": list(self.for_), "message": self.message}
        if self.workload is not None:
            found["workload"] = self.workload
        if self.subject is not None:
            found["subject"] = self.subject
        return found


@dataclass(frozen=True)
class PoolUsage:
    name: str
    capacity: Mapping[str, int]
    used: Mapping[str, int]
    free: Mapping[str, int]           # capacity - used; negative on an over-full pool

    def as_dict(self) -> dict:
        return {"name": self.name, "capacity": dict(self.capacity), "used": dict(self.used),
                "free": dict(self.free)}


@dataclass(frozen=True)
class PolicyUsage:
    """One policy on its pool, per metered key, once the plan is carried out: its
    reserved share and limit (from the configuration, so a saved plan can show
    them), what its steps hold (running and admitted) and how much of that lies
    above the reserved share."""

    name: str
    pool: str
    priority: int
    reserved: Mapping[str, int]
    limit: Mapping[str, int]
    used: Mapping[str, int]
    borrowed: Mapping[str, int]

    def as_dict(self) -> dict:
        return {"name": self.name, "pool": self.pool, "priority": self.priority, "reserved": dict(self.reserved),
                "limit": dict(self.limit), "used": dict(self.used), "borrowed": dict(self.borrowed)}


@dataclass(frozen=True)
class Tier:
    """What one objective value counts: ``in-share``, ``admitted`` (at
    ``priority``), ``preempted`` (at ``priority``), ``arrival``, ``start-rank`` or
    ``preference``; the report layer says it in words."""

    kind: str
    priority: int | None = None
    bound: int | None = None          # the best bound the solver proved (the value itself when proven)

    def as_dict(self) -> dict:
        found: dict[str, Any] = {"kind": self.kind, "priority": self.priority}
        if self.bound is not None:
            found["bound"] = self.bound
        return found

    def gap(self, value: int) -> float:
        """How far the bound is from ``value``, relative (0.0 when proven or unknown)."""
        return 0.0 if self.bound is None else abs(self.bound - value) / max(1, abs(value))




@dataclass(frozen=True)
class SolverInfo:
    strategy: Strategy
    status: str
    objective: tuple[int, ...]
    gap: float
    tiers: tuple[Tier, ...] = ()      # what each objective value counts; () when unknown (zenml, kueue)
    in_share: tuple[str, ...] = ()    # new grants counted inside their reserved share (optimal), sorted

    def as_dict(self) -> dict:
        found: dict[str, Any] = {"strategy": self.strategy, "status": self.status,
                                 "objective": list(self.objective), "gap": float(self.gap)}
        if self.in_share:   # `apply --plan` orders new grants by it without solving again
            found["in_share"] = list(self.in_share)
        if self.tiers:
            found["tiers"] = [{**t.as_dict(), **({} if t.bound is None else
                                                 {"proven": t.bound == value, "gap": t.gap(value)})}
                              for t, value in zip(self.tiers, self.objective, strict=True)]
        return found


@dataclass(frozen=True)
class FileChange:
    """A generated file the plan would create, update or delete."""

    path: str         # relative to the output directory
    action: str       # create | update | delete

    def as_dict(self) -> dict:
        return {"path": self.path, "action": self.action}


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

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    resized: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    restarted: tuple[str, ...] = ()
    restart_unknown: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        found = {"added": list(self.added), "removed": list(self.removed), "resized": list(self.resized),
                 "unchanged": list(self.unchanged)}
        if self.restarted:
            found["restarted"] = list(self.restarted)
        if self.restart_unknown:
            found["restart_unknown"] = list(self.restart_unknown)
        return found


@dataclass(frozen=True)
class PlanChanges:
    """What applying the plan changes against the state: allocations, generated files
    (sorted by path) and the state file (``create``, ``update`` or None: unchanged).
    ``extra``: keys a newer poolc wrote into a saved plan's section, kept as they are."""

    allocations: AllocationChanges = AllocationChanges()
    files: tuple[FileChange, ...] = ()
    state: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def any(self) -> bool:
        """Anything changes: an allocation starts, stops or is resized, a file or the state."""
        a = self.allocations
        return bool(a.added or a.removed or a.resized or self.files or self.state)

    def as_dict(self) -> dict:
        return {**self.extra, "allocations": self.allocations.as_dict(),
                "files": [x.as_dict() for x in self.files], "state": self.state}


@dataclass(frozen=True)
class RuntimeDifference:
    """A request or running allocation for which the cluster will do otherwise."""

    id: str           # request id, or allocation name
    plan: str         # allocated | queued | running | preempted
    cluster: str      # admitted | pending | running | preempted
    message: str

    def as_dict(self) -> dict:
        return {"id": self.id, "plan": self.plan, "cluster": self.cluster, "message": self.message}


@dataclass(frozen=True)
class Runtime:
    """What the cluster's own scheduler will do with what apply writes, against the plan."""

    engine: str                                   # "kueue"
    differences: tuple[RuntimeDifference, ...]    # sorted by id
    notes: tuple[str, ...] = ()                   # where the cluster cannot follow poolc by construction
    stopped: str = ""                             # why the replay stopped before it settled ("" if it did)
    submit: SubmitMode = "gate"                   # how apply hands Jobs to the cluster

    @property
    def agrees(self) -> bool:
        return not self.differences

    def as_dict(self) -> dict:
        found: dict[str, Any] = {"engine": self.engine, "submit": self.submit, "agrees": self.agrees,
                                 "differences": [x.as_dict() for x in self.differences]}
        if self.notes:
            found["notes"] = list(self.notes)
        if self.stopped:
            found["stopped"] = self.stopped
        return found


@dataclass(frozen=True)
class Plan:
    inputs_digest: str
    requests: tuple[PlannedRequest, ...]      # sorted by id
    preempted: tuple[Preemption, ...]         # sorted by id
    pools: tuple[PoolUsage, ...]              # sorted by name
    diagnostics: tuple[Diagnostic, ...]
    solver: SolverInfo
    changes: PlanChanges | None = None        # what applying it changes; None when the state was unreadable
    runtime: Runtime | None = None
    finished: tuple[str, ...] = ()            # steps released as finished, not requested again
    inputs: Mapping[str, str] | None = None   # "<Kind>/<name>" -> digest of that input (stale plans name it)
    policies: tuple[PolicyUsage, ...] = ()    # sorted by name
    external: tuple[External, ...] = ()       # foreign work the cluster runs through poolc's queues, by name
    # pipeline -> its team (metadata.labels.team), for the people reading the plan
    teams: Mapping[str, str] = field(default_factory=dict)
    base: BaseComparison | None = None        # what the change does against a base plan (`plan --base`)
    units: Units = DEFAULT                    # how people read its quantities (domain.amounts)

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

    def by_status(self, status: str) -> list[PlannedRequest]:
        return [r for r in self.requests if r.status == status]

    def as_dict(self) -> dict:
        return {
            "format_version": FORMAT_VERSION,
            "inputs_digest": self.inputs_digest,
            "requests": [{**r.as_dict(), "team": self.team_of(r.id)} for r in self.requests],
            "preempted": [p.as_dict() for p in self.preempted],
            "pools": [p.as_dict() for p in self.pools],
            "policies": [q.as_dict() for q in self.policies],
            "diagnostics": [{"file": x.file, "line": x.line, "column": x.column, "rule": x.rule,
                             "severity": x.severity, "message": x.message} for x in self.diagnostics],
            "solver": self.solver.as_dict(),
            **({"changes": self.changes.as_dict()} if self.changes is not None else {}),
            **({"runtime": self.runtime.as_dict()} if self.runtime is not None else {}),
            **({"finished": list(self.finished)} if self.finished else {}),
            **({"external": [x.as_dict() for x in self.external]} if self.external else {}),
            **({"inputs": dict(self.inputs)} if self.inputs is not None else {}),
            **({"teams": dict(sorted(self.teams.items()))} if self.teams else {}),
            **({"base": self.base.as_dict()} if self.base is not None else {}),
            **({"units": self.units.as_dict()} if self.units != DEFAULT else {}),
        }


def to_json(plan: Plan) -> str:
    """The plan's JSON: keys sorted, two-space indents, UTF-8 text as it is."""
    return json_text(dumps_sorted(plan.as_dict(), ensure_ascii=False) + "\n")
