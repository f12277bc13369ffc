"""Scale benchmark: plan one seeded, platform-sized Problem with both strategies.

Prints figures, not pass/fail (see benchmarks/README.md):

    python benchmarks/plan_scale.py [--seed 1] [--requests 10000] [--running 500]

The platform: 20 pools built from node types (two CPU-only, three with a custom
key), 15 components with 4 policies each (60), 40 resource shapes, 500 running
allocations filling each pool to 50-100% (many beyond their reserved share, so
preemption matters) and 10,000 pending requests, far more than fits. Each
component submits 4-8 kinds of steps (shape, preemptible); `--any-shape` lets
every request pick any of the 40 shapes instead (about 1,000 request classes, a
much harder instance); `--generator heavy-tailed` gives each component 30 of 300
platform shapes, each with its own fixed preemptible flag, drawn Zipf(1.2) (a few
shapes most of the time, a long tail of rare ones: 281 classes at 1,000 requests,
448 at 10,000); `--generator fleet` gives each component 80 of 200 shapes drawn
evenly (about 700 classes at 1,000 requests, 1,200 at 10,000). The Problem is built directly, no YAML involved.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from poolc.domain.problem import PolicyRule, Pool, Problem, Request, Running, start_ranks  # noqa: E402
from poolc.planner import optimal, zenml  # noqa: E402
from poolc.planner.solution import Solution  # noqa: E402

PRIORITIES = (0, 10, 50, 100)
T0 = datetime(2024, 6, 1, tzinfo=UTC)


# Node types a pool is built from (capacity = node shape x node count), so a pool's
# keys come in realistic ratios: about 12 cores and 125 GB of memory per GPU.
NODE_TYPES = (
    {"gpu": 8, "mcpu": 96_000, "memory_mb": 1_000_000},
    {"gpu": 4, "mcpu": 48_000, "memory_mb": 500_000},
    {"mcpu": 64_000, "memory_mb": 256_000},
)


def make_pools(rng: random.Random, count: int) -> list[Pool]:
    """pool-00/01 are CPU-only; every seventh pool also meters a custom key; some do
    not meter step_run (unbounded there)."""
    pools = []
    for i in range(count):
        node = NODE_TYPES[2] if i < 2 else rng.choice(NODE_TYPES[:2])
        nodes = rng.randint(3, 10)
        cap = {k: v * nodes for k, v in node.items()}
        if rng.random() < 0.7:
            cap["step_run"] = 16 * nodes
        if i % 7 == 3:
            cap["tensorrt_sessions"] = 8
        pools.append(Pool(f"pool-{i:02d}", cap))
    return pools


def make_policies(rng: random.Random, pools: list[Pool], components: int, per: int) -> list[PolicyRule]:
    """`per` policies per component on distinct pools; reserved shares sum to at most
    60% of each capacity key, limits sometimes below the capacity."""
    links = {p.name: [] for p in pools}
    for c in range(components):
        for pool in rng.sample(pools, per):
            links[pool.name].append(f"comp-{c:02d}")
    policies = []
    for pool in pools:
        subjects = sorted(links[pool.name])
        for s in subjects:
            rsv, lim = {}, {}
            for k, cap in pool.capacity.items():
                share = int(cap * 0.6 / max(1, len(subjects)))
                if rng.random() < 0.7 and share > 0:
                    rsv[k] = rng.randint(share // 2, share)
                lim[k] = cap if rng.random() < 0.7 else max(rsv.get(k, 0), int(cap * rng.uniform(0.4, 0.9)))
            policies.append(PolicyRule(f"{s}-{pool.name}", s, pool.name, rng.choice(PRIORITIES), rsv, lim))
    return policies


def make_shapes(rng: random.Random, count: int) -> list[dict[str, int]]:
    """Three in five shapes use GPUs (cores and memory per GPU below a node's ratio),
    the rest are CPU jobs; one in ten also needs the custom key."""
    shapes = []
    for i in range(count):
        gpu = rng.choice((1, 1, 2, 4, 8)) if i % 5 < 3 else 0
        if gpu:
            shape = {"gpu": gpu, "mcpu": gpu * rng.choice((4, 6, 8, 10)) * 1000,
                     "memory_mb": gpu * rng.choice((40, 60, 80, 100)) * 1000}
        else:
            cores = rng.choice((1, 2, 4, 8, 16))
            shape = {"mcpu": cores * 1000, "memory_mb": cores * rng.choice((2, 4, 8)) * 1000}
        shape["step_run"] = 1
        if i % 10 == 9:
            shape["tensorrt_sessions"] = 1
        shapes.append(shape)
    return shapes


def make_running(rng: random.Random, pools: list[Pool], policies: list[PolicyRule],
                 shapes: list[dict[str, int]], count: int) -> list[Running]:
    """Pack allocations into pools up to a per-pool fill level between half and full
    (the limit is ignored, as a shrunk limit would leave them in place)."""
    used = {p.name: dict.fromkeys(p.capacity, 0) for p in pools}
    fill = {p.name: rng.uniform(0.5, 1.0) for p in pools}
    by_name = {p.name: p for p in pools}
    running: list[Running] = []
    attempts = 0
    while len(running) < count and attempts < count * 50:
        attempts += 1
        q = rng.choice(policies)
        pool = by_name[q.pool]
        holds = {k: v for k, v in rng.choice(shapes).items() if k in pool.capacity}
        if any(used[pool.name][k] + v > pool.capacity[k] * fill[pool.name] for k, v in holds.items()):
            continue
        for k, v in holds.items():
            used[pool.name][k] += v
        started = T0 - timedelta(minutes=rng.randint(1, 7 * 24 * 60))
        running.append(Running(f"run-{len(running):04d}", q.subject, q.pool, rng.random() < 0.8, holds,
                               started))
    return start_ranks(running)


def seed_range(text: str, sep: str = ",") -> list[int]:
    """'1-3,7' -> [1, 2, 3, 7] (with ``sep`` between the parts): the benchmarks' seed lists."""
    out: list[int] = []
    for part in text.split(sep):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


GENERATORS = ("repertoire", "any-shape", "heavy-tailed", "fleet")
HEAVY_SHAPES, HEAVY_PER_TEAM, HEAVY_ZIPF = 300, 30, 1.2
FLEET_SHAPES, FLEET_PER_TEAM = 200, 80


def heavy_tailed(rng: random.Random, subjects: list[str]) -> dict[str, list[tuple[dict[str, int], bool]]]:
    """Per team, its 30 (shape, preemptible) kinds out of 300 platform shapes, most
    used first. A step's resources and preemptible flag are fixed in pipeline code,
    so the flag belongs to the shape; sweeps repeat a few steps many times, so a
    team's draws are Zipf(1.2) over its kinds (`zipf_weights`)."""
    shapes = [(shape, rng.random() < 0.85) for shape in make_shapes(rng, HEAVY_SHAPES)]
    return {s: rng.sample(shapes, HEAVY_PER_TEAM) for s in subjects}


def fleet(rng: random.Random, subjects: list[str]) -> dict[str, list[tuple[dict[str, int], bool]]]:
    """Per team, its 80 (shape, preemptible) kinds out of 200 platform shapes, drawn
    evenly: a large organisation's fleet, where 15 teams x 80 kinds give about 1,200
    request classes once 10,000 requests have drawn (about 700 at 1,000)."""
    shapes = [(shape, rng.random() < 0.85) for shape in make_shapes(rng, FLEET_SHAPES)]
    return {s: rng.sample(shapes, FLEET_PER_TEAM) for s in subjects}


def zipf_weights(count: int, exponent: float = HEAVY_ZIPF) -> list[float]:
    """Cumulative weights of ranks 1..count under Zipf(exponent), for ``rng.choices``."""
    out, total = [], 0.0
    for k in range(1, count + 1):
        total += k ** -exponent
        out.append(total)
    return out


def make_problem(seed: int, n_pools: int = 20, components: int = 15, per: int = 4, n_shapes: int = 40,
                 n_running: int = 500, n_requests: int = 10_000, any_shape: bool = False,
                 generator: str | None = None) -> Problem:
    """``generator``: one of GENERATORS (default: ``any-shape`` if ``any_shape``, else
    ``repertoire``); the first two draw the same numbers as before it existed."""
    generator = generator or ("any-shape" if any_shape else "repertoire")
    if generator not in GENERATORS:
        raise ValueError(f"unknown generator {generator!r}; one of {', '.join(GENERATORS)}")
    rng = random.Random(seed)
    pools = make_pools(rng, n_pools)
    policies = make_policies(rng, pools, components, per)
    shapes = make_shapes(rng, n_shapes)
    running = make_running(rng, pools, policies, shapes, n_running)
    # A team's pipelines reuse a few step shapes: each component draws its requests
    # from its own repertoire of 4-8 (shape, preemptible) kinds.
    repertoire = {s: [(shape, rng.random() < 0.85) for shape in rng.sample(shapes, rng.randint(4, 8))]
                  for s in sorted({q.subject for q in policies})}
    subjects = sorted(repertoire)
    heavy = heavy_tailed(rng, subjects) if generator == "heavy-tailed" else {}
    kinds = fleet(rng, subjects) if generator == "fleet" else {}
    cum = zipf_weights(HEAVY_PER_TEAM)
    requests = []
    for rank in range(n_requests):
        who = rng.choice(subjects)
        shape, preemptible = rng.choice(repertoire[who])
        if generator == "any-shape":
            shape, preemptible = rng.choice(shapes), rng.random() < 0.85
        elif heavy:
            shape, preemptible = rng.choices(heavy[who], cum_weights=cum)[0]
        elif kinds:
            shape, preemptible = rng.choice(kinds[who])
        requests.append(Request(f"pipe-{rank // 20:04d}/step-{rank % 20:02d}", who, dict(shape),
                                preemptible, rank))
    return Problem(tuple(pools), tuple(policies), tuple(requests), tuple(running))


def by_priority(problem: Problem, solution: Solution) -> Counter:
    prio = {q.name: q.priority for q in problem.policies}
    return Counter(prio[name] for name in solution.admitted.values())


def victims_by_priority(problem: Problem, solution: Solution) -> Counter:
    prio = {(q.subject, q.pool): q.priority for q in problem.policies}
    run = {a.name: a for a in problem.running}
    return Counter(prio[run[n].subject, run[n].pool] for n in solution.preempted)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--running", type=int, default=500)
    ap.add_argument("--any-shape", action="store_true",
                    help="requests pick any shape, not their component's repertoire (harder)")
    ap.add_argument("--generator", choices=GENERATORS,
                    help="repertoire (default), any-shape (as --any-shape) or heavy-tailed (300 shapes, "
                         "30 per team, Zipf(1.2) draws)")
    ap.add_argument("--max-deterministic-time", type=float, default=60.0,
                    help="CP-SAT deterministic-time budget of the optimal strategy")
    ap.add_argument("--progress", action="store_true", help="print each optimal tier as it is solved")
    args = ap.parse_args(argv)

    t = time.perf_counter()
    problem = make_problem(args.seed, n_running=args.running, n_requests=args.requests,
                           any_shape=args.any_shape, generator=args.generator)
    built = time.perf_counter() - t
    classes = len({(r.requester, tuple(sorted(r.demand.items())), r.preemptible) for r in problem.requests})
    print(f"platform: {len(problem.pools)} pools, {len(problem.policies)} policies, "
          f"{len(problem.running)} running, {len(problem.requests)} requests in {classes} classes "
          f"(seed {args.seed}, generated in {built:.2f} s)")

    results = {}
    for name, run in (("zenml", lambda: zenml.solve(problem)),
                      ("optimal", lambda: optimal.solve(
                          problem, max_deterministic_time=args.max_deterministic_time,
                          progress=(lambda m: print("  ", m)) if args.progress else None))):
        t = time.perf_counter()
        sol = run()
        wall = time.perf_counter() - t
        results[name] = sol
        print(f"\n{name}: {wall:.2f} s wall, status {sol.status}, gap {sol.gap:g}")
        if sol.objective:
            print(f"  objective {sol.objective}")
        print(f"  admitted {len(sol.admitted)}, preempted {len(sol.preempted)}")

    prios = sorted({q.priority for q in problem.policies}, reverse=True)
    adm = {n: by_priority(problem, s) for n, s in results.items()}
    vic = {n: victims_by_priority(problem, s) for n, s in results.items()}
    print(f"\n{'priority':>8} | {'admitted zenml':>14} {'optimal':>8} {'diff':>6} | "
          f"{'preempted zenml':>15} {'optimal':>8} {'diff':>6}")
    for p in prios:
        a, b = adm["zenml"][p], adm["optimal"][p]
        c, d = vic["zenml"][p], vic["optimal"][p]
        print(f"{p:>8} | {a:>14} {b:>8} {b - a:>+6} | {c:>15} {d:>8} {d - c:>+6}")
    za, oa = len(results["zenml"].admitted), len(results["optimal"].admitted)
    zp, op = len(results["zenml"].preempted), len(results["optimal"].preempted)
    print(f"{'total':>8} | {za:>14} {oa:>8} {oa - za:>+6} | {zp:>15} {op:>8} {op - zp:>+6}")


if __name__ == "__main__":
    main()
