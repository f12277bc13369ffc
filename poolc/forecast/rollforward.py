"""Roll a plan forward in time, event by event (docs/forecast.md#how-it-rolls).

The plan says what runs now. Each running allocation ends at its start plus its
duration; at each such end the freed capacity is planned again with the plan's own
strategy (a ``replan(problem) -> Solution`` function the caller hands in), over
the waiting work of the pools that changed, until the queue drains, nothing more
ends, or the horizon is reached. Preempted work waits again in its place (a
step keeps its place in the files, as the next plan numbers it and as Kueue
requeues an evicted workload by its creation time; an allocation of no step waits
ahead of every request where Kueue requeues it, and is stopped for good in gate
mode) and runs its whole duration again when it restarts.

Pure values and integer seconds from the forecast's start: no files, no clock,
no solver of its own, so the same inputs give the same forecast. Only the pools a
completion freed are planned again, with the work that may use them: nothing
changed in the other pools since they were last planned, so their answer stands
(Kueue too requeues only the workloads of the cohort where quota was released).
Work that a re-plan preempts waits again, and the pools it may use are planned
at the same moment.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Final, Literal

from .. import heartbeat
from ..domain.borrowing import borrowed_parts, grant_order
from ..domain.eligibility import eligible_policies
from ..domain.problem import PolicyRule, Pool, Problem, Request, Running, start_ranks
from ..planner.decompose import pool_groups
from ..planner.solution import Solution
from ..vocabulary import StepOutcome

Replan = Callable[..., Solution]     # (problem) -> Solution; with tiers_of_whole also tiers_of=Problem
# Preempted allocations that ran before the forecast wait ahead of every request: ranks from here up.
REQUEUED_RANK = -1_000_000_000
STARTED: Final = "started"
AFTER_HORIZON: Final = "after-horizon"
NEVER: Final = "never"
# preempted work of no step in gate mode: its Workload is deactivated, nothing runs it again
STOPPED: Final = "stopped"


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
    rank: int | None = None      # a started request's arrival rank (it keeps it when it waits again)
    request: Request | None = None   # what it waits again as when preempted (where it may run); None: pinned


@dataclass
class Wait:
    """One piece of work waiting: a queued request, or preempted work."""

    request: Request
    since: int                   # 0, or when it was preempted
    preempted: bool = False
    start: int | None = None     # when it starts (again)
    outcome: StepOutcome | Literal[""] = ""     # "": not decided yet (the roll decides every wait)


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


class _World:
    """The state of the roll-forward: who runs (by pool) and who waits."""

    def __init__(self, problem: Problem, t0: datetime, replan: Replan, bound_classes: bool,
                 order: Mapping[str, int], requeue_unknown: bool, tiers_of_whole: bool) -> None:
        self.tiers_of_whole = tiers_of_whole             # replan(part, tiers_of=whole): the whole's tier list
        # class -> (its demand dict, its pools in the whole platform); the dict is kept so
        # that its id, part of the key, is never reused by another demand
        self.eligible: dict[tuple, tuple[Mapping[str, int], frozenset[str]]] = {}
        self.order = order                               # step id -> its place in the files (arrival order)
        self.requeue_unknown = requeue_unknown           # preempted work of no step waits again (Kueue)
        self.problem = problem
        self.t0 = t0
        self.replan = replan
        self.bound_classes = bound_classes
        self.pools = {p.name: p for p in problem.pools}
        self.policies_on: dict[str, list[PolicyRule]] = {}
        self.pools_of_subject: dict[str, set[str]] = {}
        for q in problem.policies:
            self.policies_on.setdefault(q.pool, []).append(q)
            self.pools_of_subject.setdefault(q.subject, set()).add(q.pool)
        self.by_policy = {q.name: q for q in problem.policies}
        self.running: dict[str, dict[str, Run]] = {}     # pool -> run id -> run
        self.waiting: dict[str, dict[str, Wait]] = {}    # subject -> request id -> wait
        self.runs: list[Run] = []
        self.waits: list[Wait] = []
        self.ends: list[tuple[int, str, str]] = []       # heap of (end, pool, run id)
        self.requeued = 0

    # --- building the state ------------------------------------------------------

    def add_run(self, run: Run) -> None:
        self.running.setdefault(run.pool, {})[run.id] = run
        self.runs.append(run)
        if run.end is not None:
            heapq.heappush(self.ends, (run.end, run.pool, run.id))

    def add_wait(self, wait: Wait) -> None:
        self.waiting.setdefault(wait.request.requester, {})[wait.request.id] = wait
        self.waits.append(wait)

    # --- one plan over some pools ------------------------------------------------

    def part(self, pools: set[str]) -> Problem:
        """The problem of these pools: their policies, what runs on them, and the
        work waiting for a subject with a policy on one of them."""
        chosen = tuple(self.pools[name] for name in sorted(pools))
        policies = tuple(q for name in sorted(pools) for q in self.policies_on.get(name, ()))
        running = [a for a in self.everything_running() if a.pool in pools]
        subjects = sorted({q.subject for q in policies})
        waits = sorted((w for s in subjects for w in self.waiting.get(s, {}).values()), key=_rank)  # unique
        # only the steps whose pools in the whole platform are among these: eligibility
        # depends on the pools there are (a CPU step keeps off GPU pools while a CPU
        # pool takes it), so a step of the other parts must not be planned here
        requests = [w.request for w in waits if (found := self.eligible_pools(w.request)) and found <= pools]
        if self.bound_classes:
            requests = _bounded(requests, chosen, running, self.problem)
        # Arrival ranks as the next plan numbers them: its position among everything
        # that waits then (the plan numbers the steps it plans 0, 1, ... in the files'
        # order), not the rank it had when the forecast began. FIFO adds ranks up, so
        # only the same numbers give the same choice between two sets of steps.
        keys = sorted(w.request.rank for waiting in self.waiting.values() for w in waiting.values())
        requests = [replace(r, rank=bisect.bisect_left(keys, r.rank)) for r in requests]
        return Problem(chosen, policies, tuple(requests), tuple(running))

    def apply(self, now: int, solution: Solution, durations: Mapping[str, int | None],
              problem: Problem) -> set[str]:
        """Start what the solution admits, stop what it preempts (who then waits
        again); the pools of the subjects whose work waits again. The grants start
        a microsecond apart in the order ``problem``'s plan walked the reserved
        shares, as `apply` records them, so the next plan calls the same grants
        the borrowers (`domain.borrowing.grant_order`)."""
        ranks = {r.id: r.rank for r in problem.requests}
        granted = sorted((rid for rid in solution.admitted if rid in ranks),
                         key=lambda rid: grant_order(rid in solution.in_share, ranks[rid], rid))
        place = {rid: k for k, rid in enumerate(granted)}
        requeued: set[str] = set()
        for name in sorted(solution.preempted):
            run = next((found for runs in self.running.values() if (found := runs.get(name)) is not None), None)
            if run is None:
                continue
            del self.running[run.pool][name]
            run.stopped = now
            self.requeued += 1
            if run.request is None and not self.requeue_unknown:
                # gate mode stops its Workload for good: nothing of poolc's runs it again
                self.waits.append(Wait(_again(run, REQUEUED_RANK + self.requeued), now, preempted=True,
                                       outcome=STOPPED))
                continue
            rank = (run.rank if run.rank is not None
                    else self.order.get(run.request.id, REQUEUED_RANK + self.requeued) if run.request is not None
                    else REQUEUED_RANK + self.requeued)
            self.add_wait(Wait(_again(run, rank), now, preempted=True))
            requeued |= self.pools_of_subject.get(run.subject, set())
        for rid in sorted(solution.admitted):
            policy = self.by_policy[solution.admitted[rid]]
            wait = self.waiting.get(policy.subject, {}).pop(rid, None)
            if wait is None:
                continue
            wait.start, wait.outcome = now, STARTED
            duration = durations.get(rid)
            self.add_run(Run(rid, wait.request.requester, policy.pool, policy.name, wait.request.demand,
                             wait.request.preemptible, now, None if duration is None else now + duration,
                             initial=False, started_at=self.t0 + timedelta(seconds=now, microseconds=place.get(rid, 0)),
                             rank=wait.request.rank,
                             request=wait.request))
        return requeued

    def everything_running(self) -> list[Running]:
        """Every running allocation, start-ranked among all of them: the victim order
        a plan of the whole platform has (the start-rank tier adds ranks up, so the
        ranks of a few pools alone could choose other victims)."""
        runs = [r for name in sorted(self.running) for r in self.running[name].values()]
        return start_ranks([Running(r.id, r.subject, r.pool, r.preemptible, r.holds, r.started_at)
                            for r in sorted(runs, key=lambda r: r.id)])

    def whole(self) -> Problem:
        """The platform as the next plan sees it: every pool, policy, waiting step
        (numbered as that plan numbers them) and running allocation."""
        waits = sorted((w for waiting in self.waiting.values() for w in waiting.values()), key=_rank)
        requests = tuple(replace(w.request, rank=k) for k, w in enumerate(waits))
        return Problem(self.problem.pools, self.problem.policies, requests, tuple(self.everything_running()))

    def eligible_pools(self, request: Request) -> frozenset[str]:
        """The pools ``request`` may run on in the whole platform (remembered per class)."""
        key = (request.requester, id(request.demand), request.preemptible, request.placement)
        found = self.eligible.get(key)
        if found is None:
            found = self.eligible[key] = (request.demand,
                                          frozenset(q.pool for q in eligible_policies(self.problem, request)[0]))
        return found[1]

    def closure(self, pools: set[str]) -> set[str]:
        """Every pool of the independent parts that hold ``pools`` (planner/decompose.py:
        pools some waiting class may choose between): planning only some pools of a
        part could place its requests otherwise than planning the whole would."""
        links = {self.eligible_pools(w.request) for waiting in self.waiting.values() for w in waiting.values()}
        return {p for group in pool_groups(self.pools, links) if pools.intersection(group) for p in group}

    def plan(self, pools: set[str], now: int, durations: Mapping[str, int | None]) -> tuple[bool, set[str]]:
        """Plan these pools again at ``now``: (planned, pools to plan again because
        work preempted here waits for them). Not planned when nothing could start."""
        problem = self.part(pools)
        if not problem.requests:
            return False, set()
        solution = self.replan(problem, tiers_of=self.whole()) if self.tiers_of_whole else self.replan(problem)
        return True, self.apply(now, solution, durations, problem)


def _next_event(ends: list[tuple[int, str, str]], coming: list[tuple[int, Request]]) -> int | None:
    """The next instant something ends or arrives; None when nothing will."""
    times = ([ends[0][0]] if ends else []) + ([coming[0][0]] if coming else [])
    return min(times) if times else None


def _rank(wait: Wait) -> int:
    return wait.request.rank


def _again(run: Run, rank: int) -> Request:
    """What preempted work waits again as: its step's request, with the step's
    GPU model, pools and pool_selector (so it runs again only where the step may
    run), holding what it held; work of no step waits for its own pool."""
    if run.request is None:
        return Request(run.id, run.subject, dict(run.holds), run.preemptible, rank, pinned_pool=run.pool)
    return replace(run.request, demand=dict(run.holds), preemptible=run.preemptible, rank=rank)


def _room(pools: tuple[Pool, ...], running: list[Running], requests: list[Request],
          problem: Problem) -> dict[str, dict[str, int]]:
    """Per pool and metered key, the most any plan could hand out there: the free
    units plus what the allocations it may preempt hold. A victim must be
    preemptible and borrow (docs/planning.md#reserved-share-and-borrowing), and
    the tiers only preempt an allocation for a request of a higher priority, or
    for one inside its policy's free reserved share (then any borrower)."""
    part = Problem(pools, tuple(q for q in problem.policies if any(q.pool == p.name for p in pools)), (),
                   tuple(running))
    borrowed = borrowed_parts(part)
    top: dict[str, int] = {}           # pool -> the highest priority a waiting request has there
    in_share: set[str] = set()         # pools where a waiting request may fit its free reserved share
    held: dict[str, dict[str, int]] = {}
    for alloc in running:
        mine = held.setdefault(f"{alloc.subject}@{alloc.pool}", {})
        for k, v in alloc.holds.items():
            mine[k] = mine.get(k, 0) + v
    names = {p.name for p in pools}
    seen: set[tuple] = set()
    for request in requests:
        shape = (request.requester, tuple(sorted(request.demand.items())))   # a class: its members share the answer
        if shape in seen:
            continue
        seen.add(shape)
        for q in part.policies_of(request.requester):
            if q.pool not in names:
                continue
            top[q.pool] = max(top.get(q.pool, q.priority), q.priority)
            if q.reserved and q.pool not in in_share:
                mine = held.get(f"{q.subject}@{q.pool}", {})
                metered = part.pool(q.pool).capacity
                if all(v <= q.rsv(k) - mine.get(k, 0) for k, v in request.demand.items() if v > 0 and k in metered):
                    in_share.add(q.pool)
    room: dict[str, dict[str, int]] = {}
    for pool in pools:
        left = dict(pool.capacity)
        for alloc in running:
            if alloc.pool != pool.name:
                continue
            policy = part.policy_for(alloc.subject, alloc.pool)
            victim = (alloc.preemptible and policy is not None and any(borrowed.get(alloc.name, {}).values())
                      and (pool.name in in_share or policy.priority < top.get(pool.name, policy.priority)))
            if not victim:
                for k, v in alloc.holds.items():
                    if k in left:
                        left[k] -= v
        room[pool.name] = left
    return room


def _bounded(requests: list[Request], pools: tuple[Pool, ...], running: list[Running],
             problem: Problem) -> list[Request]:
    """Only as many of each class of identical requests (requester, demand,
    preemptible, placement) as could ever be admitted at once: per pool of the requester,
    what fits in its ``_room``. The optimal strategy hands a class's admissions out
    by arrival rank, so the members left out could never be chosen: the plan is the
    same, only smaller (a class that fits nowhere is left out whole)."""
    if not requests:
        return requests
    room = _room(pools, running, requests, problem)
    kept: list[Request] = []
    counts: dict[tuple, int] = {}
    limits: dict[tuple, int] = {}
    shapes: dict[int, tuple] = {}   # requests share their demand dicts: one sorted tuple per dict
    for request in requests:
        shape = shapes.get(id(request.demand))
        if shape is None:
            shape = shapes[id(request.demand)] = tuple(sorted(request.demand.items()))
        key = (request.requester, shape, request.preemptible, request.placement)   # a class of the planner
        if key not in limits:
            total = 0
            for q in problem.policies_of(request.requester):
                left = room.get(q.pool)
                if left is None or request.pinned_pool not in (None, q.pool):
                    continue
                fits = [left[k] // v for k, v in request.demand.items() if v > 0 and k in left]
                total += max(0, min(fits)) if fits else len(requests)
            limits[key] = total
        if counts.get(key, 0) < limits[key]:
            counts[key] = counts.get(key, 0) + 1
            kept.append(request)
    return kept


def roll_forward(problem: Problem, first: Solution, *, t0: datetime, horizon: int,
                 durations: Mapping[str, int | None], replan: Replan, bound_classes: bool = False,
                 steps: Mapping[str, Request] | None = None, order: Mapping[str, int] | None = None,
                 requeue_unknown: bool = True, partial: bool = True, tiers_of_whole: bool = False,
                 arrivals: Sequence[tuple[int, Request]] = ()) -> Rolled:
    """Roll ``problem`` forward from the plan ``first`` (what the plan decides now).

    ``durations``: request id or running allocation name -> seconds (None:
    unknown). ``horizon``: seconds; nothing starts after it. ``bound_classes``:
    hand the planner only the members of each class of identical requests that
    could be admitted (exact for the optimal strategy, see ``_bounded``).
    ``steps``: running allocation name -> the request of the step it runs (its id
    and where it may run), what the allocation waits again as when preempted.
    ``order``: step id -> its place in the files, the order the plan numbers
    waiting steps in (default: each request's rank); a preempted step waits in
    that place. An allocation of no step waits for its own pool when
    ``requeue_unknown`` (Kueue requeues what it evicts), else it never runs again
    (gate mode stops its Workload for good). ``partial``: plan only the pools a
    completion freed (exact for a strategy whose plan of independent pools does
    not depend on the others, as the optimal planner's); else every pool, as the
    next plan does. ``tiers_of_whole``: ``replan`` takes ``tiers_of`` (the optimal
    planner): a partial re-plan is planned with the tier list of the whole platform,
    which makes it the plan of those parts that a plan of the whole would make.
    ``arrivals``: (second, request) pairs: work that arrives later (a scenario's,
    `poolc test`); each waits from then on, ranked after everything in the files
    (its rank), and the pools it may use are planned again at that instant. With
    none, the loop is exactly the completion loop above."""
    order = order if order is not None else {r.id: r.rank for r in problem.requests}
    world = _World(problem, t0, replan, bound_classes, order, requeue_unknown, tiers_of_whole)
    notes: list[str] = []
    policy_of = {(q.subject, q.pool): q.name for q in problem.policies}
    for alloc in sorted(problem.running, key=lambda a: a.name):
        duration = durations.get(alloc.name)
        if alloc.started_at is None:
            start = 0
            notes.append(f"allocation {alloc.name} has no started_at: its run is counted from the forecast's start")
        else:
            start = (alloc.started_at - t0) // timedelta(seconds=1)   # whole seconds, rounded down
            if start > 0:   # a clock ahead of the forecast's start: it runs, so it started by now
                notes.append(f"allocation {alloc.name} has started_at after the forecast's start: its run is "
                             "counted from the forecast's start")
                start = 0
        end = None if duration is None else max(start + duration, 0)
        world.add_run(Run(alloc.name, alloc.subject, alloc.pool, policy_of.get((alloc.subject, alloc.pool)),
                          alloc.holds, alloc.preemptible, start, end, initial=True, started_at=alloc.started_at,
                          request=(steps or {}).get(alloc.name)))
    for request in problem.requests:
        world.add_wait(Wait(replace(request, rank=order.get(request.id, request.rank)), 0))
    # pools whose waiting work changed (preempted work waits again there): planned at
    # the next completion, as the next apply plans it; never twice at one instant
    dirty = world.apply(0, first, durations, problem)

    rolled = Rolled(world.runs, world.waits, horizon, notes=notes)
    coming = sorted(arrivals, key=lambda pair: (pair[0], pair[1].rank, pair[1].id))
    while True:
        now = _next_event(world.ends, coming)
        if now is None or now > horizon:
            break
        touched: set[str] = set()
        while world.ends and world.ends[0][0] == now:
            _, pool, rid = heapq.heappop(world.ends)
            run = world.running.get(pool, {}).get(rid)
            if run is None or run.end != now or run.stopped is not None:
                continue  # preempted before it ended
            del world.running[pool][rid]
            touched.add(pool)
        while coming and coming[0][0] == now:   # work arriving now waits, and its pools are planned again
            _, request = coming.pop(0)
            world.add_wait(Wait(request, now))
            touched |= world.eligible_pools(request)
        if not touched:
            continue
        touched = world.closure(touched | dirty) if partial else set(world.pools)
        rolled.events += 1
        heartbeat.step(f"forecast at +{now // 60} min of {horizon // 60}: {rolled.replans} re-plans so far, "
                       f"planning {len(touched)} pool(s) again")
        planned, dirty = world.plan(touched, now, durations)
        rolled.replans += planned
        rolled.skipped += not planned
    for subject, waits in world.waiting.items():
        pools = world.pools_of_subject.get(subject, set())
        more = any(r.end is not None for name in pools for r in world.running.get(name, {}).values())
        for wait in waits.values():
            wait.outcome = AFTER_HORIZON if more else NEVER
    return rolled
