"""What each value of the optimal strategy's objective counts, so a plan can say
what was maximised and minimised in words (docs/planning.md#tiers).

The tier order is the optimal strategy's: the in-share count, then per admission
priority (highest first) its admitted count followed by the victim priorities it
may displace, then arrival order, start rank and pool preference. It is derived
here from the Problem alone (the same priorities the solver lays out), so the
solver stays free of report concerns; the order itself (`count_tiers`) is written
once here and the solver reads it too, and a test holds the two to the same length
on real plans.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..domain.borrowing import borrowed_parts
from ..domain.eligibility import eligible_policies
from ..domain.plan import Tier
from ..domain.problem import Problem


def objective_tiers(problem: Problem) -> tuple[Tier, ...]:
    """One Tier per value of ``Solution.objective``, in the same order."""
    prios = sorted({q.priority for r in problem.requests for q in eligible_policies(problem, r)[0]}, reverse=True)
    borrowed = borrowed_parts(problem)
    pools = {p.name for p in problem.pools}
    victims = set()
    for alloc in problem.running:
        policy = problem.policy_for(alloc.subject, alloc.pool)
        if alloc.pool in pools and policy is not None and alloc.preemptible \
                and any(v > 0 for v in borrowed.get(alloc.name, {}).values()):
            victims.add(policy.priority)
    return (*count_tiers(prios, sorted(victims, reverse=True)), Tier("arrival"), Tier("start-rank"),
            Tier("preference"))


def count_tiers(prios: Sequence[int], vprios: Sequence[int]) -> list[Tier]:
    """The count tiers in order, for admission priorities ``prios`` and victim
    priorities ``vprios`` (both highest first): the in-share count, then per
    admission priority p_j its admitted count followed by the victim priorities v
    with p_(j+1) <= v < p_j (those above every admission priority right after the
    in-share count). Written once: the solver builds its tiers in this order too."""
    tiers = [Tier("in-share")]
    bounds: list[int | None] = [None, *prios, None]          # None: +inf first, -inf last
    for j in range(len(prios) + 1):
        if j >= 1:
            tiers.append(Tier("admitted", prios[j - 1]))
        hi, lo = bounds[j], bounds[j + 1]
        tiers += [Tier("preempted", v) for v in vprios if (hi is None or v < hi) and (lo is None or v >= lo)]
    return tiers
