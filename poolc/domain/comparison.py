"""Two plans compared: the pull request's against its base branch's, both made
against the same state (`plan --base`), into the values of `change.py`.

Why apart from those values: the `Plan` holds its comparison (`Plan.base`), so
the values sit below the Plan and this comparison above it; one module for both
would import the Plan and be imported by it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..vocabulary import ChangeAction
from .change import ABSENT, BaseComparison, InputChange, Moves, PolicyChange, StepChange
from .naming import allocation_name
from .plan import Plan

_STATE = "state/"        # the inputs digest's prefix of the state's entries


def state_difference(base: Plan, head_inputs: Mapping[str, str]) -> str | None:
    """None when the base plan was made against the state ``head_inputs`` record
    (``state/<allocation>`` -> digest); else what differs, as a clause."""
    if base.inputs is None:
        return "it does not record its inputs (made by an older poolc)"
    theirs = {k: v for k, v in base.inputs.items() if k.startswith(_STATE)}
    ours = {k: v for k, v in head_inputs.items() if k.startswith(_STATE)}
    if theirs == ours:
        return None
    differing = sorted(k[len(_STATE):] for k in theirs.keys() | ours.keys() if theirs.get(k) != ours.get(k))
    shown = ", ".join(differing[:5]) + (f" and {len(differing) - 5} more" if len(differing) > 5 else "")
    return f"it was made against another state ({len(differing)} running allocation(s) differ: {shown})"


def compare(base: Plan, head: Plan, victim_policy: Callable[[str], str | None] = lambda name: None
            ) -> BaseComparison:
    """``head`` against ``base``; ``victim_policy`` names the policy of a running
    allocation no step of a plan stands for (an allocation written by hand)."""
    return BaseComparison(
        inputs_digest=base.inputs_digest,
        inputs=_inputs(base, head),
        steps=_steps(base, head),
        preempted=_moves({p.id for p in base.preempted}, {p.id for p in head.preempted}),
        policies=_policies(base, head, victim_policy),
        ends=_moves(_ends(base), _ends(head)))


def _moves(base: set[str], head: set[str]) -> Moves:
    return Moves(added=tuple(sorted(head - base)), removed=tuple(sorted(base - head)))


def _ends(plan: Plan) -> set[str]:
    """Running allocations whose work a plan ends other than by preemption: released
    because their step changed (resized, or no longer admitted), stopped because
    their step is gone, or restarted because their Job changed (or may be)."""
    if plan.changes is None:
        return set()
    a = plan.changes.allocations
    preempted = {p.id for p in plan.preempted}
    return set(a.resized) | set(a.restarted) | set(a.restart_unknown) | (set(a.removed) - preempted)


def _steps(base: Plan, head: Plan) -> tuple[StepChange, ...]:
    before = {r.id: r.status for r in base.requests}
    after = {r.id: r.status for r in head.requests}
    return tuple(StepChange(rid, before.get(rid, ABSENT), after.get(rid, ABSENT))
                 for rid in sorted(before.keys() | after.keys()) if before.get(rid) != after.get(rid))


def _counts(plan: Plan, victim_policy: Callable[[str], str | None]) -> dict[str, list[int]]:
    """policy -> [admitted, queued, preempted] in one plan."""
    found: dict[str, list[int]] = {q.name: [0, 0, 0] for q in plan.policies}
    for request in plan.requests:
        if request.policy is not None and request.status in ("allocated", "queued"):
            found.setdefault(request.policy, [0, 0, 0])[0 if request.status == "allocated" else 1] += 1
    steps = {allocation_name(r.id): r.policy for r in plan.requests}
    for victim in plan.preempted:
        policy = steps.get(victim.id) or victim_policy(victim.id)
        if policy is not None:
            found.setdefault(policy, [0, 0, 0])[2] += 1
    return found


def _policies(base: Plan, head: Plan, victim_policy: Callable[[str], str | None]) -> tuple[PolicyChange, ...]:
    before, after = _counts(base, victim_policy), _counts(head, victim_policy)
    changes = []
    for name in sorted(before.keys() | after.keys()):
        old, new = before.get(name, [0, 0, 0]), after.get(name, [0, 0, 0])
        if old != new:
            changes.append(PolicyChange(name, (old[0], new[0]), (old[1], new[1]), (old[2], new[2])))
    return tuple(changes)


def _documents(plan: Plan) -> dict[str, str]:
    return {k: v for k, v in (plan.inputs or {}).items() if not k.startswith(_STATE)}


def _inputs(base: Plan, head: Plan) -> tuple[InputChange, ...]:
    before, after = _documents(base), _documents(head)
    changes = []
    for key in sorted(before.keys() | after.keys()):
        if before.get(key) == after.get(key):
            continue
        kind, _, name = key.partition("/")
        change: ChangeAction = "create" if key not in before else "delete" if key not in after else "update"
        changes.append(InputChange(kind, name, change, _fields(kind, name, base, head)))
    return tuple(changes)


def _fields(kind: str, name: str, base: Plan, head: Plan) -> dict[str, tuple[Any, Any]]:
    """Dotted path -> (old, new) for what both plans record of the document."""
    def recorded(plan: Plan) -> dict[str, Any]:
        if kind == "Policy":
            return next((_flat("spec", {"pool": q.pool, "priority": q.priority, "reserved": dict(q.reserved),
                                        "limit": dict(q.limit)}) for q in plan.policies if q.name == name), {})
        if kind == "ResourcePool":
            return next((_flat("spec.capacity", dict(p.capacity)) for p in plan.pools if p.name == name), {})
        if kind == "Pipeline":
            found: dict[str, Any] = {}
            for r in plan.requests:
                pipeline, _, step = r.id.partition("/")
                if pipeline == name:
                    found.update(_flat(f"spec.steps.{step}", {"demand": dict(r.demand), "preemptible": r.preemptible,
                                                              "requester": r.requester}))
            return found
        return {}

    old, new = recorded(base), recorded(head)
    return {path: (old.get(path), new.get(path)) for path in sorted(old.keys() | new.keys())
            if old.get(path) != new.get(path)}


def _flat(prefix: str, data: Mapping[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}.{key}"
        if isinstance(value, Mapping):
            found.update(_flat(path, value))
        else:
            found[path] = value
    return found
