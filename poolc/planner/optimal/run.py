"""What a solve carries from step to step: the budget every part shares, the
run (settings, budget, progress), one part's result so far, and one tier's
attempts in progress. Plain values, so each step of the loop says what it
reads and changes."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import cpsat as cp_model  # the CP-SAT API, without numpy and pandas (cpsat.py)
from .built import Tier, Values
from .settings import SolverSettings

Progress = Callable[[str], None]


@dataclass(frozen=True)
class SolveCost:
    """One CP-SAT solve: what it was for, its deterministic seconds (what the budget
    counts, the same on every machine) and the CPU seconds it took here (what a
    user waits for; reported, never used to decide anything)."""

    what: str
    deterministic: float
    cpu: float

    def suspicious(self) -> bool:
        """Worth a line in the solver report: above 1 CPU s, or more than 10 CPU s
        per deterministic second (CP-SAT's clock undercounts presolve, so a budget
        in deterministic time does not bound such a solve's CPU)."""
        return self.cpu > 1.0 or self.cpu > 10 * max(self.deterministic, 1e-3) and self.cpu > 0.05


@dataclass
class Budget:
    """The deterministic-time budget shared by every tier of every part, and the
    cost of every solve charged to it."""

    total: float
    tiers_left: int
    spent: float = 0.0
    doing: str = ""                                            # the tier being solved, for `charge`
    solves: list[SolveCost] = field(default_factory=list)

    def solve(self, solver: cp_model.CpSolver, model: cp_model.CpModel) -> cp_model.CpSolverStatus:
        """``solver`` on ``model``, its deterministic time charged, its cost recorded."""
        cpu = time.process_time()
        status = solver.solve(model)
        self.spent += solver.deterministic_time
        self.solves.append(SolveCost(self.doing, solver.deterministic_time, time.process_time() - cpu))
        return status

    def share(self) -> float:
        """A fair share of what is left: a hard tier cannot starve the ones after
        it, and time an easy tier does not use passes on (what is left after the
        last tier goes to `reopen`)."""
        return (self.total - self.spent) / max(1, self.tiers_left)


@dataclass
class Run:
    """One `solve`: its settings, the budget its parts share, where progress lines go."""

    settings: SolverSettings
    budget: Budget
    progress: Progress | None = None


@dataclass
class PartResult:
    """One part's answer so far: tier values and bounds, every variable's value,
    and what the loop and `reopening` need to come back to a tier."""

    vals: Values
    values: list[int]
    bounds: list[int]
    label: str = ""
    assignment: dict[int, int] = field(default_factory=dict)   # every variable, as `vals`
    solved_with: set[int] = field(default_factory=set)         # tiers proven inside the tier before
    rows: dict[int, list[int]] = field(default_factory=dict)   # tier -> the rows fixing it (its value first)
    set_up: set[int] = field(default_factory=set)              # tiers whose setup has run
    spent: dict[int, float] = field(default_factory=dict)      # tier -> deterministic s its solves took


@dataclass
class TierSolve:
    """One tier's search in progress: the model it runs on, its share and its
    attempts so far. The retry strategies read and change it; the loop then
    takes the answer and the bound from it."""

    i: int                                   # the tier, 1-based
    tier: Tier
    after: Tier | None                       # the next tier (folded in when ``weight``)
    weight: int                              # the fold's weight; 0: not folded (or no longer)
    expr: cp_model.LinearExpr                # the tier's own objective
    model: cp_model.CpModel                  # the part's model or a restricted copy of it
    assignment: dict[int, int]               # the hint, then the best answer
    left: float                              # the tier's share of the budget
    kind: str                                # which `SolverSettings.tuning` entry its solves use
    note: Progress                           # a progress line about an attempt inside the tier
    spent0: float                            # the budget spent when its first attempt began
    solver: cp_model.CpSolver                # the solver holding the best answer
    status: cp_model.CpSolverStatus          # its status (OPTIMAL: the tier is proven)
    best_bound: float | None = None          # the tightest bound of several attempts
