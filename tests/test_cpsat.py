"""poolc.planner.cpsat builds the models ortools' own cp_model would, and solves them alike.

The planner imports cpsat instead of cp_model to spare every `poolc plan` the
numpy and pandas imports; these tests hold it to being a faithful subset."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from ortools.sat.python import cp_model
from sweep import blocks
from test_planner_optimal import random_contention_problem, random_crowded_problem

from poolc.planner import cpsat, optimal
from poolc.planner.optimal import SolverSettings, dominance, parts

REPO = Path(__file__).resolve().parent.parent
needs_helper = pytest.mark.skipif(cpsat.BACKEND != "cp_model_helper",
                                  reason="this ortools has no C++ model builder: cpsat is cp_model itself")


def build(api, *, maximize: bool):  # noqa: ANN001, ANN201 - either module
    """Every call the planner makes, in one small model."""
    model = api.CpModel()
    x = model.new_int_var(0, 10, "x")
    y = model.new_int_var(-3, 7, "y")
    ok = model.new_bool_var("ok")
    model.add(x + 2 * y <= 12)
    model.add(api.LinearExpr.weighted_sum([x, y], [3, -1]) >= -4)
    model.add(x - y <= 5).only_enforce_if(ok)
    model.add(x == 0).only_enforce_if(~ok)
    model.add(x + y >= 1).only_enforce_if([ok, ~ok])
    objective = api.LinearExpr.weighted_sum([x, y, ok], [2, 5, 1]) + 3
    (model.maximize if maximize else model.minimize)(objective)
    model.add_hint(x, 1)
    model.add_hint(y, 2)
    copy = model.clone()
    copy.add(copy.get_int_var_from_proto_index(y.index) <= 6)
    copy.clear_hints()
    copy.add_hint(copy.get_int_var_from_proto_index(x.index), 0)
    return model, copy, [x, y, ok]


@needs_helper
@pytest.mark.parametrize("maximize", [True, False])
def test_cpsat_builds_the_protos_cp_model_builds(maximize: bool) -> None:
    for ours, theirs in zip(build(cpsat, maximize=maximize)[:2], build(cp_model, maximize=maximize)[:2],
                            strict=True):
        assert str(ours.proto) == str(theirs.proto)
        assert "enforcement_literal: -3" in str(ours.proto)      # ~ok


@pytest.mark.parametrize("maximize", [True, False])
def test_cpsat_solves_as_cp_model_solves(maximize: bool) -> None:
    answers = []
    for api in (cpsat, cp_model):
        model, copy, variables = build(api, maximize=maximize)
        row = []
        for m in (model, copy):
            solver = api.CpSolver()
            solver.parameters.num_workers = 1
            solver.parameters.max_deterministic_time = 5.0
            status = solver.solve(m)
            assert status == api.OPTIMAL, solver.status_name(status)
            row.append((solver.status_name(status), solver.best_objective_bound,
                        [solver.value(v) for v in variables]))
        answers.append(row)
    assert answers[0] == answers[1]
    feasible = [2 * x + 5 * y + ok + 3 for x in range(11) for y in range(-3, 8) for ok in (0, 1)
                if x + 2 * y <= 12 and 3 * x - y >= -4 and (x - y <= 5 if ok else x == 0)]
    assert answers[0][0][1] == (max if maximize else min)(feasible)


@needs_helper
@pytest.mark.parametrize("seed", blocks(12, fast=2))   # one of each generator
def test_the_planner_plans_the_same_on_either_module(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = (random_contention_problem if seed % 2 else random_crowded_problem)(seed)
    ours = optimal.solve(problem)
    use_api(cp_model, monkeypatch)
    theirs = optimal.solve(problem)
    assert ours == theirs
    assert ours.status == "OPTIMAL"


def planner_models(problem, api, monkeypatch: pytest.MonkeyPatch) -> list[str]:  # noqa: ANN001
    """The text of every part's model, with every tier's own variables and the
    request dominance rows (conditional on several literals) added."""
    use_api(api, monkeypatch)
    texts = []
    for _, built in parts.models(problem, SolverSettings())[1]:
        for tier in built.tiers:
            if tier.setup is not None:
                tier.setup()
        dominance.request_dominance(built)
        texts.append(str(built.model.proto))
    return texts


def use_api(api, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """Every module of the planner's package builds and solves through ``api``."""
    patched = set()
    for info in pkgutil.iter_modules(optimal.__path__, f"{optimal.__name__}."):
        module = importlib.import_module(info.name)
        if hasattr(module, "cp_model"):
            monkeypatch.setattr(module, "cp_model", api)
            patched.add(info.name.rsplit(".", 1)[1])
    assert {"build", "attempts", "loop"} <= patched       # the model is made and solved there


@needs_helper
@pytest.mark.parametrize("seed", blocks(12, fast=2))   # one of each generator
def test_the_planner_s_models_are_the_ones_cp_model_builds(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = (random_contention_problem if seed % 2 else random_crowded_problem)(seed)
    ours = planner_models(problem, cpsat, monkeypatch)
    assert ours == planner_models(problem, cp_model, monkeypatch)
    assert all("linear" in text for text in ours)


@needs_helper
def test_planning_imports_neither_numpy_nor_pandas(tmp_path: Path) -> None:
    code = ("import sys; from poolc.cli import main\n"
            "try: main(['plan', '--quiet', '--out', sys.argv[1], 'examples'])\n"
            "except SystemExit: pass\n"
            "assert 'poolc.planner.optimal' in sys.modules\n"
            "sys.exit(sorted({'numpy', 'pandas', 'ortools.sat.python.cp_model'} & set(sys.modules)) or 0)")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "plan.json")], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "plan.json").stat().st_size > 0
