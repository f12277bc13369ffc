"""Two forecasts side by side: what a change does to each team's waits and to the
bill (docs/forecast.md#before-and-after).

Differences in hours and money are scaled to a common period (GPU-hours per
week, dollars per 30 days) so forecasts over different horizons compare.
"""

from __future__ import annotations

from dataclasses import dataclass

from .render import _table, money, when
from .summary import Forecast, Start, TeamForecast

WEEK, MONTH = 7 * 86400, 30 * 86400


@dataclass(frozen=True)
class TeamChange:
    team: str
    p50: tuple[Start, Start]
    p90: tuple[Start, Start]
    waiting_per_week: float          # GPU-hours, after minus before
    lost_per_week: float
    usd_per_month: float | None      # after minus before; None when neither is priced

    def as_dict(self) -> dict:
        return {"team": self.team, "p50_start": {"before": self.p50[0], "after": self.p50[1]},
                "p90_start": {"before": self.p90[0], "after": self.p90[1]},
                "gpu_hours_waiting_per_week": self.waiting_per_week,
                "gpu_hours_lost_per_week": self.lost_per_week, "usd_per_month": self.usd_per_month}


def _rate(value: float | None, horizon: int, period: int) -> float | None:
    return None if value is None else value * period / horizon


def compare(before: Forecast, after: Forecast) -> tuple[TeamChange, ...]:
    """One row per team in either forecast, by name."""
    old = {t.team: t for t in before.teams}
    new = {t.team: t for t in after.teams}
    empty = TeamForecast("", 0, None, None, None, 0.0, 0.0, 0.0, None)
    rows = []
    for team in sorted(old.keys() | new.keys()):
        a, b = old.get(team, empty), new.get(team, empty)
        waiting = (_rate(b.gpu_hours_waiting, after.horizon, WEEK) or 0.0) - \
            (_rate(a.gpu_hours_waiting, before.horizon, WEEK) or 0.0)
        lost = (_rate(b.gpu_hours_lost, after.horizon, WEEK) or 0.0) - \
            (_rate(a.gpu_hours_lost, before.horizon, WEEK) or 0.0)
        usd_a, usd_b = _rate(a.usd, before.horizon, MONTH), _rate(b.usd, after.horizon, MONTH)
        usd = None if usd_a is None and usd_b is None else (usd_b or 0.0) - (usd_a or 0.0)
        rows.append(TeamChange(team, (a.p50_start, b.p50_start), (a.p90_start, b.p90_start), round(waiting, 2),
                               round(lost, 2), None if usd is None else round(usd, 2)))
    return tuple(rows)


def _arrow(pair: tuple[Start, Start]) -> str:
    a, b = (when(x).removeprefix("in ") for x in pair)
    return a if a == b else f"{a} → {b}"


def _signed(value: float, unit: str) -> str:
    return "±0" if value == 0 else f"{value:+g} {unit}"


def _signed_money(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "±$0/month"
    return ("+" if value > 0 else "-") + money(abs(value)) + "/month"


HEAD = ("team", "p50 start", "p90 start", "waiting", "lost to preemption", "spend")


def cells(row: TeamChange) -> tuple[str, ...]:
    return (row.team, _arrow(row.p50), _arrow(row.p90), _signed(row.waiting_per_week, "GPU-h/week"),
            _signed(row.lost_per_week, "GPU-h/week"), _signed_money(row.usd_per_month))


def render_markdown(before: Forecast, after: Forecast) -> str:
    """The before/after table of the pull-request comment."""
    rows = compare(before, after)
    lines = ["#### Forecast: before → after", "",
             f"before: the base plan's forecast; after: this plan's (both `{after.strategy}`, horizon "
             f"{when(after.horizon).removeprefix('in ')})", ""]
    lines += _table(HEAD, [cells(r) for r in rows])
    return "\n".join(lines) + "\n"


def render_text(before: Forecast, after: Forecast) -> str:
    rows = [HEAD, *(cells(r) for r in compare(before, after))]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD))]
    lines = ["", "Forecast, before -> after (the base plan, then this one)"]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(lines) + "\n"
