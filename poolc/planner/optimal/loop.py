"""The lexicographic loop of one part: each tier solved, then fixed at its value
before the next, the answer hinted into the next solve.

One tier is a sequence of small steps, in this order (`solve_tier`):

1. `set_up`: the tier's own variables, when it is reached (FIFO, start rank).
2. `first_attempt`: the objective (folded with the next tier where `folds` says
   so), the model (`tier_model`: a restricted copy for a count tier, the
   part's model with a polished hint for a large start-rank fold), and one
   solve within the tier's first limit (`quick_limit`).
3. the tier's retry strategy (`retries.strategy_for`), when that attempt is not
   proven and the share has time left.
4. `take_answer`: the best answer becomes the plan so far, its bound the
   tier's bound.
5. `record`: the tier's value fixed as a row (`fix`), the request dominance rows
   dropped once FIFO is fixed, the progress line.

Each tier gets a fair share of the budget left (`run.Budget`); a tier stopped by
its share keeps its best value, and `reopening` may come back to it.
"""

from __future__ import annotations

import functools

from ... import heartbeat
from .. import cpsat as cp_model  # the CP-SAT API, without numpy and pandas (cpsat.py)
from . import attempts, folds, hints, retries
from .built import Built, Tier, clear_row, decisions, linear, lookup
from .run import Budget, PartResult, Progress, Run, TierSolve
from .settings import SolverSettings


def solve_part(run: Run, b: Built, label: str) -> PartResult:
    """The tiers of one part in order, each fixed at its value before the next."""
    assignment = {var.index: 0 for var in b.all_vars}    # admit nothing, preempt nothing: feasible
    st = PartResult(decisions(b, lookup(assignment)), [], [], label, assignment)
    solve_tiers(run, b, st, 1)
    return st


def solve_tiers(run: Run, b: Built, st: PartResult, start: int) -> None:
    """Tiers ``start``.. of one part in order; ``st`` holds the tiers before
    ``start`` (values, bounds, rows) and the answer so far."""
    for i in range(start, len(b.tiers) + 1):
        solve_tier(run, b, st, i)
    # Report the plan actually returned: a tier stopped early was fixed at its value
    # then, and a later solve may still have improved it.
    st.values = [tier.value(st.vals) for tier in b.tiers]


def solve_tier(run: Run, b: Built, st: PartResult, i: int) -> None:
    """Tier ``i`` (1-based): solved (unless the tier before proved it too), then fixed."""
    tier, budget = b.tiers[i - 1], run.budget
    budget.doing = tier_line(b, st.label, i, "", None)
    heartbeat.step(f"proving {budget.doing}")
    first_solve = len(budget.solves)
    set_up(b, st, i)
    expr = linear(tier.terms)
    bound = tier.trivial_bound
    st.spent[i] = -budget.spent
    left = budget.share()
    if tier.active:
        budget.tiers_left -= 1
    after = b.tiers[i] if i < len(b.tiers) else None
    weight = folds.fold_weight(tier, after) if i > b.count_tiers else folds.fold_count(tier, after)
    if i in st.solved_with:
        bound = tier.value(st.vals)
    elif tier.terms and left > 0:
        ts = first_attempt(run, b, st, i, after, weight, expr, left)
        retry = retries.strategy_for(b, i, weight)
        if retry is not None and ts.status != cp_model.OPTIMAL and left > ts.solver.deterministic_time:
            retry(run, b, ts)
        bound = take_answer(b, st, ts, bound)
    st.spent[i] += budget.spent
    record(run, b, st, i, expr, bound, sum(s.cpu for s in budget.solves[first_solve:]))


def set_up(b: Built, st: PartResult, i: int) -> None:
    """Add tier ``i``'s own variables the first time it is reached, and give them
    their exact values in the answer so far."""
    tier = b.tiers[i - 1]
    if tier.setup is not None and i not in st.set_up:
        st.set_up.add(i)
        tier.setup()
        st.assignment = hints.exact_assignment(b, lookup(st.assignment, 0))


def first_attempt(run: Run, b: Built, st: PartResult, i: int, after: Tier | None, weight: int,
                  expr: cp_model.LinearExpr, left: float) -> TierSolve:
    """Tier ``i``'s objective set, its model and hint chosen, and its first solve."""
    tier, budget = b.tiers[i - 1], run.budget
    b.model.clear_objective()
    objective = folds.folded(expr, tier, after, weight) if weight and after else expr
    (b.model.maximize if tier.maximize else b.model.minimize)(objective)
    model, assignment = tier_model(run, b, i, after, weight, objective, st.assignment, left)
    kind = kind_of(b, i)
    spent0 = budget.spent
    solver = attempts.cp_solver(run.settings, min(left, quick_limit(run.settings, b, i, weight)),
                                presolve=i <= b.count_tiers, kind=kind)
    status = budget.solve(solver, model)
    note = functools.partial(tier_note, run.progress, b, st.label, i)
    return TierSolve(i, tier, after, weight, expr, model, assignment, left, kind, note, spent0, solver, status)


def tier_model(run: Run, b: Built, i: int, after: Tier | None, weight: int, objective: cp_model.LinearExprT,
               assignment: dict[int, int], left: float) -> tuple[cp_model.CpModel, dict[int, int]]:
    """The model tier ``i`` is solved on, with its hint: a count tier's restricted
    copy (for a folded pair, the looser copy of the two: exact for both), else
    the part's own model, hinted with the answer so far (polished first for the
    start-rank fold of a large part)."""
    tier, settings = b.tiers[i - 1], run.settings
    if tier.floor is not None and tier.vfloor is not None:
        floor, vfloor = tier.floor, tier.vfloor
        if weight and after and after.floor is not None and after.vfloor is not None:
            floor, vfloor = min(floor, after.floor), min(vfloor, after.vfloor)   # exact for both
        return hints.restricted(b, floor, vfloor, assignment)
    if weight and i == b.count_tiers + 2 and b.requests() >= settings.polish_from:
        assignment = polished(run, b, tier, objective, assignment, min(left, settings.rank_polish))
    hints.hint(b, assignment)
    return b.model, assignment


def quick_limit(settings: SolverSettings, b: Built, i: int, weight: int) -> float:
    """The first attempt's limit of tier ``i`` (1-based), before its retry strategy."""
    if i == b.count_tiers + 1:
        return settings.fifo_quick
    if not weight:
        return retries.count_quick(settings, i <= b.count_tiers)
    return settings.count_fold_quick if i <= b.count_tiers else settings.fold_quick


def kind_of(b: Built, i: int) -> str:
    """Which `SolverSettings.tuning` entry the solve of tier ``i`` (1-based) uses."""
    if i <= b.count_tiers:
        return "count"
    return ("fifo", "rank", "preference")[min(i - b.count_tiers - 1, 2)]


def take_answer(b: Built, st: PartResult, ts: TierSolve, bound: int) -> int:
    """The best answer of tier ``ts.i`` becomes the plan so far; the tier's bound,
    tightened by what its attempts proved (a folded bound divided by its weight;
    a proven fold proves the next tier too)."""
    if ts.status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        st.assignment = hints.answer(b, ts.solver)
        st.vals = decisions(b, lookup(st.assignment))
        found = round(ts.solver.best_objective_bound if ts.best_bound is None else ts.best_bound)  # integer objective
        if ts.weight:       # the folded part lies in [0, weight): see `folds.folded`
            found = found // ts.weight
            if ts.status == cp_model.OPTIMAL:
                st.solved_with.add(ts.i + 1)
        return (min if ts.tier.maximize else max)(bound, found)
    st.assignment = ts.assignment
    if ts.status != cp_model.UNKNOWN:
        raise RuntimeError(f"CP-SAT returned {ts.solver.status_name(ts.status)} on tier '{ts.tier.name}'")
    return bound


def record(run: Run, b: Built, st: PartResult, i: int, expr: cp_model.LinearExpr, bound: int,
           cpu: float) -> None:
    """Tier ``i``'s value and bound kept, the value fixed as a row, the request
    dominance rows dropped once FIFO is fixed, and the progress line."""
    tier = b.tiers[i - 1]
    value = tier.value(st.vals)
    st.bounds.append(bound if tier.terms else value)
    if tier.terms:
        fix(b, st, i, expr, value)
    if run.settings.drop_cuts and i == b.count_tiers + 1:
        drop_cuts(b)
    if run.progress:
        run.progress(tier_line(b, st.label, i, f": {value}" + ("" if st.bounds[-1] == value else f" (bound {bound})"),
                               run.budget, cpu))


def fix(b: Built, st: PartResult, i: int, expr: cp_model.LinearExpr, value: int) -> None:
    """Hold tier ``i`` (1-based) at ``value`` from now on, remembering the rows
    (`reopening` clears the rows of the tiers after the one it reopens).

    FIFO also holds each class's admitted count at its answer's: the start-rank
    and pool-preference tiers choose victims and pools among the plans that admit
    the set FIFO chose, a stated rule (docs/planning.md#tiers), not a shortcut.
    Without it those two tiers may trade one FIFO-optimal admitted set for
    another, which is a search over admissions again, and the fold of the two
    tiers then took longer than every tier before it (docs/solver.md)."""
    first = len(b.model.proto.constraints)
    b.model.add(expr >= value if b.tiers[i - 1].maximize else expr <= value)
    if i == b.count_tiers + 1:
        for ci, cls in enumerate(b.classes):
            b.model.add(sum(b.var.admitted[ci, pi] for pi in range(len(cls.policies))) == st.vals.total[ci])
    st.rows[i] = list(range(first, len(b.model.proto.constraints)))


def drop_cuts(b: Built) -> None:
    """Clear the request dominance rows and the rows defining their literals: once
    FIFO is fixed every plan meeting it obeys them, and they slow the tiers after."""
    for row in b.rows["request dominance"] + b.rows["request dominance literals"]:
        clear_row(b.model, row)


def polished(run: Run, b: Built, tier: Tier, objective: cp_model.LinearExprT, assignment: dict[int, int],
             limit: float) -> dict[int, int]:
    """A better hint for the start-rank fold of a large part: the fold's own
    objective with every admission count fixed at ``assignment``'s (the FIFO
    answer), so that only the victims move, solved for at most ``limit``.

    FIFO leaves the victims wherever the count tiers left them, and the fold then
    climbs from there one start-rank unit per solution, dozens of solutions on a
    large part. With the admissions fixed that climb is short. Any answer keeps
    every tier so far (the same admissions, the tier rows in the model), so it is
    a valid hint; the fold's result does not depend on it being optimal."""
    model = b.model.clone()
    for var in b.var.admitted.values():
        model.add(var == assignment[var.index])
    model.clear_objective()
    (model.maximize if tier.maximize else model.minimize)(objective)
    hints.hint(b, assignment, model)
    solver = attempts.cp_solver(run.settings, limit, presolve=True, kind="rank")
    status = run.budget.solve(solver, model)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return hints.answer(b, solver)
    return assignment


def tier_line(b: Built, label: str, i: int, outcome: str, budget: Budget | None, cpu: float | None = None) -> str:
    """The progress line of tier ``i`` (1-based): its name, ``outcome``, the budget
    spent (and the CPU seconds its solves took, where given)."""
    line = f"{label}tier {i}/{len(b.tiers)} {b.tiers[i - 1].name}{outcome}"
    if budget is None:
        return line
    return line + f" [deterministic time {budget.spent:.2f}/{budget.total:g}" + (
        "]" if cpu is None else f", {cpu:.2f} CPU s]")


def tier_note(progress: Progress | None, b: Built, label: str, i: int, outcome: str) -> None:
    """A progress line about an attempt inside tier ``i`` (1-based)."""
    if progress:
        progress(f"{label}tier {i}/{len(b.tiers)} {b.tiers[i - 1].name}{outcome}")
