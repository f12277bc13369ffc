"""The pull-request comment is composed of sections, and the forecast is one of them
(#43): it goes after the comment's lead (the title, the lines under it, and against
a base plan the inputs that changed), placed by the comment's structure, not found
again by scanning the rendered text for heading words. Its bytes are those of the
splice it replaced, which stays here as the oracle."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_forecast import EPOCH, tiers

from poolc.commands.planning import plan_paths
from poolc.report.plan_markdown import render_comment, render_markdown

REPO = Path(__file__).resolve().parents[1]
SECTION = "#### Forecast\n\n| team | p50 start |\n| --- | --- |\n| a | now |\n"


def spliced(plan_markdown: str, section: str) -> str:
    """The old composition: split the rendered comment at blank lines and insert the
    section after the title's paragraphs and a "#### What changed" block."""
    blocks = plan_markdown.split("\n\n")
    at = 1
    while at < len(blocks) and not blocks[at].startswith("#"):
        at += 1
    if at < len(blocks) and blocks[at].startswith("#### What changed"):
        at += 1
        while at < len(blocks) and not blocks[at].startswith("#"):
            at += 1
    if at >= len(blocks):
        return plan_markdown.rstrip("\n") + "\n\n" + section
    return "\n\n".join(blocks[:at]) + "\n\n" + section + "\n" + "\n\n".join(blocks[at:])


def _plans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    state = str(tmp_path / "none.json")
    base_dir, head_dir, same_dir = tmp_path / "base", tmp_path / "head", tmp_path / "same"
    for folder in (base_dir, head_dir, same_dir):
        folder.mkdir()
    base = plan_paths([str(tiers(base_dir, 6))], state_file=state).plan
    plans = {"examples": plan_paths([str(REPO / "examples")], state_file=state),
             "tiers": plan_paths([str(tiers(head_dir, 9, 13))], state_file=state),
             "against a base": plan_paths([str(tiers(head_dir, 9, 13))], state_file=state, base=base),
             "no effect": plan_paths([str(tiers(same_dir, 6))], state_file=state, base=base)}
    return plans


def test_the_forecast_section_goes_where_the_splice_put_it(tmp_path, monkeypatch):
    plans = _plans(tmp_path, monkeypatch)
    assert plans["no effect"].plan.base is not None and plans["no effect"].plan.base.no_effect
    for name, result in plans.items():
        plain = render_markdown(result.plan, diffs=result.diffs)
        assert render_comment(result.plan, diffs=result.diffs) == plain, name
        composed = render_comment(result.plan, diffs=result.diffs, forecast=SECTION)
        assert composed == spliced(plain, SECTION), name
        assert SECTION in composed


def test_the_forecast_follows_the_inputs_that_changed(tmp_path, monkeypatch):
    result = _plans(tmp_path, monkeypatch)["against a base"]
    composed = render_comment(result.plan, diffs=result.diffs, forecast=SECTION)
    assert composed.index("#### What changed") < composed.index(SECTION) < composed.index("#### The whole plan")
