"""The tiers of one part, in the global order (docs/planning.md#tiers).

The count tiers come in the order `planner/objective.py` writes once (|Z|, then
per admission priority its admitted count and the victim counts it may
displace); then FIFO, start rank and pool preference. FIFO and start rank are
the concave prefix sums the hand-out achieves (lowest arrival rank first, most
recently started victim first), so the hand-out is exactly optimal for them;
their variables are added only when the tier is reached, since earlier solves
would presolve thousands of rows that cannot matter to them yet.

Each tier also says how it is solved: on a restricted copy below which
priorities (`floor`, `vfloor`: see `hints.restricted`), and whether the next
tier is folded into its objective (`folds`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ...domain.plan import Tier as ObjectiveTier
from ...domain.problem import Problem
from ..objective import count_tiers
from .built import Built, Layout, Tier, Values, concave, prefix, recording
from .classes import RequestClass, VictimClass


def layout(problem: Problem, classes: list[RequestClass], victims: list[VictimClass]) -> Layout:
    """The global tier order and the FIFO constant N of every part."""
    return Layout(prios=sorted({q.priority for cls in classes for q in cls.policies}, reverse=True),
                  vprios=sorted({vc.policy.priority for vc in victims}, reverse=True),
                  rank_n=max([len(problem.requests)] + [r.rank + 1 for r in problem.requests]))


def add_tiers(b: Built, layout: Layout, fold_counts: bool) -> None:
    """Every tier of ``b`` in order; ``fold_counts``: fold each "preempted at v" tier
    with the "admitted at p" tier after it (`folds.fold_count`)."""
    priority_tiers(b, layout, fold_counts)
    b.count_tiers = len(b.tiers)
    b.tiers += [fifo_tier(b), late_tier(b), preference_tier(b)]


def _sum_z(keys: list[tuple[int, int]]) -> Callable[[Values], int]:
    return lambda vals: sum(vals.in_share[k] for k in keys)


def _sum_n(keys: list[tuple[int, int]]) -> Callable[[Values], int]:
    return lambda vals: sum(vals.admitted[k] for k in keys)


def _sum_v(keys: list[int]) -> Callable[[Values], int]:
    return lambda vals: sum(vals.preempted[g] for g in keys)


def priority_tiers(b: Built, layout: Layout, fold_counts: bool) -> None:
    """|Z|, then per admission priority its admitted count and the victim counts it
    may displace (docs/planning.md#tiers, tiers 1 and 2), in the global order."""
    admitted_at = math.inf                       # the admission priority of the tier before
    for kind in count_tiers(layout.prios, layout.vprios):
        if kind.kind == "in-share":
            zkeys = sorted(b.var.in_share)
            b.tiers.append(Tier("in-share |Z|", True, [(b.var.in_share[k], 1) for k in zkeys], _sum_z(zkeys),
                                sum(len(b.classes[ci].members) for ci, _ in zkeys)))
            b.tiers[-1].floor = b.tiers[-1].vfloor = math.inf
        elif kind.kind == "admitted":
            p = _priority(kind)
            keys = [(ci, pi) for ci, cls in enumerate(b.classes) for pi, q in enumerate(cls.policies)
                    if q.priority == p]
            b.tiers.append(Tier(f"admitted at priority {p}", True, [(b.var.admitted[k], 1) for k in keys], _sum_n(keys),
                                sum(len(b.classes[ci].members) for ci, _ in keys)))
            b.tiers[-1].floor = b.tiers[-1].vfloor = admitted_at = p
        else:
            v = _priority(kind)
            vkeys = [gi for gi, vc in enumerate(b.victims) if vc.policy.priority == v]
            b.tiers.append(Tier(f"preempted at priority {v}", False, [(b.var.preempted[g], 1) for g in vkeys],
                                _sum_v(vkeys), 0))
            b.tiers[-1].floor, b.tiers[-1].vfloor = admitted_at, v
    for tier, after in zip(b.tiers, b.tiers[1:], strict=False):
        tier.fold_next = fold_counts and not tier.maximize and after.maximize    # `folds.fold_count`


def _priority(kind: ObjectiveTier) -> int:
    """The priority an admitted or preempted tier is at (never None for those)."""
    if kind.priority is None:
        raise ValueError(f"a {kind.kind} tier without a priority")
    return kind.priority


def fifo_tier(b: Built) -> Tier:
    """Tier 3; its prefix-sum variables are added only when it is reached: earlier
    solves would presolve thousands of constraints that cannot matter to them."""
    weights = {ci: [b.rank_n - r.rank for r in cls.members] for ci, cls in enumerate(b.classes)}
    tier = Tier("FIFO", True, [], lambda vals: sum(prefix(weights[ci])[vals.total[ci]] for ci in weights),
                sum(sum(w[:b.reach[ci]]) for ci, w in weights.items()))

    def setup() -> None:
        with recording(b, "prefix sums"):
            for ci, cls in enumerate(b.classes):
                admitted = sum(b.var.admitted[ci, pi] for pi in range(len(cls.policies)))
                b.aux.fifo_credit[ci] = concave(b.model, admitted, weights[ci], b.reach[ci], f"fifo_{ci}")
        tier.terms = [(b.aux.fifo_credit[ci], 1) for ci in sorted(b.aux.fifo_credit)]
        b.all_vars.extend(f for f, _ in tier.terms)

    tier.setup, tier.active = setup, bool(b.classes)
    return tier


def late_tier(b: Built) -> Tier:
    """Tier 4: preempt the most recently started, as prefix sums per victim class."""
    weights = {gi: [a.start_rank for a in vc.members] for gi, vc in enumerate(b.victims)}
    tier = Tier("start rank", True, [], lambda vals: sum(prefix(weights[g])[vals.preempted[g]] for g in weights),
                sum(sum(w) for w in weights.values()))

    def setup() -> None:
        with recording(b, "prefix sums"):
            for gi in range(len(b.victims)):
                b.aux.late_credit[gi] = concave(b.model, b.var.preempted[gi], weights[gi], len(weights[gi]),
                                                f"late_{gi}")
        tier.terms = [(b.aux.late_credit[gi], 1) for gi in sorted(b.aux.late_credit)]
        b.all_vars.extend(f for f, _ in tier.terms)

    tier.setup, tier.active, tier.fold_next = setup, bool(b.victims), True
    return tier


def preference_tier(b: Built) -> Tier:
    """Tier 5: the higher-priority policy, then the pool name, for each admission.

    Its bound takes each class's best policies first, each up to what it can reach
    (an exact upper bound), because the start-rank tier is folded with weight
    bound + 1 and a looser bound makes that fold much harder to prove
    (docs/solver.md, "Start rank and pool preference in one solve")."""
    weight = {(ci, pi): len(b.classes[ci].policies) - pi for ci, pi in b.var.admitted}
    most = 0
    for ci, cls in enumerate(b.classes):     # best policies first, each up to what it can reach
        left = len(cls.members)
        for pi in range(len(cls.policies)):
            take = min(left, b.reach_via[ci, pi])
            most, left = most + take * weight[ci, pi], left - take
    return Tier("pool preference", True, [(b.var.admitted[k], weight[k]) for k in b.var.admitted],
                lambda vals: sum(vals.admitted[k] * weight[k] for k in b.var.admitted), most)
