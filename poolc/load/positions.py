"""Where each key and value of a document stands, and diagnostics placed there.

A ``Document`` is one poolc document's data plus the span of every key and value.
The spans are recorded once, while the file is first loaded, in a compact table
(``table.py``); a valid document never needs them, so the dictionaries a
diagnostic reads are made from that table the first time one asks
(``FilePositions``), in a cache that belongs to the run (``PositionCache``).
The YAML is never parsed again for a position.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import diagnostics as d
from ..diagnostics import Diagnostic, Path_, Span
from ..jsonpos import nearest
from .parse import Builder, compose_all
from .table import SpanTable


class Document:
    """One YAML document of one file: its data and where each part of it stands.

    Positions as dictionaries cost far more memory than the data (a path and a span
    per node, about 30 kB for a 20-step pipeline), and a valid document never needs
    them. So a document loaded from YAML keeps its compact span table (recorded
    by the first load) and makes the dictionaries the first time a diagnostic asks
    for a position (``start``, ``keys``, ``values``, ``span``)."""

    __slots__ = ("file", "index", "_data", "_start", "_keys", "_values", "_lazy")

    def __init__(self, file: str, index: int, data: Any, start: Span | None = None,
                 keys: dict[Path_, Span] | None = None, values: dict[Path_, Span] | None = None,
                 lazy: FilePositions | None = None) -> None:
        self.file, self.index, self._data = file, index, data
        self._lazy = lazy
        if lazy is None:
            self._start = start if start is not None else (1, 1, 1, 1)
            self._keys: dict[Path_, Span] | None = {} if keys is None else keys
            self._values: dict[Path_, Span] | None = {} if values is None else values
        else:
            self._start, self._keys, self._values = start or (1, 1, 1, 1), None, None

    def _positions(self) -> tuple[dict[Path_, Span], dict[Path_, Span]]:
        if self._keys is not None and self._values is not None:
            return self._keys, self._values
        assert self._lazy is not None
        # not kept: a run that reports on every document would hold them all again
        self._start, keys, values = self._lazy.of(self.index)
        return keys, values

    @property
    def data(self) -> Any:
        """The document as plain data; read again from the file's text after ``release``."""
        if self._data is None and self._lazy is not None:
            return self._lazy.data(self.index)
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        self._data = value

    def release(self) -> None:
        """Drop the plain data once a model holds the document: in a large repository it
        is a third of the memory, and only a broken document's diagnostics read it again."""
        if self._lazy is not None:
            self._data = None

    @property
    def start(self) -> Span:
        self._positions()
        return self._start

    @start.setter
    def start(self, span: Span) -> None:
        self._start = span

    @property
    def keys(self) -> dict[Path_, Span]:
        return self._positions()[0]

    @property
    def values(self) -> dict[Path_, Span]:
        return self._positions()[1]

    def span(self, path: Iterable[str | int], *, key: bool = False) -> Span:
        """Where the node at ``path`` stands; the key when ``key`` (falling back to
        the value), and the nearest existing ancestor for a path that is not there
        (a missing field is reported at its parent)."""
        keys, values = self._positions()
        return nearest(keys, values, self._start, path, key=key)

    def diagnostic(self, rule: d.Rule, message: str, path: Iterable[str | int] = (),
                   *, key: bool = False, severity: d.Severity | None = None,
                   request: str | None = None) -> Diagnostic:
        line, col, end_line, end_col = self.span(path, key=key)
        return Diagnostic(self.file, line, col, end_line, end_col, rule.id,
                          severity or rule.severity, message, request)


class PositionCache:
    """The position tables one run keeps: those of the files asked last, up to
    MAX_CACHED_SPANS spans in all (about 60 MB). A plan with thousands of warnings
    composes each file once, and a run that reports on every one of 20,000 documents
    still does not hold all of them. One per run (load_paths makes it), so nothing
    outlives the documents that read it."""

    def __init__(self, max_spans: int | None = None) -> None:
        self.max_spans = MAX_CACHED_SPANS if max_spans is None else max_spans
        self.tables: dict[FilePositions, int] = {}     # insertion order = least recently computed first
        self.spans = 0

    def remember(self, positions: FilePositions, spans: int) -> None:
        """``positions`` now holds ``spans`` spans in all (one document more, or the whole file)."""
        self.spans += spans - self.tables.pop(positions, 0)
        self.tables[positions] = spans
        while self.spans > self.max_spans and len(self.tables) > 1:
            oldest = next(iter(self.tables))
            self.spans -= self.tables.pop(oldest)
            oldest.found = None

MAX_CACHED_SPANS = 250_000


class FilePositions:
    """A file's documents' span tables, recorded when the file was first loaded
    (``table.py``), made into the dictionaries a diagnostic reads the first time one
    asks; and the file's text, from which a released document's data is read again."""

    def __init__(self, file: str, text: str, cache: PositionCache):
        self.file, self.text, self.cache = file, text, cache
        self.tables: dict[int, SpanTable] = {}
        self.found: dict[int, tuple[Span, dict[Path_, Span], dict[Path_, Span]]] | None = None
        self.held = 0                                    # spans in ``found``

    def keep(self, index: int, table: SpanTable) -> None:
        """Document ``index``'s spans, as its first load recorded them."""
        self.tables[index] = table

    def of(self, index: int) -> tuple[Span, dict[Path_, Span], dict[Path_, Span]]:
        if self.found is None:
            self.found, self.held = {}, 0
        if index in self.found:
            return self.found[index]
        one = self.tables[index].spans()
        self.found[index] = one
        self.held += len(one[1]) + len(one[2])
        self.cache.remember(self, self.held)
        return one

    def data(self, index: int) -> Any:
        """Document ``index`` of the file as plain data again (the same builder as the first load)."""
        for i, node in enumerate(compose_all(self.text)):
            if i == index:
                return Builder(record=False).build(node, (), 0)
        raise IndexError(index)
