"""Each expectation of a scenario against its forecast: pass or fail, in words,
with the timeline that decided it (what ran where and when). Judged on the
forecast's schedule (every stretch of work, its pool, start, end and preemption)
and its waiting steps; docs/scenarios.md#how-expectations-are-judged."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..domain.amounts import key_word
from ..forecast.render import span
from ..forecast.summary import Forecast, RunForecast, StepForecast
from ..model import Expectation
from .arrivals import seconds
from .run import Rolled


@dataclass(frozen=True)
class Verdict:
    index: int                    # its place in spec.expect
    title: str                    # the expectation in words
    passed: bool
    reason: str                   # what was found
    timeline: tuple[str, ...]     # the lines that decided it
    measured: str = ""            # the value found, for the base-versus-head comparison


def at(seconds_: int) -> str:
    """An instant of the scenario in words: +0 s, +2 h 30 min, -1 h (before the start)."""
    return f"+{span(seconds_)}" if seconds_ >= 0 else f"-{span(-seconds_)}"


def instances(rolled: Rolled, ref: str) -> list[str]:
    """The ids of ``ref``'s runs: the step (or allocation) itself and each arrival of it."""
    assert rolled.forecast is not None
    ids = {r.id for r in rolled.forecast.schedule} | {s.id for s in rolled.forecast.steps}
    return sorted(i for i in ids if i == ref or i.startswith(ref + "@"))


def arrived(rolled: Rolled, rid: str) -> int:
    found = next((a.at for a in rolled.arrivals if a.request.id == rid), None)
    return 0 if found is None else found


def stretches(forecast: Forecast, rid: str) -> list[RunForecast]:
    return [r for r in forecast.schedule if r.id == rid]


def waits(forecast: Forecast, rid: str) -> list[StepForecast]:
    return [s for s in forecast.steps if s.id == rid]


def timeline(forecast: Forecast, rid: str, since: int | None = None) -> list[str]:
    """What happened to one run, in time order."""
    events: list[tuple[int, int, str]] = []
    if since is not None and since > 0:
        events.append((since, 0, f"{at(since)} {rid} arrives"))
    for s in waits(forecast, rid):
        if s.outcome != "started":
            words = {"after-horizon": "still waits at the horizon", "never": "never starts: nothing that could "
                     "make room for it ends", "stopped": "is stopped for good"}[s.outcome]
            events.append((s.since, 1, f"{at(s.since)} {rid} {'(preempted) ' if s.preempted else ''}{words}"))
    for r in stretches(forecast, rid):
        end = "end unknown" if r.end is None else f"would end {at(r.end)}"
        events.append((r.start, 2, f"{at(r.start)} {rid} runs on {r.pool}"
                       f"{f' (policy {r.policy})' if r.policy else ''}, {end}"))
        if r.preempted_at is not None:
            events.append((r.preempted_at, 3, f"{at(r.preempted_at)} {rid} is preempted on {r.pool}"))
        elif r.end is not None and r.end <= forecast.horizon:
            events.append((r.end, 3, f"{at(r.end)} {rid} finishes"))
    return [line for _, _, line in sorted(events)]


def state_at(forecast: Forecast, rid: str, when: int, since: int) -> str:
    if when < since:
        return "not arrived"
    runs = sorted((r for r in stretches(forecast, rid) if r.start <= when), key=lambda r: r.start)
    if any(r.holds_at(when) for r in runs):
        return "running"
    if not runs:
        return "queued"
    last = runs[-1]
    return "preempted" if last.preempted_at is not None and last.preempted_at <= when else "finished"


def judge(rolled: Rolled) -> list[Verdict]:
    assert rolled.forecast is not None
    return [_judge(rolled, i, e) for i, e in enumerate(rolled.entry.obj.spec.expect)]


def _judge(rolled: Rolled, index: int, expectation: Expectation) -> Verdict:
    kind = expectation.kind
    body = getattr(expectation, kind)
    return JUDGES[kind](rolled, index, body)


def _missing(index: int, title: str, ref: str) -> Verdict:
    return Verdict(index, title, False, f"{ref} never appears in the scenario: it neither runs nor waits "
                   "(a finished or rejected step, or an allocation that is not there)", ())


def _state(rolled: Rolled, index: int, body: Any) -> Verdict:
    forecast = rolled.forecast
    assert forecast is not None
    when = seconds(body.at)
    title = f"{body.step} is {body.state} at {at(when)}"
    runs = [(arrived(rolled, rid), rid) for rid in instances(rolled, body.step)]
    if not runs:
        return _missing(index, title, body.step)
    since, rid = max((s, r) for s, r in runs if s <= when) if any(s <= when for s, _ in runs) else min(runs)
    found = state_at(forecast, rid, when, since)
    lines = tuple(line for line in timeline(forecast, rid, since))
    return Verdict(index, title, found == body.state, f"{rid} is {found} at {at(when)}", lines, found)


def _starts(rolled: Rolled, index: int, body: Any) -> Verdict:
    forecast = rolled.forecast
    assert forecast is not None
    bound = seconds(body.within)
    title = f"{body.step} starts within {span(bound)}"
    ids = instances(rolled, body.step)
    if not ids:
        return _missing(index, title, body.step)
    worst: tuple[int, str, str] | None = None     # (wait, run id, words)
    for rid in ids:
        since = arrived(rolled, rid)
        first = [s for s in waits(forecast, rid) if not s.preempted]
        if not first:
            continue   # running at the start: it started before
        wait = first[0]
        if wait.outcome == "started" and wait.start is not None:
            took, words = wait.start - since, f"starts {at(wait.start)}, {span(wait.start - since)} after it arrived"
        else:
            took = forecast.horizon + 1
            words = "never starts" if wait.outcome == "never" else "has not started at the horizon"
        if worst is None or took > worst[0]:
            worst = (took, rid, words)
    if worst is None:
        return Verdict(index, title, True, f"{body.step} runs from the start", (), "0")
    took, rid, words = worst
    measured = span(took) if took <= forecast.horizon else "never"
    since = arrived(rolled, rid)
    lines = timeline(forecast, rid, since) + (ahead(forecast, rid, since) if took > bound else [])
    return Verdict(index, title, took <= bound, f"{rid} {words}", _capped(lines, 20), measured)


def ahead(forecast: Forecast, rid: str, since: int) -> list[str]:
    """Why a run waited: the work that started on its pool while it waited (it took
    the room first), or, when it never started, what holds the pools it waited for."""
    mine = sorted(stretches(forecast, rid), key=lambda r: r.start)
    if mine:
        pool, start = mine[0].pool, mine[0].start
        took = [r for r in forecast.schedule if r.pool == pool and r.id != rid and since <= r.start < start]
        if not took:
            return [f"meanwhile {pool} was full with work that started before it arrived"]
        return [f"meanwhile on {pool}: {r.id} started {at(r.start)} ({r.holds.get('gpu', 0)} GPU"
                f"{', re-admitted after a preemption' if _readmitted(forecast, r) else ''})" for r in took]
    return ["it did not start: nothing that could make room for it ends within the horizon"
            if any(s.outcome == "never" for s in waits(forecast, rid)) else
            "it did not start before the horizon"]


def _readmitted(forecast: Forecast, run: RunForecast) -> bool:
    return any(r.id == run.id and r.preempted_at is not None and r.preempted_at <= run.start
               for r in forecast.schedule)


def _never_preempted(rolled: Rolled, index: int, body: Any) -> Verdict:
    forecast = rolled.forecast
    assert forecast is not None
    title = f"{body.step} is never preempted"
    ids = instances(rolled, body.step)
    if not ids:
        return _missing(index, title, body.step)
    hit = [(r.preempted_at, r.id, r.pool) for rid in ids for r in stretches(forecast, rid)
           if r.preempted_at is not None]
    if not hit:
        return Verdict(index, title, True, f"no run of {body.step} is preempted", (), "0")
    when, rid, pool = min(hit)
    return Verdict(index, title, False, f"{rid} is preempted on {pool} at {at(when)}"
                   + (f" ({len(hit)} preemptions in all)" if len(hit) > 1 else ""),
                   tuple(timeline(forecast, rid, arrived(rolled, rid))), str(len(hit)))


def _bounds(value: float, low: float | None, high: float | None, unit: str) -> tuple[bool, str]:
    words = " and ".join(w for w in (f"at least {low:g}{unit}" if low is not None else "",
                                     f"at most {high:g}{unit}" if high is not None else "") if w)
    return (low is None or value >= low) and (high is None or value <= high), words


def _gpu_hours(rolled: Rolled, index: int, body: Any) -> Verdict:
    forecast = rolled.forecast
    assert forecast is not None
    row = next((t for t in forecast.teams if t.team == body.team), None)
    value = 0.0 if row is None else getattr(row, f"gpu_hours_{body.measure}")
    ok, words = _bounds(value, body.at_least, body.at_most, " GPU-h")
    title = f"team {body.team}: GPU-hours {body.measure} {words} over {span(forecast.horizon)}"
    shown = tuple(_stretch_line(r) for r in forecast.schedule if r.team == body.team)
    return Verdict(index, title, ok, f"{value:g} GPU-h {body.measure}" + ("" if row else " (the team has no work)"),
                   _capped(shown), f"{value:g} GPU-h")


def _stretch_line(r: RunForecast) -> str:
    stop = r.preempted_at if r.preempted_at is not None else r.end
    how = "preempted" if r.preempted_at is not None else "ends" if r.end is not None else "end unknown"
    gpu = r.holds.get("gpu", 0)
    return f"{at(r.start)} .. {at(stop) if stop is not None else '...'} {r.id} on {r.pool}, {gpu} GPU ({how})"


def _capped(lines: Iterable[str], most: int = 12) -> tuple[str, ...]:
    shown = list(lines)
    if len(shown) > most:
        return (*shown[:most], f"... and {len(shown) - most} more stretches (--format json lists them all)")
    return tuple(shown)


def utilisation(forecast: Forecast, pool: str, key: str, capacity: int) -> float:
    """Units of ``key`` held on ``pool`` over [0, horizon], as a share of capacity x horizon."""
    if capacity <= 0 or forecast.horizon <= 0:
        return 0.0
    held = 0
    for r in forecast.schedule:
        if r.pool != pool:
            continue
        stop = r.preempted_at if r.preempted_at is not None else r.end
        stop = forecast.horizon if stop is None else min(stop, forecast.horizon)
        held += r.holds.get(key, 0) * max(0, stop - max(r.start, 0))
    return held / (capacity * forecast.horizon)


def _utilisation(rolled: Rolled, index: int, body: Any) -> Verdict:
    forecast = rolled.forecast
    assert forecast is not None
    capacity = rolled.capacity.get(body.pool, {}).get(body.key, 0)
    share = round(100 * utilisation(forecast, body.pool, body.key, capacity), 1)
    low = float(body.at_least[:-1]) if body.at_least else None
    high = float(body.at_most[:-1]) if body.at_most else None
    ok, words = _bounds(share, low, high, "%")
    title = f"pool {body.pool}: {key_word(body.key)} utilisation {words} over {span(forecast.horizon)}"
    reason = f"{share:g}% of {rolled.units.amount(body.key, capacity)} held on average" if capacity else \
        f"{body.pool} has no {key_word(body.key)} capacity: its utilisation is 0%"
    shown = _capped(_stretch_line(r) for r in forecast.schedule if r.pool == body.pool)
    return Verdict(index, title, ok, reason, shown, f"{share:g}%")


def _no_loop(rolled: Rolled, index: int, body: Any) -> Verdict:
    forecast = rolled.forecast
    assert forecast is not None
    limit = body.max_readmissions
    title = f"{'no workload' if body.step is None else body.step} is preempted and admitted again more than " \
            f"{limit} times"
    title = "no preemption loop: " + title.replace(" is preempted", " preempted")
    ids = sorted({r.id for r in forecast.schedule})
    if body.step is not None:
        ids = instances(rolled, body.step)
    counts = []
    for rid in ids:
        runs = sorted(stretches(forecast, rid), key=lambda r: r.start)
        again = sum(1 for a, b in zip(runs, runs[1:], strict=False)
                    if a.preempted_at is not None and b.start >= a.preempted_at)
        counts.append((again, rid))
    most, rid = max(counts) if counts else (0, "")
    if most <= limit:
        return Verdict(index, title, True, f"at most {most} re-admissions" + (f" ({rid})" if most else ""), (),
                       str(most))
    return Verdict(index, title, False, f"{rid} is preempted and admitted again {most} times",
                   _capped(timeline(forecast, rid, arrived(rolled, rid)), 20), str(most))


JUDGES = {"state": _state, "starts_within": _starts, "never_preempted": _never_preempted,
          "gpu_hours": _gpu_hours, "utilisation": _utilisation, "no_preemption_loop": _no_loop}
