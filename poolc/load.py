"""Read YAML files into plain data while keeping every key's and value's position.

ruamel.yaml's C parser composes each document into a node graph (marks on every
node); we build plain dicts/lists from it ourselves so that one pass gives the
data, the positions, and the guards against hostile input: duplicate keys, tags
that would build objects, alias-expansion bombs, recursion, deep nesting, huge or
non-UTF-8 files. Every problem becomes a Diagnostic, never an exception.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.cyaml import CParser
from ruamel.yaml.error import MarkedYAMLError, YAMLError
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
from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.resolver import VersionedResolver

from . import diagnostics as d
from .diagnostics import Diagnostic

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 64
MAX_EXPANDED_NODES = 250_000
YAML_SUFFIXES = (".yaml", ".yml")

# Positions are 1-based: (line, column, end_line, end_column); end is exclusive.
Span = tuple[int, int, int, int]
Path_ = tuple[str | int, ...]


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
                 lazy: _Positions | None = None) -> None:
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
        path = tuple(path)
        keys, values = self._positions()
        while True:
            if key and path in keys:
                return keys[path]
            if path in values:
                return values[path]
            if path in keys:
                return keys[path]
            if not path:
                return self._start
            path = path[:-1]
            key = True  # an absent child is reported at its parent's key

    def diagnostic(self, rule: d.Rule, message: str, path: Iterable[str | int] = (),
                   *, key: bool = False, severity: d.Severity | None = None,
                   request: str | None = None) -> Diagnostic:
        line, col, end_line, end_col = self.span(path, key=key)
        return Diagnostic(self.file, line, col, end_line, end_col, rule.id,
                          severity or rule.severity, message, request)


@dataclass
class LoadResult:
    files: list[str]
    documents: list[Document]
    diagnostics: list[Diagnostic]
    # "documents": poolc documents seen, "foreign": other documents skipped (for the summary line)
    counts: dict[str, int] = field(default_factory=dict)


def _tally(counts: dict[str, int] | None, what: str, n: int = 1) -> None:
    if counts is not None:
        counts[what] = counts.get(what, 0) + n


_SEPARATOR = re.compile(r"^---", re.MULTILINE)


def _foreign_count(text: str) -> int:
    """Documents in a file that is not parsed: its non-blank parts between '---' lines."""
    return sum(1 for part in _SEPARATOR.split(text) if part.strip())


class _Reject(Exception):
    """A guard tripped while building data from nodes."""

    def __init__(self, rule: d.Rule, message: str, node: Any):
        super().__init__(message)
        self.rule, self.message, self.node = rule, message, node


def _span(node: Any) -> Span:
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


def _tag_rejected(node: Any) -> _Reject:
    tag = node.tag.replace(_TAG, "!!", 1) if node.tag.startswith(_TAG) else node.tag
    return _Reject(d.Y004, f"tag {tag!r} is not allowed: poolc files hold plain data only", node)
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
            raise _Reject(d.Y009, f"{text!r} is not a finite number", node)
        return float(text.replace("_", ""))
    if tag == _TAG + "bool":
        return text.lower() == "true"
    if tag == _TAG + "null":
        return None
    raise _tag_rejected(node)


class _Builder:
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
            raise _Reject(d.Y005, f"the document expands to more than {MAX_EXPANDED_NODES} nodes "
                          "(an alias bomb?); write the data out instead of nesting aliases", node)
        if depth > MAX_DEPTH:
            raise _Reject(d.Y006, f"nesting is deeper than {MAX_DEPTH} levels", node)
        record = self.record
        if record:
            self.values[path] = _span(node)
        if type(node) is ScalarNode:
            return _scalar(node)
        if id(node) in self.active:
            raise _Reject(d.Y005, "recursive alias: a node contains itself", node)
        self.active.add(id(node))
        try:
            # paths name positions: a first load (not recording) does not build them
            if isinstance(node, SequenceNode):
                if _tag_text(node) != _TAG + "seq":
                    raise _tag_rejected(node)
                data: Any = [self.build(item, path + (i,) if record else path, depth + 1)
                             for i, item in enumerate(node.value)]
                last = path + (len(node.value) - 1,) if record and node.value else None
            elif isinstance(node, MappingNode):
                if _tag_text(node) != _TAG + "map":
                    raise _tag_rejected(node)
                data = self._mapping(node, path, depth)
                last = path + (node.value[-1][0].value,) if record and node.value else None
            else:
                raise _Reject(d.Y002, "unsupported YAML node", node)
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
                raise _Reject(d.Y002, "a mapping key must be a plain scalar", key_node)
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
                raise _Reject(d.Y003, f"duplicate key {key!r} (first at line {seen[key].start_mark.line + 1}); "
                              "YAML keeps only one of them, so remove the other", key_node)
            seen[key] = key_node
            if record:
                self.keys[path + (key,)] = _span(key_node)
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
                raise _Reject(d.Y002, "a merge key '<<' takes a mapping or a list of mappings", source)
            for key, value in merged.items():
                result.setdefault(key, value)
        if own_span is not None:
            self.values[path] = own_span


def _error_at(file: str, rule: d.Rule, message: str, line: int = 1, col: int = 1) -> Diagnostic:
    return Diagnostic(file, line, col, line, col, rule.id, rule.severity, message)


def _looks_utf16(raw: bytes) -> bool:
    """A poolc file saved as UTF-16 without a BOM: every other byte is NUL."""
    for encoding in ("utf-16-le", "utf-16-be"):
        try:
            if "poolc/" in raw[: len(raw) // 2 * 2].decode(encoding):
                return True
        except UnicodeDecodeError:
            continue
    return False


def _decode(file: str, raw: bytes) -> tuple[str | None, Diagnostic | None]:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None, _error_at(file, d.Y001, "the file is UTF-16; save it as UTF-8")
    if b"\x00" in raw[:4096] and _looks_utf16(raw):
        return None, _error_at(file, d.Y001, "the file is UTF-16 (without a byte order mark); save it as UTF-8")
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        col = len(before[before.rfind(b"\n") + 1:].decode("utf-8", "replace")) + 1
        return None, _error_at(file, d.Y001, f"the file is not valid UTF-8 (byte 0x{raw[exc.start]:02x}); "
                               "save it as UTF-8", line, col)


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
_yaml.Resolver = _Resolver


class _Composer(CParser, _Resolver):
    """libyaml's composer with our resolver, made once: YAML.compose_all makes a new
    loader class for every call and appends to a list that is never emptied, which
    over 20,000 files costs seconds and megabytes that are never given back."""

    def __init__(self, text: str) -> None:
        CParser.__init__(self, text)
        self._parser = self._composer = self
        _Resolver.__init__(self, loadumper=self)


def _compose_all(text: str) -> Iterator[Any]:
    """The node graph of each document of ``text``, one by one."""
    composer = _Composer(text)
    try:
        while composer.check_node():
            yield composer.get_node()
    finally:
        composer.dispose()


POOLC_KINDS = ("ResourcePool", "Policy", "Stack", "Pipeline", "Allocation")


decode = _decode  # bytes -> text, or the Y001 diagnostic (also for standard input)


def _node_is_ours(node: Any) -> bool:
    """A document is ours when it is a mapping whose apiVersion starts with poolc/,
    or a look-alike (see _looks_like_ours); decided on the node, before building,
    so foreign YAML is never judged."""
    if not isinstance(node, MappingNode):
        return False
    top = {key.value: value for key, value in node.value if isinstance(key, ScalarNode)}
    api = top.get("apiVersion")
    if isinstance(api, ScalarNode) and api.value.startswith("poolc/"):
        return True
    return _looks_like_ours(top, api)


def _looks_like_ours(top: dict[str, Any], api: Any) -> bool:
    """One of our kinds with a spec, whose apiVersion is missing or a misspelling of
    poolc/v1 (poolc.dev/v1, pool/v1, v1): read as ours, so the schema reports the
    apiVersion instead of the whole document being skipped without a word. A real
    foreign apiVersion (kyverno.io/v1 Policy, tekton.dev/v1 Pipeline) stays foreign."""
    kind = top.get("kind")
    if not (isinstance(kind, ScalarNode) and kind.value in POOLC_KINDS and "spec" in top):
        return False
    if not isinstance(api, ScalarNode) or "/" not in api.value:
        return True
    group = api.value.split("/", 1)[0].lower()
    return group.startswith("pool") or bool(difflib.get_close_matches(group, ["poolc"], n=1, cutoff=0.6))


_LOOKALIKE = re.compile(r"""kind["']?\s*:\s*["']?(?:""" + "|".join(POOLC_KINDS) + r")\b")


def _mentions_poolc(text: str) -> bool:
    """Cheap pre-filter: only a file that names poolc/ or one of our kinds is parsed."""
    return "poolc/" in text or _LOOKALIKE.search(text) is not None


_OURS = re.compile(r"""apiVersion["']?\s*:\s*["']?poolc/""")
_BRACKETS = re.compile(r"[\[\]{}]")
MAX_FLOW_BRACKETS = 1000


def _offset_to_position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _too_deep(text: str) -> int | None:
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


def _block_too_deep(text: str) -> tuple[int, int] | None:
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


class PositionCache:
    """The position tables one run keeps: those of the files asked last, up to
    MAX_CACHED_SPANS spans in all (about 60 MB). A plan with thousands of warnings
    composes each file once, and a run that reports on every one of 20,000 documents
    still does not hold all of them. One per run (load_paths makes it), so nothing
    outlives the documents that read it."""

    def __init__(self, max_spans: int | None = None) -> None:
        self.max_spans = MAX_CACHED_SPANS if max_spans is None else max_spans
        self.tables: dict[_Positions, int] = {}     # insertion order = least recently computed first
        self.spans = 0

    def remember(self, positions: _Positions, spans: int) -> None:
        """``positions`` now holds ``spans`` spans in all (one document more, or the whole file)."""
        self.spans += spans - self.tables.pop(positions, 0)
        self.tables[positions] = spans
        while self.spans > self.max_spans and len(self.tables) > 1:
            oldest = next(iter(self.tables))
            self.spans -= self.tables.pop(oldest)
            oldest.found = None


class _Positions:
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
            found = _event_positions(cut)
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
        for i, node in enumerate(_compose_all(self.text)):
            if i == index:
                return _Builder(record=False).build(node, (), 0)
        raise IndexError(index)

    def _compose(self) -> dict[int, tuple[Span, dict[Path_, Span], dict[Path_, Span]]]:
        try:
            quick = _event_positions(self.text)
        except (YAMLError, RecursionError, ValueError):
            quick = None
        if quick is not None:
            return quick
        found = {}
        try:
            for i, node in enumerate(_compose_all(self.text)):
                if node is None or not _node_is_ours(node):
                    continue
                builder = _Builder()
                try:
                    builder.build(node, (), 0)
                except _Reject:
                    continue
                found[i] = (builder.values[()], builder.keys, builder.values)
        except (YAMLError, RecursionError, ValueError):
            pass     # after the documents loaded: the first load reported it
        return found


def _moved(span: Span, lines: int) -> Span:
    return (span[0] + lines, span[1], span[2] + lines, span[3])


def _moved_all(spans: dict[Path_, Span], lines: int) -> dict[Path_, Span]:
    return {path: (a + lines, b, c + lines, e) for path, (a, b, c, e) in spans.items()}


MAX_CACHED_SPANS = 250_000


class _Frame:
    """An open collection while _event_positions walks a document."""

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


def _event_positions(text: str) -> dict[int, tuple[Span, dict[Path_, Span], dict[Path_, Span]]] | None:
    """The positions _Builder records, read from libyaml's events without composing
    nodes or building data: the positions of a file asked again cost about half.
    None (compose and build instead) when the text has an anchor, an alias, an
    explicit tag or a merge key, whose positions only the builder gets right."""
    composer = _Composer(text)
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


def load_text(file: str, text: str, max_documents: int | None = None,
              counts: dict[str, int] | None = None,
              cache: PositionCache | None = None) -> tuple[list[Document], list[Diagnostic]]:
    """All poolc documents of one file's text. Other documents are skipped, and a
    file that never mentions ``poolc/`` is not even parsed: a pre-commit hook may
    hand us Helm templates or CloudFormation, which are not ours to judge. A file
    that is not valid YAML is reported only if it declares ``apiVersion: poolc/``."""
    documents: list[Document] = []
    problems: list[Diagnostic] = []
    lazy: _Positions | None = None
    if not _mentions_poolc(text):
        _tally(counts, "foreign", _foreign_count(text))
        return documents, problems
    ours = _OURS.search(text) is not None
    deep = _too_deep(text)
    if deep is not None:
        if not ours:
            return documents, problems
        line, col = _offset_to_position(text, deep)
        return documents, [_error_at(file, d.Y006, f"nesting is deeper than {MAX_DEPTH} levels", line, col)]
    block = _block_too_deep(text)
    if block is not None:
        return documents, ([_error_at(file, d.Y006, f"nesting is deeper than {MAX_DEPTH} levels", *block)]
                           if ours else [])
    try:
        for index, node in enumerate(_compose_all(text)):
            if node is None:
                continue
            if isinstance(node, SequenceNode) and any(_node_is_ours(item) for item in node.value):
                line, col, end_line, end_col = _span(node)
                problems.append(Diagnostic(file, line, col, end_line, end_col, d.Y008.id, "error",
                                           "this document is a list of poolc documents; write each "
                                           "as its own document separated by '---'"))
                _tally(counts, "documents")
                continue
            if not _node_is_ours(node):
                _tally(counts, "foreign")
                continue
            _tally(counts, "documents")
            if lazy is None:
                lazy = _Positions(file, text, cache if cache is not None else PositionCache())
            lazy.note(index, node)
            try:
                doc = Document(file, index, _Builder(record=False).build(node, (), 0), _span(node), lazy=lazy)
            except _Reject as reject:
                line, col, end_line, end_col = _span(reject.node)
                problems.append(Diagnostic(file, line, col, end_line, end_col, reject.rule.id,
                                           reject.rule.severity, reject.message))
                continue
            documents.append(doc)
            if max_documents is not None and len(documents) > max_documents:
                break   # the caller reports the budget; composing the rest would only cost time
    except MarkedYAMLError as exc:
        if not ours:
            return [], []
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or "invalid YAML"
        if exc.context and exc.problem:
            problem = f"{problem} ({exc.context})"
        problems.append(_error_at(file, d.Y002, f"YAML syntax error: {problem}", line, col))
    except ReaderError as exc:
        if not ours:
            return [], []
        line, col = _offset_to_position(text, exc.position) if isinstance(exc.position, int) else (1, 1)
        char = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        problems.append(_error_at(file, d.Y002, f"YAML syntax error: character U+{char:04X} is not "
                                  "allowed in YAML (control characters must be escaped in a quoted string)",
                                  line, col))
    except (YAMLError, RecursionError, ValueError) as exc:
        if not ours:
            return [], []
        problems.append(_error_at(file, d.Y002, f"YAML syntax error: {exc}".splitlines()[0]))
    if lazy is not None and lazy.lines is not None and len(lazy.lines) < 2:
        lazy.lines = None     # a file of one document is read whole anyway: 20,000 small tables less
    return documents, problems


class _Budget:
    """What all the files of one run may add up to: a per-file limit alone lets four
    8 MiB files cost a minute and gigabytes."""

    def __init__(self) -> None:
        self.bytes = 0
        self.documents = 0
        self.exhausted = False


# A repository of 20,000 pipeline files is about 20-25 MiB of YAML; these leave it
# room and still stop a run from growing without end.
MAX_TOTAL_BYTES = 64 * 1024 * 1024
MAX_DOCUMENTS = 100_000


def too_large(file: str, size: int) -> Diagnostic:
    return _error_at(file, d.Y007, f"the file is over {MAX_FILE_BYTES} bytes ({size} read); poolc reads files of "
                     f"at most {MAX_FILE_BYTES} bytes")


def too_many_documents(file: str) -> Diagnostic:
    return _error_at(file, d.Y007, f"the files given hold more than {MAX_DOCUMENTS} poolc documents; poolc stops "
                     "reading here")


def read_stdin(stream: Any) -> bytes:
    """Standard input, at most one byte more than MAX_FILE_BYTES: enough to say it is
    too large (validate then reports Y007) without reading an endless pipe to its end."""
    chunks, total = [], 0
    while total <= MAX_FILE_BYTES:
        chunk = stream.read(min(1 << 20, MAX_FILE_BYTES + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _read_regular(path: str) -> bytes | Diagnostic:
    """The bytes of a regular file, at most MAX_FILE_BYTES; a FIFO, a device or a link to
    one is refused without blocking on it or reading it for ever."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return _error_at(path, d.Y001, f"cannot read the file: {exc.strerror or exc}")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return _error_at(path, d.Y001, "not a regular file (a FIFO, a device or a directory); poolc "
                             "reads only regular files")
        if info.st_size > MAX_FILE_BYTES:
            return _error_at(path, d.Y007, f"the file is {info.st_size} bytes; poolc reads files of at most "
                             f"{MAX_FILE_BYTES} bytes")
        with os.fdopen(os.dup(fd), "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            return _error_at(path, d.Y007, f"the file is over {MAX_FILE_BYTES} bytes; poolc reads files of "
                             f"at most {MAX_FILE_BYTES} bytes")
        return raw
    except OSError as exc:
        return _error_at(path, d.Y001, f"cannot read the file: {exc.strerror or exc}")
    finally:
        os.close(fd)


def load_file(path: str, budget: _Budget | None = None, counts: dict[str, int] | None = None,
              cache: PositionCache | None = None) -> tuple[list[Document], list[Diagnostic]]:
    raw = _read_regular(path)
    if isinstance(raw, Diagnostic):
        return [], [raw]
    if budget is not None:
        budget.bytes += len(raw)
        if budget.bytes > MAX_TOTAL_BYTES:
            budget.exhausted = True
            return [], [_error_at(path, d.Y007, f"the files given add up to more than {MAX_TOTAL_BYTES} bytes; "
                                  "poolc stops reading here (split the repository, or validate parts of it)")]
    text, problem = _decode(path, raw)
    if text is None:
        return [], [problem] if problem else []
    documents, problems = load_text(path, text, None if budget is None else MAX_DOCUMENTS - budget.documents,
                                    counts, cache)
    if budget is not None:
        budget.documents += len(documents)
        if budget.documents > MAX_DOCUMENTS:
            budget.exhausted = True
            return [], [_error_at(path, d.Y007, f"the files given hold more than {MAX_DOCUMENTS} poolc "
                                  "documents; poolc stops reading here")]
    return documents, problems


def expand_paths(paths: Iterable[str]) -> tuple[list[str], list[Diagnostic]]:
    """Files named, and the *.yaml/*.yml files below directories named, in sorted
    path order per directory (hidden directories such as .git are skipped)."""
    files: list[str] = []
    problems: list[Diagnostic] = []
    seen: set[str] = set()
    for given in paths:
        if os.path.isdir(given):
            found: list[str] = []
            for root, dirs, names in os.walk(given):
                dirs[:] = [x for x in dirs if not x.startswith(".")]
                found.extend(os.path.join(root, n) for n in names if n.endswith(YAML_SUFFIXES))
            candidates = sorted(os.path.normpath(f).replace(os.sep, "/") for f in found)
        elif os.path.exists(given):
            candidates = [os.path.normpath(given).replace(os.sep, "/")]
        else:
            problems.append(_error_at(given, d.Y001, "no such file or directory"))
            continue
        for f in candidates:
            if f not in seen:
                seen.add(f)
                files.append(f)
    return files, problems


def load_paths(paths: Iterable[str], sink: Callable[[Document], None] | None = None,
               cache: PositionCache | None = None) -> LoadResult:
    """Every poolc document of the files named and below the directories named. With
    ``sink``, each file's documents go to it as soon as the file is read and are not
    collected: the caller builds its models file by file, so a large repository's
    plain data never all exists at once."""
    files, problems = expand_paths(paths)
    documents: list[Document] = []
    budget = _Budget()
    counts: dict[str, int] = {}
    cache = cache if cache is not None else PositionCache()
    for f in files:
        docs, diags = load_file(f, budget, counts, cache)
        if sink is None:
            documents.extend(docs)
        else:
            for doc in docs:
                sink(doc)
        problems.extend(diags)
        if budget.exhausted:
            break
    return LoadResult(files, documents, problems, counts)


def load_plain(path: str) -> tuple[Document | None, list[Diagnostic]]:
    """The first YAML document of a file that is not poolc's (a ZenML run configuration
    that a Pipeline's spec.source names), with every position kept and the same guards
    as our own files. None, with the reason, when it cannot be read."""
    raw = _read_regular(path)
    if isinstance(raw, Diagnostic):
        return None, [raw]
    text, problem = _decode(path, raw)
    if text is None:
        return None, [problem] if problem else []
    deep = _too_deep(text)
    block = _block_too_deep(text) if deep is None else None
    if deep is not None or block is not None:
        line, col = _offset_to_position(text, deep) if deep is not None else block  # type: ignore[misc]
        return None, [_error_at(path, d.Y006, f"nesting is deeper than {MAX_DEPTH} levels", line, col)]
    try:
        for node in _compose_all(text):
            if node is None:
                continue
            builder = _Builder(record=True)
            try:
                data = builder.build(node, (), 0)
            except _Reject as reject:
                line, col, end_line, end_col = _span(reject.node)
                return None, [Diagnostic(path, line, col, end_line, end_col, reject.rule.id,
                                         reject.rule.severity, reject.message)]
            return Document(path, 0, data, _span(node), builder.keys, builder.values), []
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return None, [_error_at(path, d.Y002, f"YAML syntax error: {exc.problem or 'invalid YAML'}", line, col)]
    except (YAMLError, RecursionError, ValueError) as exc:
        return None, [_error_at(path, d.Y002, f"YAML syntax error: {exc}".splitlines()[0])]
    return Document(path, 0, {}, (1, 1, 1, 1)), []


def read_text(path: str) -> tuple[str | None, Diagnostic | None]:
    """A whole file as text with the guards of our own files (regular file, size,
    UTF-8), or the diagnostic that says why not."""
    raw = _read_regular(path)
    if isinstance(raw, Diagnostic):
        return None, raw
    return _decode(path, raw)
