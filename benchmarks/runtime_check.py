"""Time the runtime check (the Kueue replay every `poolc plan` runs) and the `kueue`
strategy against the optimal solve, on one generated platform, in one run.

    python benchmarks/runtime_check.py [--pipelines 2000] [--seed 1] [--repeat 1]
    python benchmarks/runtime_check.py --replay DIR [--strategy zenml] [--repeat 5]

The platform is benchmarks/gen_pipelines.py's (2,000 pipelines, about 11,000 steps on
Kubernetes components); pass --pipelines to scale it. Prints wall and CPU seconds of
`plan_paths` with and without the check, the check's share, and the kueue strategy,
plus whether the replay agrees with the optimal plan. These machines are small and
noisy: read the ratios, and compare only figures printed by one run.

``--replay DIR`` plans the platform in DIR (for instance a plan_cli instance kept with
``--keep``) once, keeps what the runtime check hands the simulator (the Kueue objects,
the Jobs, the running allocations), and times that replay alone, ``--repeat`` times in
the process, with the CLI's collector threshold. It prints the best and median CPU
seconds and a digest of the outcomes, the event log and the usage: run it on two
checkouts to compare the simulator's cost, and the digests to see the results match.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_pipelines import generate  # noqa: E402

from poolc.commands.planning import plan_paths  # noqa: E402


def timed(label: str, **kwargs: object) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = plan_paths(**kwargs)
    return time.perf_counter() - wall, time.process_time() - cpu, result


def replay_only(directory: Path, strategy: str, repeat: int) -> None:
    """Plan ``directory`` once, keep the runtime check's replay inputs, and time the replay alone."""
    from poolc.cli import GC_YOUNG_THRESHOLD
    from poolc.planner import kueue as replaying

    gc.set_threshold(GC_YOUNG_THRESHOLD, 10, 10)  # as `poolc plan` runs
    captured: list[tuple[tuple, dict]] = []
    inner = replaying.replay

    def keep(*args: object, **kwargs: object) -> object:
        captured.append((args, kwargs))
        return inner(*args, **kwargs)

    replaying.replay = keep
    try:
        plan_paths(paths=[str(directory)], strategy=strategy)
    finally:
        replaying.replay = inner
    args, kwargs = captured[-1]
    times, sim = [], None
    for _ in range(repeat):
        gc.collect()
        cpu = time.process_time()
        sim = replaying.replay(*args, **kwargs)
        times.append(time.process_time() - cpu)
    assert sim is not None
    outcomes = sorted((name, o.status, o.cluster_queue, sorted(o.flavors.items()), o.preempted_by, o.reason,
                       o.borrowing) for name, o in sim.outcomes.items())
    digest = hashlib.sha256(repr((outcomes, sim.cycles, sim.events, sim.usage)).encode()).hexdigest()[:16]
    statuses = {s: sum(1 for o in sim.outcomes.values() if o.status == s) for s in ("admitted", "pending", "preempted")}
    print(f"{directory.name}: {len(sim.outcomes)} workloads, {sim.cycles} cycles, {statuses}")
    print(f"replay CPU s: best {min(times):.3f}, median {statistics.median(times):.3f} of {repeat}; "
          f"results digest {digest}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipelines", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--replay", type=Path, metavar="DIR", help="time the replay alone on this platform")
    parser.add_argument("--strategy", default="zenml", help="the strategy that plans DIR (with --replay)")
    args = parser.parse_args()
    if args.replay is not None:
        replay_only(args.replay, args.strategy, args.repeat)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generate(root, args.pipelines, args.seed)
        paths = [str(root)]
        rows = []
        for _ in range(args.repeat):
            rows.append(("optimal, no runtime check", *timed("", paths=paths, runtime_check=False)))
            rows.append(("optimal + runtime check", *timed("", paths=paths, runtime_check=True)))
            rows.append(("kueue strategy (+ check)", *timed("", paths=paths, strategy="kueue")))
        steps = len(rows[0][3].plan.requests)
        print(f"platform: {args.pipelines} pipelines, {steps} steps (seed {args.seed})")
        print(f"{'run':30} {'wall s':>8} {'cpu s':>8}  allocated  queued  agrees")
        for label, wall, cpu, result in rows:
            plan = result.plan
            agrees = "-" if plan.runtime is None else str(plan.runtime.agrees)
            print(f"{label:30} {wall:8.2f} {cpu:8.2f}  {len(plan.by_status('allocated')):9}  "
                  f"{len(plan.by_status('queued')):6}  {agrees}")
        base = min(r[2] for r in rows if r[0].startswith("optimal, no"))
        check = min(r[2] for r in rows if r[0].startswith("optimal +"))
        print(f"runtime check adds {100 * (check - base) / base:.0f}% CPU to `poolc plan` (target: at most 20%)")
        plan = rows[1][3].plan
        if plan.runtime is not None and plan.runtime.differences:
            print(f"{len(plan.runtime.differences)} runtime differences, first: {plan.runtime.differences[0]}")


if __name__ == "__main__":
    main()
