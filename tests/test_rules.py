"""Rules are first-class values: every check declares the rule ids it emits, and
emits no other; every rule is emitted by a check or by a named stage."""

from __future__ import annotations

from pathlib import Path

import pytest

from poolc.checks import Context, registered
from poolc.commands.validate import validate_paths
from poolc.diagnostics import RULES

FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("*/*.yaml"))
# Rules no semantic check emits, and the stage that does.
ELSEWHERE = {"Y": "the loader", "S": "the schemas", "N001": "the config builder", "T001": "the plan's runtime check",
             "O": "the cluster's reports (reports.py, observe.py)", "A003": "the plan, against the state (state.py)",
             "F": "the forecast (poolc plan --forecast)",
             "C": "the source readers (poolc/sources)"}


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_check_emits_only_the_rules_it_declares(path):
    config = validate_paths([str(path)]).config
    ctx = Context(config)
    for check in registered():
        emitted = {x.rule for x in check.fn(ctx)}
        assert emitted <= set(check.rules), f"{check.name} emitted {emitted - set(check.rules)} on {path.name}"


def test_every_rule_has_a_home():
    declared = {rule for check in registered() for rule in check.rules}
    homeless = [r for r in RULES if r not in declared and r not in ELSEWHERE and r[0] not in ELSEWHERE]
    assert homeless == []
    assert all(rule in RULES for rule in declared)


def test_the_check_of_a_rule_is_documented_with_it():
    text = (Path(__file__).parent.parent / "docs" / "rules.md").read_text(encoding="utf-8")
    for check in registered():
        for rule in check.rules:
            section = text.split(f"### {rule}\n", 1)[1].split("\n### ", 1)[0]
            assert f"Checked by `{check.name}`" in section
