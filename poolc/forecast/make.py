"""`poolc plan --forecast`: the forecast of a plan, made from what `plan` returned.

It refuses a plan whose inputs do not validate (the diagnostics say where), so
it never forecasts a platform that is only partly read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from ..commands.planning import PlanResult, resolve_now
from ..diagnostics import Diagnostic, has_errors
from ..domain.naming import allocation_name
from ..domain.plan import ALLOCATED, QUEUED
from ..domain.problem import Problem, Request
from ..inputs import request_of
from ..model import SageMakerComponent
from ..vocabulary import DurationSource
from .costs import PRICE_TABLE_DATE, PRICE_TABLE_SOURCE, instance_prices, pool_rates, sagemaker_rate
from .durations import SCENARIO, StepDuration, durations_of, too_long
from .rollforward import Replan, roll_forward
from .strategies import replanner
from .summary import Forecast, Pricing, summarize


@dataclass(frozen=True)
class Arriving:
    """A scenario's arrival: the step ``step`` of the inputs runs again as ``request``
    (its own id), arriving ``at`` seconds after the start, for ``seconds`` (None: unknown)."""

    at: int
    request: Request
    step: str
    seconds: int | None
    source: DurationSource


@dataclass(frozen=True)
class ForecastResult:
    forecast: Forecast | None
    diagnostics: tuple[Diagnostic, ...]     # why there is none (errors), or F-rule findings


def steps_of_allocations(result: PlanResult) -> dict[str, Request]:
    """Running allocation name -> the request of the step it runs (by apply's name
    for the step, or the allocation the plan found running it, e.g. one whose
    ``spec.step`` names the step): what it waits again as when preempted, with the
    step's GPU model, pools and pool_selector."""
    by_id = {r.id: r for r in result.validation.requests if r.requester is not None}
    found: dict[str, Request] = {}
    for planned in result.plan.requests:
        step = by_id.get(planned.id)
        if step is None:
            continue
        template = request_of(step, 0, dict(step.demand))
        found.setdefault(allocation_name(step.id), template)
        if planned.running:
            found[planned.running] = template
    return found


def forecast_plan(result: PlanResult, *, horizon: int, now: str | datetime | None = None,
                  instance_price_override: Mapping[str, float] | None = None,
                  replan: Replan | None = None, arrivals: Sequence[Arriving] = (),
                  durations: Mapping[str, int] | None = None) -> ForecastResult:
    """Roll ``result``'s plan forward for ``horizon`` seconds from ``now`` (default:
    SOURCE_DATE_EPOCH, else the clock). ``replan``: the strategy to plan again
    with (default: the plan's own). ``arrivals``: work arriving later (a
    scenario's); ``durations``: step id or allocation name -> seconds, over what
    the files say (a scenario's estimates, source ``scenario``)."""
    requests = result.validation.requests
    found = too_long(requests, horizon)
    errors = [x for x in result.validation.diagnostics if x.severity == "error"] + found
    if has_errors(errors):
        return ForecastResult(None, tuple(errors))
    t0 = resolve_now(now)
    config = result.validation.config
    plan = result.plan
    status = {r.id: r for r in plan.requests}
    waiting = {r.id for r in plan.requests if r.status == QUEUED or (r.status == ALLOCATED and r.pool is not None)}
    problem = result.problem
    managed = Problem(problem.pools, problem.policies, tuple(r for r in problem.requests if r.id in waiting),
                      problem.running)
    step_durations = durations_of(requests)
    steps = steps_of_allocations(result)
    for key, given in (durations or {}).items():
        step_durations[key] = StepDuration(given, SCENARIO)
        if key in {r.id for r in requests}:
            step_durations[allocation_name(key)] = step_durations[key]
    for name, step in steps.items():   # an allocation lasts as long as its step, whatever its name
        if step.id in step_durations:
            step_durations[name] = step_durations[step.id]
    for arriving in arrivals:
        step_durations[arriving.request.id] = StepDuration(arriving.seconds, arriving.source)
    seconds = {name: d.seconds for name, d in step_durations.items()}
    strategy = result.solution.strategy
    replan_notes: list[str] = []
    aliases = {a.request.id: a.step for a in arrivals}
    rolled = roll_forward(managed, result.solution, t0=t0, horizon=horizon, durations=seconds,
                          replan=replan or replanner(result, replan_notes, aliases),
                          bound_classes=strategy == "optimal", arrivals=[(a.at, a.request) for a in arrivals],
                          steps=steps, order={r.id: i for i, r in enumerate(requests)},
                          requeue_unknown=strategy == "kueue", partial=strategy != "zenml",
                          tiers_of_whole=replan is None and strategy == "optimal")
    rolled.notes.extend(replan_notes)
    names = {allocation_name(r.id): r.id for r in requests} | {name: step.id for name, step in steps.items()}
    prices = instance_prices(instance_price_override)
    components = {c.name: c for entry in config.stacks.values() for c in entry.obj.spec.step_operators}
    run_rates: dict[str, float] = {}
    for request in requests:
        component = components.get(request.requester or "")
        if isinstance(component, SageMakerComponent) and request.id in status:
            _, usd = sagemaker_rate(request, component, prices)
            if usd is not None:
                run_rates[request.id] = run_rates[allocation_name(request.id)] = usd
    pools = {name: rates for name, entry in sorted(config.pools.items())
             if (rates := pool_rates(entry.obj.spec.price)) is not None}
    forecast = summarize(
        rolled, strategy=strategy, start=t0.strftime("%Y-%m-%dT%H:%M:%SZ"), names=names,
        durations={name: (d.seconds, d.source) for name, d in step_durations.items()},
        pricing=Pricing(pools, run_rates), policies=problem.policies,
        teams={r.id: team for r in plan.requests if (team := plan.team_of(r.id)) is not None}
        | {a.request.id: team for a in arrivals if (team := plan.team_of(a.step)) is not None},
        prices={"source": PRICE_TABLE_SOURCE + (" and a table given by the user" if instance_price_override
                                                else ""), "date": PRICE_TABLE_DATE})
    return ForecastResult(forecast, tuple(found))
