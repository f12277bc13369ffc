"""Whether each preemption of a plan is one the rules allow (docs/planning.md, "optimal", hard rules),
checked without the solver: `apply --plan` refuses a saved plan that preempts anything
else, however consistent the rest of the file is (issue #42).

A preemption is allowed when the victim is a running, preemptible allocation under a
policy on its pool, holding a part above that policy's reserved share (borrowing), made
for steps the plan admits in that pool, on a key that is short there (what the plan
admits in the pool needs it and does not fit beside everything that ran before the
plan), needed by one of those steps; and that step's policy has a higher priority than
the victim's, or reclaims its own reserved share on that key (its kept allocations
hold less than it reserves: the in-share tier, and the reference reconciler's reclaim
budget). The same rules tests/bruteforce.py states independently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .borrowing import borrowed_parts
from .problem import PolicyRule, Problem


def refused_preemptions(problem: Problem, admitted: Mapping[str, str],
                        preempted: Mapping[str, Sequence[str]]) -> list[str]:
    """Why each preemption the rules do not allow is refused, one sentence each, by
    victim name; ``admitted``: request id -> policy name, ``preempted``: victim ->
    the request ids it makes room for."""
    running = {a.name: a for a in problem.running}
    requests = {r.id: r for r in problem.requests}
    policies = {q.name: q for q in problem.policies}
    parts = borrowed_parts(problem)
    out = []
    for name in sorted(preempted):
        victim = running.get(name)
        if victim is None:
            out.append(f"{name} is no running allocation")
            continue
        if not victim.preemptible:
            out.append(f"{name} is not preemptible")
            continue
        rule = problem.policy_for(victim.subject, victim.pool)
        pool = problem.find_pool(victim.pool)
        if rule is None or pool is None:
            out.append(f"{name} runs under no policy on pool {victim.pool} (such work is never preempted)")
            continue
        borrowing = {k for k, units in parts.get(name, {}).items() if units > 0}
        if not borrowing:
            out.append(f"{name} holds nothing above its policy's reserved share (it borrows nothing)")
            continue
        steps = list(preempted[name])
        if not steps:
            out.append(f"{name} is preempted for no step")
            continue
        elsewhere = [s for s in steps if s not in requests or s not in admitted
                     or policies[admitted[s]].pool != victim.pool]
        if elsewhere:
            out.append(f"{name} is preempted for {', '.join(elsewhere)}, which the plan does not admit "
                       f"on pool {victim.pool}")
            continue
        in_pool = [rid for rid, policy in admitted.items() if rid in requests and policies[policy].pool == pool.name]
        before = {k: sum(a.holds.get(k, 0) for a in problem.running if a.pool == pool.name) for k in borrowing}
        short = {k for k in borrowing if k in pool.capacity
                 and (used := sum(requests[rid].demand.get(k, 0) for rid in in_pool)) > 0
                 and used + before[k] > pool.capacity[k]}
        needing = [s for s in steps if any(requests[s].demand.get(k, 0) > 0 for k in short)]
        if not needing:
            out.append(f"{name} borrows on no key that is short on pool {pool.name} for "
                       f"{', '.join(steps)}")
            continue
        if not any(_outranks(problem, policies[admitted[s]], rule.priority, requests[s].demand, short, preempted)
                   for s in needing):
            out.append(f"{name} (priority {rule.priority}) is not preempted for a step of higher priority "
                       f"nor for one reclaiming its own reserved share")
    return out


def _outranks(problem: Problem, policy: PolicyRule, victim_priority: int, demand: Mapping[str, int], short: set[str],
              preempted: Mapping[str, Sequence[str]]) -> bool:
    """The step's policy outranks the victim, or reclaims its reserve on a short key it needs."""
    if policy.priority > victim_priority:
        return True
    kept = [a for a in problem.running if a.subject == policy.subject and a.pool == policy.pool
            and a.name not in preempted]
    return any(demand.get(k, 0) > 0 and sum(a.holds.get(k, 0) for a in kept) < policy.reserved.get(k, 0)
               for k in short)
