"""The hand-out: the counts of a solution turned into which request runs through
which policy and which allocation is preempted for whom.

Inside a class the lowest arrival ranks are admitted first (through the
preferred policy first), inside a victim class the most recently started
allocation is preempted first: the orders the FIFO and start-rank tiers are
modelled on, so the hand-out is exactly optimal for them, and canonical.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...domain.borrowing import borrowed_parts
from ...domain.problem import PolicyRule, Problem
from ..solution import Solution
from .built import Built
from .run import PartResult


def hand_out(problem: Problem, results: list[tuple[Built, PartResult]], objective: list[int], status: str,
             gap: float) -> Solution:
    """The Solution of every part's counts, with the whole's ``objective``, ``status`` and ``gap``."""
    admitted: dict[str, PolicyRule] = {}
    in_share: set[str] = set()
    for b, r in results:
        for ci, cls in enumerate(b.classes):
            queue = iter(cls.members)                       # lowest arrival rank first
            for pi, q in enumerate(cls.policies):           # preferred policy first
                for j in range(r.vals.admitted[ci, pi]):
                    req = next(queue)
                    admitted[req.id] = q
                    if j < r.vals.in_share.get((ci, pi), 0):
                        in_share.add(req.id)
    demand = {r.id: r.demand for r in problem.requests}
    borrowed = borrowed_parts(problem)
    by_pool: dict[str, list[str]] = {}
    for rid in sorted(admitted):
        by_pool.setdefault(admitted[rid].pool, []).append(rid)
    preempted: dict[str, list[str]] = {}
    for b, r in results:
        for gi, vc in enumerate(b.victims):
            for alloc in vc.members[:r.vals.preempted[gi]]:         # most recently started first
                preempted[alloc.name] = made_room_for(vc.policy, borrowed[alloc.name], vc.holds,
                                                      by_pool.get(alloc.pool, []), admitted, in_share, demand)
    return Solution(strategy="optimal",
                    admitted={rid: admitted[rid].name for rid in sorted(admitted)},
                    preempted={name: preempted[name] for name in sorted(preempted)},
                    status=status, objective=objective, gap=gap, in_share=frozenset(in_share))


def made_room_for(policy: PolicyRule, borrowed: dict[str, int], holds: dict[str, int], here: list[str],
                  admitted: dict[str, PolicyRule], in_share: set[str],
                  demand: dict[str, Mapping[str, int]]) -> list[str]:
    """The admitted requests in the victim's pool (``here``, sorted) that displaced
    it: those above its priority or in Z using a key it borrowed on; else such
    requests using any key it holds; else any request in the pool using a key it holds."""
    displacing = [rid for rid in here if admitted[rid].priority > policy.priority or rid in in_share]

    def using(ids: Iterable[str], keys: dict[str, int]) -> list[str]:
        return [rid for rid in ids if any(demand[rid].get(k, 0) > 0 and v > 0 for k, v in keys.items())]

    return using(displacing, borrowed) or using(displacing, holds) or using(here, holds)
