"""A one-file `poolc validate`, what a pre-commit hook pays on every commit, beside two
tools that check the same file: check-jsonschema against poolc's own schema, and yamllint.

    python benchmarks/validate_startup.py [FILE] [--baseline REV_OR_TREE] [--repeat 15]

Per command, in one run: the median (and best) wall and CPU seconds of --repeat runs,
each a fresh process, with the load average (`uptime`) read beside each figure: the
machine may be shared, and CPU seconds (user + system of the child, from wait4) are
what load disturbs least. The target (#43) is a one-file validate <= 0.25 s wall on a
quiet machine.

--baseline names another poolc to time the same way: a directory holding a `poolc/`
package (a git worktree), or a git revision of this repository (exported to a
temporary directory). Both trees get their bytecode compiled first, as an installed
package has it (PYTHONDONTWRITEBYTECODE would otherwise make every run compile).
Figures, never pass/fail.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trees import poolc_tree  # benchmarks/trees.py

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TARGET = 0.25


def load_average() -> str:
    """`uptime`'s three load averages, as it prints them."""
    out = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    return out.rsplit("load average:", 1)[-1].strip() if "load average:" in out else "?"


def tool(name: str) -> str:
    """The console script installed beside this interpreter (the venv's), else on PATH."""
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if not found:
        sys.exit(f"{name} is not installed; pip install -e '.[test]'")
    return found


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall and CPU seconds of one run of ``argv`` (CPU: the child's user + system time)."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


def measure(argv: list[str], env: dict[str, str], repeat: int) -> dict:
    timed(argv, env)   # warm the page cache: every command starts from the same footing
    walls, cpus, codes = [], [], set()
    for _ in range(repeat):
        wall, cpu, code = timed(argv, env)
        walls.append(wall)
        cpus.append(cpu)
        codes.add(code)
    return {"wall": statistics.median(walls), "best": min(walls), "cpu": statistics.median(cpus),
            "cpu_best": min(cpus), "codes": sorted(codes), "load": load_average()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", default=str(REPO / "examples" / "pools" / "cpu-batch.yaml"))
    parser.add_argument("--baseline", metavar="REV_OR_TREE", help="another poolc to time beside this one")
    parser.add_argument("--repeat", type=int, default=15, help="runs per command (default 15)")
    args = parser.parse_args()
    file = str(Path(args.file).resolve())

    with tempfile.TemporaryDirectory() as tmp:
        trees = ([("before", poolc_tree(args.baseline, Path(tmp)))] if args.baseline else []) + [("after", REPO)]
        for _, tree in trees:
            compileall.compile_dir(str(tree / "poolc"), quiet=1)
        rows: list[tuple[str, dict]] = []
        for label, tree in trees:
            env = {**os.environ, "PYTHONPATH": str(tree)}
            rows.append((f"poolc validate FILE ({label}, {tree})",
                         measure([sys.executable, "-m", "poolc", "validate", file], env, args.repeat)))
        env = dict(os.environ)
        schema = str(REPO / "poolc" / "schemas" / "poolc.schema.json")
        rows.append(("check-jsonschema --schemafile poolc.schema.json FILE",
                     measure([tool("check-jsonschema"), "--schemafile", schema, file], env, args.repeat)))
        rows.append(("yamllint FILE", measure([tool("yamllint"), file], env, args.repeat)))

    print(f"file: {file}; median of {args.repeat} runs each (best in brackets); "
          f"target: poolc validate <= {TARGET} s wall on a quiet machine")
    print(f"{'command':<60} {'wall s':>14} {'CPU s':>14}  exit  load average (uptime)")
    for name, row in rows:
        print(f"{name[:60]:<60} {row['wall']:>6.3f} ({row['best']:.3f}) {row['cpu']:>6.3f} ({row['cpu_best']:.3f})"
              f"  {','.join(map(str, row['codes'])):>4}  {row['load']}")


if __name__ == "__main__":
    main()
