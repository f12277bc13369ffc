"""Compiler-style text: one ``file:line:col: severity[RULE] message`` per line.

Editors and terminals turn this shape into clickable locations. The summary
line is not part of it (see ``poolc.report.summary``).

File names and messages come from the repository, so they are escaped: a control
character (a newline would start a line of its own) becomes ``\\n``/``\\xNN``, and
a line that would begin with ``::`` gets ``./`` in front, since CI runners such
as GitHub Actions take such lines from a job's output as workflow commands.
"""

from __future__ import annotations

from poolc.diagnostics import Diagnostic
from poolc.report import ordered
from poolc.report.source import with_source

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def one_line(text: str) -> str:
    """``text`` with every character that is not printable (line breaks of any kind
    included) escaped; printable text, Unicode included, is kept."""
    if text.isprintable():
        return text
    out = []
    for char in text:
        if char in _NAMED:
            out.append(_NAMED[char])
        elif char.isprintable():
            out.append(char)
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000
                       else f"\\U{code:08x}")
    return "".join(out)


def safe_file(name: str) -> str:
    """A file name at the start of a line: escaped, and never starting with ``::``."""
    name = one_line(name)
    return f"./{name}" if name.lstrip().startswith("::") or name[:1].isspace() else name


def line(d: Diagnostic) -> str:
    return (f"{safe_file(d.file)}:{d.line}:{d.column}: {d.severity}[{d.rule}] "
            f"{one_line(d.message)}")


def render(diagnostics: list[Diagnostic]) -> str:
    return with_source(ordered(diagnostics), line)  # each line, then its source line and a caret
