"""poolc: a policy-as-code compiler and validator for shared ML compute pools.

The first thing the package does is install a hook for a Ctrl-C that arrives while
the command line's modules are still being imported (about a quarter of a second
before `poolc.cli` can catch anything itself): one line and exit 130, never a
traceback. Only KeyboardInterrupt is handled; every other exception goes to the
previous hook unchanged.
"""

import os as _os
import sys as _sys
from types import TracebackType as _TracebackType

__version__ = "0.2.0"
API_VERSION = "poolc/v1"


_PREVIOUS_EXCEPTHOOK = _sys.excepthook
_PREVIOUS_UNRAISABLEHOOK = _sys.unraisablehook


def _exit_interrupted() -> None:
    _sys.stderr.write("poolc: interrupted\n")
    _sys.stderr.flush()
    _os._exit(130)


def _interrupted_hook(kind: type[BaseException], value: BaseException, traceback: _TracebackType | None) -> None:
    """Ctrl-C before the command could handle it: one line, no traceback."""
    if issubclass(kind, KeyboardInterrupt):
        _exit_interrupted()
    _PREVIOUS_EXCEPTHOOK(kind, value, traceback)


def _interrupted_unraisable(unraisable: "_sys.UnraisableHookArgs") -> None:
    """The same Ctrl-C landing in a callback Python cannot raise from (the import
    system's module-lock weakref callbacks): Python would print it as an ignored
    exception and go on; poolc stops as it would have."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        _exit_interrupted()
    _PREVIOUS_UNRAISABLEHOOK(unraisable)


_sys.excepthook = _interrupted_hook
_sys.unraisablehook = _interrupted_unraisable
