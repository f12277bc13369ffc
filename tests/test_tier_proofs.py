"""What is not proven is said: per tier, proven or its bound and gap, in the plan
JSON (`solver.tiers[]`), the text plan and one line of the pull-request comment."""

from __future__ import annotations

import json

from test_plan_output import write_platform

from poolc.commands.planning import plan_paths
from poolc.domain.plan import to_json
from poolc.domain.plan_file import read_plan
from poolc.domain.problem import Problem
from poolc.planner.solution import Solution
from poolc.report.plan_markdown import render_markdown
from poolc.report.plan_text import render_plan

VALUES = [1, 2, 1, 1, 15, 0, 0]


def stopped(problem: Problem) -> Solution:
    """The plan of test_plan_output.decided, as if the budget had stopped two tiers:
    "admitted at priority 10" at 1 against a bound of 2, FIFO 15 against 17."""
    return Solution("optimal", {"research/probe": "research", "train/eval": "prod", "train/train": "prod"},
                    {"sweep-old": ["train/eval", "train/train"]}, "FEASIBLE", VALUES, 1.0,
                    bounds=[1, 2, 1, 2, 17, 0, 0])


def test_a_proven_plan_says_every_tier_is_proven(tmp_path, monkeypatch):
    monkeypatch.chdir(write_platform(tmp_path))
    plan = plan_paths(["."]).plan                          # the real optimal strategy
    tiers = json.loads(to_json(plan))["solver"]["tiers"]
    assert tiers and all(t["proven"] and t["gap"] == 0.0 for t in tiers)
    assert [t["bound"] for t in tiers] == list(plan.solver.objective)
    assert "proof" not in render_plan(plan, color=False)
    assert "Not proven" not in render_markdown(plan)


def test_an_unproven_tier_is_named_with_its_bound_and_gap(tmp_path, monkeypatch):
    monkeypatch.chdir(write_platform(tmp_path))
    plan = plan_paths(["."], strategy=stopped).plan
    tiers = json.loads(to_json(plan))["solver"]["tiers"]
    assert [(t["kind"], t["priority"], t["proven"]) for t in tiers] == [
        ("in-share", None, True), ("admitted", 100, True), ("preempted", 10, True), ("admitted", 10, False),
        ("arrival", None, False), ("start-rank", None, True), ("preference", None, True)]
    assert [t["gap"] for t in tiers if not t["proven"]] == [1.0, 2 / 15]
    assert read_plan(to_json(plan)).solver == plan.solver      # `poolc show` reads it back
    text = render_plan(plan, color=False)
    row = next(line for line in text.splitlines() if "steps admitted at priority 10 " in line)
    assert row.split()[-4:] == ["bound", "2,", "gap", "1"]
    assert "proven" in next(line for line in text.splitlines() if "steps admitted at priority 100" in line)
    markdown = render_markdown(plan)
    line = next(line for line in markdown.splitlines() if line.startswith("Not proven"))
    assert "steps admitted at priority 10 1 (bound 2, gap 1)" in line
    assert "sum over admitted steps of (steps - arrival rank) 15 (bound 17, gap 0.133)" in line
    assert "priority 100" not in line
