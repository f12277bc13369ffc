"""The Plan `poolc plan` prints, and its JSON form (CLI.md, "The plan, as JSON").

A plan is a value assembled from a strategy's Solution: every step with its
status and the reason in numbers, the preemptions and whom they make room for,
each pool's capacity/used/free, the diagnostics and the solver's verdict. The JSON
is byte-identical for the same inputs on every run and machine: lists sorted by
id/name, map keys sorted, no timings, and an ``inputs_digest`` that names the
inputs by content (so `apply --plan` can refuse a plan whose inputs changed).

``free`` is ``capacity - used`` and may be negative: running allocations can
already hold more than a pool's capacity (warning A002); such a pool admits
nothing that needs the over-full key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..config import Config
from ..diagnostics import Diagnostic
from ..domain.borrowing import borrowed_parts
from ..domain.eligibility import eligible_policies, rejection
from ..domain.problem import Problem, Running
from ..model import KINDS, Allocation
from ..requests import StepRequest
from .explain import (
    FinalState,
    allocated_message,
    preempted_message,
    queued_message,
    requeued_message,
    running_message,
    unmanaged_message,
)
from .solution import Solution

FORMAT_VERSION = 1
ALLOCATED, QUEUED, REJECTED = "allocated", "queued", "rejected"
UNMANAGED = "UNMANAGED"


@dataclass(frozen=True)
class PlannedRequest:
    id: str
    requester: str | None
    preemptible: bool
    demand: Mapping[str, int]
    status: str                       # allocated | queued | rejected
    pool: str | None
    policy: str | None
    borrowed: Mapping[str, int]
    reason: str | None                # a rule id for rejected, UNMANAGED, else None
    message: str
    running: str | None = None        # the allocation that already runs this step (not in the JSON)

    def as_dict(self) -> dict:
        return {"id": self.id, "requester": self.requester, "preemptible": self.preemptible,
                "demand": dict(self.demand), "status": self.status, "pool": self.pool, "policy": self.policy,
                "borrowed": dict(self.borrowed), "reason": self.reason, "message": self.message}


@dataclass(frozen=True)
class Preemption:
    id: str                           # the running allocation's name
    pool: str
    for_: tuple[str, ...]             # request ids it makes room for, sorted
    message: str

    def as_dict(self) -> dict:
        return {"id": self.id, "pool": self.pool, "for": list(self.for_), "message": self.message}


@dataclass(frozen=True)
class PoolUsage:
    name: str
    capacity: Mapping[str, int]
    used: Mapping[str, int]
    free: Mapping[str, int]           # capacity - used; negative on an over-full pool

    def as_dict(self) -> dict:
        return {"name": self.name, "capacity": dict(self.capacity), "used": dict(self.used),
                "free": dict(self.free)}


@dataclass(frozen=True)
class SolverInfo:
    strategy: str
    status: str
    objective: tuple[int, ...]
    gap: float

    def as_dict(self) -> dict:
        return {"strategy": self.strategy, "status": self.status, "objective": list(self.objective),
                "gap": float(self.gap)}


@dataclass(frozen=True)
class Plan:
    inputs_digest: str
    requests: tuple[PlannedRequest, ...]      # sorted by id
    preempted: tuple[Preemption, ...]         # sorted by id
    pools: tuple[PoolUsage, ...]              # sorted by name
    diagnostics: tuple[Diagnostic, ...]
    solver: SolverInfo
    # What the plan changes against what runs (allocation names added / removed /
    # unchanged); an addition to CLI.md's shape, set by compiler.plan.
    changes: dict[str, list[str]] | None = None

    def diagnostics_list(self) -> list[Diagnostic]:
        """Validation and state diagnostics, in report order."""
        return list(self.diagnostics)

    def by_status(self, status: str) -> list[PlannedRequest]:
        return [r for r in self.requests if r.status == status]

    def as_dict(self) -> dict:
        return {
            "format_version": FORMAT_VERSION,
            "inputs_digest": self.inputs_digest,
            "requests": [r.as_dict() for r in self.requests],
            "preempted": [p.as_dict() for p in self.preempted],
            "pools": [p.as_dict() for p in self.pools],
            "diagnostics": [{"file": x.file, "line": x.line, "column": x.column, "rule": x.rule,
                             "severity": x.severity, "message": x.message} for x in self.diagnostics],
            "solver": self.solver.as_dict(),
            **({"changes": self.changes} if self.changes is not None else {}),
        }


def to_json(plan: Plan) -> str:
    return json.dumps(plan.as_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def inputs_digest(config: Config, state_allocations: Iterable[Allocation] = ()) -> str:
    """sha256 of the validated inputs as canonical JSON: every document's model
    (defaults filled in, so ``priority: 0`` written or omitted is the same) sorted by
    (kind, name), plus the state's allocations by name. File paths, comments, key
    order and YAML style do not enter it."""
    global _dumped
    # `plan` digests the same documents twice (with and without the state): each
    # document object is dumped once and its dump kept until the next call.
    known, _dumped = _dumped, {}

    def dump(obj: Any) -> dict:
        hit = known.get(id(obj))
        doc = hit[1] if hit is not None and hit[0] is obj else obj.model_dump(mode="json", exclude_none=True)
        _dumped[id(obj)] = (obj, doc)
        return doc

    documents = [dump(entry.obj) for kind in KINDS for entry in config.by_kind(kind).values()]
    documents.sort(key=lambda doc: (doc["kind"], doc["metadata"]["name"]))
    state = sorted((dump(a) for a in state_allocations), key=lambda doc: doc["metadata"]["name"])
    canonical = json.dumps({"documents": documents, "state": state}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(canonical.encode("ascii")).hexdigest()


_dumped: dict[int, tuple[Any, dict]] = {}    # id(document) -> (document, its dump), last call's


def _pools(problem: Problem, state: FinalState) -> tuple[PoolUsage, ...]:
    usages = []
    for pool in sorted(problem.pools, key=lambda p: p.name):
        used = {k: state.used[pool.name].get(k, 0) for k in sorted(pool.capacity)}
        usages.append(PoolUsage(pool.name, dict(sorted(pool.capacity.items())), used,
                                {k: pool.capacity[k] - used[k] for k in used}))
    return tuple(usages)


def assemble(problem: Problem, solution: Solution, requests: list[StepRequest], *,
             rejected: Mapping[str, tuple[str, str]], running: Mapping[str, Running],
             diagnostics: Iterable[Diagnostic], digest: str) -> Plan:
    """Build the Plan for every step of ``requests``.

    ``rejected``: request id -> (rule id, message) for steps that cannot be planned
    at all (an error in the step, or its pipeline's stack is missing).
    ``running``: request id -> the running allocation that already serves the step
    (it is not a request of ``problem``). Every other step is a request of ``problem``."""
    state = FinalState.of(problem, solution)
    after = state.borrowed()
    before = borrowed_parts(problem)
    allocs = {a.name: a for a in problem.running}
    preemptions: dict[str, Preemption] = {}
    for name, for_ids in sorted(solution.preempted.items()):
        victim = allocs[name]
        displaced = sorted(for_ids)
        preemptions[name] = Preemption(name, victim.pool, tuple(displaced),
                                       preempted_message(state, victim, displaced, before.get(name, {})))
    by_id = {r.id: r for r in problem.requests}
    planned = []
    for step in requests:
        common = {"id": step.id, "requester": step.requester, "preemptible": step.preemptible,
                  "demand": dict(sorted(step.demand.items()))}
        if step.id in rejected:
            rule, message = rejected[step.id]
            planned.append(PlannedRequest(**common, status=REJECTED, pool=None, policy=None, borrowed={},
                                          reason=rule, message=message))
            continue
        if step.id in running:
            alloc = running[step.id]
            policy = problem.policy_for(alloc.subject, alloc.pool)
            if alloc.name in preemptions:
                planned.append(PlannedRequest(**common, status=QUEUED, pool=None, policy=None, borrowed={},
                                              reason=None, running=alloc.name,
                                              message=requeued_message(alloc.name, preemptions[alloc.name].message)))
            else:
                borrowed = after.get(alloc.name, {})
                planned.append(PlannedRequest(**common, status=ALLOCATED, pool=alloc.pool,
                                              policy=policy.name if policy else None, borrowed=borrowed,
                                              reason=None, running=alloc.name,
                                              message=running_message(alloc.name, borrowed)))
            continue
        request = by_id[step.id]
        eligible, reasons = eligible_policies(problem, request)
        admitted = solution.admitted.get(step.id)
        if admitted is not None:
            policy = state.policies[admitted]
            borrowed = after.get(step.id, {})
            planned.append(PlannedRequest(**common, status=ALLOCATED, pool=policy.pool, policy=policy.name,
                                          borrowed=borrowed, reason=None, message=allocated_message(borrowed)))
        elif not eligible and not reasons:
            planned.append(PlannedRequest(**common, status=ALLOCATED, pool=None, policy=None, borrowed={},
                                          reason=UNMANAGED, message=unmanaged_message(request.requester)))
        elif not eligible:
            rule, message = rejection(step.step, reasons)
            planned.append(PlannedRequest(**common, status=REJECTED, pool=None, policy=None, borrowed={},
                                          reason=rule, message=message))
        else:
            planned.append(PlannedRequest(**common, status=QUEUED, pool=None, policy=None, borrowed={},
                                          reason=None, message=queued_message(state, request, eligible)))
    return Plan(
        inputs_digest=digest,
        requests=tuple(sorted(planned, key=lambda r: r.id)),
        preempted=tuple(preemptions[name] for name in sorted(preemptions)),
        pools=_pools(problem, state),
        diagnostics=tuple(sorted(diagnostics, key=lambda x: (x.file, x.line, x.column, x.rule, x.message,
                                                              x.end_line, x.end_column, x.severity))),
        solver=SolverInfo(solution.strategy, solution.status, tuple(solution.objective), float(solution.gap)),
    )
