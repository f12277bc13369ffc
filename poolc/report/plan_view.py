"""What a reviewer reads in a plan, decided once for the text plan and the
pull-request comment: what the change does (against a base plan), who loses
running work, which steps wait and why, and, where the cluster will do
otherwise than the plan, one entry per step saying what will really happen.

Names are the ones people use: a step id rather than the allocation name
derived from it, the pipeline's team beside it, amounts in GPU/cores/GiB.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..domain.amounts import Units
from ..domain.change import ABSENT, BaseComparison, InputChange
from ..domain.plan import Plan, PlannedRequest
from ..domain.said import Amount, KeyWords, Said

# what the cluster will do, in words, by the runtime difference's cluster outcome
_CLUSTER_WILL = {"pending": "stays pending", "admitted": "runs", "running": "keeps running",
                 "preempted": "is preempted"}
_PLAN_SAID = {"allocated": "allocated", "queued": "queued", "running": "keeps running", "preempted": "preempted"}


@dataclass(frozen=True)
class Who:
    """A step (or a hand-written allocation) as people name it."""

    name: str                 # step id, else the allocation's name
    team: str | None
    allocation: str | None    # the allocation name, when it is what the plan names

    def label(self) -> str:
        return self.name + (f" ({self.team})" if self.team else "")


def say(plan: Plan, said: Said) -> str:
    """A plan message as people read it: every amount in the plan's unit family
    (``gpu=4, mcpu=16000`` -> ``4 GPU, 16 cores``; ``holds 336000 of 384000 mcpu``
    -> ``holds 336 cores of 384 cores``; ``memory_mb: needs 200000, free 0`` ->
    ``memory: needs 200 GB, free 0``; ``preempted ... on gpu, mcpu`` -> ``on GPU, CPU``)
    and a step's own allocation named as its run (the JSON keeps the canonical text).
    The planner marked the parts (``domain.said``); an amount or a key the platform
    does not meter is left as written."""
    metered = _metered(plan)
    units = plan.units
    words = []
    for part in said.parts:
        if isinstance(part, str):
            words.append(part)
        elif isinstance(part, Amount):
            key = part.key_among(metered)
            words.append(units.amount(key, part.value) if key is not None else part.text)
        elif isinstance(part, KeyWords):
            words.append(part.human if part.worded(metered) else part.text)
        else:
            words.append(part.human if plan.step_of_allocation(part.allocation) else part.text)
    return "".join(words)


def _metered(plan: Plan) -> frozenset[str]:
    """The keys the plan's pools meter, and the four every platform has."""
    return frozenset({key for pool in plan.pools for key in pool.capacity} | {"gpu", "mcpu", "memory_mb", "step_run"})


def who(plan: Plan, name: str) -> Who:
    """A request id or an allocation name, as the step it stands for."""
    if "/" in name:                       # a step id (an allocation name is a DNS label)
        return Who(name, plan.team_of(name), None)
    step = plan.step_of_allocation(name)
    if step is not None:
        return Who(step, plan.team_of(step), name)
    return Who(name, plan.team_of_allocation(name), name)


@dataclass(frozen=True)
class ClusterDifference:
    who: Who
    cluster: str              # what the cluster will do, in words
    plan: str                 # what the plan said
    why: str


def cluster_differences(plan: Plan) -> list[ClusterDifference]:
    """Where the cluster will do otherwise than the plan: the one truth about each such step."""
    if plan.runtime is None:
        return []
    return [ClusterDifference(who(plan, x.id), _CLUSTER_WILL.get(x.cluster, x.cluster), _PLAN_SAID.get(x.plan, x.plan),
                              say(plan, x.message)) for x in plan.runtime.differences]


def _kept_by_cluster(plan: Plan) -> set[str]:
    if plan.runtime is None:
        return set()
    ids = {x.id for x in plan.runtime.differences}
    return ids | {step for step in map(plan.step_of_allocation, ids) if step is not None}


@dataclass(frozen=True)
class Stopped:
    """Running work the plan preempts (and the cluster will too)."""

    who: Who
    pool: str
    for_: tuple[str, ...]
    why: str


def preempted(plan: Plan) -> list[Stopped]:
    """The plan's preemptions, less those the cluster will not carry out (those
    are cluster differences, said once there)."""
    kept = _kept_by_cluster(plan)
    return [Stopped(who(plan, p.id), p.pool, p.for_, say(plan, p.message)) for p in plan.preempted
            if p.id not in kept]


def waiting(plan: Plan) -> list[PlannedRequest]:
    """Queued steps, less those the cluster will run anyway (said once, as a
    cluster difference) and running steps the plan preempts (said once, as preempted)."""
    kept = _kept_by_cluster(plan)
    stopped = {plan.step_of_allocation(p.id) for p in plan.preempted}
    return [r for r in plan.by_status("queued") if r.id not in kept and r.id not in stopped]


def demand(plan: Plan, request: PlannedRequest) -> str:
    return plan.units.amounts(request.demand)


# --- the change against a base plan -------------------------------------------------

_KIND_WORD = {"ResourcePool": "pool", "Policy": "policy", "Pipeline": "pipeline", "Stack": "stack",
              "Allocation": "allocation"}
_CHANGE_WORD = {"create": "added", "delete": "removed", "update": "changed"}


def _value(path: str, value: object, units: Units) -> str:
    """A field's value in users' units where its last part is a resource key."""
    key = path.rsplit(".", 1)[-1]
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "preemptible" if value and key == "preemptible" else \
            "non-preemptible" if key == "preemptible" else str(value)
    if isinstance(value, int) and (".capacity." in path or ".reserved." in path or ".limit." in path
                                   or ".demand." in path):
        return units.amount(key, value)
    return str(value)


def _field_name(kind: str, path: str) -> str:
    """``spec.limit.gpu`` -> ``limit``; a pipeline's ``spec.steps.train.demand.gpu`` -> ``train demand``."""
    parts = path.split(".")
    if kind == "Pipeline" and len(parts) >= 4 and parts[1] == "steps":
        return f"step {parts[2]} " + (parts[3] if parts[3] != "demand" else "demand")
    return parts[1] if len(parts) > 1 else path


def input_sentence(change: InputChange, units: Units) -> tuple[str, str, str]:
    """(kind word, name, what changed) for one changed input."""
    kind = _KIND_WORD.get(change.kind, change.kind)
    if change.change != "update":
        return kind, change.name, _CHANGE_WORD.get(change.change, change.change)
    if not change.fields:       # the plans record no field of it: say so rather than nothing
        return kind, change.name, "changed (a field the plans do not record, such as an image or a namespace)"
    parts = []
    whole = _whole_steps(change)
    for step, side in whole.items():
        demand = {path.rsplit(".", 1)[-1]: values[side] for path, values in change.fields.items()
                  if path.startswith(f"spec.steps.{step}.demand.") and isinstance(values[side], int)}
        asks = f" ({units.amounts(demand)})" if demand else ""
        parts.append(f"step {step} {'added' if side else 'removed'}{asks}")
    for path, (old, new) in change.fields.items():
        if _step_of(path) not in whole:
            parts.append(f"{_field_name(change.kind, path)} {_value(path, old, units)} → {_value(path, new, units)}")
    return kind, change.name, "; ".join(parts)


def _step_of(path: str) -> str | None:
    parts = path.split(".")
    return parts[2] if len(parts) >= 4 and parts[:2] == ["spec", "steps"] else None


def _whole_steps(change: InputChange) -> dict[str, int]:
    """A pipeline's steps one side does not have at all: step -> the side that has
    it (1: added, 0: removed), so a new step is one "added", not a clause per field."""
    sides: dict[str, set[int]] = {}
    for path, (old, new) in change.fields.items():
        step = _step_of(path)
        if change.kind == "Pipeline" and step is not None:
            sides.setdefault(step, set()).add(2 if old is not None and new is not None else 1 if old is None else 0)
    return {step: 1 if found == {1} else 0 for step, found in sides.items() if found in ({0}, {1})}


@dataclass(frozen=True)
class FateChange:
    who: Who
    before: str
    after: str
    why: str                  # the head plan's message for the step (why it now waits, why it is rejected)


def _preemption_steps(plan: Plan, names: Iterable[str]) -> set[str]:
    return {step for step in map(plan.step_of_allocation, names) if step is not None}


def fate_changes(plan: Plan, base: BaseComparison, covered: frozenset[str] = frozenset()) -> list[FateChange]:
    """Every step whose fate the change alters; a running step the change now
    preempts reads ``running -> preempted``, one it no longer preempts
    ``preempted -> keeps running`` (the JSON says queued/allocated)."""
    by_id = {r.id: r for r in plan.requests}
    now_preempted = _preemption_steps(plan, base.preempted.added)
    spared = _preemption_steps(plan, base.preempted.removed)
    rows = []
    for step in base.steps:
        if step.id in covered:          # its running work ends: said once, with why
            continue
        request = by_id.get(step.id)
        why = "" if request is None else (f"[{request.reason}] " if request.status == "rejected" and request.reason
                                           else "") + say(plan, request.message)
        before, after = step.base, step.head
        if step.id in now_preempted:
            before, after = "running", "preempted"
        elif step.id in spared:
            before, after = "preempted", "keeps running"
        rows.append(FateChange(Who(step.id, plan.team_of(step.id), None), before, after,
                               why if step.head != ABSENT else "no longer in the configuration"))
    return rows


def spared_allocations(plan: Plan, base: BaseComparison) -> list[Who]:
    """Running allocations written by hand (no step) the base preempted and this change does not."""
    return [who(plan, name) for name in base.preempted.removed if plan.step_of_allocation(name) is None]


# the order effects are told in: steps that lose first, then gains
_WORSE = {"allocated": 0, "queued": 1, "rejected": 2, ABSENT: 1}


def moves(plan: Plan, base: BaseComparison, covered: set[str]) -> list[str]:
    """``1 step allocated → queued``, ``2 new steps queued``: each move of a step's fate,
    counted, the losses first; steps in ``covered`` (said already), preempted
    steps and those no longer preempted are left out."""
    covered = covered | _preemption_steps(plan, base.preempted.added) | \
        _preemption_steps(plan, base.preempted.removed)
    counted: dict[tuple[str, str], int] = {}
    for step in base.steps:
        if step.id not in covered:
            counted[step.base, step.head] = counted.get((step.base, step.head), 0) + 1

    def loss(move: tuple[str, str]) -> int:
        before, after = move
        return 0 if before == ABSENT else _WORSE[after] - _WORSE.get(before, 0)

    parts = []
    for (before, after), count in sorted(counted.items(), key=lambda item: (-loss(item[0]), item[0])):
        steps = "step" if count == 1 else "steps"
        if before == ABSENT:
            parts.append(f"{count} new {steps} {after}")
        elif after == ABSENT:
            parts.append(f"{count} {steps} removed")
        else:
            parts.append(f"{count} {steps} {before} → {after}")
    return parts


def counts(plan: Plan) -> str:
    c = {s: len(plan.by_status(s)) for s in ("allocated", "queued", "rejected")}
    return (f"{c['allocated']} allocated, {c['queued']} queued, {c['rejected']} rejected, "
            f"{len(plan.preempted)} preempted")


def resized_word(plan: Plan, allocation: str) -> str:
    """What apply does to a released allocation: ``restarts resized`` when its step is
    admitted again, else ``stops (resized, waits)`` or ``stops (resized, rejected)``."""
    step = plan.step_of_allocation(allocation)
    status = next((r.status for r in plan.requests if r.id == step), None)
    if status == "allocated":
        return "restarts resized"
    return f"stops (resized, {'waits' if status == 'queued' else status or 'gone'})"
