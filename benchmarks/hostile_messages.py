"""A saved plan's messages come from anywhere, and reading the plan file marks each
message's parts (poolc.domain.said.read_said). This prints how long marking takes on
messages written to make a pattern work hard, at doubling sizes, for this poolc and
a baseline side by side: a time that quadruples when the size doubles is a pattern
that backtracks, and a plan file of such messages would hang `poolc show`.

    python benchmarks/hostile_messages.py [--baseline REV_OR_TREE] [--sizes 23000,46000,92000,184000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from trees import in_work_dir, poolc_tree

REPO = Path(__file__).resolve().parents[1]

# each shape repeated to the size asked: the clauses a reader scans the most per character
SHAPES = {
    "preempted ... on keys!": "preempted on " + "a, " * 10 + "a! ",
    "key=value pairs": "gpu=1 ",
    "bare numbers of a key": "needs 1 ",
    "capacity rejections": "has no gpu (capacity gpu=0; needs 1) ",
    "nested parentheses": "(; ",
}

# run in the measured tree's interpreter: one line per shape and size, "shape<TAB>size<TAB>seconds"
CHILD = r"""
import sys, time
from poolc.domain.said import read_said
shapes, sizes = eval(sys.argv[1]), eval(sys.argv[2])
for name, unit in shapes.items():
    for size in sizes:
        text = (unit * (size // len(unit) + 1))[:size]
        if name.startswith("bare"):
            text = "gpu: needs 1 " + text
        started = time.process_time()
        read_said(text)
        print(f"{name}\t{size}\t{time.process_time() - started:.3f}")
"""


def measure(tree: Path, sizes: list[int]) -> dict[tuple[str, int], float]:
    done = subprocess.run([sys.executable, "-c", CHILD, repr(SHAPES), repr(sizes)], capture_output=True, text=True,
                          check=True, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)})
    found = {}
    for line in done.stdout.splitlines():
        name, size, seconds = line.split("\t")
        found[name, int(size)] = float(seconds)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="another poolc: a tree holding poolc/, or a git revision")
    parser.add_argument("--sizes", default="23000,46000,92000,184000", help="message lengths in characters")
    parser.add_argument("--keep", type=Path, help="work here (else a temporary directory)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    def run(work: Path) -> None:
        after = measure(REPO, sizes)
        before = measure(poolc_tree(args.baseline, work), sizes) if args.baseline else None
        print(f"read_said CPU s per message; load average {os.getloadavg()[0]:.2f}")
        print(f"{'shape':26s} {'chars':>8s} {'before':>8s} {'after':>8s}")
        for name in SHAPES:
            for size in sizes:
                was = f"{before[name, size]:8.3f}" if before else f"{'-':>8s}"
                print(f"{name:26s} {size:8d} {was} {after[name, size]:8.3f}")
        print(f"load average {os.getloadavg()[0]:.2f}")

    in_work_dir(args.keep, "poolc-hostile-", run)


if __name__ == "__main__":
    main()
