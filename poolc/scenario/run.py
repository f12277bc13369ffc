"""One scenario, rolled forward: its start (the inputs' allocations or a state
file, at a fixed instant), the plan of that start with the chosen strategy, and
the forecast with the scenario's arrivals and duration estimates. No clock is
read: a scenario without a start time starts when its last running allocation
started, so the same files give the same bytes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime

from ..commands.planning import (
    PlanResult,
    Validation,
    decide,
    decide_strategy,
    load_strategy,
    prepare,
    result_of,
    with_sections,
)
from ..config import Entry, display_units
from ..diagnostics import Diagnostic
from ..domain.amounts import DEFAULT, Units
from ..forecast.make import Arriving, forecast_plan
from ..forecast.summary import Forecast
from ..model import Scenario, parse_timestamp
from ..state.records import StateRead, read_state
from ..vocabulary import Strategy
from .arrivals import expand, seconds

# when nothing runs and no time is written, the start is only a label
NO_CLOCK = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Rolled:
    """A scenario's forecast and what the judge needs beside it."""

    entry: Entry[Scenario]
    forecast: Forecast | None
    arrivals: tuple[Arriving, ...]
    capacity: dict[str, dict[str, int]]          # pool -> key -> units
    diagnostics: tuple[Diagnostic, ...]          # why there is no forecast, or the state file's problems
    units: Units = DEFAULT                       # how the platform writes quantities (memory's unit family)


def state_of(entry: Entry[Scenario]) -> tuple[StateRead, str]:
    """The state the scenario starts from: its state file (relative to the scenario's
    file), or none (only the inputs' Allocation documents run)."""
    folder = os.path.dirname(entry.doc.file)
    written = entry.obj.spec.start.state
    if written is None:
        return StateRead([], {}, None, [], missing=True), os.path.join(folder, "poolc.state.json")
    path = os.path.normpath(os.path.join(folder, written))
    return read_state(path), path


def start_of(entry: Entry[Scenario], result: PlanResult) -> datetime:
    written = entry.obj.spec.start.time
    if written is not None:
        return parse_timestamp(written)
    started = [a.started_at for a in result.problem.running if a.started_at is not None]
    return max(started) if started else NO_CLOCK


def plan_start(validation: Validation, entry: Entry[Scenario], strategy: Strategy) -> PlanResult | StateRead:
    """The plan of the scenario's start, or the state that could not be read."""
    state, state_path = state_of(entry)
    if not state.ok:
        return state
    prepared = prepare(validation, state, state_path)
    solve = load_strategy("optimal" if strategy == "kueue" else strategy)
    solution = decide_strategy(prepared, strategy, solve, None)
    plan = with_sections(prepared, decide(prepared, solution), None)
    return result_of(prepared, solution, plan)


def roll(validation: Validation, entry: Entry[Scenario], strategy: Strategy) -> Rolled:
    spec = entry.obj.spec
    started = plan_start(validation, entry, strategy)
    if isinstance(started, StateRead):
        return Rolled(entry, None, (), {}, tuple(started.diagnostics))
    result = started
    durations = {key: seconds(value) for key, value in spec.durations.items()}
    arrivals = tuple(expand(spec.arrivals, validation.requests, durations))
    made = forecast_plan(result, horizon=seconds(spec.horizon), now=start_of(entry, result), arrivals=arrivals,
                         durations=durations)
    capacity = {p.name: dict(p.capacity) for p in result.problem.pools}
    return Rolled(entry, made.forecast, arrivals, capacity, made.diagnostics, display_units(validation.config))
