"""Compiler-style text: one ``file:line:col: severity[RULE] message`` per line.

Editors and terminals turn this shape into clickable locations. The summary
line is not part of it (see ``compiler.report.summary``).
"""

from __future__ import annotations

from compiler.diagnostics import Diagnostic
from compiler.report import ordered
from compiler.report.source import with_source


def render(diagnostics: list[Diagnostic]) -> str:
    return with_source(ordered(diagnostics))  # each line, then its source line and a caret
