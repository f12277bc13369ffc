"""Two poolc trees, the same inputs, byte for byte: does a change keep every output?

    python benchmarks/identity.py --before /tmp/before --after . [--requests 10000] [--seed 1]
                                  [--strategies-large zenml,optimal] [--only examples|large] [--keep DIR]

Each tree runs as `python -c 'from poolc.cli import main; ...'` with ``PYTHONPATH=<tree>``
under this interpreter (so both share the installed dependencies), in a fresh working
directory per tree, with every time-dependent input pinned: ``SOURCE_DATE_EPOCH``,
``apply --now``, ``TZ``, ``PYTHONHASHSEED``, ``NO_COLOR``, and the heartbeat off
(``POOLC_HEARTBEAT_AFTER``: its lines on stderr come by the clock). Over ``examples/`` (of the
``--after`` tree, copied once) and a generated platform of ``--requests`` requests
(benchmarks/plan_cli.py's YAML of plan_scale's seeded problem, without the steps no
pool can admit), it compares:

- ``plan`` in JSON, text and Markdown, and ``plan --forecast`` in JSON and text;
- ``apply`` into an empty output directory: every file of the tree, and the state;
- ``plan --out`` (the PLANFILE), ``show`` of it, ``plan --base`` against it, and
  ``apply --plan`` of it into an empty directory: the tree and the state;
- ``plan --forecast --out`` (a PLANFILE with its forecast) and ``plan --base
  --forecast`` against it, in JSON and Markdown (the forecast base read back);
- ``state list`` of the state that apply wrote;

and each command's exit code and standard error. One line per artefact: ``identical``,
or ``DIFFERS`` with the first line that differs. Figures, never pass/fail; the exit
code is 1 when anything differs, for scripts.
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
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

NOW = "2026-11-23T03:00:00Z"
EPOCH = "1795402800"   # the same instant as NOW
CHILD = "import sys\nfrom poolc.cli import main\nmain(sys.argv[1:], prog_name='poolc')\n"


def env_for(code: Path) -> dict[str, str]:
    """The child's environment: this tree's poolc, nothing that depends on the clock or the host."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    return {**keep, "PYTHONPATH": str(code), "SOURCE_DATE_EPOCH": EPOCH, "TZ": "UTC", "PYTHONHASHSEED": "0",
            "NO_COLOR": "1", "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "100",
            "POOLC_HEARTBEAT_AFTER": "1e12"}   # the heartbeat speaks by the clock: never, here


def poolc(code: Path, args: list[str], cwd: Path) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of one `poolc ARGS` of the tree ``code``."""
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], cwd=cwd, env=env_for(code),
                          capture_output=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def tree_bytes(root: Path) -> bytes:
    """Every file under ``root`` as one text: a header line per file, then its bytes."""
    if not root.exists():
        return b"(no directory)\n"
    parts = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() or p.is_symlink()):
        parts.append(b"=== " + str(path.relative_to(root)).encode() + b"\n" + path.read_bytes())
    return b"".join(parts)


def first_difference(a: bytes, b: bytes) -> str:
    """The first line that differs, both ways, shortened."""
    left, right = a.splitlines(), b.splitlines()
    for number, (x, y) in enumerate(zip(left, right, strict=False), 1):
        if x != y:
            return f"line {number}: {x[:90]!r} -> {y[:90]!r}"
    shorter = min(len(left), len(right))
    return f"line {shorter + 1}: one side ends ({len(left)} vs {len(right)} lines)"


def artefacts(code: Path, inputs: Path, work: Path, strategy: str) -> dict[str, bytes]:
    """Every output of one tree over one input directory, by artefact name."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    found: dict[str, bytes] = {}

    def run(name: str, args: list[str]) -> None:
        code_, out, err = poolc(code, args, work)
        found[name] = out
        found[name + " (exit, stderr)"] = f"exit {code_}\n".encode() + err

    base = [str(inputs), "--strategy", strategy]
    for fmt in ("json", "text", "markdown"):
        run(f"plan --format {fmt}", ["plan", *base, "--format", fmt])
    for fmt in ("json", "text"):
        run(f"plan --forecast --format {fmt}", ["plan", *base, "--forecast", "--format", fmt])
    run("plan --out", ["plan", *base, "--out", "saved.plan.json", "--quiet"])
    found["plan --out: the file"] = (work / "saved.plan.json").read_bytes() \
        if (work / "saved.plan.json").exists() else b"(none)"
    run("show", ["show", "saved.plan.json"])
    for fmt in ("text", "markdown", "json"):
        run(f"plan --base --format {fmt}", ["plan", *base, "--base", "saved.plan.json", "--format", fmt])
    # the forecast base: a plan file with its forecast, read back by `plan --base --forecast`
    run("plan --forecast --out", ["plan", *base, "--forecast", "--out", "forecast.plan.json", "--quiet"])
    found["plan --forecast --out: the file"] = (work / "forecast.plan.json").read_bytes() \
        if (work / "forecast.plan.json").exists() else b"(none)"
    for fmt in ("json", "markdown"):
        run(f"plan --base --forecast --format {fmt}",
            ["plan", *base, "--base", "forecast.plan.json", "--forecast", "--format", fmt])
    run("apply", ["apply", *base, "--output-dir", "deploy", "--state", "applied.state.json", "--now", NOW])
    found["apply: the tree"] = tree_bytes(work / "deploy")
    found["apply: the state"] = (work / "applied.state.json").read_bytes() \
        if (work / "applied.state.json").exists() else b"(none)"
    run("state list", ["state", "list", str(inputs), "--state", "applied.state.json"])
    run("apply --plan", ["apply", str(inputs), "--plan", "saved.plan.json", "--output-dir", "saved-deploy",
                         "--state", "saved.state.json", "--now", NOW])
    found["apply --plan: the tree"] = tree_bytes(work / "saved-deploy")
    found["apply --plan: the state"] = (work / "saved.state.json").read_bytes() \
        if (work / "saved.state.json").exists() else b"(none)"
    return found


def compare(label: str, before: dict[str, bytes], after: dict[str, bytes]) -> bool:
    """One line per artefact; True when all are identical."""
    same = True
    for name in before:
        a, b = before[name], after.get(name, b"(missing)")
        if a == b:
            print(f"{label:<22} {name:<36} identical ({len(a):,} bytes)")
        else:
            same = False
            print(f"{label:<22} {name:<36} DIFFERS  {first_difference(a, b)}")
    return same


def large_platform(requests: int, seed: int, out: Path) -> Path:
    """benchmarks/plan_cli.py's YAML platform of ``requests`` requests, every step admissible somewhere."""
    from apply_saved import admissible
    from plan_cli import write_instance
    from plan_scale import make_problem

    if not (out / "platform.yaml").exists():
        write_instance(admissible(make_problem(seed, n_requests=requests)), out)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="the tree before the change")
    ap.add_argument("--after", type=Path, default=REPO, help="the tree after the change (default: this one)")
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--strategies-large", default="zenml,optimal")
    ap.add_argument("--only", choices=("examples", "large"))
    ap.add_argument("--keep", type=Path, help="work here and keep it (default: a temporary directory)")
    args = ap.parse_args(argv)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; before {args.before.resolve()}, "
          f"after {args.after.resolve()}", flush=True)
    work = args.keep or Path(tempfile.mkdtemp(prefix="poolc-identity-"))
    work.mkdir(parents=True, exist_ok=True)
    runs: list[tuple[str, Path, str]] = []
    if args.only != "large":
        examples = work / "examples"
        shutil.rmtree(examples, ignore_errors=True)
        shutil.copytree(args.after / "examples", examples)
        runs += [("examples optimal", examples, "optimal"), ("examples zenml", examples, "zenml")]
    if args.only != "examples":
        platform = large_platform(args.requests, args.seed, work / "large")
        runs += [(f"{args.requests} {s}", platform, s) for s in args.strategies_large.split(",")]
    same = True
    try:
        for label, inputs, strategy in runs:
            outputs = [artefacts(code.resolve(), inputs, work / f"{label.replace(' ', '-')}-{which}", strategy)
                       for which, code in (("before", args.before), ("after", args.after))]
            same = compare(label, *outputs) and same
            print(flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()
    print(f"{'all identical' if same else 'SOME ARTEFACTS DIFFER'}; load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
