"""Issue #42: error rules cannot be disabled (only warnings), so a pull request's own
pyproject.toml cannot make its check pass; a pyproject no option can come from is a
usage error, never exit 3."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import cli
from test_untrusted import poolc


@pytest.mark.parametrize("table", ['[tool.poolc]\ndisable = ["R006"]\n', '[tool]\npoolc = {disable = ["r006"]}\n'])
def test_a_pull_request_s_pyproject_cannot_disable_an_error_rule(platform, table):
    Path("pyproject.toml").write_text(table, encoding="utf-8")
    result = cli("validate", "examples")
    assert result.exit_code == 2, result.output
    assert "rule R006 is an error and cannot be disabled (only warnings can)" in result.stderr
    assert "pyproject.toml" in result.stderr


def test_disable_on_the_command_line_refuses_an_error_rule(platform):
    result = cli("validate", "examples", "--disable", "A004")
    assert result.exit_code == 2 and "rule A004 is an error" in result.stderr


def test_a_warning_rule_is_still_disabled(platform):
    Path("pyproject.toml").write_text('[tool.poolc]\ndisable = ["P006", "A001"]\n', encoding="utf-8")
    assert cli("validate", "examples").exit_code == 0


def test_a_5000_digit_integer_in_pyproject_is_a_usage_error_not_exit_3(platform):
    Path("pyproject.toml").write_text("[tool.poolc]\nerror-on-warning = " + "9" * 5000 + "\n", encoding="utf-8")
    done = poolc("validate", "examples", cwd=platform)
    assert done.returncode == 2, done.stderr
    assert b"cannot read [tool.poolc]" in done.stderr and b"internal error" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
