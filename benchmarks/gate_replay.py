"""Does the cluster run the plan? Plan-vs-replay differences per submit mode, and the
cost of the runtime check, on the benchmark platform, in one run.

    python benchmarks/gate_replay.py [--sizes 1000,10000] [--seed 1]

The platform is plan_scale's (20 pools, 60 policies, 500 running allocations), written
out as YAML by plan_cli, with each running allocation's Kueue Workload known (as
`poolc state import --kueue` records it), so gate mode can stop the victims itself.
Per size it plans in-process (`plan_paths`) and prints:

* gate mode (the default), `--strategy optimal`: the runtime check's differences
  between the plan and the replay of what gate mode writes (admitted Jobs, stop
  objects, running workloads). Target 0.
* `--submit all --strategy kueue`: the same for the plan of what Kueue does when
  every Job is submitted. Target 0.
* `--submit all --strategy optimal`: for reference, how far the optimal plan and
  Kueue part ways when Kueue decides (what gate mode removes).
* the runtime check's CPU seconds as a share of the whole plan in gate mode (target
  <= 20% at 10,000): the check's own functions (`poolc.commands.runtime_check.replay` and
  `with_runtime`: rendering what gate mode writes, the Kueue replay, the comparison)
  timed inside that plan.

Figures, never pass/fail. These machines are shared and noisy: compare figures of
one run only.
"""

from __future__ import annotations

import argparse
import gc
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from plan_cli import write_instance  # noqa: E402
from plan_scale import make_problem  # noqa: E402

from poolc.commands import runtime_check as runtime  # noqa: E402
from poolc.commands.planning import plan_paths  # noqa: E402


def with_workloads(directory: Path) -> None:
    """Give every running allocation the Workload `state import` would record for it."""
    path = directory / "running.yaml"
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"metadata: \{name: ([a-z0-9-]+)\}\nspec:\n",
                  lambda m: f"metadata: {{name: {m.group(1)}}}\nspec:\n  workload: bench/job-{m.group(1)}-x1y2z\n",
                  text)
    path.write_text(text, encoding="utf-8")


CHECK = {"cpu": 0.0}


def _timed(inner):  # type: ignore[no-untyped-def]
    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        cpu = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            CHECK["cpu"] += time.process_time() - cpu
    return wrapper


# The runtime check is `poolc.commands.runtime_check.replay` plus `with_runtime` (plan_paths imports both
# when it runs the check): timed inside the very plan whose total they are a share of.
runtime.replay, runtime.with_runtime = _timed(runtime.replay), _timed(runtime.with_runtime)


def planned(directory: Path, **options: object) -> tuple[float, object]:
    gc.collect()
    CHECK["cpu"] = 0.0
    cpu = time.process_time()
    result = plan_paths([str(directory)], state_file=str(directory / "absent.state.json"), **options)  # type: ignore[arg-type]
    return time.process_time() - cpu, result


def row(label: str, cpu: float, result: object) -> str:
    plan = result.plan  # type: ignore[attr-defined]
    runtime = plan.runtime
    differing = "-" if runtime is None else str(len(runtime.differences))
    return (f"  {label:38} {cpu:7.2f}  {len(plan.by_status('allocated')):9}  {len(plan.by_status('queued')):6}  "
            f"{len(plan.preempted):9}  {differing:>11}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    shares = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            directory = Path(tmp) / f"n{size}"
            write_instance(make_problem(args.seed, n_requests=size), directory)
            with_workloads(directory)
            print(f"benchmark platform, {size} requests, 500 running (seed {args.seed})")
            print(f"  {'run':38} {'cpu s':>7}  allocated  queued  preempted  differences")
            cpu, gate = planned(directory)
            check = CHECK["cpu"]
            print(row("gate, optimal (default)", cpu, gate))
            stops = sum(1 for p in gate.files if "/stop/" in p)
            queued = sum(1 for p in gate.files if p.startswith("held/kubernetes/"))
            print(f"  {'':38} stop objects {stops}, Jobs held back under held/kubernetes/ {queued}")
            shares[size] = (check, cpu)
            print(f"  {'':38} solver {gate.plan.solver.status}, gap {gate.plan.solver.gap:g}")
            cpu, kueue = planned(directory, submit="all", strategy="kueue")
            print(row("--submit all --strategy kueue", cpu, kueue))
            cpu, every = planned(directory, submit="all")
            print(row("--submit all, optimal (reference)", cpu, every))
    for size, (check, whole) in shares.items():
        print(f"runtime check in gate mode at {size}: {check:.2f} of {whole:.2f} CPU s of the plan = "
              f"{100 * check / whole:.0f}% (target: at most 20%)")


if __name__ == "__main__":
    main()
