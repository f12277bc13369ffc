"""The hard rules in the model: H1 capacity, H2 limit, H3 the non-preemptible
share, the in-share set Z (docs/planning.md#tiers), and H5 through `short_keys`.

Each reads "admits nothing that needs a key whose kept holdings are over its
bound, unless the plan preempts enough to bring it back under":

    admitted_k <= max(0, bound_k - kept_k)

Where a key can be over, the disjunction gets its convex hull as a redundant
row (`cap_rule`): exact, and without it the LP relaxation ignores the "over"
case and the proofs at scale get long.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...domain.problem import Pool, Problem
from .. import cpsat as cp_model  # the CP-SAT API, without numpy and pandas (cpsat.py)
from .built import SAFE, Built, Terms, linear, most, recording
from .classes import RequestClass, known_running, metered_holds
from .short_keys import short_keys


def cap_rule(model: cp_model.CpModel, built: Built, used: Terms, kept_const: int, kept_terms: Terms,
             kept_min: int, bound: int, name: str) -> None:
    """used <= max(0, bound - kept), kept = kept_const - sum(kept_terms): a key whose
    kept holdings stay above the bound admits nothing that needs it."""
    if not used:
        return
    used_expr = linear(used)
    if kept_min >= bound:           # no room even after every possible preemption
        for var, _ in used:
            model.add(var == 0)
        return
    freed = linear(kept_terms)
    if kept_const <= bound:         # never over: the plain linear rule
        model.add(used_expr - freed <= bound - kept_const)
        return
    ok = model.new_bool_var(f"fits_{name}")
    built.all_vars.append(ok)
    model.add(used_expr - freed <= bound - kept_const).only_enforce_if(ok)
    model.add(used_expr == 0).only_enforce_if(~ok)
    # Redundant, for the LP: the convex hull of the two branches. Room for admissions
    # grows in proportion to what preemption frees, reaching bound - kept_min when
    # everything freeable is freed. Without it the relaxation ignores the "over" case.
    span, room = kept_const - kept_min, bound - kept_min
    g = math.gcd(span, room)
    span, room = span // g, room // g
    used_max = most(used)
    if used_max * span < SAFE and room * (kept_const - kept_min) < SAFE:
        model.add(used_expr * span <= freed * room)


def reach(cls: RequestClass, pools: dict[str, Pool]) -> list[int]:
    """Per eligible policy, the most members of the class it could ever admit: what
    fits the capacity and the limit (and, non-preemptible, the reserved share) of
    an empty pool. Exact upper bounds, so they remove no solution."""
    out = []
    for q, d in zip(cls.policies, cls.demands, strict=True):
        cap = pools[q.pool].capacity
        most_ = len(cls.members)
        for k, need in d.items():
            room = min(cap.get(k, 0), q.limit.get(k, cap.get(k, 0)))
            if not cls.preemptible:
                room = min(room, q.rsv(k))
            most_ = min(most_, room // need)
        out.append(most_)
    return out


@dataclass
class Kept:
    """What running allocations hold per (pool, key), per (policy, key), and the
    non-preemptible part per (policy, key), before any preemption."""

    pool: dict[tuple[str, str], int] = field(default_factory=dict)
    policy: dict[tuple[str, str], int] = field(default_factory=dict)
    fixed: dict[tuple[str, str], int] = field(default_factory=dict)


def kept(problem: Problem, pools: set[str]) -> Kept:
    out = Kept()
    for alloc in known_running(problem):
        if alloc.pool not in pools:
            continue
        policy = problem.policy_for(alloc.subject, alloc.pool)
        for k, h in metered_holds(problem, alloc).items():
            out.pool[alloc.pool, k] = out.pool.get((alloc.pool, k), 0) + h
            if policy is not None:
                out.policy[policy.name, k] = out.policy.get((policy.name, k), 0) + h
                if not alloc.preemptible:
                    out.fixed[policy.name, k] = out.fixed.get((policy.name, k), 0) + h
    return out


def hard_rules(problem: Problem, b: Built, pools: list[str]) -> None:
    """H1 capacity, H2 limit, H3 non-preemptible share, and the in-share set Z;
    H5 (`short_keys`) after the capacity rows, whose use it reads."""
    held = kept(problem, set(pools))

    by_pool: dict[str, list[int]] = {}
    for gi, vc in enumerate(b.victims):          # in class order: the rows come out the same
        by_pool.setdefault(vc.policy.pool, []).append(gi)

    def freed(classes: list[int], k: str) -> list[tuple[int, int]]:
        """(victim class, units of k each member frees) for those of ``classes`` holding k."""
        return [(gi, b.victims[gi].holds[k]) for gi in classes if b.victims[gi].holds.get(k, 0) > 0]

    def rule(kind: str, used: Terms, const: int, victims: list[tuple[int, int]], bound: int, name: str) -> None:
        with recording(b, kind):
            cap_rule(b.model, b, used, const, [(b.var.preempted[g], h) for g, h in victims],
                     const - sum(len(b.victims[g].members) * h for g, h in victims), bound, name)

    at_pool: dict[str, list[tuple[int, int]]] = {}          # (class, policy) in class order
    for ci, pi in b.var.admitted:
        at_pool.setdefault(b.classes[ci].policies[pi].pool, []).append((ci, pi))

    use: dict[tuple[str, str], tuple[Terms, int, int]] = {}   # what H5's flags read, per (pool, key)
    for pool in (problem.pool(name) for name in pools):
        for k in sorted(pool.capacity):
            used = [(b.var.admitted[ci, pi], b.classes[ci].demands[pi][k]) for ci, pi in at_pool.get(pool.name, [])
                    if b.classes[ci].demands[pi].get(k, 0) > 0]
            rule("capacity", used, held.pool.get((pool.name, k), 0),
                 freed(by_pool.get(pool.name, []), k), pool.capacity[k],
                 f"cap_{pool.name}_{k}")
            use[pool.name, k] = (used, held.pool.get((pool.name, k), 0), pool.capacity[k])
    with recording(b, "short keys"):
        b.short = short_keys(b, by_pool, use)

    inside = set(pools)
    for q in sorted(problem.policies, key=lambda q: q.name):
        found = problem.find_pool(q.pool)
        if found is None or q.pool not in inside:
            continue
        for k in sorted(found.capacity):
            mine = [(ci, pi) for ci, pi in b.through.get(q.name, []) if b.classes[ci].demands[pi].get(k, 0) > 0]
            terms = freed(b.victims_of.get(q.name, []), k)
            const = held.policy.get((q.name, k), 0)
            rule("limit", [(b.var.admitted[ci, pi], b.classes[ci].demands[pi][k]) for ci, pi in mine], const, terms,
                 q.limit.get(k, found.capacity[k]), f"lim_{q.name}_{k}")
            fixed = [(b.var.admitted[ci, pi], b.classes[ci].demands[pi][k]) for ci, pi in mine
                     if not b.classes[ci].preemptible]
            rule("non-preemptible share", fixed, held.fixed.get((q.name, k), 0), [], q.rsv(k), f"np_{q.name}_{k}")
            # a policy's own allocations stay counted against its reserve: preempting them
            # only to call another of its requests in-share would swap one step for another
            # (and Kueue never preempts within a policy at one priority)
            rule("in-share reserve", [(b.var.in_share[ci, pi], b.classes[ci].demands[pi][k]) for ci, pi in mine
                                      if (ci, pi) in b.var.in_share],
                 const, [], q.rsv(k), f"z_{q.name}_{k}")
