"""Render the rule table (docs/rules.md) from the registry, so the docs cannot drift.

Run `python -m poolc.commands.rules_doc > docs/rules.md`; tests/test_docs.py fails when
the committed table is stale.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..diagnostics import RULES

_FAMILIES = {
    "yaml": "Reading YAML (the loader's guards)",
    "structure": "Structure (the JSON Schemas)",
    "names": "Names and references",
    "pools": "Pools and policies",
    "stacks": "Stacks and components",
    "requests": "Requests built from steps",
    "state": "Running allocations",
    "observed": "The cluster's reports (`state import`, `plan --observed`)",
    "targets": "What the cluster will do (the runtime check every plan runs)",
    "forecast": "The forecast (`poolc plan --forecast`)",
    "scenarios": "Scenarios (`poolc test`)",
    "sources": "Steps read from ZenML and Flyte code and run configurations (spec.source)",
}


def render() -> str:
    lines = ["# poolc rules", "",
             "Every diagnostic carries one of these stable ids. Severities are the defaults; an",
             "`error` makes `poolc validate` exit 1, a `warning` does not. Positions are 1-based",
             "`line:column` of the offending key or value (`end_line`/`end_column` in JSON",
             "output delimit it; the end column is exclusive).", ""]
    for family, title in _FAMILIES.items():
        lines += [f"## {title}", "", "| id | severity | what it means |", "| --- | --- | --- |"]
        for rule in sorted(RULES.values(), key=lambda r: r.id):
            if rule.family == family:
                lines.append(f"| `{rule.id}` | {rule.severity} | {rule.summary} |")
        lines.append("")
    lines += _rule_sections()
    return "\n".join(lines)


FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "negative"
_EXPECT = re.compile(r"^# expect: (\d+):(\d+) (error|warning) ([A-Z]\d{3})\s*$", re.M)
CONTEXT_LINES = 3


def _example(rule_id: str) -> list[str]:
    """The first negative fixture that expects ``rule_id``: the lines around the
    finding and the diagnostic itself."""
    if not FIXTURES.is_dir():
        return []
    for path in sorted(FIXTURES.glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        if "# xfail:" in text or "# context:" in text:
            continue
        for match in _EXPECT.finditer(text):
            if match[4] != rule_id:
                continue
            line, column = int(match[1]), int(match[2])
            source = text.splitlines()
            first = max(0, line - 1 - CONTEXT_LINES)
            shown = source[first:line + CONTEXT_LINES]
            return [f"Fails (`tests/fixtures/negative/{path.name}`, line {line}):", "", "```yaml", *shown, "```", "",
                    f"gives `{path.name}:{line}:{column}: {match[3]}[{rule_id}] ...`", ""]
    return []


def _rule_sections() -> list[str]:
    """One section per rule: what it means, the checks that emit it (their
    docstrings are the rule's documentation), and an example from the fixtures."""
    from ..checks import registered

    checks = registered()
    lines = ["## Every rule", ""]
    for rule in sorted(RULES.values(), key=lambda r: r.id):
        lines += [f"### {rule.id}", "", f"{rule.severity}: {rule.summary}.", ""]
        for found in (c for c in checks if rule.id in c.rules):
            lines += [f"Checked by `{found.name}`: {found.doc}", ""]
        lines += _example(rule.id)
    return lines


if __name__ == "__main__":
    print(render(), end="")
