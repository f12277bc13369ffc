"""Which policies may admit a request, and why not (docs/planning.md, "Eligibility").

A request is eligible through a policy of its requester when, on every key the
pool meters (plus custom keys the pool lacks, which have capacity 0 there), it
needs no more than the pool's capacity and the policy's limit, and, when it is
non-preemptible, no more than the policy's reserved share. These are static
facts: `validate` rejects a step eligible nowhere (R003/R004) and the planners
only ever place a request through a policy listed here. One sentence per rule is
written here once, so validate and the plan say the same thing.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass

from .problem import BUILTIN_UNBOUNDED, PolicyRule, Pool, Problem, Request

CAPACITY, LIMIT, RESERVED = "capacity", "limit", "reserved"
R003, R004 = "R003", "R004"


def metered_demand(pool: Pool, demand: Mapping[str, int]) -> dict[str, int]:
    """The part of a demand a pool checks: its metered keys, plus custom keys it
    does not meter (capacity 0 there); unmetered built-in keys are ignored."""
    return {k: v for k, v in demand.items()
            if v > 0 and (pool.metered(k) or k not in BUILTIN_UNBOUNDED)}


@dataclass(frozen=True)
class Ineligibility:
    """Why a request cannot use one policy's pool: the first failing rule."""

    policy: PolicyRule
    rule: str          # CAPACITY, LIMIT or RESERVED
    key: str
    needs: int
    allowed: int

    def sentence(self) -> str:
        """A zero capacity or limit is said as such: a written 0 forbids the key,
        and "limits gpu to 0" would read like a rounding accident."""
        if self.rule == CAPACITY and self.allowed == 0:
            return (f"pool '{self.policy.pool}' has no {self.key} (capacity {self.key}=0; "
                    f"needs {self.needs})")
        if self.rule == CAPACITY:
            return (f"pool '{self.policy.pool}' has {self.key}={self.allowed} in all "
                    f"(needs {self.needs})")
        if self.rule == LIMIT and self.allowed == 0:
            return (f"policy '{self.policy.name}' forbids {self.key} on pool '{self.policy.pool}' "
                    f"(limit {self.key}=0; needs {self.needs})")
        if self.rule == LIMIT:
            return (f"policy '{self.policy.name}' limits {self.key} to {self.allowed} on pool "
                    f"'{self.policy.pool}' (needs {self.needs})")
        return (f"policy '{self.policy.name}' reserves only {self.key}={self.allowed} on pool "
                f"'{self.policy.pool}' (a non-preemptible step needs {self.needs} inside the reserved share)")


def check_policy(pool: Pool, policy: PolicyRule, demand: Mapping[str, int],
                 preemptible: bool) -> Ineligibility | None:
    """Eligibility of one request for one policy's pool; None if eligible."""
    for key, need in sorted(metered_demand(pool, demand).items()):
        cap = pool.capacity.get(key, 0)
        if need > cap:
            return Ineligibility(policy, CAPACITY, key, need, cap)
        lim = policy.limit.get(key, cap)
        if need > lim:
            return Ineligibility(policy, LIMIT, key, need, lim)
        if not preemptible and need > policy.rsv(key):
            return Ineligibility(policy, RESERVED, key, need, policy.rsv(key))
    return None


# Eligibility depends only on (requester, demand, preemptible), and a plan of 10,000
# steps asks about a few hundred such shapes several times each (checks, planner,
# explanations): remember the answers per Problem, for as long as it lives.
_Shape = tuple[str, tuple[tuple[str, int], ...], bool]
_memo: dict[int, tuple[weakref.ref, dict[_Shape, tuple[list[PolicyRule], list[Ineligibility]]]]] = {}


def _answers(problem: Problem) -> dict[_Shape, tuple[list[PolicyRule], list[Ineligibility]]]:
    """The memo of one Problem (dropped with it; ids are only trusted while it lives)."""
    key = id(problem)
    found = _memo.get(key)
    if found is None or found[0]() is not problem:

        def forget(_: weakref.ref) -> None:
            _memo.pop(key, None)

        found = (weakref.ref(problem, forget), {})
        _memo[key] = found
    return found[1]


def eligible_policies(problem: Problem, request: Request) -> tuple[list[PolicyRule], list[Ineligibility]]:
    """(policies the request may be placed through, reasons for the others)."""
    memo = _answers(problem)
    shape = (request.requester, tuple(sorted(request.demand.items())), request.preemptible)
    found = memo.get(shape)
    if found is None:
        ok, why = [], []
        for q in problem.policies_of(request.requester):
            reason = check_policy(problem.pool(q.pool), q, request.demand, request.preemptible)
            (why.append(reason) if reason else ok.append(q))
        found = memo[shape] = (ok, why)
    return list(found[0]), list(found[1])


def rejection(step: str, reasons: list[Ineligibility]) -> tuple[str, str]:
    """(rule id, sentence) for a step eligible on no pool: R004 when only the
    non-preemptible share stands in the way everywhere, else R003. ``reasons`` is
    not empty (a requester without any policy is unmanaged, not rejected)."""
    only_share = all(r.rule == RESERVED for r in reasons)
    rule = R004 if only_share else R003
    if only_share and len(reasons) == 1:
        r = reasons[0]
        return rule, (f"step {step!r} is non-preemptible and asks {r.key}={r.needs}, but policy "
                      f"{r.policy.name!r} reserves only {r.key}={r.allowed}; it can never be "
                      "admitted: reserve more, or make the step preemptible")
    why = "; ".join(r.sentence() for r in reasons)
    fix = "reserve more, or make the step preemptible" if only_share else "ask for less, or raise the capacity or limit"
    return rule, f"step {step!r} is eligible on no pool: {why}; it can never be admitted: {fix}"
