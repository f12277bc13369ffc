"""The part of OR-Tools' CP-SAT API the planner uses, without numpy and pandas.

Why: ``ortools.sat.python.cp_model`` imports numpy and pandas when it is imported
(for its pandas-indexed helpers, which the planner never calls), and the C++
model class under it imports numpy when a model is made: together a large
share of a small ``poolc plan`` (docs/solver.md, "Start-up: cpsat.py"). Recent
ortools releases expose the model proto, variables and linear expressions in
C++ (``cp_model_helper``); this module writes the few kinds of constraint the
planner adds straight into that proto, with cp_model's names and signatures, so
the optimal package (``planner/optimal/``) reads as ordinary CP-SAT code. The protos are the ones
``cp_model`` writes (``tests/test_cpsat.py`` compares them on the planner's own
models, and the answers), so the plans are the same.

On an ortools without ``cp_model_helper.CpBaseModel`` (older releases), this
module is ``cp_model`` itself: slower to import, same answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    from ortools.sat.python import cp_model_helper as _cmh
except ImportError:  # pragma: no cover - old ortools
    _cmh = None  # type: ignore[assignment]

if TYPE_CHECKING or not hasattr(_cmh, "CpBaseModel"):  # pragma: no cover - old ortools, or mypy
    from ortools.sat.python.cp_model import (  # noqa: F401
        FEASIBLE,
        OPTIMAL,
        UNKNOWN,
        CpModel,
        CpSolver,
        CpSolverStatus,
        IntVar,
        LinearExpr,
        LinearExprT,
        LiteralT,
    )
    BACKEND = "cp_model"
else:
    from ortools.util.python.sorted_interval_list import Domain

    BACKEND = "cp_model_helper"
    IntVar = _cmh.IntVar
    LinearExpr = _cmh.LinearExpr
    LinearExprT = Any
    LiteralT = Any
    CpSolverStatus = _cmh.CpSolverStatus
    OPTIMAL = _cmh.CpSolverStatus.OPTIMAL
    FEASIBLE = _cmh.CpSolverStatus.FEASIBLE
    UNKNOWN = _cmh.CpSolverStatus.UNKNOWN

    _INFINITE = (-2**63, 2**63 - 1)    # how the protos spell an open bound

    class Constraint:
        """A constraint just added, to make it conditional."""

        def __init__(self, proto: Any) -> None:
            self.proto = proto

        def only_enforce_if(self, literals: Any) -> Constraint:
            """Holds only when every one of ``literals`` (one, or a list) is true."""
            for literal in literals if isinstance(literals, list | tuple) else [literals]:
                self.proto.enforcement_literal.append(literal.index)
            return self

    class CpModel:  # type: ignore[no-redef]
        """A CP-SAT model: integer variables, linear constraints, one objective, a hint.

        It writes the model proto directly rather than through ``CpBaseModel``,
        whose constructor imports numpy; the protos are the ones cp_model writes."""

        def __init__(self) -> None:
            self.model_proto = _cmh.CpModelProto()

        @property
        def proto(self) -> Any:
            return self.model_proto

        def new_int_var(self, lb: int, ub: int, name: str) -> Any:
            return IntVar(self.model_proto).with_name(name).with_domain(Domain(lb, ub))

        def new_bool_var(self, name: str) -> Any:
            return self.new_int_var(0, 1, name)

        def add(self, ct: Any) -> Constraint:
            """Adds a bounded linear expression (``x + 2 * y <= 3``); nothing else is needed here."""
            if not isinstance(ct, _cmh.BoundedLinearExpression) or not ct.ok:
                raise TypeError(f"not supported: CpModel.add({ct!r})")
            proto = self.model_proto.constraints.add()
            proto.linear.vars.extend([var.index for var in ct.vars])
            proto.linear.coeffs.extend(ct.coeffs)
            offset = ct.offset
            proto.linear.domain.extend([bound if bound in _INFINITE else bound - offset
                                        for bound in ct.bounds.flattened_intervals()])
            return Constraint(proto)

        def clone(self) -> CpModel:
            copy = CpModel()
            copy.proto.copy_from(self.proto)
            return copy

        def get_int_var_from_proto_index(self, index: int) -> Any:
            if not 0 <= index < len(self.model_proto.variables):
                raise ValueError(f"get_int_var_from_proto_index: out of bound index {index}")
            return IntVar(self.model_proto, index)

        def clear_objective(self) -> None:
            self.model_proto.clear_objective()
            self.model_proto.clear_floating_point_objective()

        def minimize(self, obj: Any) -> None:
            self._set_objective(obj, maximize=False)

        def maximize(self, obj: Any) -> None:
            self._set_objective(obj, maximize=True)

        def _set_objective(self, obj: Any, *, maximize: bool) -> None:
            """An integer linear objective, stored as cp_model stores it (maximizing
            is minimizing the negation, with scaling factor -1)."""
            self.clear_objective()
            if not isinstance(obj, LinearExpr) or not obj.is_integer():
                raise TypeError(f"not an integer linear objective: {type(obj).__name__!r}")
            flat = _cmh.FlatIntExpr(obj)
            objective = self.model_proto.objective
            for var in flat.vars:
                objective.vars.append(var.index)
            sign = -1 if maximize else 1
            objective.scaling_factor = float(sign)
            objective.offset = sign * flat.offset
            objective.coeffs.extend([sign * c for c in flat.coeffs])

        def add_hint(self, var: Any, value: int) -> None:
            self.model_proto.solution_hint.vars.append(var.index)
            self.model_proto.solution_hint.values.append(int(value))

        def clear_hints(self) -> None:
            self.model_proto.clear_solution_hint()

    class CpSolver:  # type: ignore[no-redef]
        """Solves a CpModel with ``parameters``; then reads the response."""

        def __init__(self) -> None:
            self.parameters = _cmh.SatParameters()
            self._response: Any = None

        def solve(self, model: CpModel) -> Any:
            wrapper = _cmh.SolveWrapper()
            wrapper.set_parameters(self.parameters)
            self._response = wrapper.solve(model.proto)
            return self._response.status

        def value(self, expression: Any) -> int:
            return int(_cmh.ResponseHelper.value(self._response, expression))

        @property
        def response_proto(self) -> Any:
            return self._response

        @property
        def objective_value(self) -> float:
            return float(self._response.objective_value)

        @property
        def best_objective_bound(self) -> float:
            return float(self._response.best_objective_bound)

        @property
        def deterministic_time(self) -> float:
            return float(self._response.deterministic_time)

        def status_name(self, status: Any = None) -> str:
            return str((self._response.status if status is None else status).name)
