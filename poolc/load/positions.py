"""Where each key and value of a document stands, and diagnostics placed there.

A ``Document`` is one poolc document's data plus the span of every key and value.
Positions cost far more memory than the data, and a valid document never needs
them, so a document loaded from YAML works them out again from its file's text
the first time a diagnostic asks (``FilePositions``), in a cache that belongs to
the run (``PositionCache``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from .. import diagnostics as d
from ..diagnostics import Diagnostic, Path_, Span
from ..text.jsonpos import nearest
from .kinds import node_is_ours
from .parse import Builder, Composer, Reject, compose_all


class Document:
    """One YAML document of one file: its data and where each part of it stands.

    Positions cost far more memory than the data (a path and a span per node,
    about 30 kB for a 20-step pipeline), and a valid document never needs them.
    So a document loaded from YAML keeps only a handle on its file's text and
    works its positions out again, for every document of that file at once, the
    first time a diagnostic asks for one (``start``, ``keys``, ``values``, ``span``)."""

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
    """The positions of a file's documents, worked out again from its text on demand:
    the same composer and builder as the first load, so the same spans."""

    def __init__(self, file: str, text: str, cache: PositionCache):
        self.file, self.text, self.cache = file, text, cache
        self.found: dict[int, tuple[Span, dict[Path_, Span], dict[Path_, Span]]] | None = None
        self.whole = False                               # ``found`` holds every document of the file
        self.held = 0                                    # spans in ``found``
        # document -> its root node's lines, [first, end); None (load_text's end) for a file of one document
        self.lines: dict[int, tuple[int, int]] | None = {}
        self._starts: list[int] | None = None            # offset of each line, when a slice is cut

    def note(self, index: int, node: Any) -> None:
        """Remember the lines of document ``index``'s root node (at the first load), so
        that its positions can be read from those lines alone (`_one`)."""
        end = node.end_mark
        assert self.lines is not None
        self.lines[index] = (node.start_mark.line, end.line + (1 if end.column else 0))

    def of(self, index: int) -> tuple[Span, dict[Path_, Span], dict[Path_, Span]]:
        if self.found is None:
            self.found, self.whole, self.held = {}, False, 0
        if index in self.found:
            return self.found[index]
        one = self._one(index) if self.lines is not None and not self.whole else None
        if one is None:
            self.found, self.whole = self._compose(), True
            self.held = sum(len(keys) + len(values) for _, keys, values in self.found.values())
            self.cache.remember(self, self.held)
            return self.found[index]
        self.found[index] = one
        self.held += len(one[1]) + len(one[2])
        self.cache.remember(self, self.held)
        return one

    def _one(self, index: int) -> tuple[Span, dict[Path_, Span], dict[Path_, Span]] | None:
        """The positions of one document of a multi-document file, read from its own
        lines (a file of 500 Allocations with warnings on 60 reads 60 short texts,
        not the whole file each time it is asked). None, and the whole file is read
        instead, when that could place anything differently: a line break other than
        LF, or a slice that does not give back the document's root where the first
        load found it."""
        assert self.lines is not None
        first, end = self.lines[index]
        if self._starts is None:
            if any(c in self.text for c in "\r\x85\u2028\u2029"):
                return None
            starts = [0]
            at = self.text.find("\n")
            while at >= 0:
                starts.append(at + 1)
                at = self.text.find("\n", at + 1)
            self._starts = starts
        starts = self._starts
        if end > len(starts):
            return None
        cut = self.text[starts[first]:starts[end] if end < len(starts) else len(self.text)]
        try:
            found = event_positions(cut)
        except (YAMLError, RecursionError, ValueError):
            return None
        if found is None or list(found) != [0]:
            return None
        root, keys, values = found[0]
        if root[0] != 1:
            return None
        return _moved(root, first), _moved_all(keys, first), _moved_all(values, first)

    def data(self, index: int) -> Any:
        """Document ``index`` of the file as plain data again (the same builder as the first load)."""
        for i, node in enumerate(compose_all(self.text)):
            if i == index:
                return Builder(record=False).build(node, (), 0)
        raise IndexError(index)

    def _compose(self) -> dict[int, tuple[Span, dict[Path_, Span], dict[Path_, Span]]]:
        try:
            quick = event_positions(self.text)
        except (YAMLError, RecursionError, ValueError):
            quick = None
        if quick is not None:
            return quick
        found = {}
        try:
            for i, node in enumerate(compose_all(self.text)):
                if node is None or not node_is_ours(node):
                    continue
                builder = Builder()
                try:
                    builder.build(node, (), 0)
                except Reject:
                    continue
                found[i] = (builder.values[()], builder.keys, builder.values)
        except (YAMLError, RecursionError, ValueError):
            pass     # after the documents loaded: the first load reported it
        return found


def _moved(span: Span, lines: int) -> Span:
    return (span[0] + lines, span[1], span[2] + lines, span[3])


def _moved_all(spans: dict[Path_, Span], lines: int) -> dict[Path_, Span]:
    return {path: (a + lines, b, c + lines, e) for path, (a, b, c, e) in spans.items()}


class _Frame:
    """An open collection while event_positions walks a document."""

    __slots__ = ("path", "start", "mapping", "key", "count", "last")

    def __init__(self, path: Path_, start: Any, mapping: bool):
        self.path, self.start, self.mapping = path, start, mapping
        self.key: str | None = None     # a mapping's key whose value comes next
        self.count = 0                  # a sequence's items so far
        self.last: Path_ | None = None  # the path of the last value (refines a block collection's end)


def _event_span(start: Any, end: Any, collection: bool) -> Span:
    if collection and end.line > start.line and end.column == 0:
        return (start.line + 1, start.column + 1, end.line, start.column + 1)
    return (start.line + 1, start.column + 1, end.line + 1, end.column + 1)


def event_positions(text: str) -> dict[int, tuple[Span, dict[Path_, Span], dict[Path_, Span]]] | None:
    """The positions Builder records, read from libyaml's events without composing
    nodes or building data: the positions of a file asked again cost about half.
    None (compose and build instead) when the text has an anchor, an alias, an
    explicit tag or a merge key, whose positions only the builder gets right."""
    composer = Composer(text)
    found: dict[int, tuple[Span, dict[Path_, Span], dict[Path_, Span]]] = {}
    keys: dict[Path_, Span] = {}
    values: dict[Path_, Span] = {}
    stack: list[_Frame] = []
    index = -1
    try:
        while composer.check_event():
            event = composer.get_event()
            kind = type(event)
            if kind is ScalarEvent or kind is MappingStartEvent or kind is SequenceStartEvent:
                if event.anchor is not None or event.tag is not None:
                    return None
                parent = stack[-1] if stack else None
                if parent is not None and parent.mapping and parent.key is None:
                    if kind is not ScalarEvent or event.value == "<<":
                        return None
                    parent.key = event.value
                    keys[parent.path + (event.value,)] = _event_span(event.start_mark, event.end_mark, False)
                    continue
                if parent is None:
                    path: Path_ = ()
                elif parent.mapping:
                    assert parent.key is not None
                    path, parent.key = parent.path + (parent.key,), None
                else:
                    path = parent.path + (parent.count,)
                    parent.count += 1
                if parent is not None:
                    parent.last = path
                if kind is ScalarEvent:
                    values[path] = _event_span(event.start_mark, event.end_mark, False)
                else:
                    stack.append(_Frame(path, event.start_mark, kind is MappingStartEvent))
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                frame = stack.pop()
                span = _event_span(frame.start, event.end_mark, True)
                if frame.last is not None and frame.last in values and event.end_mark.column == 0:
                    span = span[:2] + values[frame.last][2:]
                values[frame.path] = span
            elif kind is DocumentStartEvent:
                index += 1
                keys, values = {}, {}
            elif kind is DocumentEndEvent:
                if () in values:
                    found[index] = (values[()], keys, values)
            elif kind is AliasEvent:
                return None
    finally:
        composer.dispose()
    return found
