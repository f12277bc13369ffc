"""Capture the models the MIP retry is given, to study them or keep one as a test fixture.

    python benchmarks/capture_mip.py OUT_DIR [--generator any-shape] [--requests 1000] [--seeds 1-5]

Plans each seeded instance of benchmarks/plan_scale.py with the optimal strategy
and writes, for every count tier or FIFO tier CP-SAT's quick attempt left
unproven, the CP-SAT model as it was handed to SCIP (text format, with the hint
CP-SAT's quick attempt started from) to OUT_DIR/<generator>-<requests>-<seed>-<n>.pbtxt, and one
line per model: variables, rows, SCIP's outcome. The test fixture
tests/fixtures/mip/hard_count_tier.pbtxt was written this way.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from plan_scale import GENERATORS, make_problem, seed_range  # noqa: E402

from poolc.planner import optimal  # noqa: E402
from poolc.planner.optimal import retries  # noqa: E402
from poolc.planner.optimal.built import clear_row  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--generator", choices=GENERATORS, default="any-shape")
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--seeds", default="1-5")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    original = retries.mip_retry
    for seed in seed_range(args.seeds):
        count = 0

        def capture(run, b, model, solver, status, note, seed=seed):  # type: ignore[no-untyped-def]
            nonlocal count
            count += 1
            copy = model.clone()      # with the hint CP-SAT's quick attempt started from
            for row in set(b.rows["request dominance"] + b.rows["request dominance literals"]):
                clear_row(copy, row)
            path = args.out / f"{args.generator}-{args.requests}-{seed}-{count}.pbtxt"
            path.write_text(str(copy.proto), encoding="utf-8")
            lines: list[str] = []
            checked = original(run, b, model, solver, status, lines.append)
            print(f"{path.name}: {len(copy.proto.variables)} variables, {len(copy.proto.constraints)} rows;"
                  f"{''.join(lines)}", flush=True)
            note("".join(lines))
            return checked

        retries.mip_retry = capture
        problem = make_problem(seed, n_requests=args.requests, generator=args.generator)
        solution = optimal.solve(problem)
        print(f"seed {seed}: {solution.status}, gap {solution.gap:g}", flush=True)


if __name__ == "__main__":
    main()
