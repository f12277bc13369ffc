"""One part's CP-SAT model: its variables, hard rules, cuts and tiers, built in
canonical (sorted) order, so the same Problem gives the same model, row for row."""

from __future__ import annotations

from ...domain.problem import Problem
from .. import cpsat as cp_model  # the CP-SAT API, without numpy and pandas (cpsat.py)
from . import dominance
from .built import Built, Decisions, Layout, recording
from .classes import RequestClass, VictimClass
from .rules import hard_rules, reach
from .settings import SolverSettings
from .tiers import add_tiers


def build(problem: Problem, classes: list[RequestClass], victims: list[VictimClass], layout: Layout,
          pools: list[str], settings: SolverSettings) -> Built:
    """The model of one part: ``classes`` and ``victims`` live in ``pools`` only."""
    model = cp_model.CpModel()
    by_pool = {p.name: p for p in problem.pools}
    most = [reach(cls, by_pool) for cls in classes]
    b = Built(model, classes, victims, layout.rank_n, var=decision_variables(model, classes, victims))
    b.rows["class size"].extend(range(len(model.proto.constraints)))
    for ci, cls in enumerate(classes):
        for pi in range(len(cls.policies)):
            b.reach_via[ci, pi] = most[ci][pi]
        b.reach[ci] = min(len(cls.members), sum(most[ci]))
    b.all_vars += b.var.all()
    for ci, pi in b.var.admitted:                # in class order: the rows come out the same
        b.through.setdefault(classes[ci].policies[pi].name, []).append((ci, pi))
    for gi, vc in enumerate(victims):
        b.victims_of.setdefault(vc.policy.name, []).append(gi)

    hard_rules(problem, b, pools)
    with recording(b, "victim dominance"):
        dominance.victim_dominance(b)
    if settings.request_dominance == "all":
        dominance.request_dominance(b)
    add_tiers(b, layout, settings.fold_counts)
    return b


def decision_variables(model: cp_model.CpModel, classes: list[RequestClass],
                       victims: list[VictimClass]) -> Decisions:
    """The part's decision variables, with the two rows that only bound them: a
    class admits at most its members, and in-share at most what it admits. Made
    class by class (admitted and in-share interleaved), so the same Problem gives
    the same variable indices."""
    admitted: dict[tuple[int, int], cp_model.IntVar] = {}
    in_share: dict[tuple[int, int], cp_model.IntVar] = {}
    for ci, cls in enumerate(classes):
        size = len(cls.members)
        for pi, q in enumerate(cls.policies):
            admitted[ci, pi] = model.new_int_var(0, size, f"n_{ci}_{pi}")
            if all(v <= q.rsv(k) for k, v in cls.demands[pi].items()):
                in_share[ci, pi] = model.new_int_var(0, size, f"z_{ci}_{pi}")
                model.add(in_share[ci, pi] <= admitted[ci, pi])
        model.add(sum(admitted[ci, pi] for pi in range(len(cls.policies))) <= size)
    preempted = {gi: model.new_int_var(0, len(vc.members), f"v_{gi}") for gi, vc in enumerate(victims)}
    return Decisions(admitted, in_share, preempted)
