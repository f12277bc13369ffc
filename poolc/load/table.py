"""The span of every key and value of a document, recorded once, while it is first loaded.

A diagnostic's position comes from this table: the YAML is never parsed again for it
(#41: re-reading a file for its positions was half of the checks' CPU at 10,000
requests). The table is compact, because most documents never need it: a path is a
number (its parent's number and one step), a span four integers in an array, about
40 bytes a node against about 200 for the dictionaries a diagnostic reads, which are
made from it only when one asks (``SpanTable.spans``).
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import MutableSequence
from typing import Any

from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

from .. import diagnostics as d
from ..diagnostics import Path_, Span
from . import parse
from .parse import (
    _STR,
    _TAG,
    Builder,
    Reject,
    _scalar,
    _tag_text,
    tag_rejected,
)

_NO_SPAN = (0, 0, 0, 0)     # lines count from 1: a 0 is "no span recorded"


class SpanTable:
    """One document's spans by path number: path 0 is the document's root; path ``n``
    is path ``parents[n]`` and one more step, ``steps[n]`` (a key or an index). Filled
    as lists while the document is built, then ``frozen`` into arrays."""

    __slots__ = ("parents", "steps", "values", "keys")

    def __init__(self) -> None:
        self.parents: MutableSequence[int] = [-1]
        self.steps: list[str | int] = [""]      # the root's step is never read
        self.values: MutableSequence[int] = [0, 0, 0, 0]   # four per path: where its value stands
        self.keys: MutableSequence[int] = [0, 0, 0, 0]     # four per path: where its key stands (0: none)

    def freeze(self) -> SpanTable:
        """The table as arrays of machine integers: a quarter of the lists' memory."""
        self.parents, self.values, self.keys = array("i", self.parents), array("i", self.values), array("i", self.keys)
        return self

    def spans(self) -> tuple[Span, dict[Path_, Span], dict[Path_, Span]]:
        """The root's span and the key and value spans by path, as a diagnostic reads them.
        Where two numbers name one path (a key a merge brought, then written out), the later
        one is the span the builder kept, as its dictionaries would have."""
        paths: list[Path_] = [()]
        keys: dict[Path_, Span] = {}
        values: dict[Path_, Span] = {}
        parents, steps, v, k = self.parents, self.steps, self.values, self.keys
        for n in range(len(steps)):
            if n:
                path = paths[parents[n]] + (steps[n],)
                paths.append(path)
            else:
                path = ()
            at = 4 * n
            if v[at]:
                values[path] = (v[at], v[at + 1], v[at + 2], v[at + 3])
            if k[at]:
                keys[path] = (k[at], k[at + 1], k[at + 2], k[at + 3])
        return values.get((), (1, 1, 1, 1)), keys, values

    def __len__(self) -> int:
        return len(self.steps)


def _span(node: Any) -> tuple[int, int, int, int]:
    start, end = node.start_mark, node.end_mark
    if end.line > start.line and end.column == 0 and type(node) is not ScalarNode:
        # A block collection "ends" at column 0 of the next line (refined by the builder).
        return start.line + 1, start.column + 1, end.line, start.column + 1
    return start.line + 1, start.column + 1, end.line + 1, end.column + 1


class TableBuilder(Builder):
    """The first load's builder: the data and the guards as ``Builder`` checks them, and
    every span into a ``SpanTable`` as ``Builder(record=True)`` would record it."""

    def __init__(self) -> None:
        super().__init__(record=False)
        self.table = SpanTable()

    def build_document(self, node: Any) -> Any:
        self.table.values[0:4] = _span(node)
        data = self.build(node, 0, 0)
        self.table.freeze()
        return data

    def _child(self, path: int, step: str | int, node: Any, key: tuple[int, int, int, int] = _NO_SPAN) -> int:
        """A new path number for ``node`` (and its ``key``'s span), its span recorded."""
        table = self.table
        table.parents.append(path)
        table.steps.append(step)
        table.values.extend(_span(node))
        table.keys.extend(key)
        return len(table.steps) - 1

    def build(self, node: Any, path: Any, depth: int) -> Any:
        self.expanded += 1
        if self.expanded > parse.MAX_EXPANDED_NODES:   # read where it is set (a test lowers it)
            raise Reject(d.Y005, f"the document expands to more than {parse.MAX_EXPANDED_NODES} nodes "
                          "(an alias bomb?); write the data out instead of nesting aliases", node)
        if depth > parse.MAX_DEPTH:
            raise Reject(d.Y006, f"nesting is deeper than {parse.MAX_DEPTH} levels", node)
        if type(node) is ScalarNode:   # its span is recorded: the caller made its path number
            return _scalar(node)
        if id(node) in self.active:
            raise Reject(d.Y005, "recursive alias: a node contains itself", node)
        self.active.add(id(node))
        try:
            last: int | None = None     # the number of the collection's last value, as written
            if isinstance(node, SequenceNode):
                if _tag_text(node) != _TAG + "seq":
                    raise tag_rejected(node)
                data: Any = []
                for i, item in enumerate(node.value):
                    last = self._child(path, i, item)
                    data.append(self.build(item, last, depth + 1))
            elif isinstance(node, MappingNode):
                if _tag_text(node) != _TAG + "map":
                    raise tag_rejected(node)
                data, last = self._mapping(node, path, depth)
            else:
                raise Reject(d.Y002, "unsupported YAML node", node)
            values, at = self.table.values, 4 * path
            if last is not None and node.end_mark.column == 0 and values[4 * last]:
                # a block collection "ends" at column 0 of the next line: end it where its last value ends
                values[at + 2:at + 4] = values[4 * last + 2:4 * last + 4]
            return data
        finally:
            self.active.discard(id(node))

    def _mapping(self, node: MappingNode, path: Any, depth: int) -> tuple[dict, int | None]:  # type: ignore[override]
        """The mapping's data, and the number of its last key's value when that key is written
        last (not a merge key '<<')."""
        result: dict[str, Any] = {}
        explicit: list[tuple[Any, Any]] = []
        for key_node, value_node in node.value:
            if type(key_node) is not ScalarNode:
                raise Reject(d.Y002, "a mapping key must be a plain scalar", key_node)
            tag = _tag_text(key_node)
            if tag == _TAG + "merge":
                self._merge(value_node, path, depth, result)
            else:
                if tag != _STR:
                    _scalar(key_node)  # rejects tags on keys the same way as on values
                explicit.append((key_node, value_node))
        seen: dict[str, Any] = {}
        child = None
        for key_node, value_node in explicit:  # "<<: *defaults": explicit keys win over merged ones
            key = sys.intern(key_node.value)   # the same few keys in every document
            if key in seen:
                raise Reject(d.Y003, f"duplicate key {key!r} (first at line {seen[key].start_mark.line + 1}); "
                              "YAML keeps only one of them, so remove the other", key_node)
            seen[key] = key_node
            child = self._child(path, key, value_node, _span(key_node))
            result[key] = self.build(value_node, child, depth + 1)
        written_last = bool(explicit) and explicit[-1][0] is node.value[-1][0]
        return result, child if written_last else None

    def _merge(self, merge: Any, path: Any, depth: int, result: dict) -> None:
        sources = merge.value if isinstance(merge, SequenceNode) else [merge]
        values = self.table.values
        own_span = values[4 * path:4 * path + 4]
        for source in sources:
            values[4 * path:4 * path + 4] = _span(source)    # as the builder records it, until restored below
            merged = self.build(source, path, depth + 1)  # a chain of merges must not recurse unbounded
            if not isinstance(merged, dict):
                raise Reject(d.Y002, "a merge key '<<' takes a mapping or a list of mappings", source)
            for key, value in merged.items():
                result.setdefault(key, value)
        values[4 * path:4 * path + 4] = own_span
