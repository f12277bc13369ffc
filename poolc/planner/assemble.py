"""Assembling the Plan from a strategy's Solution: every step with its status and
the reason in numbers, the preemptions and whom they make room for, each pool's
capacity/used/free; and the digest that names the inputs by content (so
`apply --plan` can refuse a plan whose inputs changed)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping

from ..config import Config
from ..diagnostics import Diagnostic, report_order
from ..domain.borrowing import borrowed_parts
from ..domain.eligibility import eligible_policies, rejection
from ..domain.plan import (
    ALLOCATED,
    QUEUED,
    REJECTED,
    UNMANAGED,
    Plan,
    PlannedRequest,
    PolicyUsage,
    PoolUsage,
    Preemption,
    SolverInfo,
    Tier,
)
from ..domain.problem import Problem, Running
from ..domain.said import Said, read_said
from ..model import KINDS, Allocation
from ..requests import StepRequest
from ..vocabulary import RequestStatus
from .explain import (
    FinalState,
    allocated_message,
    preempted_message,
    preemption_keys,
    queued,
    requeued_message,
    running_message,
    unmanaged_message,
)
from .objective import objective_tiers
from .solution import Solution


def input_digests(config: Config, state_allocations: Iterable[Allocation] = ()) -> dict[str, str]:
    """``<Kind>/<name>`` (and ``state/<allocation>``) -> 16 hex digits of that input
    as canonical JSON: its model, defaults filled in, so ``priority: 0`` written or
    omitted is the same; file paths, comments, key order and YAML style do not
    enter it. A stale plan can so name the input that changed."""
    found = {}
    for kind in KINDS:
        for name, entry in config.by_kind(kind).items():
            found[f"{kind}/{name}"] = _digest(entry.obj.model_dump(mode="json", exclude_none=True))
    for allocation in state_allocations:
        found[f"state/{allocation.metadata.name}"] = _digest(allocation.model_dump(mode="json", exclude_none=True))
    return dict(sorted(found.items()))


def _digest(document: object) -> str:
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()[:16]


def inputs_digest(config: Config, state_allocations: Iterable[Allocation] = ()) -> str:
    """sha256 of every input's digest (``input_digests``)."""
    return digest_of(input_digests(config, state_allocations))


def digest_of(digests: Mapping[str, str]) -> str:
    """The one digest that names a set of per-input digests."""
    canonical = json.dumps(dict(digests), sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _pools(problem: Problem, state: FinalState) -> tuple[PoolUsage, ...]:
    usages = []
    for pool in sorted(problem.pools, key=lambda p: p.name):
        used = {k: state.used[pool.name].get(k, 0) for k in sorted(pool.capacity)}
        usages.append(PoolUsage(pool.name, dict(sorted(pool.capacity.items())), used,
                                {k: pool.capacity[k] - used[k] for k in used}))
    return tuple(usages)


def _policies(problem: Problem, state: FinalState,
              borrowed: Mapping[str, Mapping[str, int]]) -> tuple[PolicyUsage, ...]:
    """Per policy and metered key of its pool: reserved, limit, what its kept and
    admitted steps hold, and the part of that above the reserved share."""
    above: dict[str, dict[str, int]] = {q.name: {} for q in problem.policies}
    for member in state.members:
        if member.policy is not None:
            for key, units in borrowed.get(member.who, {}).items():
                above[member.policy.name][key] = above[member.policy.name].get(key, 0) + units
    usages = []
    for q in sorted(problem.policies, key=lambda q: q.name):
        keys = sorted(problem.pool(q.pool).capacity)
        usages.append(PolicyUsage(q.name, q.pool, q.priority, {k: q.rsv(k) for k in keys},
                                  {k: q.limit.get(k, problem.pool(q.pool).capacity[k]) for k in keys},
                                  {k: state.held[q.name].get(k, 0) for k in keys},
                                  {k: above[q.name].get(k, 0) for k in keys}))
    return tuple(usages)


def _tiers(problem: Problem, solution: Solution) -> tuple[Tier, ...]:
    """What the optimal strategy's objective values count; () for the others (and
    for a stand-in strategy whose objective is laid out otherwise)."""
    if solution.strategy != "optimal":
        return ()
    tiers = objective_tiers(problem)
    if len(tiers) != len(solution.objective):
        return ()
    if len(solution.bounds) != len(tiers):
        return tiers
    return tuple(Tier(t.kind, t.priority, bound) for t, bound in zip(tiers, solution.bounds, strict=True))


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
        # `for` names only the requests that needed a key the victim was preempted on
        _, needing = preemption_keys(state, victim, displaced, before.get(name, {}))
        preemptions[name] = Preemption(name, victim.pool, tuple(sorted(needing)),
                                       preempted_message(state, victim, displaced, before.get(name, {})),
                                       victim.workload, victim.subject)
    by_id = {r.id: r for r in problem.requests}
    planned = []
    for step in requests:
        def entry(status: RequestStatus, message: Said, *, pool: str | None = None, policy: str | None = None,
                  borrowed: Mapping[str, int] | None = None, reason: str | None = None,
                  running_as: str | None = None, step: StepRequest = step) -> PlannedRequest:
            return PlannedRequest(id=step.id, requester=step.requester, preemptible=step.preemptible,
                                  demand=dict(sorted(step.demand.items())), status=status, pool=pool,
                                  policy=policy, borrowed=dict(borrowed or {}), reason=reason, message=message,
                                  running=running_as)

        if step.id in rejected:
            rule, text = rejected[step.id]
            planned.append(entry(REJECTED, read_said(text), reason=rule))   # a diagnostic's sentence
            continue
        if step.id in running:
            alloc = running[step.id]
            rule_of = problem.policy_for(alloc.subject, alloc.pool)
            through = rule_of.name if rule_of else None
            if alloc.name in preemptions:
                preemption = preemptions[alloc.name].message
                planned.append(entry(QUEUED, requeued_message(alloc.name, preemption), policy=through,
                                     reason=preemption.text, running_as=alloc.name))
            else:
                borrowed = after.get(alloc.name, {})
                planned.append(entry(ALLOCATED, running_message(alloc.name, borrowed), pool=alloc.pool,
                                     policy=through, borrowed=borrowed, running_as=alloc.name))
            continue
        request = by_id[step.id]
        eligible, reasons = eligible_policies(problem, request)
        admitted = solution.admitted.get(step.id)
        if admitted is not None:
            chosen = state.policies[admitted]
            borrowed = after.get(step.id, {})
            planned.append(entry(ALLOCATED, allocated_message(borrowed), pool=chosen.pool, policy=chosen.name,
                                 borrowed=borrowed))
        elif not eligible and not reasons:
            planned.append(entry(ALLOCATED, unmanaged_message(request.requester), reason=UNMANAGED))
        elif not eligible:
            rule, message = rejection(step.step, reasons, request.gpu_type)
            planned.append(entry(REJECTED, message, reason=rule))
        else:
            # it waits in the queue of its first eligible policy (priority, then pool name);
            # ``reason`` is the binding rule, the message every rule that holds it back
            binding, sentence = queued(state, request, eligible)
            planned.append(entry(QUEUED, sentence, policy=eligible[0].name, reason=binding.text))
    return Plan(
        inputs_digest=digest,
        requests=tuple(sorted(planned, key=lambda r: r.id)),
        preempted=tuple(preemptions[name] for name in sorted(preemptions)),
        pools=_pools(problem, state),
        policies=_policies(problem, state, after),
        diagnostics=tuple(sorted(diagnostics, key=report_order)),
        solver=SolverInfo(solution.strategy, solution.status, tuple(solution.objective), float(solution.gap),
                          _tiers(problem, solution), tuple(sorted(solution.in_share))),
    )
