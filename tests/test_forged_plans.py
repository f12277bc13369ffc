"""Issue #42: a saved plan is applied only if every preemption in it is one the rules
allow (docs/planning.md#hard-rules), checked without the solver. Each forged file here
is self-consistent: its fates, pools and policies are what poolc derives from its
decisions, so only the rules themselves can refuse it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from support import cli
from test_apply_saved import without_solver

from poolc.commands.planning import decide, load, prepare, read_inputs_state
from poolc.domain.plan import to_json
from poolc.planner.solution import Solution


def _forge(extra: dict[str, list[str]]) -> None:
    """plan.json from `plan --strategy zenml --out`, with the ``extra`` preemptions added and
    every fate, pool and policy figure made to agree with them as poolc derives them."""
    assert cli("plan", "examples", "--strategy", "zenml", "--out", "plan.json").exit_code == 0
    saved = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    from poolc.domain.plan_file import read_plan

    plan = read_plan(saved)
    validation = load(["examples"])
    prepared = prepare(validation, read_inputs_state(validation, "poolc.state.json", None), "poolc.state.json")
    admitted = {r.id: r.policy for r in plan.requests
                if r.status == "allocated" and r.id in {q.id for q in prepared.problem.requests}}
    preempted = {p.id: list(p.for_) for p in plan.preempted} | extra
    solution = Solution(plan.solver.strategy, admitted, preempted, plan.solver.status, list(plan.solver.objective),
                        plan.solver.gap)
    fresh = decide(prepared, solution)
    forged = dataclasses.replace(plan, requests=fresh.requests, preempted=fresh.preempted, pools=fresh.pools,
                                 policies=fresh.policies)
    Path("plan.json").write_text(to_json(forged), encoding="utf-8")


def _admitted_in(pool: str) -> str:
    saved = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    return next(r["id"] for r in saved["requests"] if r["status"] == "allocated" and r.get("pool") == pool
                and "already running" not in r.get("message", ""))


def _apply(platform: Path):
    return without_solver("apply", "examples", "--output-dir", "deploy", "--now", "2026-11-23T03:00:00Z",
                          "--plan", "plan.json", cwd=platform)


def test_a_forged_preemption_of_non_preemptible_work_is_refused(platform):
    assert cli("plan", "examples", "--strategy", "zenml", "--out", "plan.json").exit_code == 0
    step = _admitted_in("datacenter-one")
    _forge({"research-finetune-llama": [step]})
    done = _apply(platform)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "research-finetune-llama" in done.stderr and "not preemptible" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "blocked" not in done.stderr
    assert not Path("deploy").exists() and not Path("poolc.state.json").exists()


def test_a_forged_preemption_for_a_step_of_another_pool_is_refused(platform):
    assert cli("plan", "examples", "--strategy", "zenml", "--out", "plan.json").exit_code == 0
    step = _admitted_in("cpu-batch")
    _forge({"research-sweep-lr-01": [step]})
    done = _apply(platform)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "research-sweep-lr-01" in done.stderr and "does not admit on pool datacenter-one" in done.stderr
    assert "Traceback" not in done.stderr
    assert not Path("deploy").exists()


def test_a_forged_preemption_for_nobody_is_refused(platform):
    _forge({"research-sweep-lr-02": []})
    done = _apply(platform)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "research-sweep-lr-02" in done.stderr and "Traceback" not in done.stderr
    assert not Path("deploy").exists()


def test_the_unforged_plan_still_applies(platform):
    _forge({})
    done = _apply(platform)
    assert done.returncode == 0, done.stderr


def test_every_plan_the_strategies_make_is_allowed_and_bruteforce_agrees():
    """The check refuses nothing a strategy decides (random and contended platforms,
    optimal and zenml), and what it allows the brute-force oracle's rules allow too."""
    import bruteforce
    from test_planner_optimal import random_contention_problem, random_problem

    from poolc.domain.allowed import refused_preemptions
    from poolc.planner.optimal import solve
    from poolc.planner.zenml import solve as zenml

    preempting = 0
    for seed in range(40):
        for problem in (random_problem(seed), random_contention_problem(seed)):
            for solution in (solve(problem), zenml(problem)):
                preempted = {name: list(steps) for name, steps in solution.preempted.items()}
                assert refused_preemptions(problem, solution.admitted, preempted) == [], (seed, solution)
                preempting += bool(preempted)
            optimal = solve(problem)
            assert not [v for v in bruteforce.violations(problem, optimal.admitted, set(optimal.preempted))
                        if v.startswith("H5")]
            # one extra preemption of each running allocation the oracle forbids is refused
            for victim in problem.running:
                if victim.name in optimal.preempted or victim.name in bruteforce.candidates(problem):
                    continue
                forged = {**{n: list(s) for n, s in optimal.preempted.items()},
                          victim.name: sorted(optimal.admitted)[:1]}
                assert refused_preemptions(problem, optimal.admitted, forged), (seed, victim)
    assert preempting > 10
