"""`apply`, then `apply --check` and `plan --detailed-exitcode`, on a generated platform.

    python benchmarks/apply_fixed_point.py [--pipelines 1800] [--seed 1] [--keep DIR]

The CI gate `poolc apply --check` only helps if it can pass: right after `apply`,
planning again must find nothing to do. This script generates
benchmarks/gen_pipelines.py's platform (1,800 pipelines is about 10,000 steps),
runs the installed `poolc` as a user would, with `SOURCE_DATE_EPOCH` fixed, and
prints each command's exit code and CPU seconds, the generated file count, and
what the second plan would change (allocations added, removed, resized; files).
Expected: apply 0, check 0, detailed exit code 0, nothing changed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_pipelines import generate  # noqa: E402

POOLC = [sys.executable, "-m", "poolc"]


def run(label: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run([*POOLC, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "SOURCE_DATE_EPOCH": "1700000000"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(f"{label:<34} exit {done.returncode}   wall {time.perf_counter() - wall:6.1f} s   CPU {cpu:6.1f} s")
    return done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipelines", type=int, default=1800)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="work here instead of a temporary directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        generate(work / "platform", args.pipelines, args.seed)
        state = ["--state", "out/poolc.state.json"]
        applied = run("poolc apply", ["apply", "platform", "--output-dir", "out", *state, "-q"], work)
        files = sum(1 for p in (work / "out").rglob("*") if p.is_file())
        print(f"{'':<34} {files} files in out/")
        check = run("poolc apply --check", ["apply", "platform", "--output-dir", "out", *state, "--check"], work)
        said = [line for line in (check.stdout + check.stderr).splitlines() if line.startswith("poolc:")]
        print(f"{'':<34} {said[-1] if said else '(no summary line)'}")
        plan = run("poolc plan --detailed-exitcode", ["plan", "platform", *state, "--format", "json",
                                                      "--detailed-exitcode"], work)
        found = json.loads(plan.stdout)
        moves = found["changes"]["allocations"]
        print(f"{'':<34} {len(found['requests'])} requests; second plan: added {len(moves['added'])}, removed "
              f"{len(moves['removed'])}, resized {len(moves['resized'])}, unchanged {len(moves['unchanged'])}, "
              f"files changed {len(found['changes']['files'])}, preempted {len(found['preempted'])}")
        return 0 if (applied.returncode, check.returncode, plan.returncode) == (0, 0, 0) else 1


if __name__ == "__main__":
    sys.exit(main())
