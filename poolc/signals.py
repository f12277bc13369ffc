"""Ctrl-C and SIGTERM as one exception, so apply can roll back and say so.

CI systems stop jobs with SIGTERM and people with Ctrl-C; both must end in a
rollback and a one-line message, never a half-written tree. The handlers raise
``Interrupted`` (a KeyboardInterrupt, so code that already handles Ctrl-C keeps
working). ``deferred()`` holds a signal back while a step that must not be cut
runs; the step then asks ``pending()`` and rolls back itself. Some libraries
(the CP-SAT solver) replace the SIGINT handler, so ``install()`` is called again
right before anything is written.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

HANDLED = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


_deferring = False
_pending: list[int] = []


def _handler(signum: int, frame: FrameType | None) -> None:
    if _deferring:
        _pending.append(signum)
        return
    raise Interrupted(signum)


def install() -> None:
    """Route SIGINT and SIGTERM to ``Interrupted`` (only the main thread can)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in HANDLED:
        signal.signal(signum, _handler)


@contextmanager
def deferred() -> Iterator[None]:
    """Record SIGINT/SIGTERM instead of raising while the block runs."""
    global _deferring
    install()
    outer, _deferring = _deferring, True
    try:
        yield
    finally:
        _deferring = outer


def pending() -> int | None:
    """The first signal recorded by ``deferred()`` (and forget them all)."""
    if not _pending:
        return None
    first = _pending[0]
    _pending.clear()
    return first
