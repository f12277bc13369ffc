"""The command line's Ctrl-C hooks: a Ctrl-C that arrives while the command's modules are
still being imported (about a quarter of a second before ``poolc.cli`` can catch anything
itself) is one line and exit 130, never a traceback. Only KeyboardInterrupt is handled;
every other exception goes to the previous hook unchanged.

Installed by the command's entry point (``poolc.console``), never by importing the
library: a program that imports poolc keeps its own hooks and atexit handlers.
"""

from __future__ import annotations

import os
import sys
from types import TracebackType


def _exit_interrupted() -> None:
    sys.stderr.write("poolc: interrupted\n")
    sys.stderr.flush()
    os._exit(130)


def install_hooks() -> None:
    """Replace ``sys.excepthook`` and ``sys.unraisablehook`` for the rest of this process."""
    previous_excepthook, previous_unraisablehook = sys.excepthook, sys.unraisablehook

    def interrupted_hook(kind: type[BaseException], value: BaseException, traceback: TracebackType | None) -> None:
        """Ctrl-C before the command could handle it: one line, no traceback."""
        if issubclass(kind, KeyboardInterrupt):
            _exit_interrupted()
        previous_excepthook(kind, value, traceback)

    def interrupted_unraisable(unraisable: sys.UnraisableHookArgs) -> None:
        """The same Ctrl-C landing in a callback Python cannot raise from (the import
        system's module-lock weakref callbacks): Python would print it as an ignored
        exception and go on; poolc stops as it would have."""
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _exit_interrupted()
        previous_unraisablehook(unraisable)

    sys.excepthook = interrupted_hook
    sys.unraisablehook = interrupted_unraisable

