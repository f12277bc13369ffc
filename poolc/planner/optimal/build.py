"""One part's CP-SAT model: its variables, hard rules, cuts and tiers, built in
canonical (sorted) order, so the same Problem gives the same model, row for row."""

from __future__ import annotations

from ...domain.problem import Problem
from .. import cpsat as cp_model  # the CP-SAT API, without numpy and pandas (cpsat.py)
from . import dominance
from .classes import RequestClass, VictimClass
from .model import Built, Layout
from .rules import hard_rules, reach
from .settings import SolverSettings
from .tiers import add_tiers


def build(problem: Problem, classes: list[RequestClass], victims: list[VictimClass], layout: Layout,
          pools: list[str], settings: SolverSettings) -> Built:
    """The model of one part: ``classes`` and ``victims`` live in ``pools`` only."""
    model = cp_model.CpModel()
    b = Built(model, classes, victims, layout.rank_n)
    by_pool = {p.name: p for p in problem.pools}
    for ci, cls in enumerate(classes):
        size = len(cls.members)
        most = reach(cls, by_pool)
        for pi, q in enumerate(cls.policies):
            b.reach_via[ci, pi] = most[pi]
            b.n[ci, pi] = model.new_int_var(0, size, f"n_{ci}_{pi}")
            d = cls.demands[pi]
            if all(v <= q.rsv(k) for k, v in d.items()):
                b.z[ci, pi] = model.new_int_var(0, size, f"z_{ci}_{pi}")
                model.add(b.z[ci, pi] <= b.n[ci, pi])
        b.reach[ci] = min(size, sum(most))
        model.add(sum(b.n[ci, pi] for pi in range(len(cls.policies))) <= size)
    for gi, vc in enumerate(victims):
        b.v[gi] = model.new_int_var(0, len(vc.members), f"v_{gi}")
    b.all_vars += list(b.n.values()) + list(b.z.values()) + list(b.v.values())
    for ci, pi in b.n:                           # in class order: the rows come out the same
        b.through.setdefault(classes[ci].policies[pi].name, []).append((ci, pi))
    for gi, vc in enumerate(victims):
        b.victims_of.setdefault(vc.policy.name, []).append(gi)

    hard_rules(problem, b, pools)
    dominance.victim_dominance(b)
    if settings.request_dominance == "all":
        dominance.request_dominance(b)
    add_tiers(b, layout, settings.fold_counts)
    return b
