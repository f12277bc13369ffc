"""The red-team input of the plan-speed issue: many step operators, each with one policy.

    python benchmarks/gen_redteam.py OUT_DIR [--seed 1] [--steps 2500] [--operators 400] [--running 800]

Writes a repository of the shape that once took 514 CPU s to plan while CP-SAT
used almost none of its budget: 2,500 steps, 400 step operators each with a
policy on one of two pools, 800 running allocations (the YAML is written as
benchmarks/plan_cli.py writes its instances, about 0.6 MB). Most of that time
went to the Kueue replay of the runtime check: hundreds of ClusterQueues in two
cohorts. `plan_cli.py --generators red-team` plans it with the other generators.
Same seed, same bytes.
"""

from __future__ import annotations

import argparse
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from poolc.domain.problem import PolicyRule, Pool, Problem, Request, Running, start_ranks  # noqa: E402

T0 = datetime(2024, 6, 1, tzinfo=UTC)
SHAPES = ({"gpu": 1, "mcpu": 8_000, "memory_mb": 64_000}, {"gpu": 2, "mcpu": 16_000, "memory_mb": 128_000},
          {"mcpu": 4_000, "memory_mb": 16_000}, {"mcpu": 2_000, "memory_mb": 8_000},
          {"gpu": 4, "mcpu": 32_000, "memory_mb": 256_000})


def make_redteam(seed: int = 1, steps: int = 2_500, operators: int = 400, running: int = 800) -> Problem:
    """Two GPU pools; ``operators`` step operators with one policy each (half per
    pool, random priority, a small reserved share); ``running`` allocations filling
    the pools; ``steps`` pending steps, each of one operator."""
    rng = random.Random(seed)
    pools = [Pool(f"pool-{i}", {"gpu": 512, "mcpu": 4_096_000, "memory_mb": 32_768_000, "step_run": 2_000})
             for i in range(2)]
    subjects = [f"op-{i:03d}" for i in range(operators)]
    policies = []
    for i, s in enumerate(subjects):
        pool = pools[i % 2]
        reserved = {k: max(1, v // (operators * 2)) for k, v in pool.capacity.items()}
        policies.append(PolicyRule(f"{s}-{pool.name}", s, pool.name, rng.choice((0, 10, 50, 100)), reserved,
                                   dict(pool.capacity)))
    allocs = []
    for n in range(running):
        q = rng.choice(policies)
        started = T0 - timedelta(minutes=rng.randint(1, 7 * 24 * 60))
        allocs.append(Running(f"run-{n:04d}", q.subject, q.pool, rng.random() < 0.8,
                              {**rng.choice(SHAPES), "step_run": 1}, started))
    requests = [Request(f"pipe-{rank // 20:04d}/step-{rank % 20:02d}", rng.choice(subjects),
                        {**rng.choice(SHAPES), "step_run": 1}, rng.random() < 0.85, rank)
                for rank in range(steps)]
    return Problem(tuple(pools), tuple(policies), tuple(requests), tuple(start_ranks(allocs)))


def main() -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from plan_cli import write_instance

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2_500)
    ap.add_argument("--operators", type=int, default=400)
    ap.add_argument("--running", type=int, default=800)
    args = ap.parse_args()
    write_instance(make_redteam(args.seed, args.steps, args.operators, args.running), args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
