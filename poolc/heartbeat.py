"""One line on stderr when a long command starts its next step, so a CI log
that shows nothing for a minute still says what poolc is working on.

Why not the progress lines: those are for `--verbose` and a terminal, a line
per step, the same on every run. A heartbeat depends on the clock, so it is
off unless the command-line entry point turns it on, and it only speaks once a
command has run for `after` seconds, then at most once per `after` seconds. It
never changes what is planned or printed on stdout.
"""

from __future__ import annotations

import time
from collections.abc import Callable

_sink: Callable[[str], None] | None = None
_after = 5.0
_started = 0.0
_last = 0.0


def enable(sink: Callable[[str], None], after: float = 5.0) -> None:
    """Speak through ``sink`` from ``after`` seconds on (the clock starts now)."""
    global _sink, _after, _started, _last
    _sink, _after = sink, after
    _started = _last = time.monotonic()


def disable() -> None:
    global _sink
    _sink = None


def step(what: str) -> None:
    """``what`` begins now: said when the command has run long enough and nothing
    was said for as long."""
    global _last
    if _sink is None:
        return
    now = time.monotonic()
    if now - _started >= _after and now - _last >= _after:
        _last = now
        _sink(f"{now - _started:.0f} s so far: {what}")
