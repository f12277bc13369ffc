"""The MIP retry: a tier CP-SAT's quick attempt left unproven, handed to SCIP.

Why: on platforms of many step shapes, CP-SAT's search closes some count tiers
slowly (its linear relaxation there is weak; it stops at its share of the
budget with a gap), while SCIP's LP-based branch and cut proves the same tiers at
the root node. CP-SAT stays the planner's solver (it is far faster on everything
else); SCIP is asked once, only where CP-SAT's quick attempt failed.

What keeps the plan exact and reproducible:

* The very model CP-SAT solved (its proto: integer variables, linear rows,
  rows made conditional by literals, the objective) is translated as it is, less
  the request-dominance rows (redundant; SCIP found no solution at all with
  them). A conditional row becomes a big-M row whose M is the row's own range
  over the variables' bounds, so it is exact for integer values.
* CP-SAT's best answer is SCIP's start.
* SCIP runs on one thread with its default, pinned random seeds, and stops at a
  node limit and an LP-iteration limit (checked after every LP solve), never a
  clock: the same model stops at the same place on every run and machine.
* The answer is only a candidate: the caller has CP-SAT check it against every
  row of its own model before using it (`optimal/retries.py`, `mip_retry`).

pyscipopt is imported here only, and this module only when a retry is needed,
so `poolc validate` never loads it (tests/test_validate.py checks that no solver
is imported there).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

_EXACT = 2**53              # larger coefficients or bounds are not exact in SCIP's doubles
_INFINITE = 2**62           # CP-SAT's open bounds are near +-2**63


@dataclass(frozen=True)
class MipAnswer:
    """What SCIP found, in the units of the CP-SAT objective (scaled and offset
    as CP-SAT reports it). ``values``: one integer per model variable, or None
    when SCIP found no solution. ``proven``: its best value meets its bound."""

    values: list[int] | None
    value: int | None
    bound: int | None
    proven: bool
    status: str
    nodes: int
    lp_iterations: int


def available() -> bool:
    """Whether pyscipopt is installed (the retry is skipped without it); found,
    not imported: the import is paid only by a plan that needs a retry."""
    return importlib.util.find_spec("pyscipopt") is not None


def _kind(ct: Any) -> str | None:
    """Which kind of row ``ct`` is ("linear", another kind, or None for a cleared one),
    on the C++ protos of recent ortools and the protobuf ones of older releases."""
    if hasattr(ct, "WhichOneof"):
        return str(ct.WhichOneof("constraint") or "") or None
    if ct.has_linear():
        return "linear"
    return next((name[4:] for name in _KINDS if getattr(ct, name)()), None)


_KINDS = ("has_all_diff", "has_at_most_one", "has_automaton", "has_bool_and", "has_bool_or", "has_bool_xor",
          "has_circuit", "has_cumulative", "has_element", "has_exactly_one", "has_int_div", "has_int_mod",
          "has_int_prod", "has_interval", "has_inverse", "has_lin_max", "has_no_overlap", "has_no_overlap_2d",
          "has_reservoir", "has_routes", "has_table")


def translatable(proto: Any, skip: Collection[int] = ()) -> bool:
    """Whether every row and domain of ``proto`` is one `solve` translates exactly."""
    if any(len(v.domain) != 2 or max(abs(v.domain[0]), abs(v.domain[1])) >= _EXACT for v in proto.variables):
        return False
    for i, ct in enumerate(proto.constraints):
        kind = _kind(ct)
        if i in skip or kind is None:
            continue
        if kind != "linear" or len(ct.linear.domain) != 2 or any(abs(c) >= _EXACT for c in ct.linear.coeffs):
            return False
    return not any(abs(c) >= _EXACT for c in proto.objective.coeffs)


def solve(proto: Any, start: Sequence[int] | None, *, skip: Collection[int] = (),
          nodes: int, lp_iterations: int) -> MipAnswer:
    """SCIP on the CP-SAT model ``proto`` (rows in ``skip`` left out), from ``start``
    (a value per variable), within ``nodes`` branch-and-bound nodes and
    ``lp_iterations`` simplex iterations over the whole solve (the planner's are
    `SolverSettings.mip_nodes` and `mip_lp_iterations`). The caller checks
    `translatable` first."""
    import pyscipopt

    scip = pyscipopt.Model("poolc-tier")
    scip.hideOutput()
    _pin(scip, nodes)
    lows = [int(v.domain[0]) for v in proto.variables]
    highs = [int(v.domain[1]) for v in proto.variables]
    xs = [scip.addVar(name=f"x{i}", vtype="B" if (lo, hi) == (0, 1) else "I", lb=lo, ub=hi)
          for i, (lo, hi) in enumerate(zip(lows, highs, strict=True))]
    for i, ct in enumerate(proto.constraints):
        if i in skip or _kind(ct) is None:
            continue
        _add_row(scip, xs, lows, highs, ct, f"c{i}")
    objective = proto.objective
    scip.setObjective(pyscipopt.quicksum(c * xs[v] for v, c in zip(objective.vars, objective.coeffs, strict=True)),
                      "minimize")
    if start is not None and len(start) == len(xs):
        sol = scip.createSol()
        for x, value in zip(xs, start, strict=True):
            scip.setSolVal(sol, x, value)
        scip.addSol(sol, free=True)
    scip.includeEventhdlr(_IterationLimit(lp_iterations), "poolc-lp-limit", "stops SCIP after an LP-iteration count")
    scip.optimize()
    return _answer(scip, xs, proto)


def _pin(scip: Any, nodes: int) -> None:
    """One thread, SCIP's own fixed seeds, a node limit; no clock anywhere."""
    scip.setIntParam("lp/threads", 1)
    scip.setIntParam("parallel/maxnthreads", 1)
    scip.setIntParam("randomization/randomseedshift", 0)
    scip.setLongintParam("limits/nodes", nodes)
    scip.setBoolParam("timing/statistictiming", False)


def _add_row(scip: Any, xs: list[Any], lows: list[int], highs: list[int], ct: Any, name: str) -> None:
    """``lo <= sum(coeffs * vars) <= hi``, held only when every enforcement literal
    is true: relaxed by its own range (big M) times the number of false literals."""
    import pyscipopt

    row = ct.linear
    lo, hi = int(row.domain[0]), int(row.domain[1])
    lo_open, hi_open = lo <= -_INFINITE, hi >= _INFINITE
    expr = pyscipopt.quicksum(c * xs[v] for v, c in zip(row.vars, row.coeffs, strict=True))
    if not ct.enforcement_literal:
        if lo == hi:
            scip.addCons(expr == lo, name=name)
            return
        if not hi_open:
            scip.addCons(expr <= hi, name=f"{name}_hi")
        if not lo_open:
            scip.addCons(expr >= lo, name=f"{name}_lo")
        return
    most = sum(c * (highs[v] if c > 0 else lows[v]) for v, c in zip(row.vars, row.coeffs, strict=True))
    least = sum(c * (lows[v] if c > 0 else highs[v]) for v, c in zip(row.vars, row.coeffs, strict=True))
    off = pyscipopt.quicksum((1 - xs[lit]) if lit >= 0 else xs[-lit - 1] for lit in ct.enforcement_literal)
    if not hi_open and most > hi:
        scip.addCons(expr <= hi + (most - hi) * off, name=f"{name}_hi")
    if not lo_open and least < lo:
        scip.addCons(expr >= lo - (lo - least) * off, name=f"{name}_lo")


class _IterationLimit:
    """Interrupts SCIP once its LP iterations pass a count: checked after every LP
    solve, so the stop falls at the same point on every run."""

    def __new__(cls, limit: int) -> Any:
        import pyscipopt

        class Limit(pyscipopt.Eventhdlr):
            def eventinit(self) -> None:
                self.model.catchEvent(pyscipopt.SCIP_EVENTTYPE.LPSOLVED, self)

            def eventexit(self) -> None:
                self.model.dropEvent(pyscipopt.SCIP_EVENTTYPE.LPSOLVED, self)

            def eventexec(self, event: Any) -> None:
                if self.model.getNLPIterations() >= limit:
                    self.model.interruptSolve()

        return Limit()


def _answer(scip: Any, xs: list[Any], proto: Any) -> MipAnswer:
    """SCIP's best solution rounded to integers, its value computed exactly from
    them, and its dual bound rounded to the integer objective (a bound that is
    not integral is rounded towards the solutions, which is exact since every
    coefficient is an integer)."""
    objective = proto.objective
    scale, offset = (objective.scaling_factor or 1.0), objective.offset
    nodes, iterations = int(scip.getNNodes()), int(scip.getNLPIterations())
    status = str(scip.getStatus())
    if status == "infeasible":
        return MipAnswer(None, None, None, False, status, nodes, iterations)
    dual = scip.getDualbound()
    low = None if not math.isfinite(dual) or abs(dual) >= _EXACT else math.ceil(dual - 1e-6 * max(1.0, abs(dual)))
    values = value = None
    if scip.getNSols() > 0:
        sol = scip.getBestSol()
        values = [round(scip.getSolVal(sol, x)) for x in xs]
        internal = sum(c * values[v] for v, c in zip(objective.vars, objective.coeffs, strict=True))
        value = round(scale * (internal + offset))
        if low is not None:
            low = min(low, internal)
    bound = None if low is None else round(scale * (low + offset))
    return MipAnswer(values, value, bound, value is not None and value == bound, status, nodes, iterations)
