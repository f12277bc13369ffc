"""Issue #42: every reader of plans and reports goes through the one bounded reader
that takes only regular files and never follows a link; a malformed `base`, a NaN or
Infinity, a horizon of 10^400 in a plan file are one line and exit 1, never exit 3."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support import cli
from test_untrusted import poolc


@pytest.fixture
def forecast_plan(platform) -> dict:
    assert cli("plan", "examples", "--forecast", "--out", "plan.json").exit_code == 0
    return json.loads(Path("plan.json").read_text(encoding="utf-8"))


def test_plan_base_refuses_a_link_and_a_fifo_at_once(forecast_plan, platform):
    Path("linked.json").symlink_to("plan.json")
    os.mkfifo("fifo.json")
    for name in ("linked.json", "fifo.json"):
        done = poolc("plan", "examples", "--base", name, cwd=platform, timeout=60)
        assert done.returncode == 1, done.stderr
        assert b"cannot read the base plan" in done.stderr and b"internal error" not in done.stderr


@pytest.mark.parametrize("literal", ["Infinity", "-Infinity", "NaN", "1" + "0" * 400])
def test_a_number_no_plan_holds_is_one_line_and_exit_1(forecast_plan, literal):
    text = Path("plan.json").read_text(encoding="utf-8").replace('"horizon": 604800', f'"horizon": {literal}', 1)
    assert literal in text
    Path("bad.json").write_text(text, encoding="utf-8")
    for args in (("show", "bad.json"), ("plan", "examples", "--forecast", "--base", "bad.json"),
                 ("plan", "examples", "--base", "bad.json")):
        result = cli(*args)
        assert result.exit_code == 1, (args, result.output)
        assert len(result.stderr.strip().splitlines()) == 1 and "bad.json" in result.stderr, result.stderr


def test_a_horizon_beyond_any_clock_is_no_base_forecast(forecast_plan):
    forecast_plan["forecast"]["horizon"] = 10**29
    Path("far.json").write_text(json.dumps(forecast_plan), encoding="utf-8")
    result = cli("plan", "examples", "--forecast", "--base", "far.json")
    assert result.exit_code in (0, 2), result.output
    assert "its forecast is not one poolc writes: horizon" in result.stderr


@pytest.mark.parametrize("section", [{"inputs_digest": "x", "preempted": 1.5},
                                     {"inputs_digest": "x", "ends": [1]},
                                     {"inputs_digest": "x", "steps": "abc"}])
def test_a_malformed_base_section_is_one_line_and_exit_1(forecast_plan, section):
    forecast_plan["base"] = section
    Path("bad.json").write_text(json.dumps(forecast_plan), encoding="utf-8")
    for args in (("show", "bad.json"), ("plan", "examples", "--base", "bad.json")):
        result = cli(*args)
        assert result.exit_code == 1 and "'base' is not the comparison" in result.stderr, (args, result.output)


def test_a_report_that_is_a_link_is_not_read(platform):
    secret = Path("secret.json")
    secret.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": []}), encoding="utf-8")
    Path("kueue.json").symlink_to(secret.resolve())
    result = cli("state", "import", "examples", "--kueue", "kueue.json", "--allow-empty")
    assert result.exit_code == 1 and "symbolic link" in result.output, result.output
    planned = cli("plan", "examples", "--observed", "kueue.json")
    assert planned.exit_code == 1 and "symbolic link" in planned.output, planned.output
