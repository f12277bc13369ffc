"""'Did you mean' for a name written in code or a run configuration, so a typo comes
with its fix (as the same typo in a poolc document does)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``name``, when one is close enough."""
    close = difflib.get_close_matches(name, sorted(set(known)), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(name: str, known: Iterable[str], what: str) -> str:
    """'; did you mean X?' for the closest known name, else a few of the known names."""
    names = sorted(set(known))
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    return f" ({what}: {shown})" if names else ""
