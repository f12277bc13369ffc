"""Issue #42: the action finds its comment by author and marker. A comment anyone posts
starting with `<!-- poolc-plan -->` is not taken over (edited), and the bot's own is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_action import REPO, _fake, run_action

MARKER = "<!-- poolc-plan -->"


def _runner(tmp_path: Path, comments: list[dict]) -> Path:
    """The platform repository and a `gh` that answers the comment listing with
    ``comments`` through the real jq filter the action gives, and records its calls."""
    shutil.copytree(REPO / "tests" / "fixtures" / "change", tmp_path / "work")
    (tmp_path / "comments.json").write_text(json.dumps(comments), encoding="utf-8")
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    _fake(fake, "gh", f'echo "$@" >> "{tmp_path}/gh-calls"\n'
                      'filter=""; previous=""\n'
                      'for a in "$@"; do [ "$previous" = "--jq" ] && filter="$a"; previous="$a"; done\n'
                      f'case "$*" in *--paginate*) jq -r "$filter" "{tmp_path}/comments.json";; esac\n'
                      'exit 0\n')
    stand_in = tmp_path / "stand-in"
    stand_in.mkdir()
    _fake(stand_in, "poolc", 'case "$1" in plan) echo "### the plan";; esac\nexit 0\n')
    return tmp_path


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq evaluates the action's filter")
def test_a_comment_someone_else_starts_with_the_marker_is_not_taken_over(tmp_path):
    root = _runner(tmp_path, [
        {"id": 111, "user": {"login": "mallory", "type": "User"}, "body": MARKER + "\nI approve this plan"},
        {"id": 222, "user": {"login": "github-actions[bot]", "type": "Bot"}, "body": MARKER + "\n### old plan"},
    ])
    assert run_action(root, {}, bin_dirs=(root / "fake-bin", root / "stand-in"))["failed"] is None
    calls = (root / "gh-calls").read_text(encoding="utf-8")
    assert "PATCH repos/acme/platform/issues/comments/222" in calls and "comments/111" not in calls


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq evaluates the action's filter")
def test_only_someone_else_s_marked_comment_means_a_new_comment(tmp_path):
    root = _runner(tmp_path, [
        {"id": 111, "user": {"login": "mallory", "type": "User"}, "body": MARKER + "\nI approve this plan"}])
    assert run_action(root, {}, bin_dirs=(root / "fake-bin", root / "stand-in"))["failed"] is None
    calls = (root / "gh-calls").read_text(encoding="utf-8")
    assert "POST repos/acme/platform/issues/7/comments" in calls and "PATCH" not in calls
