"""The `optimal` solve alone on plan_scale instances, tier by tier.

    python benchmarks/solve_tiers.py --requests 1000 --seeds 1-3 --any-shape

Per instance: status, gap, CPU seconds of the solve, the objective vector, and
(with --tiers) each tier's progress line: value, bound when unproven, and the
deterministic time spent so far. One process, instances one after the other,
so CPU seconds of different instances compare within one run.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan_scale import make_problem, seed_range  # noqa: E402

from poolc.planner import optimal  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", default="1000", help="comma-separated sizes")
    ap.add_argument("--seeds", default="1", help="e.g. 1-5 or 1,5")
    ap.add_argument("--any-shape", action="store_true")
    ap.add_argument("--max-deterministic-time", type=float, default=60.0)
    ap.add_argument("--tiers", action="store_true", help="print each tier's progress line")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="override a SolverSettings field (a Python literal), to compare variants")
    args = ap.parse_args(argv)
    settings = optimal.SolverSettings()
    for item in args.set:
        name, _, value = item.partition("=")
        settings = dataclasses.replace(settings, **{name: ast.literal_eval(value)})
    for size in (int(s) for s in args.requests.split(",")):
        for seed in seed_range(args.seeds):
            problem = make_problem(seed, n_requests=size, any_shape=args.any_shape)
            lines: list[str] = []
            cpu = time.process_time()
            sol = optimal.solve(problem, max_deterministic_time=args.max_deterministic_time,
                                progress=lines.append, settings=settings)
            cpu = time.process_time() - cpu
            det = lines[-1].rsplit("deterministic time ", 1)[-1].split("/")[0] if lines else "0"
            shape = "any-shape" if args.any_shape else "repertoire"
            print(f"{shape} {size} seed {seed}: {sol.status} gap {sol.gap:.4g} "
                  f"cpu {cpu:.1f} s det {det} objective {sol.objective}", flush=True)
            if args.tiers:
                for line in lines:
                    print("   ", line, flush=True)


if __name__ == "__main__":
    main()
