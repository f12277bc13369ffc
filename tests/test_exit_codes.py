"""Every exit code in the README's command table, run for real on the examples.

(Interrupted applies, 130 and 143, are run by tests/test_kill.py; a held lock by
tests/test_apply.py; an internal error, 3, by tests/test_cli.py's fault injection; a
cycle that is done, 0, or whose step failed, 1, by tests/test_cluster_box.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support import cli

BROKEN = "examples/policies/prod.yaml"


def broken() -> None:
    path = Path(BROKEN)
    path.write_text(path.read_text(encoding="utf-8").replace("priority: 1000", "priority: high", 1),
                    encoding="utf-8")


CASES = [
    ("validate clean", [], ["validate", "examples"], 0),
    ("validate errors", [broken], ["validate", "examples"], 1),
    ("plan ok", [], ["plan", "examples"], 0),
    ("plan errors", [broken], ["plan", "examples"], 1),
    ("plan changes", [], ["plan", "examples", "--detailed-exitcode"], 2),
    ("plan no changes", ["apply"], ["plan", "examples", "--detailed-exitcode"], 0),
    ("plan unreadable state", ["corrupt"], ["plan", "examples"], 1),
    ("plan --forecast ok", [], ["plan", "examples", "--forecast"], 0),
    ("plan --forecast errors", [broken], ["plan", "examples", "--forecast"], 1),
    ("apply ok", [], ["apply", "examples", "--output-dir", "deploy"], 0),
    ("apply invalid", [broken], ["apply", "examples", "--output-dir", "deploy"], 1),
    ("apply --check stale", [], ["apply", "examples", "--output-dir", "deploy", "--check"], 1),
    ("apply --check fresh", ["apply"], ["apply", "examples", "--output-dir", "deploy", "--check"], 0),
    ("cycle invalid", [broken], ["cycle", "examples", "--output-dir", "deploy"], 1),
    ("show ok", ["planfile"], ["show", "plan.json"], 0),
    ("show unreadable", [], ["show", "missing.json"], 1),
    ("state list", ["apply"], ["state", "list"], 0),
    ("state rm unknown", ["apply"], ["state", "rm", "nope"], 1),
    ("state import bad", ["apply", "bad-report"], ["state", "import", "examples", "--kueue", "k.json"], 1),
    ("schema", [], ["schema", "pipeline"], 0),
    ("usage error", [], ["plan", "examples", "--no-such-option"], 2),
]


@pytest.mark.parametrize("name, setup, args, code", CASES, ids=[c[0] for c in CASES])
def test_exit_code(platform, name, setup, args, code):
    for step in setup:
        if callable(step):
            step()
        elif step == "apply":
            assert cli("apply", "examples", "--output-dir", "deploy", "--now", "2026-11-23T03:00:00Z").exit_code == 0
        elif step == "corrupt":
            Path("poolc.state.json").write_text("{", encoding="utf-8")
        elif step == "planfile":
            assert cli("plan", "examples", "--out", "plan.json").exit_code == 0
        elif step == "bad-report":
            Path("k.json").write_text('{"kind": "List", "items": [1]}', encoding="utf-8")
    result = cli(*args)
    assert result.exit_code == code, result.output
