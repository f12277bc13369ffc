"""A written 0 is a real zero: the planners on pools and policies with zero capacities
and zero limits (docs/format.md#resource-maps-capacity-reserved-limit).

The random instances of the planner tests are reused with some capacities and limits
set to 0: `optimal` must still agree with brute force, `zenml` must keep every hard
rule, and neither may place a request that needs a key through a zero.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from sweep import blocks

from poolc.domain.problem import PolicyRule, Pool, Problem
from poolc.planner.optimal import solve as solve_optimal
from poolc.planner.zenml import solve as solve_zenml
from tests import test_planner_optimal as optimal_tests
from tests import test_planner_zenml as zenml_tests


def with_zeros(problem: Problem, rng: random.Random) -> Problem:
    """Zero some capacities (their policies' reservations and limits follow) and
    some limits (their reservations follow); running allocations are kept as they are."""
    pools = []
    for pool in problem.pools:
        pools.append(Pool(pool.name, {k: 0 if rng.random() < 0.25 else v for k, v in pool.capacity.items()}))
    capacity = {p.name: p.capacity for p in pools}
    policies = []
    for q in problem.policies:
        cap = capacity[q.pool]
        limit = {k: 0 if cap[k] == 0 or rng.random() < 0.2 else min(v, cap[k]) for k, v in q.limit.items()}
        reserved = {k: min(v, limit.get(k, cap.get(k, 0))) for k, v in q.reserved.items()}
        policies.append(PolicyRule(q.name, q.subject, q.pool, q.priority,
                                   {k: v for k, v in reserved.items() if v > 0}, limit))
    return Problem(tuple(pools), tuple(policies), problem.requests, problem.running)


def _through_a_zero(problem: Problem, admitted: dict[str, str]) -> list[str]:
    """Requests admitted through a policy whose pool or limit is 0 on a key they need."""
    rules = {q.name: q for q in problem.policies}
    found = []
    for request in problem.requests:
        q = rules.get(admitted.get(request.id, ""))
        if q is None:
            continue
        pool = problem.pool(q.pool)
        for key, need in request.demand.items():
            if need > 0 and (pool.capacity.get(key) == 0 or q.limit.get(key) == 0):
                found.append(f"{request.id} needs {key} through {q.name}")
    return found


@pytest.mark.parametrize("block", blocks(4))
def test_optimal_matches_bruteforce_with_zero_capacities_and_limits(block: int) -> None:
    rng = random.Random(block)
    for seed in range(block * 40, block * 40 + 40):
        problem = with_zeros(optimal_tests.random_problem(seed), rng)
        try:
            optimal_tests.check_against_bruteforce(problem)
            assert _through_a_zero(problem, solve_optimal(problem).admitted) == []
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}: {exc}") from exc


def test_zenml_keeps_every_hard_rule_with_zero_capacities_and_limits() -> None:
    rnd = random.Random(20261123)
    for _ in range(200):
        problem = with_zeros(zenml_tests.random_problem(rnd), rnd)
        solution = solve_zenml(problem)
        zenml_tests.check_invariants(problem, solution)
        assert _through_a_zero(problem, solution.admitted) == []


def _quota(cohort: dict, resource: str) -> dict:
    quotas = cohort["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    return next(q for q in quotas if q["name"] == resource)


def test_a_zero_limit_becomes_a_zero_borrowing_limit_in_kueue() -> None:
    from poolc.targets.kueue import child_cohort, root_cohort

    pool = Pool("dc", {"gpu": 8, "mcpu": 128000, "step_run": 0})
    policy = PolicyRule("team-dc", "team", "dc", 0, {}, {"gpu": 0, "mcpu": 128000, "step_run": 0})
    child = child_cohort(pool, policy)
    assert _quota(child, "nvidia.com/gpu")["borrowingLimit"] == "0"
    assert _quota(child, "cpu")["borrowingLimit"] == "128"
    assert _quota(root_cohort(pool, [policy]), "pods")["nominalQuota"] == "0"


def test_written_zeros_reach_the_problem() -> None:
    from poolc.commands.validate import validate_paths
    from poolc.inputs import problem_from_config

    fixture = str(Path(__file__).parent / "fixtures" / "negative" / "r003-zero-limit-and-capacity.yaml")
    result = validate_paths([fixture])
    problem = problem_from_config(result.config, [])
    assert problem.pool("closed-pool").capacity == {"gpu": 8, "step_run": 0}
    rule = next(q for q in problem.policies if q.name == "zero-k8s-gpu")
    assert rule.limit["gpu"] == 0 and rule.reserved == {}
