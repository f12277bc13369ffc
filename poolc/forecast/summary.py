"""The forecast as a value: every waiting step's start, and per team the queue's
drain time, GPU-hours admitted, waiting and lost to preemption, and the money;
per policy what its reserved share leaves idle (docs/forecast.md#what-it-says).

Times are whole seconds from the forecast's start; hours and dollars are rounded
to cents, so the JSON is the same bytes on every run and machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

from pydantic import ConfigDict, Field, PlainSerializer, TypeAdapter, computed_field, field_serializer, model_validator

from ..domain.problem import PolicyRule
from ..vocabulary import DurationSource, StepOutcome
from .bounds import (
    LATE,
    AList,
    Flag,
    Hours,
    Instant,
    Money,
    NonNegative,
    Positive,
    Seconds,
    StartRead,
    Text,
    named_none,
)
from .costs import Rates
from .durations import UNKNOWN
from .rollforward import AFTER_HORIZON, NEVER, STARTED, STOPPED, Rolled, Run

# A start that did not happen in the forecast sorts after every start that did.
_LATE = {AFTER_HORIZON: 1, NEVER: 2, STOPPED: 3}
HOUR = 3600

# A saved forecast comes from another job: keys poolc does not write are ignored, as a
# newer poolc's additions would be; everything declared below is checked (bounds.py).
_READ = ConfigDict(extra="ignore")
# a mapping written with its keys in order (the JSON is the same bytes on every run)
_SORTED = PlainSerializer(lambda mapping: dict(sorted(mapping.items())))


@dataclass(frozen=True)
class StepForecast:
    """One piece of waiting work: a queued step, or preempted work waiting to run again.
    The file keeps ``start`` and ``outcome`` in one key: the start, or what happened instead."""

    __pydantic_config__ = _READ

    id: Text
    team: Text
    gpu: NonNegative
    since: Annotated[Seconds, Field(alias="waiting_since")]     # 0, or when it was preempted
    preempted: Flag
    # seconds from the start; None: after the horizon, or never
    start: Annotated[Seconds | None, named_none(*LATE)]
    # started | after-horizon | never | stopped (for good: no step to run again); read off ``start``
    outcome: Annotated[StepOutcome, Field(exclude=True)]
    duration: NonNegative | None
    duration_source: DurationSource

    @model_validator(mode="before")
    @classmethod
    def _outcome_from_start(cls, data: Any) -> Any:
        if isinstance(data, dict) and "start" in data:
            start = data["start"]
            return {**data, "outcome": start if type(start) is str and start in LATE else STARTED}
        return data

    @field_serializer("start")
    def _start_or_outcome(self, start: int | None) -> int | str | None:
        return start if self.outcome == STARTED else self.outcome


Start = int | str | None        # seconds, "after-horizon", "never"; None when nothing waits
SavedStart = Annotated[Start, StartRead]


@dataclass(frozen=True)
class RunForecast:
    """One stretch of work holding capacity in the forecast: a running allocation or a
    step the forecast starts, on which pool, through which policy, from when to when.
    The list of them is the schedule: at any instant the work whose stretch covers it
    is what holds each pool, so a reader can check it against every capacity and limit."""

    __pydantic_config__ = _READ

    id: Text
    team: Text
    pool: Text
    policy: Text | None
    holds: Annotated[Mapping[Text, NonNegative], Field(strict=True), _SORTED]
    start: Seconds              # seconds from the forecast's start; negative: it ran before
    # when it ends as planned; None: its duration is unknown (written "unknown")
    end: Annotated[Seconds | None, named_none("unknown"),
                   PlainSerializer(lambda end: "unknown" if end is None else end)]
    preempted_at: Seconds | None    # when the forecast stops it (then it holds nothing from there on)

    def as_dict(self) -> dict:
        return written(self)

    def holds_at(self, when: int) -> bool:
        """Whether this stretch holds its capacity at ``when`` (start included, end not)."""
        stop = self.preempted_at if self.preempted_at is not None else self.end
        return self.start <= when and (stop is None or when < stop)


@dataclass(frozen=True)
class TeamForecast:
    __pydantic_config__ = _READ

    team: Text
    queued: NonNegative
    p50_start: SavedStart
    p90_start: SavedStart
    drained: SavedStart         # when its last waiting step starts
    gpu_hours_admitted: Hours   # work the forecast starts, within the horizon
    gpu_hours_waiting: Hours
    gpu_hours_lost: Hours       # preempted work, counted since its start
    usd: Money | None           # work of known duration, inside the horizon; None: nothing priced
    # work of unknown duration is never priced to the horizon: what it costs per hour
    # while it runs (held at the horizon), and how many such runs
    usd_per_hour_unknown: Money | None = None
    unknown_runs: NonNegative = 0


@dataclass(frozen=True)
class IdleShare:
    """A reserved share paid for (its pool is priced) but not used, over the horizon."""

    __pydantic_config__ = _READ

    policy: Text
    pool: Text
    gpu_hours: Annotated[Hours, Field(alias="gpu_hours_idle")]
    usd: Annotated[Money | None, Field(alias="usd_idle")]


@dataclass(frozen=True)
class Forecast:
    __pydantic_config__ = _READ

    strategy: Text
    start: Instant              # RFC 3339, UTC
    horizon: Positive           # seconds
    steps: Annotated[tuple[StepForecast, ...], AList]
    teams: Annotated[tuple[TeamForecast, ...], AList]
    idle: Annotated[tuple[IdleShare, ...], AList, Field(alias="idle_reserved")]
    # how many steps got their duration from where
    durations: Annotated[Mapping[Text, NonNegative], Field(strict=True), _SORTED]
    # the instance price table: source and date
    prices: Annotated[Mapping[Text, Text], Field(strict=True, alias="price_table")]
    replans: NonNegative = 0
    events: NonNegative = 0
    notes: Annotated[tuple[Text, ...], AList] = field(default=())
    schedule: Annotated[tuple[RunForecast, ...], AList] = field(default=())

    @computed_field     # type: ignore[prop-decorator]
    @property
    def drained(self) -> Start:
        return _latest([t.drained for t in self.teams if t.drained is not None])

    def as_dict(self) -> dict[str, Any]:
        return written(self)


T = TypeVar("T")
_FORMS: dict[type, TypeAdapter[Any]] = {}


def form(kind: type[T]) -> TypeAdapter[T]:
    """The one reader and writer of ``kind``'s JSON (built on first use: the CLI
    starts without paying for it)."""
    found = _FORMS.get(kind)
    if found is None:
        found = _FORMS[kind] = TypeAdapter(kind)
    return found


def written(value: Forecast | RunForecast) -> dict[str, Any]:
    """``value`` as the plan file keeps it."""
    return form(type(value)).dump_python(value, mode="json", by_alias=True)


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
              durations: Mapping[str, tuple[int | None, DurationSource]], pricing: Pricing,
              policies: tuple[PolicyRule, ...], prices: Mapping[str, str],
              teams: Mapping[str, str] | None = None) -> Forecast:
    """``names``: allocation name -> the step it runs (shown by step id);
    ``teams``: step id -> its team (``Plan.team_of``); work of no step (an
    allocation written by hand) is its component's;
    ``durations``: step or allocation id -> (seconds, source)."""
    horizon = rolled.horizon
    steps = []
    for wait in rolled.waits:
        seconds, source = durations.get(wait.request.id, (None, UNKNOWN))
        if wait.outcome == "":
            raise AssertionError(f"the roll-forward left {wait.request.id} undecided")
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


def _sources(durations: Mapping[str, tuple[int | None, DurationSource]], rolled: Rolled) -> dict[str, int]:
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
