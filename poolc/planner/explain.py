"""Why each request got its status, in numbers (docs/planning.md#explanations).

Explanations are computed against the *final* state of a plan, i.e. what keeps
running plus what is admitted: that is the state a user can check by hand, and
the one in which a queued request is still waiting. Messages are plain
sentences, deterministic, and name the rule, the key and both numbers; each is
built from its parts (``domain.said``: amounts with their key, the words that
name a key, a step's own allocation), which the renderers word in the
platform's units. The plan file keeps the text.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from ..domain.borrowing import grant_order, split_reserved
from ..domain.eligibility import metered_demand
from ..domain.problem import EARLIEST, PolicyRule, Problem, Request, Running, start_time
from ..domain.said import (
    Said,
    amount_of,
    its_allocation,
    joined,
    key_named,
    number,
    of_key,
    pair,
    pairs,
    reserved_of,
    running_as,
    said,
)
from .solution import Solution


def _add(into: dict[str, int], amounts: Mapping[str, int], keys: Iterable[str]) -> None:
    for key in keys:
        if amounts.get(key, 0):
            into[key] = into.get(key, 0) + amounts[key]


class Member(NamedTuple):
    """One holder in the final state: a kept allocation or an admitted request."""

    who: str                      # the allocation's name or the request's id
    policy: PolicyRule | None     # None: its subject has no policy on the pool
    pool: str
    holds: Mapping[str, int]
    preemptible: bool
    order: tuple                  # its place in its policy's borrowing walk


@dataclass
class FinalState:
    """What runs once the plan is carried out, on each pool's metered keys:
    running allocations that are not preempted, plus the admitted requests."""

    problem: Problem
    solution: Solution
    kept: list[Running]
    used: dict[str, dict[str, int]] = field(default_factory=dict)            # pool -> key -> units
    held: dict[str, dict[str, int]] = field(default_factory=dict)            # policy -> key -> units
    held_fixed: dict[str, dict[str, int]] = field(default_factory=dict)      # policy -> non-preemptible units
    policies: dict[str, PolicyRule] = field(default_factory=dict)
    members: list[Member] = field(default_factory=list)                     # kept, then admitted by arrival
    _demand: dict[str, Mapping[str, int]] | None = field(default=None, repr=False)
    _borrowed: dict[str, dict[str, int]] | None = field(default=None, repr=False)
    _borrowers: dict[str, list[tuple[PolicyRule, Mapping[str, int]]]] | None = field(default=None, repr=False)
    _borrowed_units: dict[tuple[str, str], tuple[list[int], list[int]]] = field(default_factory=dict, repr=False)
    _queued: dict[tuple, tuple[list[Said], Said]] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, problem: Problem, solution: Solution) -> FinalState:
        state = cls(problem, solution, [a for a in problem.running if a.name not in solution.preempted])
        state.policies = {q.name: q for q in problem.policies}
        state.used = {p.name: {} for p in problem.pools}
        state.held = {q.name: {} for q in problem.policies}
        state.held_fixed = {q.name: {} for q in problem.policies}
        # the borrowing walk's order: non-preemptible first, then running before admitted
        # (running by started_at, then name; admitted in-share first, then by arrival rank)
        state.members = [Member(a.name, problem.policy_for(a.subject, a.pool), a.pool, a.holds, a.preemptible,
                                (a.preemptible, 0, start_time(a.started_at), a.name)) for a in state.kept]
        for request in problem.requests:
            name = solution.admitted.get(request.id)
            if name is not None:
                policy = state.policies[name]
                state.members.append(Member(request.id, policy, policy.pool, request.demand, request.preemptible,
                                            (request.preemptible, 1, EARLIEST,
                                             *grant_order(request.id in solution.in_share, request.rank,
                                                          request.id))))
        for member in state.members:
            state._take(member.pool, member.policy, member.holds, member.preemptible)
        return state

    def _take(self, pool_name: str, policy: PolicyRule | None, amounts: Mapping[str, int],
              preemptible: bool) -> None:
        keys = self.problem.pool(pool_name).capacity
        _add(self.used[pool_name], amounts, keys)
        if policy is not None:
            _add(self.held[policy.name], amounts, keys)
            if not preemptible:
                _add(self.held_fixed[policy.name], amounts, keys)

    def demands(self) -> dict[str, Mapping[str, int]]:
        """Request id -> demand, built once: every preemption's explanation looks
        up the requests it made room for (was a scan of all requests per victim)."""
        if self._demand is None:
            self._demand = {r.id: r.demand for r in self.problem.requests}
        return self._demand

    def short_keys(self, pool_name: str) -> set[str]:
        """Keys the pool is short on: what runs once the plan is carried out plus
        what its preemptions free exceeds the capacity (the victims had to go)."""
        freed: dict[str, int] = {}
        for alloc in self.problem.running:
            if alloc.pool == pool_name and alloc.name in self.solution.preempted:
                for k, units in alloc.holds.items():
                    freed[k] = freed.get(k, 0) + units
        capacity = self.problem.pool(pool_name).capacity
        return {k for k, cap in capacity.items() if self.used[pool_name].get(k, 0) + freed.get(k, 0) > cap}

    def free(self, pool_name: str, key: str) -> int:
        return self.problem.pool(pool_name).capacity[key] - self.used[pool_name].get(key, 0)

    def borrowers(self, pool_name: str) -> list[tuple[PolicyRule, Mapping[str, int]]]:
        """(policy, holdings) of every preemptible step in the pool that borrows in
        the final state, kept or admitted: the ones a preemption could remove.
        Indexed once for all pools (each queued request asks per key)."""
        if self._borrowers is None:
            borrowed = self.borrowed()
            found: dict[str, list[tuple[PolicyRule, Mapping[str, int]]]] = {p.name: [] for p in self.problem.pools}
            for member in self.members:
                if member.policy is not None and member.preemptible and any(borrowed.get(member.who, {}).values()):
                    found[member.pool].append((member.policy, member.holds))
            self._borrowers = found
        return self._borrowers.get(pool_name, [])

    def borrowed_units(self, pool_name: str, key: str) -> tuple[list[int], list[int]]:
        """(the borrowers' distinct priorities ascending, units of ``key`` they hold at
        priorities up to each, cumulative) in the pool: how much borrowers below a
        priority hold is then one lookup, not a walk over every borrower (a queued
        request asks per key and eligible pool; at 50,000 requests that walk took
        most of the time spent explaining)."""
        found = self._borrowed_units.get((pool_name, key))
        if found is None:
            by_priority: dict[int, int] = {}
            for owner, amounts in self.borrowers(pool_name):
                by_priority[owner.priority] = by_priority.get(owner.priority, 0) + amounts.get(key, 0)
            priorities = sorted(by_priority)
            totals, running = [], 0
            for priority in priorities:
                running += by_priority[priority]
                totals.append(running)
            found = self._borrowed_units[pool_name, key] = (priorities, totals)
        return found

    def borrowed(self) -> dict[str, dict[str, int]]:
        """Computed once (``_borrowed_walk``)."""
        if self._borrowed is None:
            self._borrowed = self._borrowed_walk()
        return self._borrowed

    def _borrowed_walk(self) -> dict[str, dict[str, int]]:
        """Per kept allocation name and admitted request id, the units above its
        policy's reserved share (docs/planning.md#reserved-share-and-borrowing, applied to the final state),
        walking each policy's members in their ``order``."""
        members: dict[str, list[tuple]] = {q: [] for q in self.policies}
        for member in self.members:
            if member.policy is not None:
                members[member.policy.name].append((member.order, member.who, member.holds))
        result: dict[str, dict[str, int]] = {}
        for name, group in members.items():
            policy = self.policies[name]
            ordered = ((who, amounts) for _, who, amounts in sorted(group, key=lambda m: m[0]))
            result.update(split_reserved(policy.reserved, self.problem.pool(policy.pool).capacity, ordered))
        return result


# --- allocated ---------------------------------------------------------------------

def allocated_message(borrowed: Mapping[str, int]) -> Said:
    return _allocated(tuple(sorted(borrowed.items())))


@lru_cache(maxsize=4096)
def _allocated(borrowed: tuple[tuple[str, int], ...]) -> Said:
    """Most admitted steps borrow one of a few amounts: each message is built once."""
    if not borrowed:
        return said("allocated within reserved share")
    return said("allocated, borrowing ", pairs(dict(borrowed)), " above the reserved share")


def running_message(allocation: str, borrowed: Mapping[str, int]) -> Said:
    """A step whose allocation already runs (recorded in the state or the files)."""
    return said(running_as(allocation), "; ", allocated_message(borrowed))


def unmanaged_message(requester: str) -> Said:
    return said(f"unmanaged: component {requester} has no policy on any pool, so the step runs outside "
                "every pool; add a Policy for it to manage it")


# --- queued ------------------------------------------------------------------------

@dataclass(frozen=True)
class Hold:
    """One rule that keeps a request out of a pool in the final state. ``binding``:
    no preemption the plan may make can lift it (a share or limit counts only what
    the policy itself holds; capacity only if what borrowers it outranks hold
    would not make room either)."""

    said: Said
    binding: bool


def _borrowers(state: FinalState, policy: PolicyRule, request: Request, key: str) -> tuple[int, int, bool]:
    """(units of ``key`` the request may take by preemption, units it may not,
    whether it fits its policy's free reserved share) in
    ``policy``'s pool, held by preemptible steps that borrow: it may displace those
    below its policy's priority, or any of them when it fits inside its policy's
    free reserved share (reserved shares are honoured first)."""
    pool = policy.pool
    in_share = all(state.held[policy.name].get(k, 0) + units <= policy.rsv(k)
                   for k, units in metered_demand(state.problem.pool(pool), request.demand).items())
    priorities, totals = state.borrowed_units(pool, key)
    held = totals[-1] if totals else 0
    below = bisect_left(priorities, policy.priority)            # borrowers below the policy's priority
    may = held if in_share else (totals[below - 1] if below else 0)
    return may, held - may, in_share


def _capacity_hold(state: FinalState, policy: PolicyRule, request: Request, key: str, units: int,
                   free: int) -> Hold:
    pool = policy.pool
    notes = [said("over capacity by ", number(-free, key))] if free < 0 else []
    may, may_not, in_share = _borrowers(state, policy, request, key)
    if may:
        whom = "borrowers (it fits its reserved share)" if in_share else f"borrowers below priority {policy.priority}"
        notes.append(said(f"{whom} hold ", number(may, key), " it may preempt"))
    if may_not:
        notes.append(said(f"borrowers at priority {policy.priority} or above hold ", number(may_not, key),
                          " it may not"))
    text = said(key_named(key), ": needs ", number(units, key), ", free ", number(max(free, 0), key),
                f" in pool {pool}")
    if notes:
        text = said(text, " (", joined("; ", notes), ")")
    return Hold(text, max(free, 0) + may < units)


def holding_rules(state: FinalState, policy: PolicyRule, request: Request) -> list[Hold]:
    """Every rule that keeps ``request`` out of ``policy``'s pool in the final
    state, the binding ones first (the non-preemptible share, the limit, capacity
    nobody it outranks could free), then capacity that preempting lower-priority
    borrowers would free; [] when it would fit now."""
    pool = state.problem.pool(policy.pool)
    need = sorted(metered_demand(pool, request.demand).items())
    found: list[Hold] = []
    if not request.preemptible:
        for key, units in need:
            held, reserved = state.held_fixed[policy.name].get(key, 0), policy.rsv(key)
            if held + units > reserved:
                found.append(Hold(said(f"non-preemptible share: policy {policy.name} holds ", amount_of(held, key),
                                       " of ", reserved_of(key), pair(key, reserved), ", needs ",
                                       amount_of(units, key)), True))
    for key, units in need:
        held, limit = state.held[policy.name].get(key, 0), policy.limit.get(key, pool.capacity.get(key, 0))
        if held + units > limit:
            found.append(Hold(said(f"limit: policy {policy.name} holds ", amount_of(held, key), " of ",
                                   amount_of(limit, key), of_key(key), ", needs ", number(units, key)), True))
    for key, units in need:
        free = state.free(pool.name, key)
        if units > free:
            found.append(_capacity_hold(state, policy, request, key, units, free))
    return sorted(found, key=lambda hold: not hold.binding)


def binding_rule(state: FinalState, policy: PolicyRule, request: Request) -> Said | None:
    """The first of ``holding_rules``; None when it would fit now."""
    rules = holding_rules(state, policy, request)
    return rules[0].said if rules else None


def queued_reasons(state: FinalState, request: Request, eligible: list[PolicyRule]) -> list[Said]:
    """Why a request waits, binding rule first: every rule that holds it back in
    the pool of the policy it waits in (the first eligible: priority, then pool
    name), then the binding rule of each other eligible pool; or, when it would
    fit in some eligible pool now, why it was not admitted anyway.

    The answer depends only on the request's demand, its preemptible flag and the
    pools it may use (the final state is fixed), so identical requests share it:
    at 10,000 requests, 7,624 queued ones asked 23,568 times otherwise."""
    return list(_queued(state, request, eligible)[0])


def _queued(state: FinalState, request: Request, eligible: list[PolicyRule]) -> tuple[list[Said], Said]:
    """(``queued_reasons``, ``queued_message``), answered once per shape of request."""
    key = (tuple(sorted(request.demand.items())), request.preemptible, tuple(q.name for q in eligible))
    found = state._queued.get(key)
    if found is None:
        reasons = _queued_reasons(state, request, eligible)
        found = state._queued[key] = (reasons, reasons_sentence(reasons))
    return found


def _queued_reasons(state: FinalState, request: Request, eligible: list[PolicyRule]) -> list[Said]:
    held = [holding_rules(state, q, request) for q in eligible]
    if any(not rules for rules in held):
        pool = eligible[next(i for i, rules in enumerate(held) if not rules)].pool
        if state.solution.strategy == "zenml":
            return [said("waits behind earlier requests (head-of-line)")]
        return [said(f"would fit in pool {pool} now, but the solver stopped before admitting it "
                     f"(status {state.solution.status})")]
    reasons = [hold.said for hold in held[0]]
    reasons += [said(f"in pool {q.pool}: ", rules[0].said) for q, rules in zip(eligible[1:], held[1:], strict=True)]
    return reasons


def queued_message(state: FinalState, request: Request, eligible: list[PolicyRule]) -> Said:
    """``queued_reasons`` as one sentence."""
    return _queued(state, request, eligible)[1]


def queued(state: FinalState, request: Request, eligible: list[PolicyRule]) -> tuple[Said, Said]:
    """(the binding rule, every rule as one sentence) of a queued request."""
    reasons, sentence = _queued(state, request, eligible)
    return reasons[0], sentence


def reasons_sentence(reasons: list[Said]) -> Said:
    """The binding rule, then ``also`` each other one."""
    first, *rest = reasons
    return joined("; ", [first, *(said("also ", reason) for reason in rest)])


# --- preempted ---------------------------------------------------------------------

def preemption_keys(state: FinalState, victim: Running, displaced_for: list[str],
                    borrowed_before: Mapping[str, int]) -> tuple[list[str], list[str]]:
    """(the keys the victim was preempted on, the requests among ``displaced_for``
    that need one of them): the borrowed keys on which the pool is short (what it
    admits does not fit beside everything that ran before the plan's preemptions,
    the rule that allows a victim at all), else those the displacing requests ask for."""
    pool = state.problem.pool(victim.pool)
    short_keys = state.short_keys(pool.name)
    short = [k for k in sorted(borrowed_before) if borrowed_before[k] > 0 and k in short_keys]
    demand = state.demands()
    if not short:
        demands = [demand[rid] for rid in dict.fromkeys(displaced_for) if rid in demand]
        short = [k for k in sorted(borrowed_before) if any(dm.get(k, 0) > 0 for dm in demands)]
    keys = short or sorted(borrowed_before)
    needing = [rid for rid in displaced_for if any(demand.get(rid, {}).get(k, 0) > 0 for k in keys)]
    return keys, needing or list(displaced_for)


def preempted_message(state: FinalState, victim: Running, displaced_for: list[str],
                      borrowed_before: Mapping[str, int]) -> Said:
    """Who displaced the victim and on which keys (``preemption_keys``)."""
    keys, needing = preemption_keys(state, victim, displaced_for, borrowed_before)
    who = _by_priority(state, needing)
    head = f"preempted for {who}" if who else "preempted"
    policy = state.problem.policy_for(victim.subject, victim.pool)
    above = f"policy {policy.name}'s" if policy else "its policy's"
    if not keys:
        return said(f"{head}; it borrowed nothing above {above} reserved share")
    taken = {k: borrowed_before[k] for k in keys}
    return said(f"{head} on ", joined(", ", map(key_named, keys)), "; it borrowed ", pairs(taken),
                f" above {above} reserved share")


def _by_priority(state: FinalState, ids: list[str]) -> str:
    """``a, b (priority 1000) and c (priority 500)``: ids grouped by the priority
    they were admitted at, highest first (ids without one last, bare)."""
    groups: dict[int | None, list[str]] = {}
    for rid in sorted(ids):
        policy = state.policies.get(state.solution.admitted.get(rid, ""))
        groups.setdefault(policy.priority if policy else None, []).append(rid)
    parts = [f"{', '.join(groups[p])} (priority {p})" for p in sorted((p for p in groups if p is not None),
                                                                      reverse=True)]
    parts += groups.get(None, [])
    return " and ".join(parts)


def requeued_message(allocation: str, preemption: Said) -> Said:
    """A step whose running allocation this plan preempts."""
    return said(its_allocation(allocation), " is ", preemption, "; the step waits to be admitted again")
