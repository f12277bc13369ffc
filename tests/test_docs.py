"""The rule table in docs/rules.md is generated from the registry; stale docs fail."""

from pathlib import Path

from compiler import rules_doc
from compiler.diagnostics import RULES

ROOT = Path(__file__).resolve().parents[1]


def test_rules_doc_is_fresh():
    committed = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert committed == rules_doc.render(), "run: python -m compiler.rules_doc > docs/rules.md"


def test_every_rule_is_in_the_table():
    table = rules_doc.render()
    for rule_id in RULES:
        assert f"| `{rule_id}` |" in table
