"""A forecast read back from a plan file, for `plan --base --forecast`.

A plan written with `--forecast --out` keeps its ``forecast``; the base branch's
plan file is how the base forecast reaches the pull request's plan (the base's
inputs are not there to forecast again). The file is poolc's own output but
arrives from another job, so it is validated as untrusted input: a bad one is a
one-line reason, never a traceback.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .summary import Forecast, IdleShare, RunForecast, StepForecast, TeamForecast

# every number bounded (seconds: about 31,700 years), so nothing read overflows a float,
# a datetime or a table's width later (#42: a horizon of 10^400 exited 3)
BOUND = 10**12
Seconds = Annotated[int, Field(ge=-BOUND, le=BOUND)]
NonNegative = Annotated[int, Field(ge=0, le=BOUND)]
Late = Literal["after-horizon", "never", "stopped"]
Hours = Annotated[float, Field(ge=0, le=BOUND, allow_inf_nan=False)]
Money = Annotated[float, Field(ge=-BOUND, le=BOUND, allow_inf_nan=False)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class _Step(_Model):
    id: str
    team: str
    gpu: NonNegative
    waiting_since: Seconds
    preempted: bool
    start: Seconds | Late
    duration: NonNegative | None
    duration_source: str


class _Team(_Model):
    team: str
    queued: NonNegative
    p50_start: Seconds | Late | None
    p90_start: Seconds | Late | None
    drained: Seconds | Late | None
    gpu_hours_admitted: Hours
    gpu_hours_waiting: Hours
    gpu_hours_lost: Hours
    usd: Money | None
    usd_per_hour_unknown: Money | None = None
    unknown_runs: NonNegative = 0


class _Idle(_Model):
    policy: str
    pool: str
    gpu_hours_idle: Hours
    usd_idle: Money | None


class _Run(_Model):
    id: str
    team: str
    pool: str
    policy: str | None
    holds: dict[str, NonNegative]
    start: Seconds
    end: Seconds | Literal["unknown"]
    preempted_at: Seconds | None


class _Forecast(_Model):
    strategy: str
    start: Annotated[str, Field(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")]
    horizon: Annotated[int, Field(gt=0, le=BOUND)]
    steps: list[_Step]
    teams: list[_Team]
    idle_reserved: list[_Idle]
    durations: dict[str, NonNegative]
    price_table: dict[str, str]
    replans: NonNegative = 0
    events: NonNegative = 0
    notes: list[str] = []
    schedule: list[_Run] = []


def read_forecast(data: Any) -> Forecast:
    """The Forecast a plan file's ``forecast`` holds; ValueError says what is wrong."""
    try:
        model = _Forecast.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"its forecast is not one poolc writes: {where or 'forecast'}: {first['msg']}") from None
    try:
        datetime.strptime(model.start, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise ValueError(f"its forecast is not one poolc writes: start: {model.start!r} is no instant") from None
    steps = tuple(StepForecast(s.id, s.team, s.gpu, s.waiting_since, s.preempted,
                               s.start if isinstance(s.start, int) else None,
                               "started" if isinstance(s.start, int) else s.start, s.duration, s.duration_source)
                  for s in model.steps)
    teams = tuple(TeamForecast(t.team, t.queued, t.p50_start, t.p90_start, t.drained, t.gpu_hours_admitted,
                               t.gpu_hours_waiting, t.gpu_hours_lost, t.usd, t.usd_per_hour_unknown,
                               t.unknown_runs) for t in model.teams)
    idle = tuple(IdleShare(x.policy, x.pool, x.gpu_hours_idle, x.usd_idle) for x in model.idle_reserved)
    schedule = tuple(RunForecast(r.id, r.team, r.pool, r.policy, dict(r.holds), r.start,
                                 None if r.end == "unknown" else r.end, r.preempted_at) for r in model.schedule)
    return Forecast(model.strategy, model.start, model.horizon, steps, teams, idle, dict(model.durations),
                    dict(model.price_table), model.replans, model.events, tuple(model.notes), schedule)
