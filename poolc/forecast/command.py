"""What `poolc plan --forecast` adds to the command: the forecast or why there is
none (diagnostics with file and line, never a traceback), and the plan JSON with
its ``forecast`` beside the plan's own keys."""

from __future__ import annotations

from typing import Any

from ..commands.planning import PlanResult
from ..domain.plan import Plan
from ..report import render
from ..text import escape
from ..text.jsontext import dumps_sorted
from ..writer import read_text_or_why
from .compare import compare
from .compare import render_markdown as compare_markdown
from .compare import render_text as compare_text
from .costs import read_price_table
from .make import forecast_plan
from .render import render_markdown, render_text
from .saved import read_forecast
from .summary import Forecast


def forecast_or_diagnostics(result: PlanResult, horizon: int, prices_file: str | None,
                            start: str | None = None) -> tuple[Forecast | None, str]:
    """(the forecast, or None; the text to print on stderr). ``start``: the instant
    it starts at (the base plan's, so that base and head share one clock), else
    SOURCE_DATE_EPOCH or the clock."""
    override = None
    if prices_file is not None:
        text, why = read_text_or_why(prices_file)
        if text is None:
            return None, f"poolc: cannot read the instance price table {escape.text(prices_file)}: {why}\n"
        try:
            override = read_price_table(text, prices_file)
        except ValueError as exc:   # the file's own text: escaped for the log (##[, control characters)
            return None, f"{escape.text(str(exc))}\npoolc: no forecast: the instance price table is not valid\n"
    made = forecast_plan(result, horizon=horizon, instance_price_override=override, now=start)
    shown = render("text", list(made.diagnostics)) if made.diagnostics else ""
    if made.forecast is None:
        return None, shown + "poolc: no forecast: the inputs do not validate (see the errors above)\n"
    return made.forecast, shown


def base_forecast(data: Any) -> tuple[Forecast | None, str]:
    """The forecast a base plan file kept (``plan --forecast --out`` on the base
    branch), or None and why there is none: (forecast, the line to print)."""
    if not isinstance(data, dict) or "forecast" not in data:
        return None, ("poolc: the base plan has no forecast (plan the base branch with --forecast --out): "
                      "only this plan's forecast is shown\n")
    try:
        return read_forecast(data["forecast"]), ""
    except ValueError as exc:
        return None, f"poolc: the base plan: {exc}; only this plan's forecast is shown\n"


def with_forecast(plan: Plan, forecast: Forecast, base: Forecast | None = None) -> str:
    """The plan's JSON with ``forecast`` added (a plan file keeps it, for a later
    --base); with a base forecast, ``base.forecast`` and ``base.forecast_changes``
    (one row per team, as the comment's before/after table)."""
    data = {**plan.as_dict(), "forecast": forecast.as_dict()}
    if base is not None and "base" in data:
        data["base"] = {**data["base"], "forecast": base.as_dict(),
                        "forecast_changes": [row.as_dict() for row in compare(base, forecast)]}
    return dumps_sorted(data, ensure_ascii=False) + "\n"


def text_section(forecast: Forecast, base: Forecast | None) -> str:
    """The forecast under the text plan; with a base, the before/after table first.
    Names and notes come from the inputs (and a base plan file): escaped for a log."""
    forecast = escape.deep(forecast, escape.text)
    base = escape.deep(base, escape.text)
    shown = (compare_text(base, forecast) if base is not None else "") + render_text(forecast)
    return escape.guard_lines(shown)


def markdown_section(forecast: Forecast, base: Forecast | None) -> str:
    """The forecast for the comment: with a base, the short before/after table on
    top and this plan's own forecast folded under it. Strings from the inputs are
    made inert for Markdown first, as the plan's own sections are."""
    forecast = escape.deep(forecast, escape.md_inert)
    base = escape.deep(base, escape.md_inert)
    if base is None:
        return escape.guard_lines(render_markdown(forecast))
    return escape.guard_lines(compare_markdown(base, forecast) + "\n" + render_markdown(forecast, folded=True))
