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


# Budgets, like the YAML reader's (poolc.load): a source file is read in time and memory
# linear in its size, and refused at once beyond them (#42: the syntax tree of an 8 MB
# file took 3.9 GB, a 1,100-term expression ran out of stack). Real step modules are a
# few KiB; generated or vendored code is not where a pipeline's resources are written.
MAX_SOURCE_BYTES = 2 * 1024 * 1024
MAX_SOURCE_NODES = 250_000        # syntax-tree nodes (the YAML reader's node budget)
MAX_SOURCE_DEPTH = 200            # nesting of the tree: Python's own parser stops near 200 brackets
_TOKEN = re.compile(r"\w+|[^\w\s]")


def _budget_problem(text: str) -> str | None:
    """Why the text is beyond the budgets before it is parsed: its size, or more tokens
    than the node budget allows (a tree is never built to find out)."""
    if len(text.encode("utf-8")) > MAX_SOURCE_BYTES:
        return f"it is larger than {MAX_SOURCE_BYTES} bytes"
    tokens = 0
    for _ in _TOKEN.finditer(text):
        tokens += 1
        if tokens > 2 * MAX_SOURCE_NODES:
            return f"it holds more than {2 * MAX_SOURCE_NODES} tokens"
    return None


def _tree_problem(tree: ast.AST) -> str | None:
    """Why the parsed tree is beyond the node or depth budget, walked once without recursion."""
    nodes = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_SOURCE_NODES:
            return f"its syntax tree has more than {MAX_SOURCE_NODES} nodes"
        if depth > MAX_SOURCE_DEPTH:
            return f"it nests deeper than {MAX_SOURCE_DEPTH} levels (an expression of that many terms, or blocks)"
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return None


def parse(path: str) -> tuple[PySource | None, list[Diagnostic]]:
    """The file parsed, or the diagnostic that says why not (C001 unreadable, C002 syntax
    or beyond the budgets)."""
    text, problem = read_text(path)
    if text is None:
        return None, [_as_source_problem(problem, path)]
    beyond = _budget_problem(text)
    if beyond is not None:
        return None, [_beyond(path, beyond)]
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
        return None, [Place(path, (1, 1, 1, 1)).diagnostic(d.C002, f"cannot parse this file: {str(exc)[:200]}")]
    beyond = _tree_problem(tree)
    if beyond is not None:
        return None, [_beyond(path, beyond)]
    return PySource(path, text, tree), []


def _beyond(path: str, why: str) -> Diagnostic:
    return Place(path, (1, 1, 1, 1)).diagnostic(
        d.C002, f"poolc does not read this file as code: {why}; write the steps' resources in a smaller module "
        "(or in the Pipeline document)")


def _as_source_problem(problem: Diagnostic | None, path: str) -> Diagnostic:
    """A reading problem of a source file, under the source rule C001."""
    message = problem.message if problem is not None else "cannot read the file"
    return Place(path, (1, 1, 1, 1)).diagnostic(d.C001, message)
