"""Budget left after the last tier goes back to the first tier not proven.

Why: each tier gets a fair share of the budget, and easy tiers leave most of
theirs unused; a hard tier stopped by its share may be proven, or improved, with
what is left at the end.
"""

from __future__ import annotations

from ... import heartbeat
from .. import cpsat as cp_model  # the CP-SAT API, without numpy and pandas (cpsat.py)
from . import attempts, dominance, hints, loop
from .built import Built, clear_row, decisions, linear, lookup
from .run import PartResult, Run


def reopen(run: Run, b: Built, st: PartResult, k: int) -> bool:
    """Tier ``k`` (1-based), stopped at its share before, solved again alone,
    hinted with the plan so far, with presolve, for what is left less what the
    tiers after it took the first time (they are solved again if it improves).
    Whether that proved it or improved it.

    Exact: the tiers before ``k`` keep their values (their rows stay), the rows of
    the tiers after it are left out of the copy solved. A proof at the same value
    makes the later tiers' values and bounds exact as they are (they were solved
    with tier ``k`` at that value); a better value replaces the plan, and the
    tiers after ``k`` are solved again from it with what is then left."""
    settings, budget, progress = run.settings, run.budget, run.progress
    tier = b.tiers[k - 1]
    old = st.values[k - 1]
    limit = budget.total - budget.spent - sum(t for j, t in st.spent.items() if j > k)
    if limit < settings.reopen_min:
        return False
    budget.doing = loop.tier_line(b, st.label, k, " reopened", None)
    heartbeat.step(f"proving {budget.doing}")
    if k == b.count_tiers + 1 and settings.request_dominance == "retry":
        first = len(b.model.proto.constraints)
        dominance.request_dominance(b)
        hints.derive(b, st.assignment)
        added = range(first, len(b.model.proto.constraints))
    else:
        added = range(0)
    model = b.model.clone()
    for row in added:             # in the copy only
        clear_row(b.model, row)
    for j, rows in st.rows.items():
        # the tiers after k are left out; so is FIFO's admitted set when FIFO is reopened
        for row in rows if j > k else rows[1:] if j == k else ():
            clear_row(model, row)
    expr = linear(tier.terms)
    model.clear_objective()
    (model.maximize if tier.maximize else model.minimize)(expr)
    if tier.floor is not None and tier.vfloor is not None:
        model, _ = hints.restricted(b, tier.floor, tier.vfloor, st.assignment, base=model)
    else:
        hints.hint(b, st.assignment, model)
    solver = attempts.cp_solver(settings, limit, presolve=True, kind=loop.kind_of(b, k))
    status = budget.solve(solver, model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        if progress:
            progress(loop.tier_line(b, st.label, k, " reopened: nothing found", budget))
        return False
    found = round(solver.best_objective_bound)
    bound = (min if tier.maximize else max)(st.bounds[k - 1], found)
    answer = hints.answer(b, solver)
    vals = decisions(b, lookup(answer))
    value = tier.value(vals)
    better = value > old if tier.maximize else value < old
    if progress:
        progress(loop.tier_line(b, st.label, k, f" reopened: {value}" + ("" if bound == value else f" (bound {bound})"),
                                budget))
    if not better:
        st.bounds[k - 1] = bound
        return status == cp_model.OPTIMAL
    for j, rows in st.rows.items():
        if j >= k:
            for row in rows:
                clear_row(b.model, row)
    st.rows = {j: row for j, row in st.rows.items() if j < k}
    st.assignment, st.vals = answer, vals
    loop.fix(b, st, k, expr, value)          # after: FIFO's row holds the new answer's admitted set
    st.bounds[k - 1:] = [bound]
    st.solved_with = {j for j in st.solved_with if j <= k}
    budget.tiers_left = sum(1 for t in b.tiers[k:] if t.active)
    loop.solve_tiers(run, b, st, k + 1)
    return True
