"""One CP-SAT solve of the `optimal` strategy, captured and solved again under
parameter variants, on the very model and hint the planner gave it.

    python benchmarks/solve_again.py --requests 50000 --any-shape --kind rank --attempt 3 \\
        --variant "" --variant "max_presolve_iterations=1" --variant "symmetry_level=0"

A tier's solve time swings with which optimum the tiers before it returned, so a
setting is best compared on the same model: this runs the planner once on a
plan_scale instance, keeps a copy of the ``--attempt``-th solve of ``--kind`` (one
of `SolverSettings.tuning`'s kinds: count, fifo, rank, preference; 1-based, in the
order the planner solves, every part), and solves that copy once per variant.

A variant is ``name=value;name=value``, set on the captured solve's CP-SAT
parameters (values read as `solve_cost.py` reads them: an enum by its name,
true/false, a number); the empty variant is the solve as the planner ran it.
Every variant gets ``--limit`` deterministic seconds, so it runs to its proof
unless it is far slower. Printed per variant: CPU seconds, deterministic
seconds, status, branches, value and bound. At `any-shape` 50,000, seed 1, the
rank-kind solves are the polished hint (1), the start-rank fold without presolve
(2) and its retry with presolve (3).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan_scale import make_problem  # noqa: E402
from solve_cost import parameter_value  # noqa: E402

from poolc.planner import cpsat, optimal  # noqa: E402
from poolc.planner.optimal import attempts  # noqa: E402
from poolc.planner.optimal.settings import KINDS  # noqa: E402


def capture(problem: Any, wanted: str, attempt: int) -> tuple[Any, Any] | None:
    """(a copy of the model, the parameters) of that solve, or None when the
    planner never made it. The planner runs to its end either way."""
    made = attempts.cp_solver
    solve = cpsat.CpSolver.solve
    seen: list[int] = [0]
    kept: list[tuple[Any, Any]] = []

    def tagged(settings: Any, limit: float, presolve: bool, kind: str) -> Any:
        solver = made(settings, limit, presolve=presolve, kind=kind)
        solver.poolc_kind = kind
        return solver

    def counted(self: Any, model: Any) -> Any:
        if getattr(self, "poolc_kind", None) == wanted:
            seen[0] += 1
            if seen[0] == attempt:
                kept.append((model.clone(), self.parameters))
        return solve(self, model)

    attempts.cp_solver = tagged
    cpsat.CpSolver.solve = counted
    try:
        optimal.solve(problem)
    finally:
        attempts.cp_solver = made
        cpsat.CpSolver.solve = solve
    return kept[0] if kept else None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--any-shape", action="store_true")
    ap.add_argument("--kind", choices=sorted(KINDS), default="rank")
    ap.add_argument("--attempt", type=int, default=1, help="the Nth solve of that kind (1-based)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=VALUE;...",
                    help="CP-SAT parameters on top of the captured ones; '' is the solve as it ran")
    ap.add_argument("--limit", type=float, default=60.0, help="deterministic seconds for every variant")
    args = ap.parse_args(argv)
    problem = make_problem(args.seed, n_requests=args.requests, any_shape=args.any_shape)
    found = capture(problem, args.kind, args.attempt)
    shape = "any-shape" if args.any_shape else "repertoire"
    if found is None:
        sys.exit(f"{shape} {args.requests} seed {args.seed}: no {args.kind} solve number {args.attempt}")
    model, parameters = found
    print(f"{shape} {args.requests} seed {args.seed}: {args.kind} solve {args.attempt} "
          f"(presolve {parameters.cp_model_presolve}, limit {parameters.max_deterministic_time:.2f})")
    for variant in args.variant or [""]:
        solver = cpsat.CpSolver()
        solver.parameters.copy_from(parameters)
        solver.parameters.max_deterministic_time = args.limit
        for setting in filter(None, variant.split(";")):
            name, _, value = setting.partition("=")
            setattr(solver.parameters, name.strip(), parameter_value(name.strip(), value.strip()))
        start = time.process_time()
        status = solver.solve(model)
        cpu = time.process_time() - start
        response = solver.response_proto
        print(f"  {variant or 'as it ran':45} cpu {cpu:7.2f} det {solver.deterministic_time:6.2f} "
              f"{solver.status_name(status):9} branches {response.num_branches:8d} "
              f"value {solver.objective_value:.0f} bound {solver.best_objective_bound:.0f}", flush=True)


if __name__ == "__main__":
    main()
