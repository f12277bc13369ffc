"""What `poolc plan --forecast` adds to the command: the forecast or why there is
none (diagnostics with file and line, never a traceback), and the plan JSON with
its ``forecast`` beside the plan's own keys."""

from __future__ import annotations

from ..domain.plan import Plan
from ..jsontext import dumps_sorted
from ..plan import PlanResult
from ..report import render
from ..writer import read_regular
from .costs import read_price_table
from .make import forecast_plan
from .summary import Forecast


def forecast_or_diagnostics(result: PlanResult, horizon: int, prices_file: str | None) -> tuple[Forecast | None, str]:
    """(the forecast, or None; the text to print on stderr)."""
    override = None
    if prices_file is not None:
        text = read_regular(prices_file)
        if text is None:
            return None, f"poolc: cannot read the instance price table {prices_file}\n"
        try:
            override = read_price_table(text, prices_file)
        except ValueError as exc:
            return None, f"{exc}\npoolc: no forecast: the instance price table is not valid\n"
    made = forecast_plan(result, horizon=horizon, instance_price_override=override)
    shown = render("text", list(made.diagnostics)) if made.diagnostics else ""
    if made.forecast is None:
        return None, shown + "poolc: no forecast: the inputs do not validate (see the errors above)\n"
    return made.forecast, shown


def with_forecast(plan: Plan, forecast: Forecast) -> str:
    """The plan's JSON with ``forecast`` added (a plan file keeps it, for a later --base)."""
    return dumps_sorted({**plan.as_dict(), "forecast": forecast.as_dict()}, ensure_ascii=False) + "\n"
