"""CPU cost of `optimal.solve` under CP-SAT parameter variants, per instance.

    python benchmarks/solve_cost.py                                    # default instances, baseline only
    python benchmarks/solve_cost.py --variant 'nohint:hint_conflict_limit=0' \\
        --variant 'cuts:count.cut_level=0;fifo.max_cut_rounds_at_level_zero=0'
    python benchmarks/solve_cost.py --instances rep:1000:1-5,any:1000:1 --rounds 2 --tiers

An instance is `GEN:REQUESTS:SEEDS` (GEN `rep` = plan_scale's default repertoire,
`any` = `--any-shape`; SEEDS like `1-5` or `1+5`), several joined by commas. A
variant is `NAME:SETTINGS`, SETTINGS `[KIND.]PARAM=VALUE` joined by `;`, where KIND
is one of `SolverSettings.tuning`'s keys (count, fifo, rank, preference; none =
every kind) and PARAM a field of CP-SAT's SatParameters (enum values by name).
Each variant is applied on top of the default settings' tuning; `base` (no
change) is always measured first.

Per instance and variant it prints the CPU seconds of `optimal.solve` (model
building included, generation excluded), the CPU seconds inside CP-SAT, the
deterministic seconds CP-SAT counted, the number of CP-SAT calls, status, gap,
and `same` = whether the tier values equal those of `base` (they must, whenever
both are OPTIMAL). `--rounds R` measures every (instance, variant) R times, the
variants' order reversed on every other round, and prints the smallest CPU
figure (the machine may be shared: the least disturbed run is the best
estimate). `--tiers` adds CPU and deterministic seconds per kind of solve.
Figures, never pass/fail.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from ortools.sat import sat_parameters_pb2  # noqa: E402
from plan_scale import make_problem, seed_range  # noqa: E402

from poolc.planner import cpsat, optimal  # noqa: E402
from poolc.planner.optimal import attempts  # noqa: E402
from poolc.planner.optimal.settings import KINDS  # noqa: E402

DEFAULT_INSTANCES = "rep:1000:1-5,rep:5000:1+5,rep:10000:1-5,any:1000:1"


def parse_instances(text: str) -> list[tuple[str, int, int]]:
    out = []
    for item in text.split(","):
        gen, n, seeds = item.split(":")
        if gen not in ("rep", "any"):
            raise SystemExit(f"unknown generator {gen!r} (rep or any)")
        out += [(gen, int(n), s) for s in seed_range(seeds, "+")]
    return out


def parameter_value(param: str, text: str) -> object:
    """``text`` as the value of CP-SAT parameter ``param``: an enum by its name, a bool
    from true/false (1/0, yes/no, on/off), else a number or a string."""
    fields = sat_parameters_pb2.SatParameters.DESCRIPTOR.fields_by_name
    if param not in fields:
        raise SystemExit(f"no CP-SAT parameter {param!r}")
    fd = fields[param]
    if fd.enum_type is not None:
        number = fd.enum_type.values_by_name[text].number
        current = getattr(cpsat.CpSolver().parameters, param)
        # OR-Tools' C++ parameters take the enum member itself, the protobuf message its number
        return number if isinstance(current, int) else type(current)(number)
    if fd.type == fd.TYPE_BOOL:
        return text.lower() in ("1", "true", "yes", "on")
    if fd.type in (fd.TYPE_DOUBLE, fd.TYPE_FLOAT):
        return float(text)
    if fd.type == fd.TYPE_STRING:
        return text
    return int(text)


def parse_variant(text: str) -> tuple[str, dict[str, dict[str, object]]]:
    name, _, spec = text.partition(":")
    tuning: dict[str, dict[str, object]] = {k: {} for k in KINDS}
    for item in filter(None, (s.strip() for s in spec.split(";"))):
        key, _, raw = item.partition("=")
        kind, dot, param = key.partition(".")
        kinds = [kind] if dot else list(KINDS)
        if not dot:
            param = key
        for k in kinds:
            if k not in tuning:
                raise SystemExit(f"unknown kind {k!r} (one of {', '.join(KINDS)})")
            tuning[k][param] = parameter_value(param, raw)
    return name, tuning


@dataclass
class Run:
    cpu: float
    cpsat_cpu: float
    dtime: float
    calls: int
    status: str
    gap: float
    objective: list[int]
    per_kind: dict[str, list[float]] = field(default_factory=dict)    # kind -> [cpu, dtime, calls]


def measure(problem, tuning: dict[str, dict[str, object]], budget: float) -> Run:
    base = optimal.SolverSettings()
    settings = dataclasses.replace(base, tuning={k: {**base.tuning[k], **tuning.get(k, {})} for k in KINDS})
    solve_orig = cpsat.CpSolver.solve
    solver_orig = attempts.cp_solver
    kind_of: dict[int, str] = {}
    per_kind: dict[str, list[float]] = {}
    totals = [0.0, 0.0, 0]

    def tagged(settings, limit: float, presolve: bool, kind: str):
        solver = solver_orig(settings, limit, presolve, kind)
        kind_of[id(solver)] = kind
        return solver

    def timed(self, model, *args):
        c = time.process_time()
        status = solve_orig(self, model, *args)
        spent = time.process_time() - c
        row = per_kind.setdefault(kind_of.get(id(self), "?"), [0.0, 0.0, 0])
        for acc in (row, totals):
            acc[0] += spent
            acc[1] += self.deterministic_time
            acc[2] += 1
        return status

    attempts.cp_solver = tagged
    cpsat.CpSolver.solve = timed
    try:
        c = time.process_time()
        sol = optimal.solve(problem, max_deterministic_time=budget, settings=settings)
        cpu = time.process_time() - c
    finally:
        cpsat.CpSolver.solve = solve_orig
        attempts.cp_solver = solver_orig
    return Run(cpu, totals[0], totals[1], int(totals[2]), sol.status, sol.gap, list(sol.objective), per_kind)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instances", default=DEFAULT_INSTANCES)
    ap.add_argument("--variant", action="append", default=[], help="NAME:[KIND.]PARAM=VALUE;...")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--max-deterministic-time", type=float, default=60.0)
    ap.add_argument("--tiers", action="store_true", help="CPU and deterministic s per kind of solve")
    args = ap.parse_args(argv)

    variants = [("base", {k: {} for k in KINDS})] + [parse_variant(v) for v in args.variant]
    for name, tuning in variants[1:]:
        print(f"variant {name}: " + "; ".join(f"{k}.{p}={v}" for k, ps in tuning.items() for p, v in ps.items()))
    totals: dict[str, list[float]] = {name: [0.0, 0.0, 0.0] for name, _ in variants}
    for gen, n, seed in parse_instances(args.instances):
        problem = make_problem(seed, n_requests=n, any_shape=gen == "any")
        best: dict[str, Run] = {}
        for r in range(args.rounds):
            order = variants if r % 2 == 0 else variants[::-1]
            for name, tuning in order:
                run = measure(problem, tuning, args.max_deterministic_time)
                if name not in best or run.cpu < best[name].cpu:
                    best[name] = run
        ref = best["base"]
        print(f"\n{gen} {n} seed {seed}")
        for name, _ in variants:
            run = best[name]
            same = "same" if run.objective == ref.objective else "DIFFERENT"
            if run.status == ref.status == "OPTIMAL" and same != "same":
                same = "DIFFERENT (both OPTIMAL: a bug)"
            print(f"  {name:<14} cpu {run.cpu:7.2f}  cp-sat {run.cpsat_cpu:7.2f}  dt {run.dtime:7.3f}"
                  f"  calls {run.calls:3d}  {run.status:<8} gap {run.gap:.3g}  {same}")
            if args.tiers:
                for kind in (*KINDS, "?"):
                    if kind in run.per_kind:
                        c, d, k = run.per_kind[kind]
                        print(f"      {kind:<10} cpu {c:6.2f}  dt {d:7.3f}  calls {int(k)}")
            acc = totals[name]
            acc[0] += run.cpu
            acc[1] += run.cpsat_cpu
            acc[2] += run.dtime
    print("\ntotal over instances")
    for name, _ in variants:
        c, s, d = totals[name]
        print(f"  {name:<14} cpu {c:7.2f}  cp-sat {s:7.2f}  dt {d:7.3f}")


if __name__ == "__main__":
    main()
