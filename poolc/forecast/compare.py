"""Two forecasts side by side: what a change does to each team's waits and to the
bill (docs/forecast.md#before-and-after).

Differences in GPU-hours are scaled to a week, so forecasts over different horizons
compare. Money is not scaled: work of known duration costs what it costs inside
the horizon, once (a one-off 1-hour job is not a monthly bill), and work of
unknown duration is a rate per hour while it runs, never priced to the horizon.
"""

from __future__ import annotations

from dataclasses import dataclass

from .render import _table, money, when
from .summary import Forecast, Start, TeamForecast

WEEK = 7 * 86400


@dataclass(frozen=True)
class TeamChange:
    team: str
    p50: tuple[Start, Start]
    p90: tuple[Start, Start]
    waiting_per_week: float          # GPU-hours, after minus before
    lost_per_week: float
    usd: float | None                # work of known duration inside the horizon, after minus before
    usd_per_hour_unknown: float | None   # the hourly rate of work of unknown duration, after minus before

    def as_dict(self) -> dict:
        return {"team": self.team, "p50_start": {"before": self.p50[0], "after": self.p50[1]},
                "p90_start": {"before": self.p90[0], "after": self.p90[1]},
                "gpu_hours_waiting_per_week": self.waiting_per_week,
                "gpu_hours_lost_per_week": self.lost_per_week, "usd": self.usd,
                "usd_per_hour_unknown": self.usd_per_hour_unknown}


def _rate(value: float | None, horizon: int, period: int) -> float | None:
    return None if value is None else value * period / horizon


def _difference(before: float | None, after: float | None) -> float | None:
    """After minus before, in cents; None when neither is priced."""
    return None if before is None and after is None else round((after or 0.0) - (before or 0.0), 2)


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
        rows.append(TeamChange(team, (a.p50_start, b.p50_start), (a.p90_start, b.p90_start), round(waiting, 2),
                               round(lost, 2), _difference(a.usd, b.usd),
                               _difference(a.usd_per_hour_unknown, b.usd_per_hour_unknown)))
    return tuple(rows)


def _arrow(pair: tuple[Start, Start]) -> str:
    a, b = (when(x).removeprefix("in ") for x in pair)
    return a if a == b else f"{a} → {b}"


def _signed(value: float, unit: str) -> str:
    return "±0" if value == 0 else f"{value:+g} {unit}"


def _signed_money(value: float | None, per: str = "") -> str:
    if value is None or value == 0:
        return "±$0" + per
    return ("+" if value > 0 else "-") + money(abs(value)) + per


def spend_cell(usd: float | None, per_hour_unknown: float | None) -> str:
    """Known work's cost inside the horizon, and the hourly rate of work of unknown
    duration beside it (never priced to the horizon); - when nothing is priced."""
    if usd is None and per_hour_unknown is None:
        return "-"
    cell = _signed_money(usd)
    if per_hour_unknown:
        cell += f", {_signed_money(per_hour_unknown, '/h')} while unknown-length work runs"
    return cell


HEAD = ("team", "p50 start", "p90 start", "waiting", "lost to preemption", "spend in the horizon")


def cells(row: TeamChange) -> tuple[str, ...]:
    return (row.team, _arrow(row.p50), _arrow(row.p90), _signed(row.waiting_per_week, "GPU-h/week"),
            _signed(row.lost_per_week, "GPU-h/week"), spend_cell(row.usd, row.usd_per_hour_unknown))


# characters of the before/after table in the comment (GitHub's comment holds 65,536;
# the plan's own sections have their budget, poolc.report.plan_markdown.BUDGET)
TABLE_BUDGET = 12_000


def render_markdown(before: Forecast, after: Forecast) -> str:
    """The before/after table of the pull-request comment."""
    rows = compare(before, after)
    lines = ["#### Forecast: before → after", "",
             f"before: the base plan's forecast; after: this plan's (both `{after.strategy}`, horizon "
             f"{when(after.horizon).removeprefix('in ')})", ""]
    table = _table(HEAD, [cells(r) for r in rows])
    kept, used = table[:2], sum(len(x) + 1 for x in table[:2])   # the header and its rule
    for line in table[2:]:
        if used + len(line) + 1 > TABLE_BUDGET:
            break
        kept.append(line)
        used += len(line) + 1
    lines += kept
    if len(kept) < len(table):   # #42: 3,000 teams made a 240 KB table, past the comment's size
        lines += ["", f"_{len(table) - len(kept)} more teams not shown; `--format json` lists every team._"]
    return "\n".join(lines) + "\n"


def render_text(before: Forecast, after: Forecast) -> str:
    rows = [HEAD, *(cells(r) for r in compare(before, after))]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD))]
    lines = ["", "Forecast, before -> after (the base plan, then this one)"]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(lines) + "\n"
