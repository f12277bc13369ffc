"""The installed ``poolc`` command (and ``python -m poolc``): the process-wide hooks, then the command line.

Importing this module is what makes a process poolc's command: it installs the
Ctrl-C hooks (``interrupts.py``) before it imports the command line, so a Ctrl-C
while those modules load is one line and exit 130. ``import poolc`` and the
library's modules install nothing (#43).
"""

from .interrupts import install_hooks

install_hooks()   # first, before the command line's imports below

from .cli import main, run  # noqa: E402  (after the hooks: a Ctrl-C during these imports is one line)

__all__ = ["main", "run"]
