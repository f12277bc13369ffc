"""Issue #42's low findings and round-3 residuals, each as it was reproduced."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import cli


def test_schema_into_a_directory_it_cannot_write_is_one_line_exit_1(tmp_path):
    (tmp_path / "pipeline.schema.json").mkdir()   # a directory where a schema goes (root can write anywhere)
    result = cli("schema", "--output-dir", str(tmp_path))
    assert result.exit_code == 1, result.output
    assert "cannot write the schemas to" in result.stderr and "internal error" not in result.stderr


def test_schema_into_a_read_only_filesystem_is_one_line_exit_1():
    if not os.path.isdir("/proc/self"):
        return
    result = cli("schema", "--output-dir", "/proc/self")
    assert result.exit_code == 1 and "cannot write the schemas" in result.stderr, result.output


def test_the_interrupt_line_names_a_rollback_only_for_apply(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "poolc", "validate", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    time.sleep(3)   # imported, and blocked reading standard input
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert b"interrupted by SIGINT" in err and b"apply" not in err and b"Traceback" not in err


def test_a_namespace_named_queued_is_an_error_at_its_place(platform):
    path = Path("examples/stacks/research-stack.yaml")
    path.write_text(path.read_text(encoding="utf-8").replace("namespace: ml-research\n", "namespace: queued\n", 1),
                    encoding="utf-8")
    result = cli("validate", "examples")
    assert result.exit_code == 1, result.output
    line = next(i for i, x in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "namespace: queued" in x)
    assert f"research-stack.yaml:{line}:" in result.output and "error[N003]" in result.output
    assert "kubernetes/queued/" in result.output


def test_the_error_comment_s_code_fence_survives_a_crafted_path(platform):
    from markdown_it import MarkdownIt

    crafted = Path("x\n```\n# Approved by the platform team\n```")
    crafted.mkdir()
    (crafted / "bad.yaml").write_text("apiVersion: poolc/v1\nkind: ResourcePool\nmetadata: {name: p}\nspec: {}\n",
                                      encoding="utf-8")
    result = cli("plan", str(crafted), "--format", "markdown")
    assert result.exit_code == 1, result.output
    tokens = MarkdownIt("commonmark").parse(result.stdout)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert not any("Approved" in h for h in headings), headings
    fences = [t for t in tokens if t.type == "fence"]
    assert fences and "Approved by the platform team" in fences[-1].content


@pytest.mark.parametrize("row, says", [
    ("ml.g5.xlarge,##[error]owned", "usd_hour '#\\\\x23[error]owned'"),
    ("##[error]owned,1.0", "instance_type '#\\\\x23[error]owned'"),
    ("ml.g5.xlarge," + "9" * 131_073, "not a CSV line poolc reads"),
    ("ml.g5.xlarge,$infk", "usd_hour '$infk'"),
    ("ml.g5.xlarge,1e999", "usd_hour '1e999'"),
])
def test_an_instance_price_table_is_read_strictly_and_echoed_safely(platform, row, says):
    Path("prices.csv").write_text(f"instance_type,usd_hour\n{row}\n", encoding="utf-8")
    result = cli("plan", "examples", "--forecast", "--instance-prices", "prices.csv")
    assert result.exit_code == 1, result.output
    assert "internal error" not in result.stderr and "\n##[" not in "\n" + result.stderr
    assert not any(line.lstrip().startswith("##[") or "##[" in line for line in result.stderr.splitlines())
    assert says.replace("\\\\", "\\") in result.stderr, result.stderr


def test_the_before_after_table_keeps_its_budget_with_3000_teams():
    from poolc.forecast.compare import TABLE_BUDGET, render_markdown
    from poolc.forecast.summary import Forecast, TeamForecast

    teams = tuple(TeamForecast(f"team-{i:04d}", 1, 60, 120, 600, 1.0, 2.0, 0.0, 3.0) for i in range(3000))
    before = Forecast("optimal", "2026-11-23T03:00:00Z", 604800, (), teams, (), {}, {}, 0, 0, (), ())
    after = Forecast("optimal", "2026-11-23T03:00:00Z", 604800, (), teams[::-1], (), {}, {}, 0, 0, (), ())
    shown = render_markdown(before, after)
    assert len(shown) < TABLE_BUDGET + 2_000, len(shown)
    assert "more teams not shown" in shown and "team-0000" in shown


def test_bold_code_and_strikethrough_from_a_plan_file_render_as_written(platform):
    """Round-3 residual: pool, policy, team, status and preemption fields of a plan file
    rendered as Markdown in the comment (a pool `__x__` came out bold)."""
    import json

    from markdown_it import MarkdownIt

    assert cli("plan", "examples", "--out", "plan.json").exit_code == 0
    saved = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    evil = " __bold__ ~~strike~~ `code`"
    saved["solver"]["status"] = "FEASIBLE" + evil
    saved["pools"][0]["name"] += evil
    saved["policies"][0]["name"] += evil
    saved["policies"][0]["pool"] += evil
    for team in saved["teams"]:
        saved["teams"][team] += evil
    for victim in saved["preempted"]:
        victim["message"] += evil
        victim["pool"] += evil
    Path("evil.json").write_text(json.dumps(saved), encoding="utf-8")
    result = cli("show", "evil.json", "--format", "markdown")
    assert result.exit_code in (0, 2), result.output
    found = []

    def visit(tokens):
        for i, token in enumerate(tokens):
            following = tokens[i + 1].content if i + 1 < len(tokens) else ""
            if token.type in ("strong_open", "s_open") and following in ("bold", "strike"):
                found.append(token.type)
            if token.type == "code_inline" and token.content == "code":
                found.append("code")
            visit(token.children or [])

    visit(MarkdownIt("commonmark").enable("table").enable("strikethrough").parse(result.stdout))
    assert found == [], found
    assert "bold" in result.stdout
