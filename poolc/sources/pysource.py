"""A Python source file as an ``ast`` tree, never imported or run, and the spans of its
nodes in characters (``ast`` counts columns in UTF-8 bytes)."""

from __future__ import annotations

import ast
import re
import warnings

from .. import diagnostics as d
from ..diagnostics import Diagnostic
from ..load import read_text
from .found import Place


class PySource:
    """One parsed file: its tree and the places of its nodes."""

    def __init__(self, file: str, text: str, tree: ast.Module) -> None:
        self.file, self.tree = file, tree
        self._lines = text.splitlines()

    def _column(self, line: int, offset: int) -> int:
        text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        return len(text.encode("utf-8")[:offset].decode("utf-8", errors="replace")) + 1

    def place(self, node: ast.AST) -> Place:
        line = getattr(node, "lineno", 1)
        end_line = getattr(node, "end_lineno", None) or line
        col = self._column(line, getattr(node, "col_offset", 0))
        end_offset = getattr(node, "end_col_offset", None)
        end_col = self._column(end_line, end_offset) if end_offset is not None else col
        return Place(self.file, (line, col, end_line, end_col))


def parse(path: str) -> tuple[PySource | None, list[Diagnostic]]:
    """The file parsed, or the diagnostic that says why not (C001 unreadable, C002 syntax)."""
    text, problem = read_text(path)
    if text is None:
        return None, [_as_source_problem(problem, path)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # SyntaxWarning on odd escapes is not ours to print
            tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = exc.offset or 1
        # the message without what it quotes of the file: a file that is no Python may be anything
        message = re.sub(r"'[^'\n]{4,}'", "'...'", exc.msg or "invalid syntax")
        return None, [Place(path, (line, col, line, col)).diagnostic(
            d.C002, f"Python syntax error: {message}; poolc reads this file to find the steps' resources")]
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, [Place(path, (1, 1, 1, 1)).diagnostic(d.C002, f"cannot parse this file: {exc}")]
    return PySource(path, text, tree), []


def _as_source_problem(problem: Diagnostic | None, path: str) -> Diagnostic:
    """A reading problem of a source file, under the source rule C001."""
    message = problem.message if problem is not None else "cannot read the file"
    return Place(path, (1, 1, 1, 1)).diagnostic(d.C001, message)
