"""How long is the test loop, and how heavy is the validate hook's environment?

    .venv/bin/python benchmarks/test_loop.py [--before REV] [--ci] [--repeat 2]
                                             [--skip-tests] [--skip-install]

Two measurements, each printed as a side-by-side table, in one run on one machine
(the test loop first: it is the long one):

1. The README's test command (the line of README.md that runs pytest), its wall
   time in a checkout of ``--before`` (default: where this branch left main, a
   temporary `git worktree` with its own fresh venv) and in this checkout. The
   command is read from each tree's own README, so a changed command is measured
   as each tree documents it. ``--ci`` also times this checkout's CI test command
   (the pytest line of .ci/run), which runs the tests marked slow as well.
2. The pre-commit environments: `pip install <this checkout>` (what the
   poolc-validate hook installs: no solver) and `pip install "<this checkout>[plan]"`
   (OR-Tools, SCIP and rich as well: what every hook environment held before the
   extra existed, and what poolc-apply-check still installs), each into a fresh
   venv with the pip cache warmed by an untimed install first; install time and
   the venv's size in MB (on disk, less an empty venv's), best of ``--repeat``.

The 1-minute load average is printed next to every figure: on a shared machine a
busy neighbour adds time to both columns unevenly; repeat when it was high.
Figures, not pass/fail.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = "python3"


@dataclass
class Timed:
    seconds: float
    load_before: float
    load_after: float
    summary: str


def load() -> float:
    return os.getloadavg()[0]


def git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def readme_test_command(tree: Path) -> str:
    """The first pytest line of the tree's README (its documented test command)."""
    for line in (tree / "README.md").read_text().splitlines():
        if re.match(r"\s*\.venv/bin/python -m pytest\b", line):
            return line.strip()
    raise SystemExit(f"{tree}/README.md names no `.venv/bin/python -m pytest` command")


def ci_test_command(tree: Path) -> str:
    lines = [line.strip() for line in (tree / ".ci/run").read_text().splitlines() if " -m pytest" in line
             and not line.lstrip().startswith("#")]
    if len(lines) != 1:
        raise SystemExit(f".ci/run: expected one pytest line, found {lines}")
    return lines[0]


def timed(command: str, cwd: Path) -> Timed:
    before = load()
    start = time.monotonic()
    run = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True)
    seconds = time.monotonic() - start
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    summary = lines[-1].strip("= ") if lines else f"exit {run.returncode}"
    if run.returncode not in (0, 1):   # 1: some test failed, still a timed run; other: no run at all
        raise SystemExit(f"{command} in {cwd} exited {run.returncode}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    return Timed(seconds, before, load(), summary)


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m {seconds % 60:04.1f}s"


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    for row in [header, *rows]:
        print("  " + "  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i])
                               for i, cell in enumerate(row)))


def test_loop(before_rev: str, ci: bool, keep: Path) -> None:
    before_tree = keep / "before"
    git("worktree", "add", "--detach", str(before_tree), before_rev)
    try:
        print(f"setting up a venv for {before_rev[:12]} (untimed) ...", flush=True)
        subprocess.run(f"{PYTHON} -m venv .venv && .venv/bin/pip install -q -e '.[test]'", shell=True,
                       cwd=before_tree, check=True, capture_output=True)
        runs: list[tuple[str, str, Timed]] = []
        for label, tree, command in (
            (f"before ({before_rev[:10]})", before_tree, readme_test_command(before_tree)),
            (f"after ({git('rev-parse', '--short=10', 'HEAD')})", REPO, readme_test_command(REPO)),
        ):
            print(f"{label}: {command} ...", flush=True)
            runs.append((label, command, timed(command, tree)))
        if ci:
            command = ci_test_command(REPO)
            print(f"after, CI: {command} ...", flush=True)
            runs.append(("after, CI (.ci/run)", command, timed(command, REPO)))
    finally:
        git("worktree", "remove", "--force", str(before_tree))
    table("The README's test command (wall time)", ["", *(label for label, _, _ in runs)], [
        ["command", *(command.replace(".venv/bin/python -m ", "") for _, command, _ in runs)],
        ["wall time", *(minutes(t.seconds) for _, _, t in runs)],
        ["load average (1 min) at start / end", *(f"{t.load_before:.1f} / {t.load_after:.1f}" for _, _, t in runs)],
        ["result", *(t.summary for _, _, t in runs)],
    ])


def megabytes(path: Path) -> float:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            if not os.path.islink(full):
                total += os.lstat(full).st_blocks * 512
    return total / 1e6


def install(where: Path, target: str) -> tuple[float, float, float, int]:
    """Seconds, MB added to a fresh venv, load average at start, and packages installed."""
    shutil.rmtree(where, ignore_errors=True)
    subprocess.run([PYTHON, "-m", "venv", str(where)], check=True)
    empty = megabytes(where)
    before = load()
    start = time.monotonic()
    subprocess.run([str(where / "bin/pip"), "install", "-q", target], check=True, capture_output=True)
    seconds = time.monotonic() - start
    listed = subprocess.run([str(where / "bin/pip"), "list", "--format=freeze"], check=True, capture_output=True,
                            text=True).stdout.split()
    return seconds, megabytes(where) - empty, before, len(listed)


def environments(repeat: int, keep: Path) -> None:
    targets = {"validate hook: poolc": str(REPO), "with the plan extra: poolc[plan]": f"{REPO}[plan]"}
    print("warming the pip cache (untimed installs) ...", flush=True)
    for i, target in enumerate(targets.values()):
        install(keep / f"warm-{i}", target)
    results: dict[str, list[tuple[float, float, float, int]]] = {name: [] for name in targets}
    for attempt in range(repeat):
        for i, (name, target) in enumerate(targets.items()):
            results[name].append(install(keep / f"venv-{attempt}-{i}", target))
            shutil.rmtree(keep / f"venv-{attempt}-{i}")
    names = list(targets)
    best = {name: min(results[name]) for name in names}
    table(f"The pre-commit environment (fresh venv, warm pip cache, best of {repeat})", ["", *names], [
        ["install time", *(f"{best[name][0]:.1f} s" for name in names)],
        ["each attempt", *(", ".join(f"{r[0]:.1f}" for r in results[name]) + " s" for name in names)],
        ["size added to the venv", *(f"{best[name][1]:.0f} MB" for name in names)],
        ["packages in the venv", *(str(best[name][3]) for name in names)],
        ["load average (1 min) at start", *(", ".join(f"{r[2]:.1f}" for r in results[name]) for name in names)],
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="the revision to compare with (default: git merge-base HEAD main)")
    parser.add_argument("--ci", action="store_true", help="also time .ci/run's test command in this checkout")
    parser.add_argument("--repeat", type=int, default=2, help="installs of each environment (best is shown)")
    parser.add_argument("--skip-tests", action="store_true")
    parser.add_argument("--skip-install", action="store_true")
    args = parser.parse_args()
    before = git("rev-parse", args.before or git("merge-base", "HEAD", "main"))
    print(f"{os.cpu_count()} cores; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at start "
          f"(other processes share these cores: every figure carries the load it ran under)")
    keep = Path(tempfile.mkdtemp(prefix="poolc-test-loop-"))
    try:
        if not args.skip_tests:
            test_loop(before, args.ci, keep)
        if not args.skip_install:
            environments(args.repeat, keep)
    finally:
        shutil.rmtree(keep, ignore_errors=True)
    print(f"\nload average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end")


if __name__ == "__main__":
    sys.exit(main())
