"""Colour on a terminal: severities in diagnostics, and whether to colour at all."""

from __future__ import annotations

import os
import re
import sys

import click

_SEVERITY = re.compile(r"^(\S.*?: )(error|warning)(\[[A-Z]\d{3}\])", re.M)


def wanted(no_color: bool) -> bool:
    """Colour only on a terminal, never under --no-color or NO_COLOR."""
    return not no_color and not os.environ.get("NO_COLOR") and sys.stdout.isatty()


def coloured(text: str) -> str:
    """``error[R001]`` in red and ``warning[P006]`` in yellow, at the start of a diagnostic line."""
    return _SEVERITY.sub(lambda m: m[1] + click.style(m[2] + m[3], fg="red" if m[2] == "error" else "yellow",
                                                      bold=True), text)
