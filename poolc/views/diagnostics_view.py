"""Diagnostics as every command shows them: on stdout in the format asked for, a
summary on stderr unless quiet, severities in colour on a terminal."""

from __future__ import annotations

from collections.abc import Sequence

from ..diagnostics import Diagnostic
from ..vocabulary import DiagnosticFormat
from .colour import coloured
from .shown import Shown


def shown(diagnostics: Sequence[Diagnostic], fmt: DiagnosticFormat, quiet: bool, summary_line: str | None = None,
          colour: bool = False) -> Shown:
    """``summary_line`` on stderr in every format when given (validate), else the short
    summary in text format; only errors, and no summary, when ``quiet``."""
    from ..report import render, summary

    listed = [x for x in diagnostics if x.severity == "error"] if quiet else list(diagnostics)
    out = render(fmt, listed)
    if fmt == "text" and out and colour:
        out = coloured(out)
    if quiet:
        return Shown(out)
    if summary_line is not None:
        return Shown(out, summary_line + "\n")
    if fmt == "text" and diagnostics:
        return Shown(out, summary(list(diagnostics)) + "\n")
    return Shown(out)
