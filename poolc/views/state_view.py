"""`poolc state list`, `rm`, `rerun` and `import`: the state's allocations and what a
change to the state did, in text and JSON."""

from __future__ import annotations

import json
from typing import Any

from ..domain.amounts import Units
from ..text.escape import json_text
from ..text.escape import text as _t


def listed_json(rows: list[dict[str, Any]]) -> str:
    return json_text(json.dumps(rows, indent=2, sort_keys=True)) + "\n"


def listed_text(rows: list[dict[str, Any]], units: Units) -> str:
    """One line per allocation, amounts in the configuration's units."""
    lines = []
    for row in rows:
        holds = units.amounts(row["holds"], skip_step_run=False)
        kind = "preemptible" if row["preemptible"] else "non-preemptible"
        lines.append(_t(f"{row['name']}  {row['subject']}@{row['pool']}  {kind}  "
                        f"since {row['started_at'] or '-'}  {holds}") + "\n")
    return "".join(lines)


def changed(change: Any, word: str) -> str:
    """`state rm` and `state rerun`: each name changed, as ``<word>: NAME``."""
    return "".join(f"{word}: {_t(name)}\n" for name in change.removed)


def not_changed(change: Any) -> str:
    return f"poolc: nothing changed: {_t(change.refused)}\n"


def imported(change: Any) -> str:
    """`state import`: each allocation by what happened to it."""
    return "".join(f"{label}: {_t(name)}\n"
                   for label, names in (("appeared", change.added), ("left", change.removed),
                                        ("finished", change.finished), ("running", change.kept))
                   for name in names)


def not_imported(change: Any) -> str:
    return f"poolc: nothing imported: {_t(change.refused)}\n"
