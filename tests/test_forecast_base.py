"""`plan --base PLANFILE --forecast`: the base branch's forecast (kept in its plan
file) and this plan's side by side, in the JSON, the text and the comment."""

from __future__ import annotations

import json

import pytest
from support import cli
from test_forecast import EPOCH, GOLDEN, H, tiers


def _plans(tmp_path, monkeypatch, *extra_base: str):
    """The base plan file (prod's limit 6, 10 GPUs) and the head's paths (limit 9, 13 GPUs)."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    state = str(tmp_path / "none.json")
    base_dir, head_dir = tmp_path / "base", tmp_path / "head"
    base_dir.mkdir()
    head_dir.mkdir()
    base_file = tmp_path / "base.json"
    made = cli("plan", str(tiers(base_dir, 6)), "--state", state, "--out", str(base_file), *extra_base)
    assert made.exit_code == 0, made.stderr
    return state, str(base_file), str(tiers(head_dir, 9, 13))


def test_json_keeps_both_forecasts_and_the_per_team_change(tmp_path, monkeypatch):
    state, base_file, head = _plans(tmp_path, monkeypatch, "--forecast")
    result = cli("plan", head, "--state", state, "--base", base_file, "--forecast", "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    saved = json.loads(open(base_file).read())["forecast"]
    assert data["base"]["forecast"] == saved            # the base's forecast as its plan file kept it
    rows = {r["team"]: r for r in data["base"]["forecast_changes"]}
    # worked out in test_forecast.test_before_and_after_golden: report starts now instead of in 1 h,
    # research's trial_d an hour earlier, 1 GPU-h less waiting (trial-c is stopped for good)
    assert rows["prod-orch"]["p90_start"] == {"before": H, "after": 0}
    assert rows["research-orch"]["p50_start"] == {"before": 2 * H, "after": H}
    assert rows["research-orch"]["gpu_hours_waiting_per_week"] == -1.0
    assert data["forecast"]["teams"] != saved["teams"]


def test_comment_leads_with_the_before_after_table(tmp_path, monkeypatch, request):
    state, base_file, head = _plans(tmp_path, monkeypatch, "--forecast")
    result = cli("plan", head, "--state", state, "--base", base_file, "--forecast", "--format", "markdown")
    assert result.exit_code == 0, result.stderr
    text = result.stdout.replace(str(tmp_path), "<tmp>")
    top = text.index("#### Forecast: before → after")
    assert top < text.index("#### Forecast\n") < text.index("This plan's forecast per team")
    assert "| prod-orch | now | 1 h → now | -3 GPU-h/week | ±0 | ±$0 |" in text
    golden = GOLDEN / "pr-comment-with-base.md"
    if request.config.getoption("--update-golden"):
        golden.write_text(text)
    assert text == golden.read_text(), "run `pytest tests/test_forecast_base.py --update-golden` and review the diff"


def test_text_shows_before_and_after(tmp_path, monkeypatch):
    state, base_file, head = _plans(tmp_path, monkeypatch, "--forecast")
    result = cli("plan", head, "--state", state, "--base", base_file, "--forecast")
    assert result.exit_code == 0, result.stderr
    assert "Forecast, before -> after (the base plan, then this one)" in result.stdout
    line = next(x for x in result.stdout.splitlines() if x.strip().startswith("research-orch") and "→" in x)
    assert "2 h → 1 h" in line


def test_a_base_without_forecast_says_so_and_shows_this_one(tmp_path, monkeypatch):
    state, base_file, head = _plans(tmp_path, monkeypatch)
    result = cli("plan", head, "--state", state, "--base", base_file, "--forecast", "--format", "json")
    assert result.exit_code == 0
    assert "the base plan has no forecast" in result.stderr
    data = json.loads(result.stdout)
    assert "forecast" in data and "forecast" not in data["base"]


def test_a_nan_in_the_base_plan_is_one_line_and_exit_1(tmp_path, monkeypatch):
    """#42: NaN and Infinity are no numbers a plan file holds (the whole file is refused)."""
    state, base_file, head = _plans(tmp_path, monkeypatch, "--forecast")
    data = json.loads(open(base_file).read())
    data["forecast"]["teams"][0]["gpu_hours_waiting"] = float("nan")
    with open(base_file, "w") as handle:
        handle.write(json.dumps(data))
    result = cli("plan", head, "--state", state, "--base", base_file, "--forecast", "--format", "markdown")
    assert result.exit_code == 1 and "NaN is no number a plan file holds" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("damage", [
    lambda f: f["steps"][0].update(start="tomorrow"),
    lambda f: f.update(horizon=-1),
    lambda f: f.pop("teams"),
])
def test_a_damaged_base_forecast_is_one_line_never_a_traceback(tmp_path, monkeypatch, damage):
    state, base_file, head = _plans(tmp_path, monkeypatch, "--forecast")
    data = json.loads(open(base_file).read())
    damage(data["forecast"])
    with open(base_file, "w") as handle:
        handle.write(json.dumps(data))
    result = cli("plan", head, "--state", state, "--base", base_file, "--forecast", "--format", "markdown")
    assert result.exit_code == 0
    assert "Traceback" not in result.stderr
    assert "its forecast is not one poolc writes" in result.stderr
    assert "before → after" not in result.stdout and "#### Forecast" in result.stdout


def test_names_from_a_base_plan_file_are_inert_in_the_comment_and_the_log(tmp_path, monkeypatch):
    """The base plan file comes from another CI job: a team name in it is text,
    never HTML, a mention or a runner command."""
    state, base_file, head = _plans(tmp_path, monkeypatch, "--forecast")
    data = json.loads(open(base_file).read())
    data["forecast"]["teams"][0]["team"] = "<img src=x onerror=alert(1)> @admin ##[error]boom"
    with open(base_file, "w") as handle:
        handle.write(json.dumps(data))
    markdown = cli("plan", head, "--state", state, "--base", base_file, "--forecast", "--format", "markdown")
    assert markdown.exit_code == 0, markdown.stderr
    assert "before → after" in markdown.stdout and "onerror" in markdown.stdout
    assert "<img" not in markdown.stdout and "@admin" not in markdown.stdout and "##[" not in markdown.stdout
    text = cli("plan", head, "--state", state, "--base", base_file, "--forecast")
    assert "onerror" in text.stdout and "##[" not in text.stdout


def test_base_and_head_taken_18_s_apart_share_one_clock(tmp_path, monkeypatch):
    """The pull request's plan is made 18 s after the base's, on the same platform:
    its forecast starts at the base's instant, so nothing changes for any team (the
    running trials' lost hours and every start would otherwise move by 18 s)."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    state, base_file = str(tmp_path / "none.json"), tmp_path / "base.json"
    platform = str(tiers(tmp_path))
    made = cli("plan", platform, "--state", state, "--out", str(base_file), "--forecast")
    assert made.exit_code == 0, made.stderr
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(int(EPOCH) + 18))
    alone = json.loads(cli("plan", platform, "--state", state, "--forecast", "--format", "json").stdout)
    result = cli("plan", platform, "--state", state, "--base", str(base_file), "--forecast", "--format", "json")
    assert result.exit_code == 0, result.stderr
    data, saved = json.loads(result.stdout), json.loads(base_file.read_text())["forecast"]
    assert alone["forecast"]["start"] != saved["start"]          # the clock did move
    assert data["forecast"]["start"] == saved["start"]
    assert data["forecast"]["teams"] == saved["teams"] and data["forecast"]["steps"] == saved["steps"]
    for row in data["base"]["forecast_changes"]:
        assert all(v["before"] == v["after"] for v in row.values() if isinstance(v, dict)), row
