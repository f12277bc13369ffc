"""`apply --plan`: the reviewed plan applied as it is (terraform's way), not solved again.

A saved plan records a digest of every input it was made from (``inputs``:
``<Kind>/<name>`` and ``state/<allocation>``). When one differs from the current
inputs or state, the plan is stale and refused, naming what changed; nothing is
solved to find that out. Otherwise its decisions are checked against the inputs
(each step once, through a policy that may admit it, preempting only running work,
within every pool's capacity and policy's limit where it admits something, and the
same fates, pools and shares `poolc plan` derives from those decisions), so a
hand-edited plan is refused, and the targets and the new state are rendered from it.

The state also needs which of the optimal strategy's new grants the plan counted
inside their reserved share (the in-share set): it orders the grants' start times
by it, so the next plan walks the reserved shares as this one did. A plan file
records the set (``solver.in_share``, written when it is not empty) and the size of
it is the plan's first objective value; `zenml` and `kueue` plans have none. Only a
file that does not say it (written by poolc 0.2.0, or edited so that the list and
the count disagree) is solved again with its strategy, and must come out the same.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ..diagnostics import report_order
from ..domain.allowed import refused_preemptions
from ..domain.eligibility import eligible_policies
from ..domain.plan import ALLOCATED, UNMANAGED, Plan
from ..planner.solution import Solution
from ..targets.context import TargetContext
from .planning import PlanResult, Prepared, decide, grant_positions, resolve_now, result_of, what_changes

STALE = "the plan was made from other inputs: {what}. Run `poolc plan --out` again (with --state {state})"
EDITED = ("the plan file does not match what this poolc plans for the same inputs "
          "(edited by hand, or made by another poolc version): run `poolc plan --out` again")


FORBIDDEN = ("the plan file preempts work the rules do not allow it to (docs/planning.md, hard rules): {why}. "
             "Nothing is applied; run `poolc plan --out` again")


def forbidden_preemptions(saved: Plan, prepared: Prepared) -> str | None:
    """Why the saved plan's preemptions are not all ones the rules allow (at most three
    named, then a count), checked without the solver; None when they are."""
    problem = prepared.problem
    requests = {r.id for r in problem.requests}
    admitted = {r.id: r.policy for r in saved.requests
                if r.id in requests and r.status == ALLOCATED and r.reason != UNMANAGED and r.policy is not None}
    policies = {q.name for q in problem.policies}
    admitted = {rid: policy for rid, policy in admitted.items() if policy in policies}
    why = refused_preemptions(problem, admitted, {p.id: p.for_ for p in saved.preempted})
    if not why:
        return None
    return FORBIDDEN.format(why="; ".join(why[:3]) + (f" and {len(why) - 3} more" if len(why) > 3 else ""))


def stale_inputs(saved: Plan, prepared: Prepared) -> str | None:
    """Why the saved plan was made from other inputs or another state, naming what
    changed; None when every per-input digest (and the inputs digest) is the same."""
    from ..planner.assemble import digest_of

    if saved.inputs_digest == digest_of(prepared.digests) and (saved.inputs is None
                                                                or dict(saved.inputs) == prepared.digests):
        return None
    return STALE.format(what=changed_inputs(saved.inputs or {}, prepared.digests), state=prepared.state_path)


def changed_inputs(before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """``Pipeline/training changed, Policy/prod added`` (at most five, then a count)."""
    words = [f"{key} changed" for key in sorted(before) if key in after and before[key] != after[key]]
    words += [f"{key} added" for key in sorted(after) if key not in before]
    words += [f"{key} removed" for key in sorted(before) if key not in after]
    if not words:
        return "the inputs digest differs (the plan file records no per-input digests)"
    shown = ", ".join(words[:5])
    return shown + (f" and {len(words) - 5} more" if len(words) > 5 else "")


def solution_of(saved: Plan, prepared: Prepared) -> tuple[Solution, Plan] | None:
    """The saved plan's decisions as a Solution, and the plan `poolc plan` assembles
    from them; None when they cannot be this configuration's (edited by hand)."""
    problem = prepared.problem
    requests = {r.id: r for r in problem.requests}
    admitted: dict[str, str] = {}
    for planned in saved.requests:
        if planned.id not in requests or planned.status != ALLOCATED or planned.reason == UNMANAGED:
            continue
        eligible, _ = eligible_policies(problem, requests[planned.id])
        if planned.policy not in {q.name for q in eligible}:
            return None
        admitted[planned.id] = planned.policy
    running = {a.name for a in problem.running}
    if any(p.id not in running for p in saved.preempted):
        return None
    solution = Solution(saved.solver.strategy, dict(sorted(admitted.items())),
                        {p.id: list(p.for_) for p in saved.preempted}, saved.solver.status,
                        list(saved.solver.objective), saved.solver.gap)
    fresh = decide(prepared, solution)
    if not _same_decisions(saved, fresh) or not _fits(fresh, solution, prepared):
        return None
    return solution, fresh


def _same_decisions(saved: Plan, fresh: Plan) -> bool:
    """Every step's fate, pool, policy, borrowed part and reason, the preemptions and
    the pools' and policies' use agree (the sentences are not compared: they may
    carry the cycle's waiting time)."""
    def fates(plan: Plan) -> list[tuple]:
        return [(r.id, r.requester, r.preemptible, dict(r.demand), r.status, r.pool, r.policy, dict(r.borrowed),
                 r.reason if r.status != "queued" else None) for r in plan.requests]

    return (fates(saved) == fates(fresh)
            and [(p.id, p.pool, p.for_) for p in saved.preempted] == [(p.id, p.pool, p.for_) for p in fresh.preempted]
            and saved.pools == fresh.pools and saved.policies == fresh.policies)


def _fits(plan: Plan, solution: Solution, prepared: Prepared) -> bool:
    """Where the plan admits a step, the pool's capacity and the policy's limit hold
    on every key the step needs (a pool already over on a key admits nothing needing it)."""
    demand = {r.id: r.demand for r in prepared.problem.requests}
    pools = {p.name: p for p in plan.pools}
    policies = {q.name: q for q in plan.policies}
    for rid, policy in solution.admitted.items():
        usage = policies.get(policy)
        if usage is None:
            return False
        pool = pools[usage.pool]
        for key, units in demand[rid].items():
            if units > 0 and (pool.used.get(key, 0) > pool.capacity.get(key, 0)
                              or usage.used.get(key, 0) > usage.limit.get(key, pool.capacity.get(key, 0))):
                return False
    return True


def new_grants(saved: Plan, prepared: Prepared) -> set[str]:
    """The steps the saved plan admits that do not run yet (the Problem's requests)."""
    requests = {r.id for r in prepared.problem.requests}
    return {r.id for r in saved.requests if r.id in requests and r.status == ALLOCATED and r.reason != UNMANAGED}


def in_share(saved: Plan, grants: set[str]) -> frozenset[str] | None:
    """Which of the plan's new ``grants`` it counted inside their reserved share, when
    the plan file tells (module doc); None when only solving again would."""
    if saved.solver.strategy != "optimal":
        return frozenset()
    tiers, objective = saved.solver.tiers, saved.solver.objective
    if not tiers or tiers[0].kind != "in-share" or not objective:
        return None
    if objective[0] == 0:
        return frozenset()
    recorded = frozenset(saved.solver.in_share)
    if len(recorded) == objective[0] and recorded <= grants:
        return recorded
    if objective[0] == len(grants):
        return frozenset(grants)
    return None


def apply_saved(saved: Plan, prepared: Prepared, solution: Solution, fresh: Plan, *, output_dir: str,
                now: str | None) -> PlanResult:
    """The saved plan as apply writes it: its targets, and the state it decides."""
    running = {r.id: r.running for r in fresh.requests}
    plan = dataclasses.replace(saved, requests=tuple(dataclasses.replace(r, running=running.get(r.id))
                                                     for r in saved.requests))
    submit = saved.runtime.submit if saved.runtime is not None else "gate"
    context = TargetContext.of(prepared.validation.config, plan, prepared.live, submit=submit)
    changes = what_changes(plan, prepared, output_dir=output_dir, now=resolve_now(now), context=context,
                           grants=grant_positions(prepared.problem, solution))
    # the diagnostics as they stand now (with their end positions, which a plan file does not keep)
    found = [*prepared.diagnostics]
    if saved.runtime is not None:
        from .runtime_check import runtime_diagnostics

        found += runtime_diagnostics(saved.runtime, prepared.live, prepared.config)
    final = dataclasses.replace(plan, diagnostics=tuple(sorted(found, key=report_order)) + changes.refused,
                                changes=changes.section)
    return result_of(prepared, solution, final, changes)
