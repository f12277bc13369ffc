"""What a tier not proven by its first attempt gets next: one named strategy per
kind of tier (`strategy_for`), each changing the tier's `TierSolve`.

* FIFO (`fifo_retries`): SCIP once, then CP-SAT again with presolve, then with
  the request dominance rows, pooling what every attempt found.
* The start-rank fold (`rank_fold_retry`): once more with presolve.
* A folded count pair (`count_fold_fallback`): the first tier alone, hinted with
  what the fold found; the next tier is then solved on its own.
* A count tier alone (`count_retry`): SCIP once, then CP-SAT for the rest of
  its share.

Every attempt of one tier keeps some optimum of it (a retry only adds presolve,
exact rows, or another solver whose answer CP-SAT checks), so the best answer
and the tightest bound of all of them stand for the tier (`attempts.Attempts`).
The figures behind each limit are in docs/solver.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .. import cpsat as cp_model  # the CP-SAT API, without numpy and pandas (cpsat.py)
from .. import mip  # SCIP for the MIP retry; imports pyscipopt only when it runs
from . import attempts, dominance, hints
from .built import Built, clear_row
from .run import Budget, Progress, Run, TierSolve
from .settings import SolverSettings

Strategy = Callable[[Run, Built, TierSolve], None]


def strategy_for(b: Built, i: int, weight: int) -> Strategy | None:
    """The retry of tier ``i`` (1-based) when its first attempt is not proven and
    its share has time left; None for a tier that gets none (pool preference, an
    unfolded start-rank tier)."""
    if i == b.count_tiers + 1:
        return fifo_retries
    if weight:
        return rank_fold_retry if i > b.count_tiers else count_fold_fallback
    if i <= b.count_tiers:
        return count_retry_alone
    return None


def fifo_retries(run: Run, b: Built, ts: TierSolve) -> None:
    """FIFO not proven quickly: SCIP once (`mip_retry`); not proven there, once more
    with presolve (the same hint: measured faster than hinting what the first
    attempt found) for `fifo_plain`; still not proven, with the request dominance
    rows for the rest of the share."""
    settings, budget = run.settings, run.budget
    used = ts.solver.deterministic_time
    plain = ts.left - used if settings.request_dominance != "retry" else min(ts.left - used, fifo_plain(settings, b))
    pooled = attempts.Attempts(ts.tier.maximize)
    pooled.add(ts.solver, ts.status)
    checked = mip_retry(run, b, ts.model, ts.solver, ts.status, ts.note)
    if checked is not None:
        pooled.add(checked, cp_model.OPTIMAL)
    if not pooled.proven:
        pooled.add(*attempts.solve_again(settings, ts.model, budget, plain, presolve=True, kind=ts.kind))
    used = budget.spent - ts.spent0
    if settings.request_dominance == "retry" and not pooled.proven and ts.left > used:
        dominance.request_dominance(b)
        hints.derive(b, ts.assignment)
        hints.hint(b, ts.assignment)
        pooled.add(*attempts.solve_again(settings, ts.model, budget, ts.left - used, presolve=True, kind=ts.kind))
    ts.solver, ts.status, ts.best_bound = pooled.best(ts.solver)


def rank_fold_retry(run: Run, b: Built, ts: TierSolve) -> None:
    """The start-rank fold: once more with presolve, for the rest of the share (same
    hint, as for FIFO). Unproven, its weighted bound still bounds this tier and the
    next tier is solved on its own."""
    room = ts.left - ts.solver.deterministic_time
    pooled = attempts.Attempts(ts.tier.maximize)
    pooled.add(ts.solver, ts.status)
    pooled.add(*attempts.solve_again(run.settings, ts.model, run.budget, room, presolve=True, kind=ts.kind))
    ts.solver, ts.status, ts.best_bound = pooled.best(ts.solver)


def count_fold_fallback(run: Run, b: Built, ts: TierSolve) -> None:
    """A count fold not proven within `count_fold_quick`: the tier alone, in the same
    model (the looser restricted copy: exact for it too), hinted with what the fold
    found; the next tier is then solved on its own (``ts.weight`` becomes 0 once
    this attempt's answer replaces the fold's). Not proven either: `count_retry`."""
    settings, budget = run.settings, run.budget
    room = ts.left - ts.solver.deterministic_time
    if ts.status == cp_model.FEASIBLE:
        ts.assignment = hints.answer(b, ts.solver)
    ts.model.clear_objective()
    (ts.model.maximize if ts.tier.maximize else ts.model.minimize)(ts.expr)
    hints.hint(b, ts.assignment, ts.model)
    ts.solver, ts.status, replaced = attempts.second_try(settings, ts.model, budget,
                                                         min(room, count_quick(settings, True)), ts.solver,
                                                         ts.status, presolve=True, kind=ts.kind)
    if replaced:
        ts.weight = 0
    if replaced and ts.status != cp_model.OPTIMAL:
        count_retry(run, b, ts, ts.left - (budget.spent - ts.spent0))


def count_retry_alone(run: Run, b: Built, ts: TierSolve) -> None:
    """A count tier solved alone, not proven within `count_quick`: `count_retry`
    with the rest of its share."""
    count_retry(run, b, ts, ts.left - ts.solver.deterministic_time)


def count_retry(run: Run, b: Built, ts: TierSolve, room: float) -> None:
    """A count tier CP-SAT did not prove within `count_quick`: SCIP once
    (`mip_retry`); not proven there either, CP-SAT again for the rest of the
    tier's share (``room``), hinted with its best answer so far."""
    if not mip_on(run.settings) or ts.status == cp_model.OPTIMAL:
        ts.best_bound = None
        return
    checked = mip_retry(run, b, ts.model, ts.solver, ts.status, ts.note)
    if checked is not None:
        ts.solver, ts.status, ts.best_bound = checked, cp_model.OPTIMAL, None
        return
    if room <= 0:
        ts.best_bound = None
        return
    pooled = attempts.Attempts(attempts.maximizing(ts.model))
    pooled.add(ts.solver, ts.status)
    if ts.status == cp_model.FEASIBLE:
        hints.hint(b, hints.answer(b, ts.solver), ts.model)
    pooled.add(*attempts.solve_again(run.settings, ts.model, run.budget, room, presolve=True, kind=ts.kind))
    ts.solver, ts.status, ts.best_bound = pooled.best(ts.solver)


def fifo_plain(settings: SolverSettings, b: Built) -> float:
    """How long the FIFO retry with presolve gets before the request dominance rows
    are added. Their number grows with the square of the classes per policy, so a
    part of `fifo_plain_from` requests or more gives the retry longer
    (`fifo_plain_large`); on a small part the rows are what prove the hard
    instances, and they come after `fifo_plain`."""
    return settings.fifo_plain_large if b.requests() >= settings.fifo_plain_from else settings.fifo_plain


def mip_on(settings: SolverSettings) -> bool:
    """Whether the MIP retry runs: switched on, and SCIP (pyscipopt) installed."""
    return settings.mip_retry and mip.available()


def count_quick(settings: SolverSettings, count_tier: bool) -> float:
    """The first attempt's limit for a count tier solved alone: `count_quick` when the
    MIP retry can take over after it, else the tier's whole share."""
    return settings.count_quick if count_tier and mip_on(settings) else math.inf


def mip_retry(run: Run, b: Built, model: cp_model.CpModel, solver: cp_model.CpSolver,
              status: cp_model.CpSolverStatus, note: Progress) -> cp_model.CpSolver | None:
    """SCIP on ``model`` as CP-SAT left it unproven (poolc/planner/mip.py: the same
    rows less the request-dominance ones, CP-SAT's best answer as the start, node
    and LP-iteration limits); when SCIP proves its answer optimal, that answer
    checked by CP-SAT against every row of the model (`checked`), as a solver
    holding it. None when SCIP did not prove it or the check failed.

    On the planner's own models of many step shapes SCIP proves at the root node
    the count tiers CP-SAT stops on after its whole share; a call costs a fraction
    of a CPU second, so it runs only after CP-SAT's quick attempt failed
    (docs/solver.md, "The MIP retry")."""
    settings = run.settings
    skip = set(b.rows["request dominance"] + b.rows["request dominance literals"])
    if not mip_on(settings) or not mip.translatable(model.proto, skip):
        return None
    start = list(solver.response_proto.solution) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
    found = mip.solve(model.proto, start, skip=skip, nodes=settings.mip_nodes,
                      lp_iterations=settings.mip_lp_iterations)
    b.mip_work.append((found.nodes, found.lp_iterations))
    outcome = (f"proven {found.value}" if found.proven
               else f"{found.value} (bound {found.bound})" if found.value is not None else "nothing found")
    note(f" SCIP: {outcome} [{found.status}, {found.nodes} nodes, {found.lp_iterations} LP iterations]")
    if not found.proven or found.values is None:
        return None
    answer = checked(settings, model, found.values, skip, run.budget)
    if answer is None or round(answer.objective_value) != found.value:
        note(" SCIP's answer failed CP-SAT's check: not used")
        return None
    return answer


def checked(settings: SolverSettings, model: cp_model.CpModel, values: list[int], skip: set[int],
            budget: Budget) -> cp_model.CpSolver | None:
    """CP-SAT with every variable fixed at ``values``: the hard-rule check of an
    answer found elsewhere (every row of ``model`` but the redundant ``skip``
    ones), and a solver holding it, as the tier's other attempts do."""
    copy = model.clone()
    for row in skip:
        clear_row(copy, row)
    copy.clear_hints()
    copy.proto.solution_hint.vars.extend(range(len(values)))
    copy.proto.solution_hint.values.extend(values)
    check = attempts.cp_solver(settings, 1.0, presolve=False, kind="count")
    check.parameters.fix_variables_to_their_hinted_value = True
    status = budget.solve(check, copy)
    return check if status == cp_model.OPTIMAL else None
