"""`poolc apply`'s output: the JSON result, or the files it wrote (stdout) and what it
did (stderr); `--check`'s stale files. The exit code stays the command line's."""

from __future__ import annotations

import json
from typing import Any

from ..text.escape import json_text
from ..text.escape import text as _t
from .shown import Shown


def as_json(result: Any) -> str:
    """The whole result as JSON (``--format json``), one line break at the end."""
    return json_text(json.dumps(result.as_dict(), indent=2, sort_keys=True)) + "\n"


def refused(result: Any) -> str:
    return f"poolc: nothing applied: {_t(result.refused)}\n"


def checked(result: Any, quiet: bool) -> Shown:
    """``--check``: each stale file on stdout, and a line on stderr."""
    out = "".join(f"stale: {_t(path)}\n" for path in result.stale)
    if result.stale:
        return Shown(out, f"poolc: {len(result.stale)} generated file(s) out of date; run poolc apply\n")
    return Shown(out, "" if quiet else f"poolc: {len(result.files)} generated files and the state are up to date\n")


def applied(result: Any, quiet: bool) -> Shown:
    """What a done apply wrote, kept and removed, and what its plan decided."""
    out, err = [], []
    if not quiet:
        for path in result.stale:
            if path in result.kept:
                out.append(f"kept: {_t(path)} (no longer generated, but changed since poolc wrote it)")
            else:
                out.append(f"removed: {_t(path)}" if path in result.removed else f"wrote: {_t(path)}")
        err.append(f"poolc: {len(result.stale)} change(s) applied; {len(result.files)} generated files"
                   if result.stale else "poolc: nothing to change")
        if result.plan is not None:
            err.append(decided(result.plan))
    if result.cleanup_error:
        err.append(f"poolc: applied, but cleaning up failed ({_t(result.cleanup_error)}); the next apply "
                   "finishes it")
    return Shown("".join(line + "\n" for line in out), "".join(line + "\n" for line in err))


def decided(plan: Any) -> str:
    """What the applied plan decided, in one block: counts, then names."""
    def names(items: list[str]) -> str:
        shown = ", ".join(_t(item) for item in items[:10])
        return shown + (f" and {len(items) - 10} more" if len(items) > 10 else "")

    allocated = [r.id for r in plan.requests if r.status == "allocated"]
    queued = [r.id for r in plan.requests if r.status == "queued"]
    preempted = [p.id for p in plan.preempted]
    lines = [f"poolc: the plan allocates {len(allocated)}, queues {len(queued)}, preempts {len(preempted)}"]
    if queued:
        lines.append(f"  queued: {names(queued)}")
    if preempted:
        lines.append(f"  preempted: {names(preempted)}")
    return "\n".join(lines)
