"""The plan file written and read back, before and after a change, side by side: the
CPU seconds of ``to_json`` (the plan's JSON, `plan --format json` / `--out`) and of
``read_plan`` (what `show` and `apply --plan` pay), and whether both trees write
the same bytes.

    python benchmarks/plan_file_speed.py --baseline REV [--requests 10000] [--seed 1]
                                         [--strategy zenml] [--repeat 5] [--keep DIR]

The platform is plan_scale's seeded one, written as YAML by plan_cli; this
checkout plans it once with `--out` (a PLANFILE with its changes section). Each
poolc (``--baseline REV``, exported with `git archive`, and this checkout) then
runs in its own child: it reads the file ``--repeat`` times and writes the plan
it read ``--repeat`` times, and prints the median CPU seconds of each, its peak
memory, and a digest of what it wrote. A plan file read and written again must be
the same bytes (its contract), so the digest is compared with the file's own.
Figures, never pass/fail; the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from apply_saved import admissible, poolc  # noqa: E402
from plan_cli import _bytecode_env, _compile_once, write_instance  # noqa: E402
from plan_scale import make_problem  # noqa: E402
from trees import in_work_dir, poolc_tree  # noqa: E402

# the child: read and write the plan file REPEAT times each, print one JSON line
CHILD = r"""
import hashlib, json, resource, statistics, sys, time
from poolc.domain.plan import to_json
from poolc.domain.plan_file import read_plan

text = open(sys.argv[1], encoding="utf-8").read()
repeat = int(sys.argv[2])
reads, writes = [], []
for _ in range(repeat):
    start = time.process_time()
    plan = read_plan(text)
    reads.append(time.process_time() - start)
for _ in range(repeat):
    start = time.process_time()
    written = to_json(plan)
    writes.append(time.process_time() - start)
print(json.dumps({"read": statistics.median(reads), "write": statistics.median(writes),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "digest": hashlib.sha256(written.encode()).hexdigest()[:16]}))
"""


def measure(code: Path, plan_file: Path, repeat: int) -> dict:
    env = {**_bytecode_env(), "PYTHONPATH": str(code)}
    ran = subprocess.run([sys.executable, "-c", CHILD, str(plan_file), str(repeat)], env=env,
                         capture_output=True, text=True, check=False)
    if ran.returncode:
        sys.exit(f"the child of {code} failed:\n{ran.stderr[-2000:]}")
    return json.loads(ran.stdout)


def run(args: argparse.Namespace, work: Path) -> None:
    platform = work / "platform"
    if not (platform / "platform.yaml").exists():
        write_instance(admissible(make_problem(args.seed, n_requests=args.requests)), platform)
    plan_file = work / f"{args.strategy}.plan.json"
    if not plan_file.exists():
        code, _, err, _ = poolc(REPO, ["plan", str(platform), "--strategy", args.strategy, "--quiet", "--state",
                                       str(work / "none.state.json"), "--out", str(plan_file)], work)
        if not plan_file.exists():
            sys.exit(f"poolc plan failed ({code}):\n{err[-2000:]}")
    own = hashlib.sha256(plan_file.read_bytes()).hexdigest()[:16]
    codes = [("before", poolc_tree(args.baseline, work)), ("after", REPO)]
    for _, code_dir in codes:
        _compile_once(code_dir)
    size = plan_file.stat().st_size / 1e6
    print(f"plan file: {args.requests} requests, {args.strategy}, {size:.1f} MB, digest {own}; "
          f"median of {args.repeat}; load average {os.getloadavg()[0]:.2f}")
    print(f"{'code':<7} {'read cpu s':>10} {'write cpu s':>11} {'peak MB':>8}  same bytes as the file")
    found = {}
    for which, code_dir in codes:
        found[which] = figures = measure(code_dir, plan_file, args.repeat)
        print(f"{which:<7} {figures['read']:>10.3f} {figures['write']:>11.3f} {figures['peak_mb']:>8.0f}  "
              + ("yes" if figures["digest"] == own else f"NO ({figures['digest']})"), flush=True)
    before, after = found["before"], found["after"]
    print(f"{'ratio':<7} {after['read'] / before['read']:>10.2f} {after['write'] / before['write']:>11.2f} "
          f"{after['peak_mb'] / before['peak_mb']:>8.2f}  (after / before); load average {os.getloadavg()[0]:.2f}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, metavar="REV", help="the poolc to compare with (e.g. main)")
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--strategy", default="zenml")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="work here (else a temporary directory)")
    args = ap.parse_args(argv)
    in_work_dir(args.keep, "poolc-plan-file-", lambda work: run(args, work))


if __name__ == "__main__":
    main()
