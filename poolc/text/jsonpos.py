"""Positions of every key and value of a JSON text, in the (path -> span) shape
that poolc.load gives YAML documents, so a hand-edited JSON file (the state, a
plan file, the journal) gets diagnostics at the offending line and column; and
where a pydantic model's error about such a text stands (``error_span``).

The scan is iterative (a state nested thousands deep cannot exhaust the stack)
and linear in the text: the state is read on every apply and grows with the
platform (benchmarks/state_read.py).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from typing import Any

from ..diagnostics import Path_, Span

MAX_INT_DIGITS = 40


def bounded_int(digits: str) -> int:
    """A JSON integer; above 40 digits (nonsense for poolc, and int() refuses 4,300)
    a stand-in of 10**40 with the sign, so validation reports it as out of range."""
    if len(digits.lstrip("-")) <= MAX_INT_DIGITS:
        return int(digits)
    return -(10**MAX_INT_DIGITS) if digits.startswith("-") else 10**MAX_INT_DIGITS


def loads(text: str) -> Any:
    """json.loads with bounded integers (raises ValueError, RecursionError like it)."""
    return json.loads(text, parse_int=bounded_int)


class Positions:
    """Character offset -> 1-based (line, column)."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def at(self, offset: int) -> tuple[int, int]:
        line = bisect_right(self.starts, offset) - 1
        return line + 1, offset - self.starts[line] + 1

    def span(self, start: int, end: int) -> Span:
        return (*self.at(start), *self.at(end))


def nearest(keys: Mapping[Path_, Span], values: Mapping[Path_, Span], root: Span,
            path: Iterable[str | int], *, key: bool = False) -> Span:
    """Where the node at ``path`` stands; the key when ``key`` (falling back to the
    value), and the nearest existing ancestor for a path that is not there (a
    missing field is reported at its parent's key). YAML and JSON alike."""
    path = tuple(path)
    while True:
        if key and path in keys:
            return keys[path]
        if path in values:
            return values[path]
        if path in keys:
            return keys[path]
        if not path:
            return root
        path = path[:-1]
        key = True  # an absent child is reported at its parent's key


def where(loc: Iterable[str | int]) -> str:
    """A place in a JSON document as its reader writes it: ``requests[3].demand.gpu``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def error_span(scan: JsonScan, error: Mapping[str, Any]) -> Span:
    """Where an error of a pydantic model validated from the scanned text stands: the
    offending value, the key of an unknown field, the parent's key of a missing one."""
    return scan.span(tuple(error["loc"]), key=error["type"] == "extra_forbidden")


_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder(parse_int=bounded_int)
_scanstring: Any = getattr(json.decoder, "scanstring")  # noqa: B009 - public, but missing from the stubs


class JsonScan:
    """Positions of every key and value of a JSON text that json.loads accepted,
    in the same (path -> span) shape poolc.load gives YAML documents."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = Positions(text)
        self.keys: dict[tuple, Span] = {}
        self.values: dict[tuple, Span] = {}
        self.duplicates: list[tuple[str, Span]] = []
        self._scan()

    def span(self, path: Iterable[str | int], *, key: bool = False) -> Span:
        """See ``nearest``; the whole text for the root."""
        return nearest(self.keys, self.values, self.values.get((), (1, 1, 1, 1)), path, key=key)

    def _skip(self, i: int) -> int:
        match = _WS.match(self.text, i)
        return match.end() if match else i

    def _key(self, i: int, path: tuple) -> tuple[tuple, int]:
        """The key at ``i`` (a string) of the object at ``path``; returns the child path and
        the offset of its value."""
        key, end = _scanstring(self.text, i + 1)
        child = path + (key,)
        if child in self.keys:
            self.duplicates.append((key, self.pos.span(i, end)))
        self.keys[child] = self.pos.span(i, end)
        return child, self._skip(self._skip(end) + 1)  # past ':'

    def _scan(self) -> None:
        text = self.text
        stack: list[list[Any]] = []   # [closer, path, start, next index]
        path: tuple = ()
        i = self._skip(0)
        while True:
            start, opener = i, text[i]
            if opener in "{[":
                closer = "}" if opener == "{" else "]"
                i = self._skip(i + 1)
                if text[i] != closer:
                    stack.append([closer, path, start, 1])
                    if opener == "{":
                        path, i = self._key(i, path)
                    else:
                        path = path + (0,)
                    continue
                i += 1
            else:
                _, i = _DECODER.raw_decode(text, i)
            self.values[path] = self.pos.span(start, i)
            while stack:   # close every collection that ends here
                i = self._skip(i)
                frame = stack[-1]
                if text[i] == ",":
                    i = self._skip(i + 1)
                    if frame[0] == "}":
                        path, i = self._key(i, frame[1])
                    else:
                        path = frame[1] + (frame[3],)
                        frame[3] += 1
                    break
                i += 1
                stack.pop()
                self.values[frame[1]] = self.pos.span(frame[2], i)
            else:
                return
