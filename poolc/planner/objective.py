"""What each value of the optimal strategy's objective counts, so a plan can say
what was maximised and minimised in words (docs/planning.md#tiers).

The tier order is the optimal strategy's: the in-share count, then per admission
priority (highest first) its admitted count followed by the victim priorities it
may displace, then arrival order, start rank and pool preference. It is derived
here from the Problem alone (the same priorities the solver lays out), so the
solver stays free of report concerns; a test holds the two to the same length on
real plans.
"""

from __future__ import annotations

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
    tiers = [Tier("in-share")]
    bounds: list[int | None] = [None, *prios, None]          # None: +inf first, -inf last
    for j in range(len(prios) + 1):
        if j >= 1:
            tiers.append(Tier("admitted", prios[j - 1]))
        hi, lo = bounds[j], bounds[j + 1]
        tiers += [Tier("preempted", v) for v in sorted(victims, reverse=True)
                  if (hi is None or v < hi) and (lo is None or v >= lo)]
    return (*tiers, Tier("arrival"), Tier("start-rank"), Tier("preference"))
