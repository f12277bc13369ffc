"""`poolc apply --plan PLANFILE` before and after a change, side by side: CPU seconds
of the whole command, and whether both wrote the same bytes.

    python benchmarks/apply_saved.py --baseline REV [--requests 10000] [--seed 1]
                                     [--strategies zenml,optimal] [--no-reserve] [--keep DIR]

The platform is plan_scale's seeded one (benchmarks/plan_cli.py writes it as
YAML), without the steps no pool can ever admit: apply refuses a configuration
with errors, and a rejected step is one. ``--no-reserve`` drops every policy's
reserved share (and the non-preemptible steps that then fit nowhere): an `optimal`
plan then counts no grant inside a reserved share. With reserved shares the plan
file records which grants it counted there (`solver.in_share`); either way apply
renders it without solving (docs/cli.md, `--plan`); the code before that field
solved again. For each strategy, `poolc plan --out`
(this checkout) saves a plan; then each poolc (``--baseline REV``, exported with
`git archive`, and this checkout) runs, in a fresh directory:

- ``apply``: `apply --plan` of the saved plan into an empty output directory;
- ``stale``: the same after an input changed (one policy's priority), which must
  be refused.

Printed per run: exit code, CPU seconds (user + system of the child), whether the
child loaded OR-Tools at all (``solver``: it cannot have solved without it), and
for ``apply`` whether the output tree and the state are byte-identical between
the two. Figures, never pass/fail.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from plan_cli import _bytecode_env, _compile_once, write_instance  # noqa: E402
from plan_scale import make_problem  # noqa: E402
from trees import in_work_dir, poolc_tree  # noqa: E402

from poolc.domain.eligibility import eligible_policies  # noqa: E402
from poolc.domain.problem import Problem  # noqa: E402

NOW = "2026-11-23T03:00:00Z"
# the child: `poolc ARGS...`, then whether OR-Tools was ever imported, into $POOLC_BENCH_SOLVER
CHILD = r"""
import os, sys
from poolc.cli import main
try:
    main(sys.argv[1:], prog_name="poolc")
finally:
    with open(os.environ["POOLC_BENCH_SOLVER"], "w") as out:
        out.write("yes" if "ortools" in sys.modules else "no")
"""


def admissible(problem: Problem, reserve: bool = True) -> Problem:
    """The problem without the requests that are eligible nowhere (R003/R004); without
    ``reserve``, also without any policy's reserved share (and what needed one)."""
    policies = problem.policies if reserve else tuple(dataclasses.replace(q, reserved={}) for q in problem.policies)
    problem = Problem(problem.pools, policies, problem.requests,
                      tuple(a for a in problem.running if reserve or a.preemptible))
    kept = tuple(r for r in problem.requests if eligible_policies(problem, r)[0])
    return Problem(problem.pools, problem.policies, kept, problem.running)


def poolc(code: Path, args: list[str], cwd: Path) -> tuple[int, float, str, str]:
    """(exit code, CPU seconds, stderr, whether OR-Tools was loaded) of one `poolc`
    child running the poolc in ``code``."""
    marker = cwd / ".solver"
    env = {**_bytecode_env(), "PYTHONPATH": str(code), "POOLC_BENCH_SOLVER": str(marker)}
    env.pop("SOURCE_DATE_EPOCH", None)
    with open(os.devnull, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", CHILD, *args], cwd=cwd, env=env, stdout=out,
                                stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        err = proc.stderr.read().decode() if proc.stderr else ""
    loaded = marker.read_text() if marker.exists() else "?"
    marker.unlink(missing_ok=True)
    return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, err, loaded


def digest_tree(root: Path) -> str:
    """One digest of every file under ``root`` (paths and bytes)."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def run(args: argparse.Namespace, work: Path) -> None:
    platform = work / "platform"
    if not (platform / "platform.yaml").exists():
        write_instance(admissible(make_problem(args.seed, n_requests=args.requests), not args.no_reserve), platform)
    codes = [("before", poolc_tree(args.baseline, work)), ("after", REPO)]
    for _, code in codes:
        _compile_once(code)
    print(f"{'strategy':<8} {'run':<6} {'code':<7} {'exit':>4} {'cpu s':>7} {'solver':>6}  output")
    for strategy in args.strategies.split(","):
        plan_file = work / f"{strategy}.plan.json"
        code, cpu, err, loaded = poolc(REPO, ["plan", str(platform), "--strategy", strategy, "--quiet", "--state",
                                              str(work / "none.state.json"), "--out", str(plan_file)], work)
        if not plan_file.exists():
            sys.exit(f"poolc plan failed ({code}):\n{err[-2000:]}")
        print(f"{strategy:<8} {'plan':<6} {'after':<7} {code:>4} {cpu:7.2f} {loaded:>6}")
        trees = {}
        for which, code_dir in codes:
            here = work / f"{strategy}-{which}"
            shutil.rmtree(here, ignore_errors=True)
            here.mkdir()
            code, cpu, err, loaded = poolc(code_dir, ["apply", str(platform), "--output-dir", "deploy", "--now", NOW,
                                                      "--plan", str(plan_file), "--quiet"], here)
            trees[which] = (digest_tree(here / "deploy") if (here / "deploy").exists() else "-",
                            hashlib.sha256((here / "poolc.state.json").read_bytes()).hexdigest()[:16]
                            if (here / "poolc.state.json").exists() else "-")
            print(f"{strategy:<8} {'apply':<6} {which:<7} {code:>4} {cpu:7.2f} {loaded:>6}  tree {trees[which][0]} "
                  f"state {trees[which][1]}" + (f"  {err.strip()[-200:]}" if code else ""), flush=True)
        print(f"{'':<8} {'':<6} {'':<7} {'':>4} {'':>7} {'':>6}  before and after wrote "
              + ("the same bytes" if trees["before"] == trees["after"] else "DIFFERENT bytes"))
        stale = work / "stale"
        shutil.rmtree(stale, ignore_errors=True)
        shutil.copytree(platform, stale / "platform")
        text = (stale / "platform" / "platform.yaml").read_text(encoding="utf-8")
        (stale / "platform" / "platform.yaml").write_text(text.replace("priority: 100", "priority: 99", 1),
                                                          encoding="utf-8")
        for which, code_dir in codes:
            code, cpu, err, loaded = poolc(code_dir, ["apply", "platform", "--output-dir", "deploy", "--now", NOW,
                                                      "--plan", str(plan_file), "--quiet"], stale)
            print(f"{strategy:<8} {'stale':<6} {which:<7} {code:>4} {cpu:7.2f} {loaded:>6}  {err.strip()[-90:]}",
                  flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, metavar="REV", help="the poolc to compare with (e.g. main)")
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--strategies", default="zenml,optimal")
    ap.add_argument("--no-reserve", action="store_true", help="no policy reserves anything (see above)")
    ap.add_argument("--keep", type=Path, help="work here (else a temporary directory)")
    args = ap.parse_args(argv)
    in_work_dir(args.keep, "poolc-apply-saved-", lambda work: run(args, work))


if __name__ == "__main__":
    main()
