"""The forecast as a value: every waiting step's start, and per team the queue's
drain time, GPU-hours admitted, waiting and lost to preemption, and the money;
per policy what its reserved share leaves idle (docs/forecast.md#what-it-says).

Times are whole seconds from the forecast's start; hours and dollars are rounded
to cents, so the JSON is the same bytes on every run and machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..domain.problem import PolicyRule
from .costs import Rates
from .rollforward import AFTER_HORIZON, NEVER, STARTED, STOPPED, Rolled, Run

# A start that did not happen in the forecast sorts after every start that did.
_LATE = {AFTER_HORIZON: 1, NEVER: 2, STOPPED: 3}
HOUR = 3600


@dataclass(frozen=True)
class StepForecast:
    """One piece of waiting work: a queued step, or preempted work waiting to run again."""

    id: str
    team: str
    gpu: int
    since: int                  # waiting since (0, or when it was preempted)
    preempted: bool
    start: int | None           # seconds from the start; None: after the horizon, or never
    outcome: str                # started | after-horizon | never | stopped (for good: no step to run again)
    duration: int | None
    duration_source: str        # expected_runtime | max_runtime | unknown

    def as_dict(self) -> dict:
        return {"id": self.id, "team": self.team, "gpu": self.gpu, "waiting_since": self.since,
                "preempted": self.preempted, "start": self.start if self.outcome == STARTED else self.outcome,
                "duration": self.duration, "duration_source": self.duration_source}


Start = int | str | None        # seconds, "after-horizon", "never"; None when nothing waits


@dataclass(frozen=True)
class RunForecast:
    """One stretch of work holding capacity in the forecast: a running allocation or a
    step the forecast starts, on which pool, through which policy, from when to when.
    The list of them is the schedule: at any instant the work whose stretch covers it
    is what holds each pool, so a reader can check it against every capacity and limit."""

    id: str
    team: str
    pool: str
    policy: str | None
    holds: Mapping[str, int]
    start: int                  # seconds from the forecast's start; negative: it ran before
    end: int | None             # when it ends as planned; None: its duration is unknown
    preempted_at: int | None    # when the forecast stops it (then it holds nothing from there on)

    def as_dict(self) -> dict:
        return {"id": self.id, "team": self.team, "pool": self.pool, "policy": self.policy,
                "holds": dict(sorted(self.holds.items())), "start": self.start,
                "end": "unknown" if self.end is None else self.end, "preempted_at": self.preempted_at}

    def holds_at(self, when: int) -> bool:
        """Whether this stretch holds its capacity at ``when`` (start included, end not)."""
        stop = self.preempted_at if self.preempted_at is not None else self.end
        return self.start <= when and (stop is None or when < stop)


@dataclass(frozen=True)
class TeamForecast:
    team: str
    queued: int
    p50_start: Start
    p90_start: Start
    drained: Start              # when its last waiting step starts
    gpu_hours_admitted: float   # work the forecast starts, within the horizon
    gpu_hours_waiting: float
    gpu_hours_lost: float       # preempted work, counted since its start
    usd: float | None           # work of known duration, inside the horizon; None: nothing priced
    # work of unknown duration is never priced to the horizon: what it costs per hour
    # while it runs (held at the horizon), and how many such runs
    usd_per_hour_unknown: float | None = None
    unknown_runs: int = 0

    def as_dict(self) -> dict:
        return {"team": self.team, "queued": self.queued, "p50_start": self.p50_start, "p90_start": self.p90_start,
                "drained": self.drained, "gpu_hours_admitted": self.gpu_hours_admitted,
                "gpu_hours_waiting": self.gpu_hours_waiting, "gpu_hours_lost": self.gpu_hours_lost,
                "usd": self.usd, "usd_per_hour_unknown": self.usd_per_hour_unknown,
                "unknown_runs": self.unknown_runs}


@dataclass(frozen=True)
class IdleShare:
    """A reserved share paid for (its pool is priced) but not used, over the horizon."""

    policy: str
    pool: str
    gpu_hours: float
    usd: float | None

    def as_dict(self) -> dict:
        return {"policy": self.policy, "pool": self.pool, "gpu_hours_idle": self.gpu_hours, "usd_idle": self.usd}


@dataclass(frozen=True)
class Forecast:
    strategy: str
    start: str                  # RFC 3339, UTC
    horizon: int                # seconds
    steps: tuple[StepForecast, ...]
    teams: tuple[TeamForecast, ...]
    idle: tuple[IdleShare, ...]
    durations: Mapping[str, int]     # how many steps got their duration from where
    prices: Mapping[str, str]        # the instance price table: source and date
    replans: int = 0
    events: int = 0
    notes: tuple[str, ...] = field(default=())
    schedule: tuple[RunForecast, ...] = field(default=())

    @property
    def drained(self) -> Start:
        return _latest([t.drained for t in self.teams if t.drained is not None])

    def as_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "start": self.start, "horizon": self.horizon,
                "drained": self.drained, "steps": [s.as_dict() for s in self.steps],
                "teams": [t.as_dict() for t in self.teams], "idle_reserved": [x.as_dict() for x in self.idle],
                "durations": dict(sorted(self.durations.items())), "price_table": dict(self.prices),
                "replans": self.replans, "events": self.events, "notes": list(self.notes),
                "schedule": [r.as_dict() for r in self.schedule]}


def _latest(starts: list[Start]) -> Start:
    if not starts:
        return None
    return max(starts, key=start_order)


def start_order(start: Start) -> tuple[int, int]:
    if isinstance(start, int):
        return (0, start)
    return (_LATE.get(start or "", 0), 0)


def percentile(starts: list[Start], fraction: float) -> Start:
    """Nearest-rank percentile; a start that did not happen counts as the latest."""
    if not starts:
        return None
    ordered = sorted(starts, key=start_order)
    index = max(0, -(-len(ordered) * int(fraction * 100) // 100) - 1)
    return ordered[index]


def _hours(unit_seconds: int) -> float:
    return round(unit_seconds / HOUR, 2)


def _within(run: Run, horizon: int) -> tuple[int, int]:
    """The part of a run inside [0, horizon]."""
    stop = min(x for x in (run.end, run.stopped, horizon) if x is not None)
    return max(run.start, 0), max(stop, max(run.start, 0))


@dataclass(frozen=True)
class Pricing:
    pools: Mapping[str, Rates]          # pool -> its rates (priced pools only)
    runs: Mapping[str, float]           # run id -> USD per hour (SageMaker steps: their instance)

    def hourly(self, run: Run) -> float | None:
        if run.id in self.runs:
            return self.runs[run.id]
        rates = self.pools.get(run.pool)
        return None if rates is None else rates.hourly(run.holds)


def summarize(rolled: Rolled, *, strategy: str, start: str, names: Mapping[str, str],
              durations: Mapping[str, tuple[int | None, str]], pricing: Pricing,
              policies: tuple[PolicyRule, ...], prices: Mapping[str, str],
              teams: Mapping[str, str] | None = None) -> Forecast:
    """``names``: allocation name -> the step it runs (shown by step id);
    ``teams``: step id -> its team (``Plan.team_of``); work of no step (an
    allocation written by hand) is its component's;
    ``durations``: step or allocation id -> (seconds, source)."""
    horizon = rolled.horizon
    steps = []
    for wait in rolled.waits:
        seconds, source = durations.get(wait.request.id, (None, "unknown"))
        step = names.get(wait.request.id, wait.request.id)
        steps.append(StepForecast(step, (teams or {}).get(step) or wait.request.requester,
                                  wait.request.demand.get("gpu", 0), wait.since, wait.preempted,
                                  wait.start if wait.outcome == STARTED else None, wait.outcome, seconds, source))
    steps.sort(key=lambda s: (s.id, s.since))
    run_team = {r.id: (teams or {}).get(names.get(r.id, r.id)) or r.subject for r in rolled.runs}
    rows = []
    for team in sorted({s.team for s in steps} | set(run_team.values())):
        mine = [s for s in steps if s.team == team and s.outcome != STOPPED]    # stopped work waits for nothing
        starts: list[Start] = [s.start if s.outcome == STARTED else s.outcome for s in mine]
        runs = [r for r in rolled.runs if run_team[r.id] == team]
        admitted = lost = waiting = unknown = 0
        usd: float | None = None
        open_rate: float | None = None
        for run in runs:
            begin, stop = _within(run, horizon)
            gpu = run.holds.get("gpu", 0)
            if not run.initial:
                admitted += gpu * (stop - begin)
            if run.stopped is not None:
                lost += gpu * (run.stopped - run.start)
            hourly = pricing.hourly(run)
            if run.end is None and run.stopped is None:     # runs for as long as nobody knows
                unknown += 1
                if hourly is not None:
                    open_rate = (open_rate or 0.0) + hourly
            elif hourly is not None:
                usd = (usd or 0.0) + hourly * (stop - begin) / HOUR
        for s in mine:
            end = s.start if s.start is not None else horizon
            waiting += s.gpu * max(0, min(end, horizon) - s.since)
        rows.append(TeamForecast(team, len(mine), percentile(starts, 0.5), percentile(starts, 0.9), _latest(starts),
                                 _hours(admitted), _hours(waiting), _hours(lost),
                                 None if usd is None else round(usd, 2),
                                 None if open_rate is None else round(open_rate, 2), unknown))
    schedule = tuple(sorted((RunForecast(names.get(r.id, r.id), run_team[r.id], r.pool, r.policy, r.holds, r.start,
                                         r.end, r.stopped) for r in rolled.runs),
                            key=lambda r: (r.start, r.id, r.pool)))
    return Forecast(strategy, start, horizon, tuple(steps), tuple(rows),
                    idle_shares(rolled, policies, pricing), _sources(durations, rolled), prices,
                    rolled.replans, rolled.events, tuple(rolled.notes), schedule)


def _sources(durations: Mapping[str, tuple[int | None, str]], rolled: Rolled) -> dict[str, int]:
    counted: dict[str, int] = {}
    ids = {w.request.id for w in rolled.waits} | {r.id for r in rolled.runs}
    for rid in sorted(ids):
        source = durations.get(rid, (None, "unknown"))[1]
        counted[source] = counted.get(source, 0) + 1
    return counted


def idle_shares(rolled: Rolled, policies: tuple[PolicyRule, ...], pricing: Pricing) -> tuple[IdleShare, ...]:
    """Per policy with a reserved share: the reserved units its own work leaves idle
    over the horizon (GPU-hours), and what they cost where the pool is priced."""
    horizon = rolled.horizon
    found = []
    for q in sorted(policies, key=lambda q: q.name):
        if not q.reserved:
            continue
        changes: dict[int, dict[str, int]] = {}
        for run in rolled.runs:
            if run.policy != q.name:
                continue
            begin, stop = _within(run, horizon)
            if stop <= begin:
                continue
            for k, v in run.holds.items():
                if k in q.reserved:
                    changes.setdefault(begin, {})[k] = changes.get(begin, {}).get(k, 0) + v
                    changes.setdefault(stop, {})[k] = changes.get(stop, {}).get(k, 0) - v
        held = dict.fromkeys(q.reserved, 0)
        idle = dict.fromkeys(q.reserved, 0)
        last = 0
        for when in sorted([*changes, horizon]):
            if when > horizon:
                break
            for k, share in q.reserved.items():
                idle[k] += max(0, share - held[k]) * (when - last)
            last = when
            for k, v in changes.get(when, {}).items():
                held[k] += v
        rates = pricing.pools.get(q.pool)
        usd = None if rates is None else round(sum(rates.per_key.get(k, 0.0) * v for k, v in idle.items()) / HOUR, 2)
        found.append(IdleShare(q.name, q.pool, _hours(idle.get("gpu", 0)), usd))
    return tuple(found)
