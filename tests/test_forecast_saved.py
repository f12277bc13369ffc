"""The forecast a plan file keeps is read back through the same declaration it was
written by (forecast/summary.py): what poolc writes, it reads to the same value and
writes again to the same bytes; what the declaration does not allow, it refuses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import cli

from poolc.forecast.bounds import BOUND
from poolc.forecast.saved import read_forecast
from poolc.text.jsontext import dumps_sorted

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def plan_text(tmp_path_factory) -> str:
    """The examples' plan file with its forecast, as `plan --forecast --out` writes it
    (made once: every test here only reads it)."""
    root = tmp_path_factory.mktemp("saved")
    shutil.copytree(REPO / "examples", root / "examples")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        patch.setenv("SOURCE_DATE_EPOCH", "1767225600")
        made = cli("plan", "examples", "--forecast", "--out", "plan.json")
    assert made.exit_code == 0, made.stderr
    return (root / "plan.json").read_text(encoding="utf-8")


def test_write_read_write_is_the_same_bytes(plan_text):
    data = json.loads(plan_text)
    forecast = read_forecast(data["forecast"])
    again = dumps_sorted({**data, "forecast": forecast.as_dict()}, ensure_ascii=False) + "\n"
    assert again == plan_text
    assert read_forecast(json.loads(again)["forecast"]) == forecast


def test_the_file_keys_land_in_the_declared_fields(plan_text):
    saved = json.loads(plan_text)["forecast"]
    forecast = read_forecast(saved)
    # one key, two fields: a start, or what happened instead
    late = next(i for i, s in enumerate(saved["steps"]) if isinstance(s["start"], str))
    assert (forecast.steps[late].start, forecast.steps[late].outcome) == (None, saved["steps"][late]["start"])
    assert (forecast.steps[0].start, forecast.steps[0].outcome) == (saved["steps"][0]["start"], "started")
    assert [s.since for s in forecast.steps] == [s["waiting_since"] for s in saved["steps"]]
    assert [x.gpu_hours for x in forecast.idle] == [x["gpu_hours_idle"] for x in saved["idle_reserved"]]
    assert dict(forecast.prices) == saved["price_table"]
    unknown = next(i for i, r in enumerate(saved["schedule"]) if r["end"] == "unknown")
    assert forecast.schedule[unknown].end is None
    assert forecast.drained == saved["drained"]


@pytest.mark.parametrize(("damage", "where"), [
    (lambda f: f["steps"][0].update(gpu=-1), "steps.0.gpu: Input should be greater than or equal to 0"),
    (lambda f: f["steps"][0].update(start=BOUND + 1), "steps.0.start: Input should be less than or equal to"),
    (lambda f: f["steps"][0].update(start=None), "steps.0.start: Input should be a valid integer"),
    (lambda f: f["steps"][0].update(preempted=0), "steps.0.preempted: Input should be a valid boolean"),
    # the file's name of a field, not Python's
    (lambda f: f["steps"][0].update(since=f["steps"][0].pop("waiting_since")), "steps.0.waiting_since: Field required"),
    (lambda f: f["teams"][0].update(p50_start="soon"), "teams.0.p50_start"),
    (lambda f: f["teams"][0].update(gpu_hours_lost=float("inf")), "teams.0.gpu_hours_lost: Input should be a finite"),
    (lambda f: f["idle_reserved"][0].update(usd_idle="1"), "idle_reserved.0.usd_idle: Input should be a valid number"),
    (lambda f: f["schedule"][0]["holds"].update(gpu=-2), "schedule.0.holds.gpu: Input should be greater than or equal"),
    (lambda f: f["schedule"][0].update(end=None), "schedule.0.end: Input should be a valid integer"),
    (lambda f: f.update(notes=tuple(f["notes"])), "notes: Input should be a valid list"),
    (lambda f: f.update(start="2026-02-30T00:00:00Z"), "start: '2026-02-30T00:00:00Z' is no instant"),
    (lambda f: f.update(horizon=0), "horizon: Input should be greater than 0"),
])
def test_what_the_declaration_refuses_is_one_line_naming_the_key(plan_text, damage, where):
    saved = json.loads(plan_text)["forecast"]
    damage(saved)
    with pytest.raises(ValueError) as refused:
        read_forecast(saved)
    reason = str(refused.value)
    assert reason.startswith(f"its forecast is not one poolc writes: {where}"), reason
    assert "\n" not in reason


def test_keys_poolc_does_not_write_are_ignored(plan_text):
    saved = json.loads(plan_text)["forecast"]
    expected = read_forecast(saved)
    saved["steps"][0]["outcome"] = "never"          # the outcome is read off "start" only
    saved["drained"] = "garbage"                    # worked out, never read
    saved["from_a_newer_poolc"] = {"x": 1}
    assert read_forecast(saved) == expected
