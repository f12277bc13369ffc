"""Planning again right after `apply` changes nothing (docs/planning.md#steps-that-already-run).

`apply` turns each admitted request into a running allocation that starts at the
apply, its grants a microsecond apart in the order the plan walked the reserved
shares. The next plan walks those shares again, with the rule that decides who
borrows (non-preemptible first, then by start). If the first plan counted a step
inside its share that the walk then calls a borrower, the second plan may preempt
it: `apply --check` would never pass. These tests replay that at the planner's
level on random platforms: plan, apply, plan again, and expect nothing to do.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from test_planner_optimal import T0, random_contention_problem, random_problem

from poolc.domain.borrowing import grant_order
from poolc.domain.problem import PolicyRule, Pool, Problem, Request, Running, start_ranks
from poolc.planner.optimal import solve
from poolc.planner.solution import Solution

APPLIED_AT = T0 + timedelta(days=1)          # after every start time the generators use


def applied(problem: Problem, solution: Solution) -> Problem:
    """The problem the next plan sees: what kept running, plus one allocation per
    grant started at the apply in the plan's grant order; only queued requests left."""
    policies = {q.name: q for q in problem.policies}
    ranks = {r.id: r.rank for r in problem.requests}
    order = sorted(solution.admitted, key=lambda rid: grant_order(rid in solution.in_share, ranks[rid], rid))
    by_id = {r.id: r for r in problem.requests}
    grants = [Running(f"grant-{rid}", by_id[rid].requester, policies[solution.admitted[rid]].pool,
                      by_id[rid].preemptible, dict(by_id[rid].demand),
                      APPLIED_AT + timedelta(microseconds=place))
              for place, rid in enumerate(order)]
    kept = [a for a in problem.running if a.name not in solution.preempted]
    queued = tuple(r for r in problem.requests if r.id not in solution.admitted)
    return Problem(problem.pools, problem.policies, queued, tuple(start_ranks(kept + grants)))


def random_crowded_platform(seed: int) -> Problem:
    """One or two pools of 8-20 GPUs, three teams with reserves and priorities, and
    20-40 requests mixing preemptible and non-preemptible work of several sizes:
    more demand than capacity, so reserves, borrowing and priorities all matter."""
    rng = random.Random(seed)
    pools = [Pool(n, {"gpu": rng.randint(8, 20), "mcpu": rng.randint(8, 20)})
             for n in ("p1", "p2")[: rng.randint(1, 2)]]
    policies = []
    for pool in pools:
        left = dict(pool.capacity)
        for s, prio in zip("abc", rng.sample([0, 5, 10], 3), strict=True):
            rsv = {}
            for k in pool.capacity:
                r = rng.randint(0, min(6, left[k]))
                left[k] -= r
                if r:
                    rsv[k] = r
            policies.append(PolicyRule(f"{s}-{pool.name}", s, pool.name, prio, rsv, dict(pool.capacity)))
    shapes = [(rng.choice("abc"), {"gpu": rng.randint(1, 4), "mcpu": rng.randint(0, 3), "step_run": 1},
               rng.random() < 0.6) for _ in range(rng.randint(3, 8))]
    ranks = list(range(rng.randint(20, 40)))
    rng.shuffle(ranks)
    requests = []
    for i, rank in enumerate(ranks):
        who, d, pre = rng.choice(shapes)
        requests.append(Request(f"pipe/s{i:02d}", who, dict(d), pre, rank))
    return Problem(tuple(pools), tuple(policies), tuple(requests), ())


def check_replan_changes_nothing(problem: Problem) -> None:
    first = solve(problem)
    assert first.status == "OPTIMAL"
    second = solve(applied(problem, first))
    assert second.preempted == {}, f"the second plan preempts {sorted(second.preempted)}"
    assert second.admitted == {}, f"the second plan admits {sorted(second.admitted)}"


@pytest.mark.parametrize("make", [random_problem, random_contention_problem, random_crowded_platform])
def test_planning_again_after_apply_changes_nothing(make) -> None:  # type: ignore[no-untyped-def]
    for seed in range(150):
        try:
            check_replan_changes_nothing(make(seed))
        except AssertionError as exc:
            raise AssertionError(f"{make.__name__}({seed}): {exc}") from exc
