"""The runtime check's work bound: a Kueue replay stops at a counted amount of work,
never a clock, at the same cycle on every run, and the plan says it stopped."""

from __future__ import annotations

import json

from test_kueue_replay import pipeline, policy, pool, replayed, running, write

from poolc.commands.planning import plan_paths
from poolc.domain.plan import to_json
from poolc.domain.plan_file import read_plan
from poolc.planner import kueue
from poolc.report.plan_markdown import render_markdown
from poolc.report.plan_text import render_plan


def _platform(root):
    """Three teams bursting into one pool with borrowers running: many cycles."""
    return write(root, pool(8), policy("hi", 100), policy("mid", 50, "{gpu: 2}"), policy("lo", 10),
                 running("lo-1", "lo", 2, "2026-01-01T01:00:00Z"), running("lo-2", "lo", 2, "2026-01-01T02:00:00Z"),
                 pipeline("hi", {f"s{i}": "{gpu_count: 1}" for i in range(6)}),
                 pipeline("mid", {f"s{i}": "{gpu_count: 1}" for i in range(6)}))


def test_without_a_tight_bound_the_replay_settles_and_says_nothing(tmp_path):
    _, simulation, _ = replayed(_platform(tmp_path))
    assert simulation.stopped == ""
    assert not any("work bound" in e for e in simulation.events)


def test_a_tight_bound_stops_the_replay_at_the_same_cycle_every_time(tmp_path, monkeypatch):
    monkeypatch.setattr(kueue, "REPLAY_WORK_MIN", 2)
    monkeypatch.setattr(kueue, "REPLAY_WORK_PER_WORKLOAD", 0)
    root = _platform(tmp_path)
    first = replayed(root)[1]
    again = replayed(root)[1]
    assert "stopped at its work bound in cycle" in first.stopped
    assert first == again
    settled = (monkeypatch.undo(), replayed(root)[1])[1]
    assert settled.cycles > first.cycles          # it had more to do


def test_a_plan_whose_replay_stopped_says_so_everywhere(tmp_path, monkeypatch):
    monkeypatch.setattr(kueue, "REPLAY_WORK_MIN", 2)
    monkeypatch.setattr(kueue, "REPLAY_WORK_PER_WORKLOAD", 0)
    monkeypatch.chdir(_platform(tmp_path))
    plan = plan_paths(["."]).plan
    assert plan.runtime is not None and plan.runtime.stopped
    # the steps it left pending are not reported as differences
    assert all(x.cluster != "pending" for x in plan.runtime.differences)
    data = json.loads(to_json(plan))
    assert "work bound" in data["runtime"]["stopped"]
    assert read_plan(to_json(plan)).runtime == plan.runtime          # a saved plan keeps it
    assert "stopped: the Kueue replay stopped at its work bound" in render_plan(plan, color=False)
    assert "The runtime check stopped: the Kueue replay stopped at its work bound" in render_markdown(plan)


def _forecast_notes(root, monkeypatch) -> tuple[str, ...]:
    from poolc.forecast.make import forecast_plan

    monkeypatch.chdir(root)
    result = plan_paths(["."], strategy="kueue")
    made = forecast_plan(result, horizon=86400, now="2026-01-01T03:00:00Z")
    assert made.forecast is not None
    return made.forecast.notes


def _timed_platform(root):
    root.mkdir()
    """``_platform`` with durations, so the forecast plans again with Kueue's scheduler."""
    return write(root, pool(8), policy("hi", 100), policy("mid", 50, "{gpu: 2}"), policy("lo", 10),
                 pipeline("hi", {f"s{i}": "{gpu_count: 1, expected_runtime: 1h}" for i in range(12)}),
                 pipeline("mid", {f"s{i}": "{gpu_count: 1, expected_runtime: 2h}" for i in range(12)}))


def test_the_forecast_replans_within_the_same_bound_and_says_when_it_stopped(tmp_path, monkeypatch):
    assert not any("work bound" in n for n in _forecast_notes(_timed_platform(tmp_path / "a"), monkeypatch))
    monkeypatch.setattr(kueue, "REPLAY_WORK_MIN", 2)
    monkeypatch.setattr(kueue, "REPLAY_WORK_PER_WORKLOAD", 0)
    notes = _forecast_notes(_timed_platform(tmp_path / "b"), monkeypatch)
    stopped = [n for n in notes if "a Kueue re-plan reached its work bound" in n]
    assert len(stopped) == 1 and "cycle" in stopped[0]
    assert notes == _forecast_notes(_timed_platform(tmp_path / "c"), monkeypatch)
