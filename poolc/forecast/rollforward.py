"""Roll a plan forward in time, event by event (docs/forecast.md#how-it-rolls).

The plan says what runs now. Each running allocation ends at its start plus its
duration; at each such end the freed capacity is planned again with the plan's own
strategy (a ``replan(problem) -> Solution`` function the caller hands in), over
the waiting work of the pools that changed, until the queue drains, nothing more
ends, or the horizon is reached. Preempted work waits again, ahead of every
request (it keeps its place, as Kueue requeues an evicted workload by its creation
time), and runs its whole duration again when it restarts.

Pure values and integer seconds from the forecast's start: no files, no clock,
no solver of its own, so the same inputs give the same forecast. Only the pools a
completion touched are planned again: pools are split into independent groups
(two pools are linked when one subject has a policy on both), and work in one
group never changes what another admits.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..domain.problem import PolicyRule, Pool, Problem, Request, Running, start_ranks
from ..planner.solution import Solution

Replan = Callable[[Problem], Solution]
# Requeued (preempted) work sorts before every request: ranks from here up.
REQUEUED_RANK = -1_000_000_000
STARTED, AFTER_HORIZON, NEVER = "started", "after-horizon", "never"


@dataclass
class Run:
    """One stretch of work holding capacity: a running allocation, or a request
    the forecast starts. Times in seconds from the forecast's start."""

    id: str                      # request id, or the allocation's name
    subject: str
    pool: str
    policy: str | None
    holds: Mapping[str, int]
    preemptible: bool
    start: int                   # may be negative: running before the forecast
    end: int | None              # None: its duration is unknown, it never ends here
    initial: bool                # running when the forecast starts
    started_at: datetime | None  # for the victim order (missing = earliest)
    stopped: int | None = None   # preempted at


@dataclass
class Wait:
    """One piece of work waiting: a queued request, or preempted work."""

    request: Request
    since: int                   # 0, or when it was preempted
    preempted: bool = False
    start: int | None = None     # when it starts (again)
    outcome: str = ""            # started | after-horizon | never


@dataclass
class Rolled:
    """What happened: every run, every wait, and the number of plans made."""

    runs: list[Run]
    waits: list[Wait]
    horizon: int
    replans: int = 0
    events: int = 0
    skipped: int = 0             # completions after which nothing could start (no plan needed)
    notes: list[str] = field(default_factory=list)


def pool_groups(problem: Problem) -> dict[str, int]:
    """Pool name -> the index of its independent group (linked through subjects
    with policies on several pools), groups numbered in pool-name order."""
    parent = {p.name: p.name for p in problem.pools}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    by_subject: dict[str, list[str]] = {}
    for q in problem.policies:
        by_subject.setdefault(q.subject, []).append(q.pool)
    for pools in by_subject.values():
        first = root(pools[0])
        for other in pools[1:]:
            second = root(other)
            if second != first:
                parent[max(first, second)] = min(first, second)
                first = min(first, second)
    roots = sorted({root(name) for name in parent})
    index = {r: i for i, r in enumerate(roots)}
    return {name: index[root(name)] for name in parent}


class _World:
    """The state of the roll-forward: who runs, who waits, per group."""

    def __init__(self, problem: Problem, t0: datetime, replan: Replan, bound_classes: bool) -> None:
        self.problem = problem
        self.t0 = t0
        self.replan = replan
        self.bound_classes = bound_classes
        self.group_of_pool = pool_groups(problem)
        self.group_of_subject = {q.subject: self.group_of_pool[q.pool] for q in problem.policies}
        self.pools_of_group: dict[int, tuple[Pool, ...]] = {}
        self.policies_of_group: dict[int, tuple[PolicyRule, ...]] = {}
        for pool in problem.pools:
            g = self.group_of_pool[pool.name]
            self.pools_of_group[g] = (*self.pools_of_group.get(g, ()), pool)
        for q in problem.policies:
            g = self.group_of_pool[q.pool]
            self.policies_of_group[g] = (*self.policies_of_group.get(g, ()), q)
        self.running: dict[int, dict[str, Run]] = {}     # group -> run id -> run
        self.waiting: dict[int, dict[str, Wait]] = {}    # group -> request id -> wait
        self.runs: list[Run] = []
        self.waits: list[Wait] = []
        self.ends: list[tuple[int, int, str]] = []       # heap of (end, group, run id)
        self.requeued = 0

    # --- building the state ------------------------------------------------------

    def add_run(self, run: Run) -> None:
        g = self.group_of_pool.get(run.pool, -1)
        self.running.setdefault(g, {})[run.id] = run
        self.runs.append(run)
        if run.end is not None:
            heapq.heappush(self.ends, (run.end, g, run.id))

    def add_wait(self, wait: Wait) -> None:
        g = self.group_of_subject.get(wait.request.requester, -1)
        self.waiting.setdefault(g, {})[wait.request.id] = wait
        self.waits.append(wait)

    # --- one plan over one group -------------------------------------------------

    def group_problem(self, g: int, now: int) -> Problem:
        runs = self.running.get(g, {})
        running = start_ranks([Running(r.id, r.subject, r.pool, r.preemptible, r.holds, r.started_at)
                               for r in sorted(runs.values(), key=lambda r: r.id)])
        waits = sorted(self.waiting.get(g, {}).values(), key=lambda w: (w.request.rank, w.request.id))
        requests = [w.request for w in waits]
        if self.bound_classes:
            requests = _bounded(requests, self.pools_of_group.get(g, ()), running, self.problem)
        return Problem(self.pools_of_group.get(g, ()), self.policies_of_group.get(g, ()), tuple(requests),
                       tuple(running))

    def apply(self, g: int, now: int, solution: Solution, durations: Mapping[str, int | None]) -> None:
        """Start what the solution admits, stop what it preempts (who then waits again)."""
        runs = self.running.get(g, {})
        waiting = self.waiting.get(g, {})
        for name in sorted(solution.preempted):
            run = runs.pop(name, None)
            if run is None:
                continue
            run.stopped = now
            self.requeued += 1
            request = Request(run.id, run.subject, dict(run.holds), run.preemptible, REQUEUED_RANK + self.requeued)
            self.add_wait(Wait(request, now, preempted=True))
        by_policy = {q.name: q for q in self.problem.policies}
        for rid in sorted(solution.admitted):
            wait = waiting.pop(rid, None)
            if wait is None:
                continue
            policy = by_policy[solution.admitted[rid]]
            wait.start, wait.outcome = now, STARTED
            duration = durations.get(rid)
            self.add_run(Run(rid, wait.request.requester, policy.pool, policy.name, wait.request.demand,
                             wait.request.preemptible, now, None if duration is None else now + duration,
                             initial=False, started_at=self.t0 + timedelta(seconds=now)))

    def plan(self, g: int, now: int, durations: Mapping[str, int | None]) -> bool:
        """Plan group ``g`` again at ``now``; False when nothing could start (no solve)."""
        problem = self.group_problem(g, now)
        if not problem.requests:
            return False
        self.apply(g, now, self.replan(problem), durations)
        return True


def _bounded(requests: list[Request], pools: tuple[Pool, ...], running: list[Running],
             problem: Problem) -> list[Request]:
    """Only as many of each class of identical requests (requester, demand,
    preemptible) as could ever be admitted at once: per pool of the requester,
    what fits in the free capacity plus everything preemptible work holds there.
    The optimal strategy hands a class's admissions out by arrival rank, so the
    members left out could never be chosen: the plan is the same, only smaller."""
    if not requests:
        return requests
    room: dict[str, dict[str, int]] = {}
    for pool in pools:
        free = dict(pool.capacity)
        for alloc in running:
            if alloc.pool == pool.name and not alloc.preemptible:
                for k, v in alloc.holds.items():
                    if k in free:
                        free[k] -= v
        room[pool.name] = free
    kept: list[Request] = []
    counts: dict[tuple, int] = {}
    limits: dict[tuple, int] = {}
    for request in requests:
        key = (request.requester, tuple(sorted(request.demand.items())), request.preemptible)
        if key not in limits:
            total = 0
            for q in problem.policies_of(request.requester):
                free = room.get(q.pool)
                if free is None:
                    continue
                fits = [free[k] // v for k, v in request.demand.items() if v > 0 and k in free]
                total += max(0, min(fits)) if fits else len(requests)
            limits[key] = total
        if counts.get(key, 0) < limits[key]:
            counts[key] = counts.get(key, 0) + 1
            kept.append(request)
    return kept


def roll_forward(problem: Problem, first: Solution, *, t0: datetime, horizon: int,
                 durations: Mapping[str, int | None], replan: Replan, bound_classes: bool = False) -> Rolled:
    """Roll ``problem`` forward from the plan ``first`` (what the plan decides now).

    ``durations``: request id or running allocation name -> seconds (None:
    unknown). ``horizon``: seconds; nothing starts after it. ``bound_classes``:
    hand the planner only the members of each class of identical requests that
    could be admitted (exact for the optimal strategy, see ``_bounded``)."""
    world = _World(problem, t0, replan, bound_classes)
    notes: list[str] = []
    policy_of = {(q.subject, q.pool): q.name for q in problem.policies}
    for alloc in sorted(problem.running, key=lambda a: a.name):
        duration = durations.get(alloc.name)
        if alloc.started_at is None:
            start = 0
            notes.append(f"allocation {alloc.name} has no started_at: its run is counted from the forecast's start")
        else:
            start = int((alloc.started_at - t0).total_seconds())
        end = None if duration is None else max(start + duration, 0)
        world.add_run(Run(alloc.name, alloc.subject, alloc.pool, policy_of.get((alloc.subject, alloc.pool)),
                          alloc.holds, alloc.preemptible, start, end, initial=True, started_at=alloc.started_at))
    for request in problem.requests:
        world.add_wait(Wait(request, 0))
    for g in sorted(world.running):
        world.apply(g, 0, _part(first, world.running[g], world.waiting.get(g, {})), durations)
    for g in sorted(set(world.waiting) - set(world.running)):
        world.apply(g, 0, _part(first, {}, world.waiting[g]), durations)

    rolled = Rolled(world.runs, world.waits, horizon, notes=notes)
    while world.ends and world.ends[0][0] <= horizon:
        now = world.ends[0][0]
        touched: set[int] = set()
        while world.ends and world.ends[0][0] == now:
            _, g, rid = heapq.heappop(world.ends)
            run = world.running.get(g, {}).get(rid)
            if run is None or run.end != now or run.stopped is not None:
                continue  # preempted before it ended
            del world.running[g][rid]
            touched.add(g)
        rolled.events += 1
        for g in sorted(touched):
            if world.waiting.get(g) and world.plan(g, now, durations):
                rolled.replans += 1
            else:
                rolled.skipped += 1
    for g, waits in world.waiting.items():
        more = any(r.end is not None for r in world.running.get(g, {}).values())
        for wait in waits.values():
            wait.outcome = AFTER_HORIZON if more else NEVER
    return rolled


def _part(solution: Solution, runs: Mapping[str, Run], waits: Mapping[str, Wait]) -> Solution:
    """The part of the plan's own solution about one group."""
    return Solution(solution.strategy, {rid: q for rid, q in solution.admitted.items() if rid in waits},
                    {name: f for name, f in solution.preempted.items() if name in runs})
