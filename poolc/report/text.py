"""Compiler-style text: one ``file:line:col: severity[RULE] message`` per line.

Editors and terminals turn this shape into clickable locations. The summary
line is not part of it (see ``poolc.report.summary``).

File names and messages come from the repository, so they are escaped
(``poolc.text.escape.text``): a control character (a newline would start a line of its
own) becomes ``\\n``/``\\xNN``, ``##[`` is spelt ``#\\x23[``, and a line that would
begin with ``::`` gets ``./`` in front, since CI runners such as GitHub Actions
take such lines from a job's output as workflow commands. The source snippets
under each line pass the same last check (``guard_lines``).
"""

from __future__ import annotations

from poolc.diagnostics import Diagnostic
from poolc.report import ordered
from poolc.report.source import with_source
from poolc.text.escape import guard_lines, one_line, text

__all__ = ["line", "one_line", "render", "safe_file"]


def safe_file(name: str) -> str:
    """A file name at the start of a line: escaped, and never starting with ``::``."""
    name = one_line(name)
    name = f"./{name}" if name.lstrip().startswith("::") or name[:1].isspace() else name
    return text(name)


def line(d: Diagnostic) -> str:
    return (f"{safe_file(d.file)}:{d.line}:{d.column}: {d.severity}[{d.rule}] "
            f"{text(d.message)}")


def render(diagnostics: list[Diagnostic]) -> str:
    return guard_lines(with_source(ordered(diagnostics), line))  # each line, then its source line and a caret
