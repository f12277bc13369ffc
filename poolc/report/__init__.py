"""Diagnostic reporters, one plug-in module per ``--format``.

The format modules are imported only when a format is rendered, so importing
this package costs next to nothing and ``poolc validate`` starts fast.
Each module exposes ``render(diagnostics) -> str``.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING

from poolc.diagnostics import report_order
from poolc.vocabulary import DIAGNOSTIC_FORMATS, DiagnosticFormat

if TYPE_CHECKING:
    from poolc.diagnostics import Diagnostic

Renderer = Callable[["list[Diagnostic]"], str]


def _lazy(name: str) -> Renderer:
    """A renderer that imports ``poolc.report.<name>`` on first call."""

    def renderer(diagnostics: list[Diagnostic]) -> str:
        return import_module(f"{__name__}.{name}").render(diagnostics)

    renderer.__name__ = f"render_{name}"
    renderer.__qualname__ = renderer.__name__
    return renderer


FORMATS: dict[DiagnosticFormat, Renderer] = {name: _lazy(name) for name in DIAGNOSTIC_FORMATS}


def render(fmt: DiagnosticFormat, diagnostics: list[Diagnostic]) -> str:
    """Render ``diagnostics`` in format ``fmt``; an unknown format is a ValueError."""
    try:
        renderer = FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}") from None
    return renderer(diagnostics)


def ordered(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics in report order: (file, line, column, rule, message).

    The remaining fields break ties so the order never depends on the order the
    checks happened to run in.
    """
    return sorted(diagnostics, key=report_order)


def summary(diagnostics: list[Diagnostic]) -> str:
    """One line like ``2 errors, 1 warning in 3 files``; ``""`` when there is nothing to report.

    Kept apart from the text renderer so the CLI can send it to stderr and keep
    stdout to one diagnostic per line.
    """
    if not diagnostics:
        return ""
    errors = sum(d.severity == "error" for d in diagnostics)
    warnings = len(diagnostics) - errors
    files = len({d.file for d in diagnostics})
    return f"{_count(errors, 'error')}, {_count(warnings, 'warning')} in {_count(files, 'file')}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
