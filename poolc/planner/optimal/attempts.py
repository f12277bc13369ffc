"""CP-SAT solves inside the budget: the solver every solve is made by, one more
attempt at the same objective, and the best of several attempts.

Why one place makes every solver: one worker, a pinned seed and a
deterministic-time limit (never a clock) are what make the same model give the
same answer on every run and machine.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import cpsat as cp_model  # the CP-SAT API, without numpy and pandas (cpsat.py)
from .run import Budget
from .settings import SolverSettings


def cp_solver(settings: SolverSettings, limit: float, presolve: bool, kind: str) -> cp_model.CpSolver:
    """One worker, pinned seed, deterministic-time limit: the same model gives the same
    answer on every run and machine. ``presolve`` is off for the FIFO, start-rank and
    preference tiers: there the model is the count tiers' model plus thousands of
    prefix-sum segments, and presolving it again per tier costs most of the solve at
    scale for no gain in search (same values, proven either way; docs/solver.md,
    "Solver settings"). ``kind`` picks the `SolverSettings.tuning` entry."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = settings.random_seed
    solver.parameters.linearization_level = 2
    solver.parameters.max_deterministic_time = limit
    solver.parameters.cp_model_presolve = presolve
    for name, value in settings.tuning[kind].items():
        setattr(solver.parameters, name, value)
    return solver


def solve_again(settings: SolverSettings, model: cp_model.CpModel, budget: Budget, room: float, *,
                presolve: bool, kind: str) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus]:
    """One more attempt at the same objective within ``room`` deterministic seconds."""
    again = cp_solver(settings, room, presolve=presolve, kind=kind)
    status = budget.solve(again, model)
    return again, status


def second_try(settings: SolverSettings, model: cp_model.CpModel, budget: Budget, room: float,
               first: cp_model.CpSolver, status: cp_model.CpSolverStatus, *,
               presolve: bool, kind: str) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus, bool]:
    """Solve ``model`` again within ``room`` deterministic seconds;
    (solver, status, whether this attempt's answer replaced the first one's). The
    second answer is kept unless it found nothing where the first found something."""
    again, found = solve_again(settings, model, budget, room, presolve=presolve, kind=kind)
    if found != cp_model.UNKNOWN or status == cp_model.UNKNOWN:
        return again, found, True
    return first, status, False


def maximizing(model: cp_model.CpModel) -> bool:
    """Whether ``model``'s objective is maximized (cp_model stores that as scaling factor -1)."""
    return model.proto.objective.scaling_factor < 0


@dataclass
class Attempts:
    """Several attempts at one objective (a first solve and its retries): the best
    answer any of them found and the tightest bound any of them proved.

    Each attempt's model keeps some optimum of the tier (a retry only adds
    presolve or the request dominance rows), so every bound holds for all of
    them and every answer found is a plan of the tier. So a first attempt may
    prove the optimal value and a retry find it: together they prove it, and
    the attempts after them are not needed (docs/solver.md, "The attempts at one
    tier pool what they found")."""

    maximize: bool
    solver: cp_model.CpSolver | None = None
    value: int | None = None
    bound: int | None = None

    def add(self, solver: cp_model.CpSolver, status: cp_model.CpSolverStatus) -> None:
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return
        value, bound = round(solver.objective_value), round(solver.best_objective_bound)
        if self.value is None or (value >= self.value if self.maximize else value <= self.value):
            self.solver, self.value = solver, value      # a later attempt wins a tie, as before
        if self.bound is None or (bound < self.bound if self.maximize else bound > self.bound):
            self.bound = bound

    @property
    def proven(self) -> bool:
        return self.value is not None and self.value == self.bound

    def best(self, last: cp_model.CpSolver) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus, float | None]:
        """(the solver holding the best answer, its status as a whole, the tightest
        bound); ``last`` and UNKNOWN when no attempt found anything."""
        if self.solver is None:
            return last, cp_model.UNKNOWN, None
        return self.solver, cp_model.OPTIMAL if self.proven else cp_model.FEASIBLE, self.bound
