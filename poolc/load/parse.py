"""YAML text -> plain data, with the guards against hostile input.

ruamel.yaml's C parser composes each document into a node graph (marks on every
node); the Builder makes plain dicts/lists from it so that one pass gives the
data, the positions (when asked) and the guards: duplicate keys, tags that would
build objects, alias-expansion bombs, recursion, deep nesting. A tripped guard
is a ``Reject`` at its node, which the loader turns into a Diagnostic.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.cyaml import CParser
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode
from ruamel.yaml.resolver import VersionedResolver

from .. import diagnostics as d
from ..diagnostics import Path_, Span

MAX_DEPTH = 64

MAX_EXPANDED_NODES = 250_000


class Reject(Exception):
    """A guard tripped while building data from nodes."""

    def __init__(self, rule: d.Rule, message: str, node: Any):
        super().__init__(message)
        self.rule, self.message, self.node = rule, message, node


def node_span(node: Any) -> Span:
    start, end = node.start_mark, node.end_mark
    if end.line > start.line and end.column == 0 and isinstance(node, (MappingNode, SequenceNode)):
        # A block collection "ends" at column 0 of the next line (refined by the builder).
        return (start.line + 1, start.column + 1, end.line, start.column + 1)
    return (start.line + 1, start.column + 1, end.line + 1, end.column + 1)

_TAG = "tag:yaml.org,2002:"

_STR = _TAG + "str"


# id -> text of the Tags _Resolver shares; they live as long as the process, so an id
# here is never that of another object
_TAG_TEXT: dict[int, str] = {}


class _HugeInt(int):
    """Stands in for an integer too long to convert; compares as very large."""

    digits: int

    def __new__(cls, digits: str) -> _HugeInt:
        value = super().__new__(cls, 10**40 * (-1 if digits.startswith("-") else 1))
        value.digits = len(digits.lstrip("+-"))
        return value

    def __repr__(self) -> str:
        return f"an integer of {self.digits} digits"


def tag_rejected(node: Any) -> Reject:
    tag = node.tag.replace(_TAG, "!!", 1) if node.tag.startswith(_TAG) else node.tag
    return Reject(d.Y004, f"tag {tag!r} is not allowed: poolc files hold plain data only", node)

_FLOATS = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
           ".nan", ".NaN", ".NAN"}


def _tag_text(node: Any) -> str:
    """A node's tag as text; the resolver's shared tags are looked up, not formatted."""
    text = _TAG_TEXT.get(id(node.ctag))
    return text if text is not None else str(node.ctag)


def _scalar(node: ScalarNode) -> Any:
    tag, text = _tag_text(node), node.value
    if tag == _STR or tag == _TAG + "timestamp":
        # timestamps stay strings; the models parse RFC 3339 themselves. Short texts
        # (names, flavors, units) repeat across thousands of documents: one copy each.
        return sys.intern(text) if len(text) <= 64 else text
    if tag == _TAG + "int":
        digits = text.replace("_", "")
        if len(digits) > 40:  # far above 10^12, and int() refuses > 4300 digits
            return _HugeInt(digits)
        try:
            return int(digits, 10)
        except ValueError:
            return int(digits, 0)
    if tag == _TAG + "float":
        if text in _FLOATS:
            raise Reject(d.Y009, f"{text!r} is not a finite number", node)
        return float(text.replace("_", ""))
    if tag == _TAG + "bool":
        return text.lower() == "true"
    if tag == _TAG + "null":
        return None
    raise tag_rejected(node)


class Builder:
    """Turns one composed document into data, recording positions as it goes when
    ``record`` (a first load checks the guards and builds the data only)."""

    def __init__(self, record: bool = True):
        self.record = record
        self.keys: dict[Path_, Span] = {}
        self.values: dict[Path_, Span] = {}
        self.expanded = 0
        self.active: set[int] = set()

    def build(self, node: Any, path: Path_, depth: int) -> Any:
        self.expanded += 1
        if self.expanded > MAX_EXPANDED_NODES:
            raise Reject(d.Y005, f"the document expands to more than {MAX_EXPANDED_NODES} nodes "
                          "(an alias bomb?); write the data out instead of nesting aliases", node)
        if depth > MAX_DEPTH:
            raise Reject(d.Y006, f"nesting is deeper than {MAX_DEPTH} levels", node)
        record = self.record
        if record:
            self.values[path] = node_span(node)
        if type(node) is ScalarNode:
            return _scalar(node)
        if id(node) in self.active:
            raise Reject(d.Y005, "recursive alias: a node contains itself", node)
        self.active.add(id(node))
        try:
            # paths name positions: a first load (not recording) does not build them
            if isinstance(node, SequenceNode):
                if _tag_text(node) != _TAG + "seq":
                    raise tag_rejected(node)
                data: Any = [self.build(item, path + (i,) if record else path, depth + 1)
                             for i, item in enumerate(node.value)]
                last = path + (len(node.value) - 1,) if record and node.value else None
            elif isinstance(node, MappingNode):
                if _tag_text(node) != _TAG + "map":
                    raise tag_rejected(node)
                data = self._mapping(node, path, depth)
                last = path + (node.value[-1][0].value,) if record and node.value else None
            else:
                raise Reject(d.Y002, "unsupported YAML node", node)
            if record and last in self.values and node.end_mark.column == 0:
                # a block collection "ends" at column 0 of the next line: end it where its last value ends
                start = self.values[path]
                self.values[path] = start[:2] + self.values[last][2:]
            return data
        finally:
            self.active.discard(id(node))

    def _mapping(self, node: MappingNode, path: Path_, depth: int) -> dict:
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
        record = self.record
        for key_node, value_node in explicit:  # "<<: *defaults": explicit keys win over merged ones
            key = sys.intern(key_node.value)   # the same few keys in every document
            if key in seen:
                raise Reject(d.Y003, f"duplicate key {key!r} (first at line {seen[key].start_mark.line + 1}); "
                              "YAML keeps only one of them, so remove the other", key_node)
            seen[key] = key_node
            if record:
                self.keys[path + (key,)] = node_span(key_node)
                result[key] = self.build(value_node, path + (key,), depth + 1)
            else:
                result[key] = self.build(value_node, path, depth + 1)
        return result

    def _merge(self, merge: Any, path: Path_, depth: int, result: dict) -> None:
        sources = merge.value if isinstance(merge, SequenceNode) else [merge]
        own_span = self.values.get(path)
        for source in sources:
            merged = self.build(source, path, depth + 1)  # a chain of merges must not recurse unbounded
            if not isinstance(merged, dict):
                raise Reject(d.Y002, "a merge key '<<' takes a mapping or a list of mappings", source)
            for key, value in merged.items():
                result.setdefault(key, value)
        if own_span is not None:
            self.values[path] = own_span


class _Resolver(VersionedResolver):
    """ruamel's resolver, made cheap for the C parser: it asks for the YAML version
    on every scalar (raising and catching an AttributeError each time) and builds a
    new Tag per node. poolc reads YAML 1.2, and a plain scalar's tag depends only on
    its text, so resolved tags are cached (Tags are never mutated here)."""

    _plain: dict[str, Any] = {}
    _shared: dict[str, Any] = {}     # tag text -> the one Tag the resolver returns for it
    _kinds: dict[Any, Any] = {}      # node class -> its tag when not a plain scalar

    @property
    def processing_version(self) -> Any:
        return (1, 2)

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is ScalarNode and implicit[0]:
            tag = self._plain.get(value)
            if tag is None:
                tag = self._share(super().resolve(kind, value, implicit))
                if len(self._plain) < 50_000:
                    self._plain[value] = tag
            return tag
        # without path resolvers, the tag of a collection or of a quoted scalar depends on its kind alone
        tag = self._kinds.get(kind)
        if tag is None:
            tag = self._kinds[kind] = self._share(super().resolve(kind, value, implicit))
        return tag

    def _share(self, tag: Any) -> Any:
        """One Tag per text, registered in _TAG_TEXT: the builder then reads a node's
        tag with a dict lookup instead of formatting it (a million times in 20,000 files)."""
        if id(tag) in _TAG_TEXT:
            return tag
        text = str(tag)
        shared = self._shared.setdefault(text, tag)
        _TAG_TEXT[id(shared)] = text
        return shared

_yaml = YAML(typ="safe", pure=False)


class Composer(CParser, _Resolver):
    """libyaml's composer with our resolver, made once: YAML.compose_all makes a new
    loader class for every call and appends to a list that is never emptied, which
    over 20,000 files costs seconds and megabytes that are never given back."""

    def __init__(self, text: str) -> None:
        CParser.__init__(self, text)
        self._parser = self._composer = self
        _Resolver.__init__(self, loadumper=self)


def compose_all(text: str) -> Iterator[Any]:
    """The node graph of each document of ``text``, one by one."""
    composer = Composer(text)
    try:
        while composer.check_node():
            yield composer.get_node()
    finally:
        composer.dispose()

_BRACKETS = re.compile(r"[\[\]{}]")

MAX_FLOW_BRACKETS = 1000


def offset_to_position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def too_deep(text: str) -> int | None:
    """Tens of thousands of nested '[' overflow the C composer's stack and kill the
    process, so a file with many flow brackets is pre-scanned before parsing; the
    offset returned is where they first nest deeper than MAX_DEPTH (the builder's
    own limit, so the diagnostic lands where the builder would have put it)."""
    if text.count("[") + text.count("{") <= MAX_FLOW_BRACKETS:
        return None
    depth, first_too_deep = 0, None
    for match in _BRACKETS.finditer(text):
        depth += 1 if match.group() in "[{" else -1
        if depth > MAX_DEPTH and first_too_deep is None:
            first_too_deep = match.start()
        if depth > MAX_FLOW_BRACKETS:
            return first_too_deep
    return None

_DEEP_INDENT = re.compile(r"^[ \t]{200,}", re.M)

_INDICATOR_RUN = re.compile(r"(?:[-?:][ \t]+){50,}")

_INDICATOR_PAIR = re.compile(r"[-?:][ \t]+[-?:]")   # what any run starts with; four times cheaper to look for


def block_too_deep(text: str) -> tuple[int, int] | None:
    """Block collections nested tens of thousands deep (``- - - ...``) also overflow the
    composer's stack. Nesting needs indentation or indicators on one line, so a text
    with neither deep indentation nor long indicator runs cannot get there; anything
    else is measured on the parser's events (libyaml keeps its own stack, no recursion).
    Returns (line, column) where nesting first goes deeper than MAX_DEPTH."""
    if not (_DEEP_INDENT.search(text) or (_INDICATOR_PAIR.search(text) and _INDICATOR_RUN.search(text))):
        return None
    depth = 0
    try:
        for event in _yaml.parse(text):
            name = type(event).__name__
            if name in ("SequenceStartEvent", "MappingStartEvent"):
                depth += 1
                if depth > MAX_DEPTH:
                    return event.start_mark.line + 1, event.start_mark.column + 1
            elif name in ("SequenceEndEvent", "MappingEndEvent"):
                depth -= 1
    except (YAMLError, ValueError):
        return None   # the composer will report the syntax error
    return None
