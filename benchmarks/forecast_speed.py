"""Speed of `plan --forecast`: the plan alone and the forecast rolled from it, in one run.

Prints figures, not pass/fail (see benchmarks/README.md):

    python benchmarks/forecast_speed.py [--seed 1] [--requests 2000,10000] [--horizons 1d,7d]
                                        [--strategy optimal] [--baseline REV] [--check-full]

The platform is plan_scale.py's (20 pools, 60 policies, 500 running, requests in
about 90 classes). Durations are seeded per class of identical requests from 30 min
to 12 h on a 30-minute grid; a running allocation has 30 min to 12 h left. Each
measurement runs in a child process (the poolc of this tree, and with --baseline the
poolc of git revision REV beside it, on the same platforms): the CPU seconds of the
plan's solve, of the roll-forward (every re-plan included), their ratio, the
completion times and re-plans, the slowest re-plan's CPU seconds, and the peak memory.

--check-full rolls each platform forward a second time over the first horizon,
planning every pool at every completion (no partial re-plans; the class bound, which
tests/test_forecast.py holds to the unbounded plan, kept) and says whether the schedule
is the same, start for start.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from trees import poolc_tree  # benchmarks/trees.py

REPO = Path(__file__).resolve().parents[1]

# Runs in the child, with the poolc under test first on sys.path.
CHILD = r"""
import json, random, resource, sys, time
sys.path.insert(0, sys.argv[1])
from plan_scale import T0, make_problem
from poolc.forecast.durations import parse_horizon
from poolc.forecast.rollforward import roll_forward
from poolc.planner import optimal, zenml
args = json.loads(sys.argv[2])
STEPS = [1800 * k for k in range(1, 25)]

def durations_for(problem, seed):
    rng = random.Random(seed * 7919)
    by_class, found = {}, {}
    for r in problem.requests:
        key = (r.requester, tuple(sorted(r.demand.items())), r.preemptible)
        if key not in by_class:
            by_class[key] = rng.choice(STEPS)
        found[r.id] = by_class[key]
    for a in problem.running:
        found[a.name] = int((T0 - a.started_at).total_seconds()) + rng.choice(STEPS)
    return found

problem = make_problem(args["seed"], n_requests=args["requests"])
durations = durations_for(problem, args["seed"])
solve = optimal.solve if args["strategy"] == "optimal" else zenml.solve
slowest = [0.0]

def timed(p):
    c = time.process_time()
    try:
        return solve(p)
    finally:
        slowest[0] = max(slowest[0], time.process_time() - c)

c = time.process_time()
first = solve(problem)
plan_cpu = time.process_time() - c
out = {"plan_cpu": plan_cpu, "status": first.status}
for horizon in args["horizons"]:
    slowest[0] = 0.0
    c = time.process_time()
    rolled = roll_forward(problem, first, t0=T0, horizon=parse_horizon(horizon), durations=durations,
                          replan=timed, bound_classes=args["strategy"] == "optimal")
    row = {"cpu": time.process_time() - c, "events": rolled.events, "replans": rolled.replans,
           "slowest": slowest[0], "started": sum(w.outcome == "started" for w in rolled.waits),
           "schedule": sorted((r.id, r.start, r.stopped) for r in rolled.runs)}
    if args["check_full"] and horizon == args["horizons"][0]:
        full = roll_forward(problem, first, t0=T0, horizon=parse_horizon(horizon), durations=durations,
                            replan=solve, bound_classes=args["strategy"] == "optimal", partial=False)
        row["same_as_full"] = sorted((r.id, r.start, r.stopped) for r in full.runs) == row["schedule"]
    row["schedule"] = len(row["schedule"])
    out[horizon] = row
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def measure(code: Path, seed: int, requests: int, horizons: list[str], strategy: str, check_full: bool) -> dict:
    args = {"seed": seed, "requests": requests, "horizons": horizons, "strategy": strategy, "check_full": check_full}
    env = {**os.environ, "PYTHONPATH": f"{code}{os.pathsep}{REPO / 'benchmarks'}"}
    done = subprocess.run([sys.executable, "-c", CHILD, str(code), json.dumps(args)], capture_output=True,
                          text=True, env=env, check=False)
    if done.returncode != 0:
        sys.exit(f"the child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--requests", default="2000,10000")
    parser.add_argument("--horizons", default="1d,7d")
    parser.add_argument("--strategy", choices=("optimal", "zenml"), default="optimal")
    parser.add_argument("--baseline", metavar="REV", help="also measure the poolc of this git revision")
    parser.add_argument("--check-full", action="store_true",
                        help="compare each schedule with one planning every pool at every completion")
    args = parser.parse_args(argv)
    horizons = args.horizons.split(",")
    load = os.getloadavg()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average at the start "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; strategy {args.strategy}, seed {args.seed}")
    print(f"{'requests':>8} {'code':<7} {'horizon':>7} {'plan cpu':>8} {'forecast':>9} {'ratio':>6} "
          f"{'events':>6} {'replans':>7} {'slowest':>7} {'started':>7} {'MB':>5} same-as-full")
    with tempfile.TemporaryDirectory() as work:
        codes = [("after", REPO)]
        if args.baseline:
            codes.insert(0, ("before", poolc_tree(args.baseline, Path(work))))
        for requests in (int(n) for n in args.requests.split(",")):
            for which, code in codes:
                full = args.check_full and which == "after"
                r = measure(code, args.seed, requests, horizons, args.strategy, full)
                for horizon in horizons:
                    row = r[horizon]
                    print(f"{requests:>8} {which:<7} {horizon:>7} {r['plan_cpu']:8.2f} {row['cpu']:9.2f} "
                          f"{row['cpu'] / r['plan_cpu']:5.1f}x {row['events']:>6} {row['replans']:>7} "
                          f"{row['slowest']:7.2f} {row['started']:>7} {r['peak_mb']:5.0f} "
                          f"{row.get('same_as_full', '-')}", flush=True)
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("plan cpu = the optimal (or zenml) solve of the plan alone, CPU s; forecast = the roll-forward, "
          "every re-plan included, CPU s; ratio = forecast / plan; slowest = the slowest re-plan, CPU s; "
          "same-as-full = the schedule equals one planning every pool at every completion (after only).")


if __name__ == "__main__":
    main()
