"""The planner's input: pools, policies, pending requests and running allocations,
normalized to integer units on metered keys (docs/planning.md).

This module is pure data + the rules both strategies share (eligibility, the
borrowed part of running allocations). It never imports the solver, so
`validate` can use eligibility for its rejection diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Mapping

# Keys that are unbounded in a pool that has no row for them (docs/format.md#metered-keys).
BUILTIN_UNBOUNDED = ("mcpu", "memory_mb", "step_run")


@dataclass(frozen=True)
class Pool:
    name: str
    capacity: Mapping[str, int]  # metered keys only, every value > 0

    def metered(self, key: str) -> bool:
        return key in self.capacity


@dataclass(frozen=True)
class PolicyRule:
    """A policy q = (subject, pool) with reserved/limit on the pool's metered keys.

    ``limit`` holds every metered key (default: the capacity); ``reserved`` holds
    only keys with a positive reservation (default 0)."""

    name: str
    subject: str
    pool: str
    priority: int
    reserved: Mapping[str, int]
    limit: Mapping[str, int]

    def rsv(self, key: str) -> int:
        return self.reserved.get(key, 0)


@dataclass(frozen=True)
class Request:
    id: str                      # "<pipeline>/<step>"
    requester: str               # component name
    demand: Mapping[str, int]    # request keys, step_run included
    preemptible: bool
    rank: int                    # arrival rank, 0 = first


@dataclass(frozen=True)
class Running:
    """A running allocation (an Allocation document)."""

    name: str
    subject: str
    pool: str
    preemptible: bool
    holds: Mapping[str, int]
    started_at: datetime | None
    start_rank: int = 0          # 0 = started earliest (missing started_at = earliest, then name)


@dataclass(frozen=True)
class Problem:
    pools: tuple[Pool, ...]
    policies: tuple[PolicyRule, ...]
    requests: tuple[Request, ...]
    running: tuple[Running, ...] = ()
    _by_pool: dict = field(default=None, compare=False, repr=False)
    _by_subject: dict = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_pool", {p.name: p for p in self.pools})
        by_subject: dict[str, list[PolicyRule]] = {}
        for q in self.policies:
            by_subject.setdefault(q.subject, []).append(q)
        for rules in by_subject.values():
            rules.sort(key=lambda q: (-q.priority, q.pool))
        object.__setattr__(self, "_by_subject", by_subject)

    def pool(self, name: str) -> Pool:
        return self._by_pool[name]

    def policies_of(self, subject: str) -> list[PolicyRule]:
        """The subject's policies, by priority (desc) then pool name — the order the
        reference reconciler tries pools in."""
        return list(self._by_subject.get(subject, ()))

    def policy_for(self, subject: str, pool: str) -> PolicyRule | None:
        for q in self._by_subject.get(subject, ()):
            if q.pool == pool:
                return q
        return None


def metered_demand(pool: Pool, demand: Mapping[str, int]) -> dict[str, int]:
    """The part of a demand a pool checks: its metered keys, plus custom keys it
    does not meter (capacity 0 there); unmetered built-in keys are ignored."""
    return {k: v for k, v in demand.items()
            if v > 0 and (pool.metered(k) or k not in BUILTIN_UNBOUNDED)}


@dataclass(frozen=True)
class Ineligibility:
    """Why a request cannot use one policy's pool: the first failing rule."""

    policy: PolicyRule
    rule: str          # "capacity", "limit" or "reserved"
    key: str
    needs: int
    allowed: int

    def sentence(self) -> str:
        if self.rule == "capacity":
            return (f"pool '{self.policy.pool}' has {self.key}={self.allowed} in all "
                    f"(needs {self.needs})")
        if self.rule == "limit":
            return (f"policy '{self.policy.name}' limits {self.key} to {self.allowed} on pool "
                    f"'{self.policy.pool}' (needs {self.needs})")
        return (f"policy '{self.policy.name}' reserves only {self.key}={self.allowed} on pool "
                f"'{self.policy.pool}' (a non-preemptible step needs {self.needs} inside the reserved share)")


def check_policy(pool: Pool, policy: PolicyRule, demand: Mapping[str, int],
                 preemptible: bool) -> Ineligibility | None:
    """Eligibility (docs/planning.md#eligibility) of one request for one policy's pool; None if eligible."""
    for key, need in sorted(metered_demand(pool, demand).items()):
        cap = pool.capacity.get(key, 0)
        if need > cap:
            return Ineligibility(policy, "capacity", key, need, cap)
        lim = policy.limit.get(key, cap)
        if need > lim:
            return Ineligibility(policy, "limit", key, need, lim)
        if not preemptible and need > policy.rsv(key):
            return Ineligibility(policy, "reserved", key, need, policy.rsv(key))
    return None


def eligible_policies(problem: Problem, request: Request) -> tuple[list[PolicyRule], list[Ineligibility]]:
    """(policies the request may be placed through, reasons for the others)."""
    ok, why = [], []
    for q in problem.policies_of(request.requester):
        reason = check_policy(problem.pool(q.pool), q, request.demand, request.preemptible)
        (why.append(reason) if reason else ok.append(q))
    return ok, why


EARLIEST = datetime.min.replace(tzinfo=timezone.utc)


def start_time(when: datetime | None) -> datetime:
    """A started_at for ordering: missing = earliest; a naive time is taken as UTC."""
    if when is None:
        return EARLIEST
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def victim_order_key(running: Running) -> tuple:
    """Order within a policy for consuming the reserved share (docs/planning.md#reserved-share-and-borrowing):
    non-preemptible first, then started_at (missing = earliest), then name."""
    return (running.preemptible, start_time(running.started_at), running.name)


def borrowed_parts(problem: Problem, running: tuple[Running, ...] | None = None) -> dict[str, dict[str, int]]:
    """Per running allocation, the units it holds above its policy's reserved share
    (docs/planning.md#reserved-share-and-borrowing), on the pool's metered keys. Allocations of a subject without
    a policy on their pool borrow nothing (they are never preempted)."""
    running = problem.running if running is None else running
    result: dict[str, dict[str, int]] = {}
    groups: dict[tuple[str, str], list[Running]] = {}
    for alloc in running:
        groups.setdefault((alloc.subject, alloc.pool), []).append(alloc)
    for (subject, pool_name), allocs in groups.items():
        policy = problem.policy_for(subject, pool_name)
        pool = problem._by_pool.get(pool_name)
        for alloc in allocs:
            result[alloc.name] = {}
        if policy is None or pool is None:
            continue
        for key in pool.capacity:
            left = policy.rsv(key)
            for alloc in sorted(allocs, key=victim_order_key):
                held = alloc.holds.get(key, 0)
                inside = min(held, left)
                left -= inside
                if held > inside:
                    result[alloc.name][key] = held - inside
    return result


def start_ranks(running: list[Running]) -> list[Running]:
    """Assign start_rank: 0 = started earliest (missing started_at = earliest), then name."""
    ordered = sorted(running, key=lambda a: (start_time(a.started_at), a.name))
    ranks = {a.name: i for i, a in enumerate(ordered)}
    return [Running(a.name, a.subject, a.pool, a.preemptible, a.holds, a.started_at, ranks[a.name])
            for a in running]
