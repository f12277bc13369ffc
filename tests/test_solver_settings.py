"""The optimal strategy's tuning as one frozen value (poolc/planner/optimal/settings.py):
every field documented in docs/solver.md, nothing mutable to patch, and a solve
with other settings leaves the next default solve as it was."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from test_planner_optimal import random_crowded_problem

from poolc.planner.optimal import SolverSettings, solve

SOLVER_DOC = Path(__file__).resolve().parents[1] / "docs" / "solver.md"


def documented_fields() -> set[str]:
    """The field names in the first column of solver.md's SolverSettings table."""
    section = SOLVER_DOC.read_text(encoding="utf-8").split("## The tuning value: `SolverSettings`", 1)[1]
    section = section.split("\n## ", 1)[0]
    return {name for line in section.splitlines() if line.startswith("| `")
            for name in re.findall(r"`([a-z_]+)`", line.split("|")[1])}


def test_every_setting_says_why_in_the_docs() -> None:
    fields = {f.name for f in dataclasses.fields(SolverSettings)}
    assert documented_fields() == fields


def test_settings_cannot_be_changed_in_place() -> None:
    settings = SolverSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.fifo_quick = 0.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        settings.tuning["count"]["cut_level"] = 0  # type: ignore[index]
    assert dataclasses.replace(settings, fifo_quick=0.0).fifo_quick == 0.0 and settings.fifo_quick == 1.0


def test_a_solve_with_other_settings_leaves_the_default_solve_alone() -> None:
    """Settings travel with the call: a solve that reopens nothing and stops at once
    (a FEASIBLE plan) does not change the default solve after it."""
    p = random_crowded_problem(3)
    first = solve(p)
    stopped = solve(p, max_deterministic_time=0.0, settings=SolverSettings(reopen=False))
    assert stopped.status == "FEASIBLE" and first.status == "OPTIMAL"
    assert solve(p) == first


def test_a_solve_is_listed_when_its_cpu_outruns_its_deterministic_time() -> None:
    """The solver report lists a solve above 1 CPU s, or above 10 CPU s per
    deterministic second (CP-SAT's clock counts no presolve); a quick solve whose
    clocks agree is not listed."""
    from poolc.planner.optimal.run import SolveCost

    assert SolveCost("fifo", 0.5, 1.2).suspicious()
    assert SolveCost("presolve-heavy", 0.01, 0.4).suspicious()
    assert not SolveCost("quick", 0.05, 0.06).suspicious()
    assert not SolveCost("tiny", 0.0, 0.01).suspicious()
