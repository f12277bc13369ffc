"""Speed of `plan --forecast`: the plan alone and the forecast rolled from it, in one run.

Prints figures, not pass/fail (see benchmarks/README.md):

    python benchmarks/forecast_speed.py [--seed 1] [--requests 10000] [--horizon 7d] [--strategy optimal]

The platform is plan_scale.py's (20 pools, 60 policies, 500 running, 10,000
requests in about 90 classes). Durations are seeded per class of identical
requests from 30 min to 12 h on a 30-minute grid; a running allocation has 30 min
to 12 h left. The figures: the solve of the plan alone, the roll-forward alone
(every re-plan included), their ratio, how many completions and re-plans, and the
process's peak memory.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan_scale import T0, make_problem  # noqa: E402

from poolc.domain.problem import Problem  # noqa: E402
from poolc.forecast.durations import parse_horizon  # noqa: E402
from poolc.forecast.rollforward import roll_forward  # noqa: E402
from poolc.planner import optimal, zenml  # noqa: E402

STEPS = [1800 * k for k in range(1, 25)]   # 30 min .. 12 h


def durations_for(problem: Problem, seed: int) -> dict[str, int | None]:
    rng = random.Random(seed * 7919)
    by_class: dict[tuple, int] = {}
    found: dict[str, int | None] = {}
    for r in problem.requests:
        key = (r.requester, tuple(sorted(r.demand.items())), r.preemptible)
        if key not in by_class:
            by_class[key] = rng.choice(STEPS)
        found[r.id] = by_class[key]
    for a in problem.running:
        assert a.started_at is not None
        found[a.name] = int((T0 - a.started_at).total_seconds()) + rng.choice(STEPS)
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--running", type=int, default=500)
    parser.add_argument("--horizon", default="7d")
    parser.add_argument("--strategy", choices=("optimal", "zenml"), default="optimal")
    args = parser.parse_args(argv)
    problem = make_problem(args.seed, n_requests=args.requests, n_running=args.running)
    durations = durations_for(problem, args.seed)
    solve = optimal.solve if args.strategy == "optimal" else zenml.solve
    started = time.perf_counter()
    first = solve(problem)
    plan_s = time.perf_counter() - started
    started = time.perf_counter()
    rolled = roll_forward(problem, first, t0=T0, horizon=parse_horizon(args.horizon), durations=durations,
                          replan=solve, bound_classes=args.strategy == "optimal")
    roll_s = time.perf_counter() - started
    started_count = sum(1 for w in rolled.waits if w.outcome == "started")
    print(f"platform: {len(problem.pools)} pools, {len(problem.running)} running, {len(problem.requests)} requests; "
          f"strategy {args.strategy}, horizon {args.horizon}")
    print(f"plan alone:   {plan_s:7.2f} s wall (status {first.status})")
    print(f"forecast:     {roll_s:7.2f} s wall ({rolled.events} completion times, {rolled.replans} re-plans, "
          f"{rolled.skipped} skipped)")
    print(f"plan + forecast / plan alone: {(plan_s + roll_s) / plan_s:.2f}x")
    print(f"started within the horizon: {started_count} of {len(rolled.waits)} waiting; "
          f"peak memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
