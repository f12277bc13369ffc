"""The MIP retry (poolc/planner/mip.py): a count tier CP-SAT's quick attempt leaves
unproven is proven by SCIP, checked by CP-SAT, and plans stay byte-identical.

The fixture is a count tier's CP-SAT model captured from the planner with
benchmarks/capture_mip.py (`any-shape`, 200 requests, seed 4: "preempted at
priority 10"), with the hint its quick attempt started from."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyscipopt")

from poolc.planner import cpsat, mip  # noqa: E402
from poolc.planner.optimal import SolverSettings, attempts, retries  # noqa: E402
from poolc.planner.optimal.built import Built  # noqa: E402
from poolc.planner.optimal.run import Budget, Run  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "mip" / "hard_count_tier.pbtxt.gz"
SETTINGS = SolverSettings()
LIMITS = {"nodes": SETTINGS.mip_nodes, "lp_iterations": SETTINGS.mip_lp_iterations}   # the planner's


def _model() -> cpsat.CpModel:
    model = cpsat.CpModel()
    model.proto.parse_text_format(gzip.decompress(FIXTURE.read_bytes()).decode())
    return model


def _quick(model: cpsat.CpModel) -> cpsat.CpSolver:
    """The planner's quick attempt at a count tier: `count_quick` deterministic s."""
    solver = attempts.cp_solver(SETTINGS, SETTINGS.count_quick, presolve=True, kind="count")
    solver.solve(model)
    return solver


def test_a_count_tier_cp_sat_cannot_prove_quickly_is_proven_by_the_retry():
    model = _model()
    quick = _quick(model)
    status = quick.response_proto.status
    assert status == cpsat.FEASIBLE                                  # found something, proved nothing
    assert quick.best_objective_bound != quick.objective_value
    notes: list[str] = []
    built = Built(model, [], [], 0)
    checked = retries.mip_retry(Run(SETTINGS, Budget(60.0, 1)), built, model, quick, status, notes.append)
    assert checked is not None, notes
    assert checked.response_proto.status == cpsat.OPTIMAL             # CP-SAT's check of SCIP's answer
    assert "SCIP: proven" in notes[0]
    assert built.mip_work and built.mip_work[0][1] > 0                # LP iterations were counted
    # the optimum CP-SAT reaches given far longer agrees with the retry's
    long = attempts.cp_solver(SETTINGS, 30.0, presolve=True, kind="count")
    assert long.solve(model) == cpsat.OPTIMAL
    assert round(checked.objective_value) == round(long.objective_value)
    # minimizing: the quick attempt's answer was no better than the optimum
    assert round(quick.objective_value) >= round(checked.objective_value)


def test_scip_stops_at_the_same_place_every_time():
    model = _model()
    start = list(_quick(model).response_proto.solution)
    first = mip.solve(model.proto, start, **LIMITS)
    again = mip.solve(model.proto, start, **LIMITS)
    assert first == again
    assert first.proven


def test_the_lp_iteration_limit_stops_it_after_the_first_lp_without_a_proof():
    model = _model()
    whole = mip.solve(model.proto, None, **LIMITS)
    found = mip.solve(model.proto, None, nodes=SETTINGS.mip_nodes, lp_iterations=1)
    assert whole.proven and not found.proven
    assert found.status == "userinterrupt"
    assert found.lp_iterations < whole.lp_iterations


def test_an_answer_breaking_a_row_fails_the_check():
    model = _model()
    answer = mip.solve(model.proto, list(_quick(model).response_proto.solution), **LIMITS)
    assert answer.values is not None
    broken = list(answer.values)
    top = max(range(len(broken)), key=lambda i: model.proto.variables[i].domain[1])
    broken[top] = int(model.proto.variables[top].domain[1]) + 1        # outside its domain
    assert retries.checked(SETTINGS, model, broken, set(), Budget(60.0, 1)) is None
    assert retries.checked(SETTINGS, model, answer.values, set(), Budget(60.0, 1)) is not None


@pytest.mark.slow
def test_plans_with_the_retry_are_byte_identical_across_runs_and_hash_seeds(tmp_path):
    """A whole `poolc plan` of a platform where the retry runs, three times."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from plan_cli import write_instance
    from plan_scale import make_problem

    # heavy-tailed 1,000 seed 5: four tiers are left to SCIP after the quick attempt (seed 1
    # no longer needs it since the short-key rule is exact in the model)
    write_instance(make_problem(5, n_requests=1000, generator="heavy-tailed"), tmp_path / "platform")
    digests, stderr = set(), ""
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-m", "poolc", "plan", "--format", "json", "--verbose",
                               str(tmp_path / "platform")],
                              capture_output=True, env=env, check=False)
        # exit 1: the generated platform has steps no pool can ever fit (errors in the plan)
        assert done.returncode in (0, 1) and json.loads(done.stdout)["solver"]["status"] == "OPTIMAL", \
            done.stderr.decode()[-2000:]
        digests.add(hashlib.sha256(done.stdout).hexdigest())
        stderr = done.stderr.decode()
    assert len(digests) == 1
    assert "SCIP: proven" in stderr          # the retry did run and prove a tier


def test_a_plan_that_needs_no_retry_never_imports_scip():
    """pyscipopt is imported by the planner only when a retry runs."""
    code = ("import sys; from poolc.commands.planning import plan_paths; plan = plan_paths(['examples']).plan; "
            "print(plan.solver.status, 'pyscipopt' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.split() == ["OPTIMAL", "False"], done.stderr[-2000:]


def test_plans_solved_through_the_retry_match_the_brute_force(monkeypatch):
    """Every count tier and FIFO sent to SCIP (no quick CP-SAT attempt at all) on
    random small platforms: the plans keep every hard rule and reach the exhaustive
    optimum of every tier, as CP-SAT's do."""
    from test_planner_optimal import check_against_bruteforce, random_contention_problem, random_problem

    settings = SolverSettings(count_quick=0.0, fifo_quick=0.0)
    calls: list[mip.MipAnswer] = []
    solve = mip.solve

    def counted(*args, **kwargs):
        calls.append(solve(*args, **kwargs))
        return calls[-1]

    monkeypatch.setattr(mip, "solve", counted)
    for seed in range(20):
        for problem in (random_problem(seed), random_contention_problem(seed)):
            try:
                check_against_bruteforce(problem, settings)
            except AssertionError as exc:
                raise AssertionError(f"seed {seed}: {exc}") from exc
    assert sum(answer.proven for answer in calls) >= 20       # the retry answered many tiers
