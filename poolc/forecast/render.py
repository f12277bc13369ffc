"""The forecast in words: a text section under the plan, and a markdown section
for the pull-request comment (a short table near the top, the details folded).
"""

from __future__ import annotations

from ..text.escape import md_code
from .summary import Forecast, Start, StepForecast, TeamForecast, start_order


def when(start: Start) -> str:
    """A start in words: now, in 2 h 30 min, after the horizon, never, or - (nothing waits)."""
    if start is None:
        return "-"
    if start == "after-horizon":
        return "after the horizon"
    if start == "never":
        return "never"
    if start == "stopped":
        return "stopped for good"
    assert isinstance(start, int)
    return "now" if start <= 0 else f"in {span(start)}"


def span(seconds: int) -> str:
    """A length of time, two units at most: 45 s, 12 min, 4 h 5 min, 2 d 3 h."""
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h" + (f" {minutes} min" if minutes else "")
    days, hours = divmod(hours, 24)
    return f"{days} d" + (f" {hours} h" if hours else "")


def money(usd: float | None) -> str:
    if usd is None:
        return "-"
    if abs(usd) >= 10_000:
        return f"${usd / 1000:,.1f}k"
    return f"${usd:,.2f}"


def _duration_words(forecast: Forecast) -> str:
    counts = forecast.durations
    parts = [f"{counts[k]} {k}" for k in ("expected_runtime", "max_runtime", "unknown") if counts.get(k)]
    return "durations from " + ", ".join(parts) if parts else "no durations"


def headline(forecast: Forecast) -> str:
    return (f"strategy `{forecast.strategy}` from {forecast.start}, horizon {span(forecast.horizon)}; "
            f"{_duration_words(forecast)}; the queue drains {when(forecast.drained)}")


TEAM_HEAD = ("team", "steps", "p50 start", "p90 start", "drains", "GPU-h admitted", "GPU-h waiting",
             "GPU-h lost", "spend")


def spend(t: TeamForecast) -> str:
    """Known work's cost inside the horizon; work of unknown duration as a rate per
    hour, never priced to the horizon."""
    if t.usd_per_hour_unknown is None:
        return money(t.usd)
    known = "" if t.usd is None else money(t.usd) + " + "
    return f"{known}{money(t.usd_per_hour_unknown)}/h for {t.unknown_runs} of unknown length"


def team_cells(t: TeamForecast) -> tuple[str, ...]:
    return (t.team, str(t.queued), when(t.p50_start), when(t.p90_start), when(t.drained),
            f"{t.gpu_hours_admitted:g}", f"{t.gpu_hours_waiting:g}", f"{t.gpu_hours_lost:g}", spend(t))


def step_words(s: StepForecast) -> str:
    start = when(s.start if s.start is not None else s.outcome)
    duration = f"runs {span(s.duration)} ({s.duration_source})" if s.duration else "duration unknown"
    if s.outcome == "stopped":
        return f"preempted {when(s.since)} and stopped for good: it runs no step, so nothing runs it again"
    if s.preempted:
        return f"preempted {when(s.since)}, runs again {start}; {duration}"
    return f"starts {start}; {duration}"


def render_text(forecast: Forecast) -> str:
    lines = ["", f"Forecast ({headline(forecast).replace('`', '')})"]
    rows = [TEAM_HEAD, *(team_cells(t) for t in forecast.teams)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(TEAM_HEAD))]
    for row in rows:
        lines.append("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                                      enumerate(zip(row, widths, strict=True))).rstrip())
    if forecast.idle:
        lines.append("Reserved but idle over the horizon")
        for x in forecast.idle:
            lines.append(f"  policy {x.policy} on {x.pool}: {x.gpu_hours:g} GPU-h idle"
                         + (f", {money(x.usd)} paid but idle" if x.usd is not None else ""))
    if forecast.steps:
        lines.append("Waiting steps")
        width = max(len(s.id) for s in forecast.steps)
        for s in forecast.steps:
            lines.append(f"  {s.id.ljust(width)}  {step_words(s)}")
    for note in forecast.notes:
        lines.append(f"  note: {note}")
    return "\n".join(lines) + "\n"


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return lines


# Waiting steps listed in the comment at most: the plan's own sections share
# GitHub's 65,536-character budget, so the forecast keeps to a few thousand.
MARKDOWN_STEPS = 50


def render_markdown(forecast: Forecast, max_steps: int = MARKDOWN_STEPS, folded: bool = False) -> str:
    """The forecast section of the pull-request comment: the team table, then the
    idle shares and the waiting steps (the latest starts first) folded.
    ``folded``: the team table goes in the fold too (under a before/after table)."""
    team_table = _table(TEAM_HEAD, [team_cells(t) for t in forecast.teams])
    lines = ["#### Forecast", "", headline(forecast)]
    if not folded:
        lines += ["", *team_table]
    details: list[str] = ["", *team_table] if folded else []
    if forecast.idle:
        details += ["", *_table(("policy", "pool", "GPU-h idle", "paid but idle"),
                                [(x.policy, x.pool, f"{x.gpu_hours:g}", money(x.usd)) for x in forecast.idle])]
    if forecast.steps:
        latest = sorted(forecast.steps, reverse=True, key=lambda s: (
            start_order(s.start if s.start is not None else s.outcome), s.id))[:max_steps]
        shown = [s for s in forecast.steps if s in latest]
        details += ["", *_table(("step", "team", "gpu", "forecast"),
                                [(md_code(s.id), s.team, str(s.gpu), step_words(s)) for s in shown])]
        if len(shown) < len(forecast.steps):
            details.append(f"\n_{len(forecast.steps) - len(shown)} more waiting steps, starting earlier, not shown "
                           "to stay under GitHub's comment size; `poolc plan --forecast --format json` lists all_")
    details += [f"- note: {n}" for n in forecast.notes]
    if details:
        summary = ("This plan's forecast per team, every waiting step, and reserved shares left idle" if folded
                   else "Every waiting step, and reserved shares left idle")
        lines += ["", f"<details><summary>{summary}</summary>", *details, "", "</details>"]
    return "\n".join(lines) + "\n"
