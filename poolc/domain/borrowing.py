"""Reserved shares and borrowed parts (docs/planning.md, "Borrowing").

Per policy and metered key, the policy's allocations are walked in one order;
each takes what is left of the reserved share first, and what it holds beyond
that is its *borrowed* part. Only preemptible allocations with a borrowed part
can ever be preempted. The walk is written once here and used by validate's
checks, both planners, the explanations and the plan's ``borrowed`` field.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

from .problem import Problem, Running, start_time

Member = TypeVar("Member", bound=Hashable)


def split_reserved(reserved: Mapping[str, int], keys: Iterable[str],
                   members: Iterable[tuple[Member, Mapping[str, int]]]) -> dict[Member, dict[str, int]]:
    """Walk ``members`` (who, amounts) in the order given: on each key of ``keys``
    each takes the rest of ``reserved`` first; the excess is its borrowed part."""
    left = {k: reserved.get(k, 0) for k in keys}
    result: dict[Member, dict[str, int]] = {}
    for who, amounts in members:
        part: dict[str, int] = {}
        for key, room in left.items():
            need = amounts.get(key, 0)
            inside = min(need, room)
            left[key] = room - inside
            if need > inside:
                part[key] = need - inside
        result[who] = part
    return result


def victim_order_key(running: Running) -> tuple:
    """Order within a policy for consuming the reserved share: non-preemptible
    first, then started_at (missing = earliest), then name."""
    return (running.preemptible, start_time(running.started_at), running.name)


def grant_order(in_share: bool, rank: int, request_id: str) -> tuple[bool, int, str]:
    """Order of a plan's new grants within a policy, after what already runs: those it
    counts inside the reserved share first, then by arrival. `apply` records this
    order in the grants' start times, so the next plan walks the share the same way
    (it would otherwise fall back to names, and call other grants the borrowers)."""
    return (not in_share, rank, request_id)


def borrowed_parts(problem: Problem, running: tuple[Running, ...] | None = None) -> dict[str, dict[str, int]]:
    """Per running allocation, the units it holds above its policy's reserved share,
    on the pool's metered keys. Allocations of a subject without a policy on their
    pool borrow nothing (they are never preempted)."""
    running = problem.running if running is None else running
    result: dict[str, dict[str, int]] = {}
    groups: dict[tuple[str, str], list[Running]] = {}
    for alloc in running:
        groups.setdefault((alloc.subject, alloc.pool), []).append(alloc)
    for (subject, pool_name), allocs in groups.items():
        policy = problem.policy_for(subject, pool_name)
        pool = problem.find_pool(pool_name)
        if policy is None or pool is None:
            result.update({alloc.name: {} for alloc in allocs})
            continue
        ordered = sorted(allocs, key=victim_order_key)
        result.update(split_reserved(policy.reserved, pool.capacity, ((a.name, a.holds) for a in ordered)))
    return result
