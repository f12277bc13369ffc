"""Aggregation: identical pending requests as one class, interchangeable
preemption candidates as one victim class.

Why: a class is an integer count per eligible policy and a victim class one
preempted count, so many requests of a few dozen shapes become a few
thousand integers, not a 0/1 choice per request and policy, and the symmetric
choices that would stall the proof disappear. Members are kept in the order the hand-out takes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...domain.eligibility import eligible_policies, metered_demand
from ...domain.problem import PolicyRule, Problem, Request, Running

_ClassKey = tuple[str, tuple[tuple[str, int], ...], bool, tuple]


@dataclass
class RequestClass:
    """Identical pending requests, eligible through the same policies."""

    requester: str
    preemptible: bool
    members: list[Request]                 # by arrival rank
    policies: list[PolicyRule]             # eligible, in preference order (eligible_policies)
    demands: list[dict[str, int]]          # per policy: metered demand in its pool


@dataclass
class VictimClass:
    """Interchangeable preemption candidates: same policy, same metered holdings."""

    policy: PolicyRule
    holds: dict[str, int]
    members: list[Running]                 # most recently started first
    borrows: tuple[str, ...] = ()          # the metered keys each member borrows on (section 3)


def request_classes(problem: Problem) -> list[RequestClass]:
    groups: dict[_ClassKey, list[Request]] = {}
    for req in problem.requests:
        demand = tuple(sorted((k, v) for k, v in req.demand.items() if v > 0))
        groups.setdefault((req.requester, demand, req.preemptible, req.placement), []).append(req)
    classes = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda r: (r.rank, r.id))
        policies, _ = eligible_policies(problem, members[0])
        if not policies:
            continue  # rejected or unmanaged: never admitted
        demands = [metered_demand(problem.pool(q.pool), members[0].demand) for q in policies]
        classes.append(RequestClass(key[0], key[2], members, policies, demands))
    return classes


def metered_holds(problem: Problem, alloc: Running) -> dict[str, int]:
    pool = problem.pool(alloc.pool)
    return {k: v for k, v in sorted(alloc.holds.items()) if v > 0 and pool.metered(k)}


def victim_classes(problem: Problem, borrowed: dict[str, dict[str, int]]) -> list[VictimClass]:
    """Preemptible, borrowing allocations grouped by policy, metered holdings and the
    keys they borrow on (a victim may only be taken for a key it borrows on, so
    members of one class must agree on those)."""
    groups: dict[tuple[str, tuple[tuple[str, int], ...], tuple[str, ...]], list[Running]] = {}
    policies: dict[str, PolicyRule] = {}
    for alloc in known_running(problem):
        policy = problem.policy_for(alloc.subject, alloc.pool)
        if policy is None or not alloc.preemptible:
            continue
        holds = metered_holds(problem, alloc)
        borrows = tuple(sorted(k for k, v in borrowed.get(alloc.name, {}).items() if v > 0 and k in holds))
        if not borrows:
            continue
        policies[policy.name] = policy
        groups.setdefault((policy.name, tuple(holds.items()), borrows), []).append(alloc)
    return [VictimClass(policies[name], dict(holds),
                        sorted(groups[(name, holds, borrows)], key=lambda a: (-a.start_rank, a.name)), borrows)
            for name, holds, borrows in sorted(groups)]


def known_running(problem: Problem) -> list[Running]:
    """The running allocations on the problem's pools, by name."""
    pools = {p.name for p in problem.pools}
    return sorted((a for a in problem.running if a.pool in pools), key=lambda a: a.name)
