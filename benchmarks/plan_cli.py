"""End-to-end `poolc plan --format json` at 1k-50k requests, both strategies, per stage.

    python benchmarks/plan_cli.py [--sizes 1000,5000,10000,20000,50000] [--seeds 1-5]
                                  [--generators repertoire,any-shape] [--seeds-at 20000:2,50000:1]
                                  [--repeat N]

Each instance is the seeded platform of benchmarks/plan_scale.py (20 pools, 60
policies, 500 running allocations) written out as YAML, the way a user's
repository holds it: one platform file (pools, one stack, policies), one file of
Allocation documents, and one Pipeline file of 20 steps per 20 requests (a step
names its component as step operator). `poolc plan --format json DIR` then runs
as a separate process, so start-up, YAML loading, validation, solving,
assembling and printing all count. Two generators: `repertoire` (each component
draws 4-8 step kinds, plan_scale's default) and `any-shape` (every step picks
any of the 40 shapes, about ten times as many request classes).

Per run it prints wall and CPU seconds of the whole command, the seconds inside
each stage (measured in the child by wrapping the stage functions), the peak
resident memory of the child, the solver status and gap, and the ratio of the
run's wall time to the 1,000-request one (the "no instance slower than one ten
times its size" check). Figures, never pass/fail.

On a shared machine one run can be 10-20% slow throughout (every stage at
once). ``--repeat N`` runs each command N times in a row and prints the run
of median CPU time, with every run's CPU seconds under it; the N plans must
be byte-identical, and a line says so when they are not.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from gen_redteam import make_redteam  # noqa: E402
from plan_scale import make_problem, seed_range  # noqa: E402
from trees import poolc_tree  # noqa: E402

from poolc.domain.problem import Problem, Request  # noqa: E402

STEPS_PER_PIPELINE = 20
# Runs in the child: wraps the stages of poolc.commands.planning.plan_paths with timers and
# writes {stage: seconds} to $POOLC_BENCH_STAGES when the process exits.
CHILD = r"""
import atexit, json, os, sys, time
t_start, c_start = time.perf_counter(), time.process_time()
stages, cpu = {}, {}
def timed(module, name, label):
    inner = getattr(module, name)
    def wrapper(*args, **kwargs):
        t, c = time.perf_counter(), time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            stages[label] = stages.get(label, 0.0) + time.perf_counter() - t
            cpu[label] = cpu.get(label, 0.0) + time.process_time() - c
    setattr(module, name, wrapper)
import importlib, poolc
def first(*names):
    # a module by its name in this tree or an older one's (#43 moved them): the first
    # name whose file is in the tree on PYTHONPATH (an editable install of another tree
    # would otherwise answer for a package this one lacks)
    root = os.path.dirname(poolc.__file__)
    for name in names:
        if os.path.exists(os.path.join(root, *name.split(".")[1:]) + ".py"):
            return importlib.import_module(name)
    raise ModuleNotFoundError(names[0])
P = first("poolc.commands.planning", "poolc.plan")
import poolc.domain.plan as DP
import poolc.load as L
import poolc.config as C
import poolc.checks as K
stages["import"], cpu["import"] = time.perf_counter() - t_start, time.process_time() - c_start
timed(L, "load_paths", "load")
V = first("poolc.commands.validate", "poolc.validate")
timed(V, "load_paths", "load")
timed(C.ConfigBuilder, "add", "schema")   # validate builds models file by file, inside load_paths
timed(V, "run_checks", "checks")
timed(P, "problem_from_config", "problem")
timed(P, "assemble", "assemble")
timed(P, "inputs_digest", "digest")
timed(P, "input_digests", "digest")
timed(P, "state_from_plan", "state")
timed(P, "what_changes", "changes")   # rendering the target files and diffing them
RT = first("poolc.commands.runtime_check", "poolc.runtime")
timed(RT, "replay", "runtime")         # the runtime check: the plan replayed on the Kueue simulator
timed(DP, "to_json", "json")   # the CLI imports it at call time
import poolc.planner.cpsat as CS   # deterministic time of every CP-SAT solve, summed
work = {"det": 0.0, "nodes": 0, "lp": 0, "scip": 0}
if hasattr(CS, "CpSolver"):
    solve_cp = CS.CpSolver.solve
    def solve_counted(self, model):
        try:
            return solve_cp(self, model)
        finally:
            work["det"] += self.deterministic_time
    CS.CpSolver.solve = solve_counted
try:
    import poolc.planner.mip as MIP   # SCIP's work in the MIP retry, where it exists
    solve_mip = MIP.solve
    def mip_counted(*args, **kwargs):
        found = solve_mip(*args, **kwargs)
        work["nodes"] += found.nodes
        work["lp"] += found.lp_iterations
        work["scip"] += 1
        return found
    MIP.solve = mip_counted
except ImportError:
    pass
import poolc.planner.optimal as OPT   # per tier: proven or not, summed over the parts
parts = []
try:
    import poolc.planner.optimal.loop as LOOP   # the package
    owner, name = LOOP, "solve_part"
except ImportError:
    owner, name = OPT, "_solve_part"           # a --baseline from before it was one
solve_part = getattr(owner, name)
def part_kept(*args, **kwargs):
    st = solve_part(*args, **kwargs)
    b = next(a for a in args if hasattr(a, "count_tiers"))
    parts.append((b.count_tiers, st))
    return st
setattr(owner, name, part_kept)
original = P.load_strategy
def load_strategy(name, progress=None):
    solve = original(name, progress)
    def solve_timed(problem):
        t, c = time.perf_counter(), time.process_time()
        try:
            return solve(problem)
        finally:
            stages["solve"], cpu["solve"] = time.perf_counter() - t, time.process_time() - c
    return solve_timed
P.load_strategy = load_strategy
def dump():
    stages["total"] = time.perf_counter() - t_start
    for spent in (stages, cpu):   # "load" is the YAML alone
        spent["load"] = spent.get("load", 0.0) - spent.get("schema", 0.0)
    peak = None
    try:   # this process's own high-water mark (exec starts it afresh; ru_maxrss does not)
        with open("/proc/self/status") as status:
            peak = next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        pass
    proof = ""
    if parts:   # the reopen may have changed a part's values after it was solved: read them now
        values = [sum(c) for c in zip(*(st.values for _, st in parts))]
        bounds = [sum(c) for c in zip(*(st.bounds for _, st in parts))]
        marks = "".join("P" if v == b else "." for v, b in zip(values, bounds))
        proof = marks[:parts[0][0]] + "|" + marks[parts[0][0]:]
    with open(os.environ["POOLC_BENCH_STAGES"], "w") as out:
        json.dump({"wall": stages, "cpu": cpu, "peak_mb": peak, "work": work, "proof": proof}, out)
atexit.register(dump)
from poolc.cli import run   # the installed `poolc` entry point
sys.argv = ["poolc", *sys.argv[1:]]
run()
"""
STAGES = ("import", "load", "schema", "checks", "problem", "solve", "assemble", "digest", "state", "runtime",
          "changes", "json")


def _amounts(demand: dict[str, int]) -> dict[str, object]:
    """ResourceSettings that give exactly this demand (docs/format.md#how-step-settings-merge)."""
    out: dict[str, object] = {}
    if demand.get("gpu"):
        out["gpu_count"] = demand["gpu"]
    if demand.get("mcpu"):
        out["cpu_count"] = demand["mcpu"] // 1000
    if demand.get("memory_mb"):
        out["memory"] = f"{demand['memory_mb'] // 1000}GB"
    extra = {k: v for k, v in sorted(demand.items()) if k not in ("gpu", "mcpu", "memory_mb", "step_run")}
    if extra:
        out["pool_resources"] = extra
    return out


def _flow(mapping: dict) -> str:
    return "{" + ", ".join(f"{k}: {_flow(v) if isinstance(v, dict) else v}" for k, v in mapping.items()) + "}"


def _doc(kind: str, name: str, spec_lines: list[str]) -> str:
    return "\n".join([f"apiVersion: poolc/v1\nkind: {kind}\nmetadata: {{name: {name}}}\nspec:", *spec_lines])


def write_instance(problem: Problem, out: Path) -> None:
    """The Problem as a YAML repository that plans to the same Problem."""
    subjects = sorted({q.subject for q in problem.policies})
    docs = [_doc("ResourcePool", p.name, [f"  capacity: {_flow(dict(p.capacity))}"]) for p in problem.pools]
    ops = "\n".join(f"    - {{name: {s}, flavor: kubernetes, namespace: bench, image: 'bench:1'}}"
                    for s in subjects[1:])
    docs.append(_doc("Stack", "bench", [f"  orchestrator: {{name: {subjects[0]}, flavor: kubernetes, "
                                        "namespace: bench, image: 'bench:1'}", "  step_operators:", ops]))
    for q in problem.policies:
        lines = [f"  subject: {q.subject}", f"  pool: {q.pool}", f"  priority: {q.priority}"]
        if q.reserved:
            lines.append(f"  reserved: {_flow(dict(q.reserved))}")
        lines.append(f"  limit: {_flow(dict(q.limit))}")
        docs.append(_doc("Policy", q.name, lines))
    out.mkdir(parents=True, exist_ok=True)
    (out / "platform.yaml").write_text("\n---\n".join(docs) + "\n", encoding="utf-8")
    allocs = []
    for a in problem.running:
        when = a.started_at.strftime("%Y-%m-%dT%H:%M:%SZ") if a.started_at else None
        lines = [f"  subject: {a.subject}", f"  pool: {a.pool}", f"  preemptible: {str(a.preemptible).lower()}",
                 f"  holds: {_flow(dict(a.holds))}"] + ([f"  started_at: {when}"] if when else [])
        allocs.append(_doc("Allocation", a.name, lines))
    (out / "running.yaml").write_text("\n---\n".join(allocs) + "\n", encoding="utf-8")
    pipes = out / "pipelines"
    pipes.mkdir(exist_ok=True)
    by_pipeline: dict[str, list[Request]] = {}
    for r in sorted(problem.requests, key=lambda r: r.rank):
        by_pipeline.setdefault(r.id.split("/")[0], []).append(r)
    for name, steps in by_pipeline.items():
        lines = ["  stack: bench", "  steps:"]
        for r in steps:
            lines.append(f"    {r.id.split('/')[1]}:")
            if r.requester != subjects[0]:
                lines.append(f"      step_operator: {r.requester}")
            resources = {**_amounts(dict(r.demand)), **({} if r.preemptible else {"preemptible": "false"})}
            lines.append(f"      settings: {{resources: {_flow(resources)}}}")
        (pipes / f"{name}.yaml").write_text(_doc("Pipeline", name, lines) + "\n", encoding="utf-8")


def run_plan(directory: Path, strategy: str, out_json: Path, code: Path = REPO) -> dict:
    """One `poolc plan` child of the poolc in ``code``: wall, CPU, peak RSS, stage
    seconds, solver verdict, per-tier proofs, CP-SAT's deterministic time and SCIP's work."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        stages_file = tmp.name
    env = {**_bytecode_env(), "POOLC_BENCH_STAGES": stages_file, "PYTHONPATH": str(code)}
    argv = [sys.executable, "-c", CHILD, "plan", "--format", "json", "--strategy", strategy, "--quiet",
            str(directory)]
    start = time.perf_counter()
    with open(out_json, "wb") as stdout:
        proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, env=env, cwd=code)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode() if proc.stderr else ""
    wall = time.perf_counter() - start
    stages = json.loads(Path(stages_file).read_text()) if Path(stages_file).stat().st_size else {"wall": {}, "cpu": {}}
    os.unlink(stages_file)
    data = out_json.read_bytes()
    try:
        plan = json.loads(data)
        solver = plan["solver"]
    except (ValueError, KeyError):
        sys.exit(f"poolc plan failed ({proc.returncode}):\n{err[-3000:]}")
    priority = {q["name"]: q["priority"] for q in plan.get("policies", [])}
    admitted: dict[int, int] = {}
    for r in plan.get("requests", []):
        if r.get("status") == "allocated" and r.get("policy") in priority:
            admitted[priority[r["policy"]]] = admitted.get(priority[r["policy"]], 0) + 1
    # the child's own peak; ru_maxrss also counts this process's size when it forked the child
    peak = stages.pop("peak_mb", None) or usage.ru_maxrss / 1024
    work, proof = stages.pop("work", {}), stages.pop("proof", "")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": peak,
            "stages": stages, "status": solver["status"], "gap": solver["gap"], "work": work, "proof": proof,
            "sha": hashlib.sha256(data).hexdigest()[:12],
            "admitted": dict(sorted(admitted.items(), reverse=True))}


def _rest(whole: float, stages: dict[str, float]) -> float:
    """What the child spent outside every timed stage ("total" is the wall clock of the stages' own run)."""
    return whole - sum(v for k, v in stages.items() if k in STAGES)


def median_run(directory: Path, strategy: str, out_json: Path, repeat: int, code: Path = REPO) -> dict:
    """``run_plan`` ``repeat`` times: the run of median CPU time, with every run's CPU
    seconds (``cpus``) and whether the plans were byte-identical (``identical``)."""
    runs = [run_plan(directory, strategy, out_json, code) for _ in range(max(1, repeat))]
    middle = sorted(runs, key=lambda r: r["cpu"])[(len(runs) - 1) // 2]
    return {**middle, "cpus": [r["cpu"] for r in runs], "identical": len({r["sha"] for r in runs}) == 1}


def _bytecode_env() -> dict[str, str]:
    """The environment of every child: Python's bytecode cache on, as an installed poolc
    runs (installers compile it). Without it (``PYTHONDONTWRITEBYTECODE`` set, as on some
    container images) every run compiles poolc's modules again: about 0.2 CPU s."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _compile_once(code: Path = REPO) -> None:
    """Fill the bytecode cache before the first timed child."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(code / "poolc")], env=_bytecode_env(),
                   check=True, stdout=subprocess.DEVNULL)


def _caps(text: str) -> dict[int, int]:
    """'10000:3,20000:1' -> at most 3 seeds above 10,000 requests... (size -> seeds)."""
    return {int(k): int(v) for k, v in (p.split(":") for p in text.split(",") if p)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,5000,10000,20000,50000")
    ap.add_argument("--seeds", default="1-5")
    ap.add_argument("--generators", default="repertoire,any-shape,heavy-tailed",
                    help="any of repertoire, any-shape, heavy-tailed, fleet, and red-team (gen_redteam.py's input, "
                         "whatever the size)")
    ap.add_argument("--baseline", metavar="REV",
                    help="also run the poolc of git revision REV (e.g. main) on every instance, each "
                         "before/after pair in a row: the side-by-side figures of a change")
    ap.add_argument("--strategies", default="optimal,zenml")
    ap.add_argument("--seeds-at", default="20000:2,50000:1",
                    help="fewer seeds at large sizes: size:count,... (a size gets the cap of the largest "
                         "listed size <= it)")
    ap.add_argument("--keep", type=Path, help="write the instances here (else a temporary directory)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run each command N times and print the run of median CPU time")
    args = ap.parse_args(argv)
    if args.keep:
        run_all(args, args.keep)
        return
    with tempfile.TemporaryDirectory(prefix="poolc-plan-bench-") as scratch:   # 0.5 GB at 50,000
        run_all(args, Path(scratch))


def run_all(args: argparse.Namespace, work: Path) -> None:
    """Every instance the options ask for, written under ``work`` and planned."""
    sizes = [int(s) for s in args.sizes.split(",")]
    seeds, caps = seed_range(args.seeds), _caps(args.seeds_at)
    codes = [("after" if args.baseline else "", REPO)]
    if args.baseline:
        codes.insert(0, ("before", poolc_tree(args.baseline, work)))
    for _, code in codes:
        _compile_once(code)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; instances in {work}"
          + ("" if args.keep else " (removed at the end; --keep DIR keeps them)"))
    head = (f"{'generator':<12} {'reqs':>6} {'seed':>4} {'classes':>7} {'strategy':<8} {'code':<6} {'status':<8} "
            f"{'gap':>5} {'wall':>6} {'cpu':>6} {'MB':>5} {'x1k':>5} {'det s':>6} {'scip':>4} {'nodes':>5} "
            f"{'LP it':>7} {'tiers':<16} | " + " ".join(f"{s[:6]:>6}" for s in STAGES) + f" {'rest':>6}")
    print(head)
    base: dict[tuple[str, str, int], float] = {}
    results: list[dict] = []
    for gen in args.generators.split(","):
        for size in sizes:
            listed = [s for s in caps if s <= size]
            cap = caps[max(listed)] if listed else len(seeds)
            for seed in seeds[:cap]:
                problem = (make_redteam(seed) if gen == "red-team"      # its own size: 2,500 steps
                           else make_problem(seed, n_requests=size, generator=gen))
                classes = len({(r.requester, tuple(sorted(r.demand.items())), r.preemptible)
                               for r in problem.requests})
                directory = work / f"{gen}-{size}-{seed}"
                if not (directory / "platform.yaml").exists():
                    write_instance(problem, directory)
                for strategy, (which, code) in ((s, c) for s in args.strategies.split(",") for c in codes):
                    r = median_run(directory, strategy, work / f"{gen}-{size}-{seed}-{strategy}{which}.json",
                                   args.repeat, code)
                    results.append({**r, "generator": gen, "size": size, "seed": seed, "strategy": strategy,
                                    "code": which})
                    if size == sizes[0]:
                        base[gen, strategy + which, seed] = r["wall"]
                    ref = base.get((gen, strategy + which, seed)) or base.get((gen, strategy + which, seeds[0]))
                    ratio = f"{r['wall'] / ref:5.1f}" if ref else "    -"
                    wall = " ".join(f"{r['stages']['wall'].get(s, 0.0):6.2f}" for s in STAGES)
                    cpu = " ".join(f"{r['stages']['cpu'].get(s, 0.0):6.2f}" for s in STAGES)
                    wall += f" {_rest(r['wall'], r['stages']['wall']):6.2f}"
                    cpu += f" {_rest(r['cpu'], r['stages']['cpu']):6.2f}"
                    w = r["work"]
                    print(f"{gen:<12} {size:>6} {seed:>4} {classes:>7} {strategy:<8} {which:<6} {r['status']:<8} "
                          f"{r['gap']:5.2f} {r['wall']:6.2f} {r['cpu']:6.2f} {r['rss_mb']:5.0f} {ratio} "
                          f"{w.get('det', 0.0):6.2f} {w.get('scip', 0):4d} {w.get('nodes', 0):5d} "
                          f"{w.get('lp', 0):7d} {r['proof']:<16} | {wall}\n"
                          f"{'':>141}cpu | {cpu}", flush=True)
                    print(f"{'':>10} admitted per priority: "
                          + ", ".join(f"{p}: {n}" for p, n in r["admitted"].items()), flush=True)
                    if args.repeat > 1:
                        print(f"{'':>10} cpu of {args.repeat} runs: "
                              + " ".join(f"{c:.2f}" for c in r["cpus"])
                              + ("" if r["identical"] else "  PLANS DIFFER BETWEEN RUNS"), flush=True)
    print("\nstages (s, inside the child): import = start-up and imports; load = YAML; schema = documents "
          "to models; checks = semantic checks and step requests; problem = Problem from the config; "
          "solve = the strategy; assemble = plan and explanations; digest = inputs digest; "
          "state = next state; runtime = the runtime check (the plan replayed on the Kueue simulator); "
          "changes = rendering the target files and their diff; "
          "json = serialising; rest = the whole process less the stages (interpreter start-up, "
          "the imports the stages' callers make, among them OR-Tools' library when the strategy "
          "is loaded, the command line and the exit); first line wall, second line CPU seconds per stage. "
          "wall/cpu/MB = the whole child process "
          "(MB = peak resident). x1k = wall / wall of the first size, same seed. det s = CP-SAT's "
          "deterministic time, all solves; scip = MIP retries, nodes and LP it = SCIP's work in them; "
          "tiers = per tier P proven or . not, the count tiers before the bar, then FIFO, start rank, "
          "preference (optimal only). code = before (--baseline) or after.")
    for which, _ in codes:
        if which:
            print(f"\n{which}:")
        print_targets([r for r in results if r["strategy"] == "optimal" and r["code"] == which])


# The targets for the whole command, CPU s on a 2-core machine; a size between two
# listed ones is held to the next one up (5,000 to 10,000's, 20,000 to 50,000's).
# Repertoire: every tier proven. Many shapes (any-shape, heavy-tailed): every count
# tier proven, FIFO too up to 1,000 requests, the other tiers proven or within a 1% gap.
TARGET_CPU = {1_000: 2.0, 10_000: 10.0, 50_000: 30.0}
TARGET_CPU_SHAPES = {1_000: 20.0, 10_000: 60.0, 50_000: 120.0}
# Fleet (about 1,200 request classes at 10,000): every tier proven, like repertoire.
TARGET_CPU_FLEET = {1_000: 3.0, 10_000: 15.0}
TARGET_MB = 1024


def _proven(r: dict) -> bool:
    """Whether a run meets its generator's proof target."""
    if r["generator"] in ("repertoire", "fleet") or not r["proof"]:
        return bool(r["status"] == "OPTIMAL")
    counts, _, rest = r["proof"].partition("|")
    return "." not in counts and (r["size"] > 1_000 or rest[:1] == "P") and r["gap"] <= 0.01


def print_targets(runs: list[dict]) -> None:
    """Each size and generator against the targets, and any instance slower than the one
    ten times its size (same generator and seed)."""
    if not runs:
        return
    print(f"\ntargets (optimal, whole command): repertoire every instance OPTIMAL, CPU s "
          f"{', '.join(f'{k:,} <= {v:g}' for k, v in TARGET_CPU.items())}; fleet every instance OPTIMAL, CPU s "
          f"{', '.join(f'{k:,} <= {v:g}' for k, v in TARGET_CPU_FLEET.items())}; any-shape and heavy-tailed every "
          f"count tier proven, FIFO too at 1,000, gap <= 0.01, CPU s "
          f"{', '.join(f'{k:,} <= {v:g}' for k, v in TARGET_CPU_SHAPES.items())}; peak <= {TARGET_MB} MB")
    print(f"{'generator':<12} {'reqs':>6} {'runs':>4} {'proven':>6} {'worst cpu':>9} {'target':>6} "
          f"{'worst MB':>8}  met")
    groups: dict[tuple[str, int], list[dict]] = {}
    for r in runs:
        groups.setdefault((r["generator"], r["size"]), []).append(r)
    for (gen, size), group in groups.items():
        targets = {"repertoire": TARGET_CPU, "fleet": TARGET_CPU_FLEET}.get(gen, TARGET_CPU_SHAPES)
        target = min([v for k, v in targets.items() if k >= size], default=max(targets.values()))
        proven = sum(_proven(r) for r in group)
        cpu, mb = max(r["cpu"] for r in group), max(r["rss_mb"] for r in group)
        met = proven == len(group) and cpu <= target and mb <= TARGET_MB
        print(f"{gen:<12} {size:>6} {len(group):>4} {proven:>3}/{len(group):<2} {cpu:9.2f} {target:6g} "
              f"{mb:8.0f}  {'yes' if met else 'no'}")
    by_key = {(r["generator"], r["size"], r["seed"]): r for r in runs}
    slower = [f"{gen} {size:,} seed {seed} ({r['cpu']:.1f} s) > {size * 10:,} ({big['cpu']:.1f} s)"
              for (gen, size, seed), r in by_key.items()
              if (big := by_key.get((gen, size * 10, seed))) and r["cpu"] > big["cpu"]]
    print("slower than the instance ten times its size: " + ("; ".join(slower) or "none of those measured"))


if __name__ == "__main__":
    main()
