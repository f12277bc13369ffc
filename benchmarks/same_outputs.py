"""Are two poolc trees' outputs byte-identical over the same inputs? (#43: a change that
restructures must not change a byte a user sees.)

    python benchmarks/same_outputs.py --baseline TREE [--inputs examples] [--plan-dir DIR ...] [--only plan]

Runs each command below with this tree's poolc and the --baseline tree's (a directory
holding a `poolc/` package, e.g. a git worktree of main), each as `python -m poolc`
with PYTHONPATH set, in fresh copies of the inputs, and compares stdout, stderr, the
exit code and every file written (the plan file, the apply tree and its state):
validate (text, JSON, SARIF), plan (text, JSON, markdown, GitHub, --forecast in text,
JSON and markdown, --out), show of the saved plan, apply, apply --check, apply --plan
of a saved plan, state list (text and JSON). --plan-dir adds more input directories
(e.g. a 10,000-request instance of plan_cli.py --keep) for the plan commands.
Prints one line per command and a count; exit 1 when anything differs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENV = {"SOURCE_DATE_EPOCH": "1763611200", "NO_COLOR": "1", "POOLC_HEARTBEAT_AFTER": "100000"}


def commands(inputs: str) -> list[tuple[str, list[str]]]:
    """(name, argv) in order; later ones read what earlier ones wrote in the same directory."""
    plan = ["plan", inputs, "--state", "none.json"]
    return [
        ("validate text", ["validate", inputs]),
        ("validate json", ["validate", inputs, "--format", "json"]),
        ("validate sarif", ["validate", inputs, "--format", "sarif"]),
        ("plan text", plan),
        ("plan json --out", [*plan, "--format", "json", "--out", "saved.json"]),
        ("plan markdown", [*plan, "--format", "markdown"]),
        ("plan github", [*plan, "--format", "github"]),
        ("plan --forecast text", [*plan, "--forecast"]),
        ("plan --forecast json", [*plan, "--forecast", "--format", "json"]),
        ("plan --forecast markdown --base", [*plan, "--forecast", "--format", "markdown", "--base", "saved.json"]),
        ("show text", ["show", "saved.json"]),
        ("show markdown", ["show", "saved.json", "--format", "markdown"]),
        ("apply", ["apply", inputs, "--output-dir", "out", "--state", "state.json"]),
        ("apply --check", ["apply", inputs, "--output-dir", "out", "--state", "state.json", "--check"]),
        ("apply --format json", ["apply", inputs, "--output-dir", "out", "--state", "state.json", "--format",
                                 "json"]),
        ("state list", ["state", "list", inputs, "--state", "state.json"]),
        ("state list json", ["state", "list", "--state", "state.json", "--format", "json"]),
        ("apply --plan saved", ["apply", inputs, "--output-dir", "out2", "--state", "state2.json", "--plan",
                                "saved.json"]),
    ]


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_all(tree: Path, inputs: Path, work: Path,
            only: tuple[str, ...] = ("",)) -> list[tuple[str, bytes, bytes, int, dict[str, bytes]]]:
    shutil.copytree(inputs, work / "in")
    env = {**os.environ, **ENV, "PYTHONPATH": str(tree)}
    env.pop("POOLC_DEBUG", None)
    seen = []
    for name, argv in commands("in"):
        if not name.startswith(only):
            continue
        done = subprocess.run([sys.executable, "-m", "poolc", *argv], cwd=work, capture_output=True, env=env,
                              timeout=3600, check=False)
        seen.append((name, done.stdout, done.stderr.replace(str(tree).encode(), b"<tree>"), done.returncode,
                     files_of(work)))
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="a directory holding the poolc/ to compare with")
    parser.add_argument("--inputs", default=str(REPO / "examples"))
    parser.add_argument("--plan-dir", action="append", default=[], help="another input directory")
    parser.add_argument("--only", help="only the commands whose name starts with one of these (comma-separated), "
                                       "e.g. 'plan,validate' on a large instance")
    args = parser.parse_args()
    only = tuple(args.only.split(",")) if args.only else ("",)
    differ = same = 0
    for inputs in [args.inputs, *args.plan_dir]:
        with tempfile.TemporaryDirectory() as tmp:
            before = run_all(Path(args.baseline).resolve(), Path(inputs), Path(tmp) / "before", only)
            after = run_all(REPO, Path(inputs), Path(tmp) / "after", only)
        for (name, *old), (_, *new) in zip(before, after, strict=True):
            parts = [what for what, a, b in zip(("stdout", "stderr", "exit", "files"), old, new, strict=True)
                     if a != b]
            print(f"{'DIFFERS' if parts else 'same   '} {Path(inputs).name}: {name}"
                  + (f" ({', '.join(parts)})" if parts else "") + f"  exit {new[2]}, {len(new[0])} bytes out")
            differ, same = differ + bool(parts), same + (not parts)
    print(f"{same} commands byte-identical, {differ} differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
