"""The offending source line and a caret under it, after a text diagnostic:

    pools/gpu.yaml:15:5: error[S006] give either cpu or mcpu, not both
       15 |     cpu: 512
          |     ^~~

Each file is read once per rendering; a file that cannot be read (gone, not
UTF-8, standard input) gets no snippet, only its diagnostic line.
"""

from __future__ import annotations

from collections.abc import Callable

from poolc.diagnostics import Diagnostic
from poolc.writer import read_regular

UNQUOTED = ("C001", "C002")


class Sources:
    """Lines of the files diagnostics point into, read on first use."""

    def __init__(self) -> None:
        self._lines: dict[str, list[str] | None] = {}

    def lines(self, file: str) -> list[str] | None:
        if file not in self._lines:
            # only a regular file, never through a link (a YAML file a pull request linked to
            # .git/config must not be quoted): a FIFO or a device must not hang us either
            text = read_regular(file, limit=16 << 20)
            self._lines[file] = None if text is None else text.removeprefix("\ufeff").splitlines()
        return self._lines[file]

    def snippet(self, diag: Diagnostic) -> str:
        """Two lines (source, caret) ending in newlines, or "" when not available. A
        source file poolc cannot read or parse as code (C001, C002) is never quoted: it
        may be any file a pull request named, and its line is no business of the log."""
        if diag.rule in UNQUOTED:
            return ""
        lines = self.lines(diag.file)
        if not lines or not 1 <= diag.line <= len(lines):
            return ""
        text = lines[diag.line - 1].expandtabs(1)
        if not text.strip() or len(text) > 300:
            return ""
        text = "".join(c if c.isprintable() else "?" for c in text)
        start = min(max(diag.column - 1, 0), len(text))
        end = diag.end_column - 1 if diag.end_line == diag.line else len(text)
        width = max(1, min(end, len(text)) - start)
        gutter = f"{diag.line:>5} | "
        pad = "".join(c if c == "\t" else " " for c in text[:start])
        return f"{gutter}{text}\n{' ' * (len(gutter) - 2)}| {pad}^{'~' * (width - 1)}\n"


def with_source(diagnostics: list[Diagnostic], line: Callable[[Diagnostic], str] = Diagnostic.as_text) -> str:
    """Each diagnostic's text line (as ``line`` writes it) followed by its source snippet."""
    sources = Sources()
    return "".join(line(x) + "\n" + sources.snippet(x) for x in diagnostics)
