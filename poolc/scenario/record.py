"""`poolc test --record FILE`: a scenario of today's plan and forecast, with the
expectations it meets now (each waiting step's start, who is never preempted, each
team's GPU-hours admitted, each GPU pool's utilisation, the preemption loop), for a
team to trim to what must stay true (as `kyverno create test` writes a test)."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable

from ..commands.planning import load
from ..config import Entry
from ..forecast.make import forecast_plan
from ..load import load_text
from ..model import Scenario
from ..report import render
from ..vocabulary import Strategy
from .arrivals import clock
from .judge import utilisation
from .run import plan_start, start_of

PLACEHOLDER = """apiVersion: poolc/v1
kind: Scenario
metadata: {name: recorded}
spec:
  expect:
    - no_preemption_loop: {}
"""


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)   # a JSON string is a YAML 1.2 flow scalar


def _within(seconds: int) -> str:
    """A bound a little above a start: the next whole minute (at least 1 minute)."""
    return f"{max(1, math.ceil((seconds + 1) / 60))}m"


def record_scenario(paths: Iterable[str], strategy: Strategy, horizon: int, target: str) -> tuple[str | None, str]:
    """(the scenario's YAML, a summary) or (None, why not)."""
    validation = load(list(paths))
    errors = [x for x in validation.diagnostics if x.severity == "error"]
    if errors:
        return None, render("text", errors) + "poolc: nothing recorded: the inputs do not validate\n"
    stub = load_text(os.path.abspath(target), PLACEHOLDER)[0][0]
    entry = Entry(Scenario.model_validate(stub.data), stub)
    result = plan_start(validation, entry, strategy)
    if not hasattr(result, "problem"):
        return None, "poolc: nothing recorded: the state could not be read\n"
    t0 = start_of(entry, result)   # type: ignore[arg-type]
    made = forecast_plan(result, horizon=horizon, now=t0)   # type: ignore[arg-type]
    forecast = made.forecast
    if forecast is None:
        return None, render("text", list(made.diagnostics)) + "poolc: nothing recorded: no forecast\n"
    name = os.path.splitext(os.path.basename(target))[0].lower()
    name = "".join(c if c.isalnum() else "-" for c in name).strip("-")[:63] or "recorded"
    expect: list[str] = []
    for step in forecast.steps:
        if step.preempted or "/" not in step.id:
            continue
        if step.outcome == "started" and step.start is not None:
            expect.append(f"    - starts_within: {{step: {step.id}, within: {_within(step.start - step.since)}}}")
    preempted = {r.id for r in forecast.schedule if r.preempted_at is not None}
    for run_id in sorted({r.id for r in forecast.schedule} - preempted):
        expect.append(f"    - never_preempted: {{step: {run_id}}}")
    for team in forecast.teams:
        if team.gpu_hours_admitted >= 1:
            expect.append(f"    - gpu_hours: {{team: {_q(team.team)}, measure: admitted, "
                          f"at_least: {math.floor(team.gpu_hours_admitted)}}}")
    for pool in result.problem.pools:       # type: ignore[union-attr]
        gpus = pool.capacity.get("gpu", 0)
        if gpus:
            share = math.floor(100 * utilisation(forecast, pool.name, "gpu", gpus))
            if share >= 1:
                expect.append(f"    - utilisation: {{pool: {pool.name}, at_least: {share}%}}")
    runs: dict[str, int] = {}
    for r in forecast.schedule:
        runs[r.id] = runs.get(r.id, 0) + 1
    most = max((n - 1 for n in runs.values()), default=0)
    expect.append(f"    - no_preemption_loop: {{max_readmissions: {most}}}")
    text = "\n".join([
        f"# Recorded by `poolc test --record` with strategy {strategy}: the expectations today's plan and",
        "# forecast meet. Keep those that must stay true, add arrivals, and delete the rest.",
        "apiVersion: poolc/v1",
        "kind: Scenario",
        "metadata:",
        f"  name: {name}",
        "spec:",
        "  start:",
        f"    time: {t0.strftime('%Y-%m-%dT%H:%M:%SZ')}",
        f"  horizon: {clock(horizon) if re.fullmatch(r'[1-9][0-9]*[smhd]', clock(horizon)) else horizon}",
        "  expect:",
        *expect]) + "\n"
    return text, f"{len(expect)} expectations from the plan of {len(validation.files)} files"
