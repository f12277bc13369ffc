"""Planning strategy `zenml`: ZenML Pro's reference reconciler, simulated
(docs/planning.md#zenml-the-reference-reconciler-simulated).

Why simulate: teams want to know what the real server would do with the same
requests arriving one by one, to compare it with the `optimal` plan. The result is
a heuristic, not an optimum, so the Solution says so honestly: status
"HEURISTIC", objective [] (no tiers are scored) and gap 0.0 (no bound is claimed).

Choices made here where the reconciler's description leaves room:
- Requests arrive by (rank, id); rejected and unmanaged ones are never admitted.
- A grant is an allocation started after every running one (later grants later).
- A grant that a later arrival preempts is withdrawn from `admitted` and not queued
  again (ZenML re-queues only through step retries, which are not modelled). It is
  not listed in `preempted`, which names running allocations only.

Speed: per policy, queued entries are kept in arrival order with a scan pointer
per test (limit room, reserved fit). A policy's room only shrinks when it is
granted something, so entries before a pointer stay unfit and are never looked at
again; a pointer restarts only when one of the policy's allocations is preempted.
Borrowed parts and the preemption candidate list are cached and patched on grants, and
a failed preemption attempt is remembered until the pool changes.
"""

from __future__ import annotations

import bisect

from poolc.planner.solution import Solution

from ..domain.borrowing import split_reserved
from ..domain.eligibility import eligible_policies, metered_demand
from ..domain.problem import PolicyRule, Pool, Problem, Request, start_time


class _Ticket:
    """One request, shared by its queue entries in every eligible pool."""

    __slots__ = ("request", "done")

    def __init__(self, request: Request) -> None:
        self.request = request
        self.done = False          # granted somewhere (or withdrawn): out of every queue


class _Entry:
    """A request queued in one pool, with its demand on that pool's metered keys."""

    __slots__ = ("ticket", "items", "dead")

    def __init__(self, ticket: _Ticket, items: tuple[tuple[str, int], ...]) -> None:
        self.ticket = ticket
        self.items = items         # sorted (key, need), need > 0
        self.dead = False          # non-preemptible and over the reserved share for good

    def live(self) -> bool:
        return not (self.dead or self.ticket.done)


class _Alloc:
    """A running allocation or a grant of the simulation."""

    __slots__ = ("name", "policy", "preemptible", "holds", "keys", "time", "is_running")

    def __init__(self, name: str, policy: _Policy | None, preemptible: bool,
                 holds: dict[str, int], time: int, is_running: bool) -> None:
        self.name = name
        self.policy = policy
        self.preemptible = preemptible
        self.holds = holds         # metered keys of the pool only, values > 0
        self.keys = frozenset(holds)
        self.time = time           # start order; equal for equal started_at
        self.is_running = is_running


class _Policy:
    """Counters and queue of one policy q = (subject, pool)."""

    def __init__(self, rule: PolicyRule, pool: Pool) -> None:
        self.rule = rule
        self.priority = rule.priority
        self.lim = {k: rule.limit.get(k, cap) for k, cap in pool.capacity.items()}
        self.rsv = {k: rule.rsv(k) for k in pool.capacity}
        self.held = dict.fromkeys(pool.capacity, 0)
        self.npheld = dict.fromkeys(pool.capacity, 0)
        self.np_allocs: list[_Alloc] = []   # borrowing order: non-preemptible first,
        self.p_allocs: list[_Alloc] = []    # each by start time, then name
        self._borrowed: dict[_Alloc, dict[str, int]] | None = None
        self.queue: list[_Entry] = []
        self.pos_fit = 0                    # live entries before it lack limit room
        self.pos_rf = 0                     # live entries before it are not reserved-fit

    def add(self, alloc: _Alloc) -> None:
        """Take a new allocation; it is the most recently started one. A preemptible
        one comes last in borrowing order, so only its own borrowed part is new."""
        if alloc.preemptible and self._borrowed is not None:
            self._borrowed[alloc] = {k: v - min(v, max(0, self.rsv[k] - self.held[k]))
                                     for k, v in alloc.holds.items() if v > self.rsv[k] - self.held[k]}
        else:
            self._borrowed = None
        for k, v in alloc.holds.items():
            self.held[k] += v
            if not alloc.preemptible:
                self.npheld[k] += v
        (self.p_allocs if alloc.preemptible else self.np_allocs).append(alloc)

    def remove(self, alloc: _Alloc) -> None:
        """Release a (preemptible) allocation: room grows, so scans restart."""
        for k, v in alloc.holds.items():
            self.held[k] -= v
        self.p_allocs.remove(alloc)
        self._borrowed = None
        self.queue = [e for e in self.queue if e.live()]
        self.pos_fit = self.pos_rf = 0

    def borrowed(self) -> dict[_Alloc, dict[str, int]]:
        """Borrowed parts (docs/planning.md#reserved-share-and-borrowing) over the
        current allocations (running and granted)."""
        if self._borrowed is None:
            result = split_reserved(self.rsv, self.rsv, ((a, a.holds) for a in self.np_allocs + self.p_allocs))
            self._borrowed = result
        return self._borrowed

    def scan(self, start: int, reserved_fit: bool) -> int:
        """Index of the first live entry from `start` with limit room (and, if asked,
        reserved fit); len(queue) if none. Marks non-preemptible entries that would
        exceed the reserved share dead: non-preemptible holdings never shrink, so the
        skip rule of an allocation pass would skip them on every later pass too."""
        queue, held, lim, rsv, npheld = self.queue, self.held, self.lim, self.rsv, self.npheld
        index = start
        while index < len(queue):
            entry = queue[index]
            if entry.live():
                items = entry.items
                if not entry.ticket.request.preemptible and any(npheld[k] + v > rsv[k] for k, v in items):
                    entry.dead = True
                elif all(held[k] + v <= lim[k] for k, v in items) and (
                        not reserved_fit or all(v <= rsv[k] - held[k] for k, v in items)):
                    return index
            index += 1
        return index


class _PoolState:
    """Usage of one pool, its policies, and the caches of preemption attempts."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.cap = dict(pool.capacity)
        self.used = dict.fromkeys(pool.capacity, 0)
        self.policies: list[_Policy] = []
        self.version = 0
        self._cands: list[tuple] | None = None
        self._cand_priorities: list[int] = []
        self._failed: set[tuple] = set()
        self._failed_version = -1
        self._preemptible_by_priority: dict[int, dict[str, int]] = {}

    def take(self, alloc: _Alloc) -> None:
        for k, v in alloc.holds.items():
            self.used[k] += v
        policy = alloc.policy
        if policy is not None:
            policy.add(alloc)
            if not alloc.preemptible:
                self._cands = None             # it comes first in borrowing order: parts shift
            else:
                self._count(alloc, 1)
                borrowed = policy.borrowed()[alloc]
                if borrowed and self._cands is not None:
                    # the most recently started: first of its priority
                    at = bisect.bisect_left(self._cand_priorities, policy.priority)
                    self._cands.insert(at, (alloc, policy.priority, borrowed))
                    self._cand_priorities.insert(at, policy.priority)
        self.version += 1

    def release(self, alloc: _Alloc) -> None:
        for k, v in alloc.holds.items():
            self.used[k] -= v
        assert alloc.policy is not None, "only allocations under a policy are preemptible"
        alloc.policy.remove(alloc)
        self._count(alloc, -1)
        self._cands = None
        self.version += 1

    def _count(self, alloc: _Alloc, sign: int) -> None:
        assert alloc.policy is not None, "only allocations under a policy are counted"
        sums = self._preemptible_by_priority.setdefault(alloc.policy.priority, dict.fromkeys(self.cap, 0))
        for k, v in alloc.holds.items():
            sums[k] += sign * v

    def preemptible_below(self, priority: int) -> dict[str, int]:
        """What all preemptible allocations of priority < `priority` hold: an upper
        bound on what a head of that priority can free outside its reserved share."""
        total = dict.fromkeys(self.cap, 0)
        for prio, sums in self._preemptible_by_priority.items():
            if prio < priority:
                for k, v in sums.items():
                    total[k] += v
        return total

    def candidates(self) -> list[tuple[_Alloc, int, dict[str, int]]]:
        """(allocation, priority, borrowed part) of the preemptible borrowing
        allocations, by policy priority asc, most recently started first, then name."""
        if self._cands is None:
            cands: list[tuple[_Alloc, int, dict[str, int]]] = []
            for policy in self.policies:
                borrowed = policy.borrowed()
                cands.extend((a, policy.priority, borrowed[a]) for a in policy.p_allocs if borrowed[a])
            cands.sort(key=lambda c: (c[1], -c[0].time, c[0].name))
            self._cands = cands
            self._cand_priorities = [c[1] for c in cands]
        return self._cands

    def failed_before(self, memo: tuple) -> bool:
        return self._failed_version == self.version and memo in self._failed

    def remember_failure(self, memo: tuple) -> None:
        if self._failed_version != self.version:
            self._failed, self._failed_version = set(), self.version
        self._failed.add(memo)


class _Simulation:
    """The reconciler's state while requests arrive, and the pass it runs."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.pools = {p.name: _PoolState(p) for p in sorted(problem.pools, key=lambda p: p.name)}
        self.policies: dict[tuple[str, str], _Policy] = {}
        # Per pool, policies by priority (desc): head() relies on it.
        for rule in sorted(problem.policies, key=lambda q: (q.pool, -q.priority, q.name)):
            state = self.pools.get(rule.pool)
            if state is not None and (rule.subject, rule.pool) not in self.policies:
                policy = _Policy(rule, state.pool)
                self.policies[(rule.subject, rule.pool)] = policy
                state.policies.append(policy)
        self.admitted: dict[str, str] = {}
        self.preempted: dict[str, list[str]] = {}
        self._eligible: dict[tuple, list[PolicyRule]] = {}
        self._load_running()

    def _load_running(self) -> None:
        running = [a for a in self.problem.running if a.pool in self.pools]
        stamps = sorted({start_time(a.started_at) for a in running})
        time_of = {stamp: i for i, stamp in enumerate(stamps)}
        self.next_time = len(stamps)
        for r in sorted(running, key=lambda a: (start_time(a.started_at), a.name)):
            state = self.pools[r.pool]
            holds = {k: v for k, v in r.holds.items() if k in state.cap and v > 0}
            policy = self.policies.get((r.subject, r.pool))
            state.take(_Alloc(r.name, policy, r.preemptible, holds, time_of[start_time(r.started_at)], True))

    def run(self) -> Solution:
        for request in sorted(self.problem.requests, key=lambda r: (r.rank, r.id)):
            self.arrive(request)
        preempted = {name: sorted(ids) for name, ids in sorted(self.preempted.items())}
        return Solution(strategy="zenml", admitted=dict(sorted(self.admitted.items())),
                        preempted=preempted, status="HEURISTIC", objective=[], gap=0.0)

    def arrive(self, request: Request) -> None:
        rules = self.eligible(request)
        if not rules:
            return                                            # rejected or unmanaged
        ticket = _Ticket(request)
        for rule in rules:
            pool = self.pools[rule.pool].pool
            items = tuple(sorted(metered_demand(pool, request.demand).items()))
            self.policies[(rule.subject, rule.pool)].queue.append(_Entry(ticket, items))
        for rule in rules:
            self.allocation_pass(self.pools[rule.pool])
            if ticket.done:
                return

    def eligible(self, request: Request) -> list[PolicyRule]:
        """Eligibility, in preference order (the step's pools, then priority (desc), then pool
        name); memoized because steps
        of one pipeline template repeat the same requester and demand."""
        memo_key = (request.requester, request.preemptible, tuple(sorted(request.demand.items())), request.placement)
        rules = self._eligible.get(memo_key)
        if rules is None:
            found, _ = eligible_policies(self.problem, request)
            rules = self._eligible[memo_key] = [q for q in found if (q.subject, q.pool) in self.policies]
        return rules

    def head(self, state: _PoolState) -> tuple[_Policy, _Entry] | None:
        """The candidate with the smallest (not reserved-fit, -priority, arrival rank).
        The pool's policies are in priority order, so the walk stops below the best."""
        for reserved_fit in (True, False):
            best = None
            for policy in state.policies:
                if best is not None and policy.priority < best[1].priority:
                    break
                queue = policy.queue
                if reserved_fit:
                    if policy.pos_rf >= len(queue):
                        continue
                    policy.pos_rf = index = policy.scan(policy.pos_rf, True)
                else:
                    if policy.pos_fit >= len(queue):
                        continue
                    policy.pos_fit = index = policy.scan(policy.pos_fit, False)
                if index < len(queue):
                    request = queue[index].ticket.request
                    key = (request.rank, request.id)
                    if best is None or key < best[0]:
                        best = (key, policy, queue[index])
            if best is not None:
                return best[1], best[2]
        return None

    def allocation_pass(self, state: _PoolState) -> None:
        while True:
            found = self.head(state)
            if found is None:
                return
            policy, entry = found
            if all(v <= state.cap[k] - state.used[k] for k, v in entry.items):
                self.grant(state, policy, entry)
            elif not self.preempt_for(state, policy, entry):
                return                                        # head-of-line blocking

    def grant(self, state: _PoolState, policy: _Policy, entry: _Entry) -> None:
        request = entry.ticket.request
        entry.ticket.done = True
        alloc = _Alloc(request.id, policy, request.preemptible, dict(entry.items), self.next_time, False)
        self.next_time += 1
        state.take(alloc)
        self.admitted[request.id] = policy.rule.name

    def preempt_for(self, state: _PoolState, policy: _Policy, entry: _Entry) -> bool:
        """All-or-nothing preemption for the blocked head; True if done."""
        memo = (policy.rule.subject, entry.items)
        if state.failed_before(memo):
            return False
        uncovered = {k: v - (state.cap[k] - state.used[k]) for k, v in entry.items
                     if v > state.cap[k] - state.used[k]}
        budget = {k: min(need, max(0, policy.rsv[k] - policy.held[k])) for k, need in uncovered.items()}
        deficit_keys = tuple(sorted(uncovered))
        if not any(budget.values()):
            bound = state.preemptible_below(policy.priority)
            if any(bound[k] < need for k, need in uncovered.items()):
                state.remember_failure(memo)      # even every lower-priority one is too little
                return False
        deficit_set = frozenset(uncovered)
        open_keys = set(uncovered)                # keys not covered yet
        budget_keys = [k for k in deficit_keys if budget[k] > 0]
        victims: list[_Alloc] = []
        for alloc, priority, borrowed in state.candidates():
            if priority >= policy.priority and not budget_keys:
                break                             # sorted by priority: nobody else qualifies
            if deficit_set.isdisjoint(borrowed) or alloc.keys.isdisjoint(open_keys):
                continue
            if priority >= policy.priority:
                counted = {k: min(borrowed.get(k, 0), budget[k]) for k in budget_keys}
                if not any(counted.values()):
                    continue
                for k, v in counted.items():
                    budget[k] -= v
                budget_keys = [k for k in budget_keys if budget[k] > 0]
            victims.append(alloc)
            for k in deficit_keys:
                uncovered[k] -= alloc.holds.get(k, 0)
                if uncovered[k] <= 0:
                    open_keys.discard(k)
            if not open_keys:
                break
        if open_keys:
            state.remember_failure(memo)
            return False
        for alloc in victims:
            state.release(alloc)
            if alloc.is_running:
                self.preempted.setdefault(alloc.name, []).append(entry.ticket.request.id)
            else:
                self.admitted.pop(alloc.name, None)
        return True


def solve(problem: Problem) -> Solution:
    """Simulate the reference reconciler over the requests in arrival order."""
    return _Simulation(problem).run()
