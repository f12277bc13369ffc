"""Names that exist, for the reference checks: did-you-mean suggestions and the
names of documents that exist but are broken (so a reference to them is not
reported as undefined: the broken document's own diagnostic is the one to fix)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insert, delete, substitute one character)."""
    row = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        diagonal, row[0] = row[0], i
        for j, char_b in enumerate(b, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (char_a != char_b))
    return row[-1]


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name nearest to ``name`` within a third of its length (at least 2
    edits); ties go to the alphabetically first."""
    scored = sorted((edit_distance(name, k), k) for k in set(known) if k != name)
    if scored and scored[0][0] <= max(2, len(name) // 3):
        return scored[0][1]
    return None


def did_you_mean(name: str, known: Iterable[str], what: str = "components") -> str:
    """'; did you mean X?' for the closest known name, else the known names (a few),
    so a typo comes with its fix."""
    names = sorted(set(known))
    match = closest(name, names)
    if match is not None:
        return f"; did you mean {match!r}?"
    if not names:
        return f" (no {what} are defined)"
    shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    return f" ({what}: {shown})"


def raw_component_names(data: Any) -> set[str]:
    """Component names written in a (possibly invalid) Stack document's data."""
    spec = data.get("spec") if isinstance(data, dict) else None
    if not isinstance(spec, dict):
        return set()
    found = set()
    items = [spec.get("orchestrator")]
    operators = spec.get("step_operators")
    if isinstance(operators, list):
        items += operators
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            found.add(item["name"])
    return found


def raw_field(data: Any, name: str) -> Any:
    """spec.<name> of a (possibly invalid) document's data, or None."""
    spec = data.get("spec") if isinstance(data, dict) else None
    return spec.get(name) if isinstance(spec, dict) else None
