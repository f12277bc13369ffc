"""Positions of every key and value of a JSON text, in the (path -> span) shape
that compiler.load gives YAML documents, so a hand-edited JSON file (the state)
gets diagnostics at the offending line and column."""

from __future__ import annotations

import json

from .load import Span


class Positions:
    """Character offset -> 1-based (line, column)."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def at(self, offset: int) -> tuple[int, int]:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:  # last line start <= offset
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, offset - self.starts[lo] + 1

    def span(self, start: int, end: int) -> Span:
        return (*self.at(start), *self.at(end))


_WS = " \t\n\r"
_DECODER = json.JSONDecoder()


class JsonScan:
    """Positions of every key and value of a JSON text that json.loads accepted,
    in the same (path -> span) shape compiler.load gives YAML documents."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = Positions(text)
        self.keys: dict[tuple, Span] = {}
        self.values: dict[tuple, Span] = {}
        self.duplicates: list[tuple[str, Span]] = []
        self._value(0, ())

    def _skip(self, i: int) -> int:
        while i < len(self.text) and self.text[i] in _WS:
            i += 1
        return i

    def _value(self, i: int, path: tuple) -> int:
        start = i = self._skip(i)
        opener = self.text[i]
        if opener in "{[":
            closer, index = ("}" if opener == "{" else "]"), 0
            i = self._skip(i + 1)
            while self.text[i] != closer:
                if opener == "{":
                    key_start = i
                    key, i = json.decoder.scanstring(self.text, i + 1)
                    child = path + (key,)
                    if child in self.keys:
                        self.duplicates.append((key, self.pos.span(key_start, i)))
                    self.keys[child] = self.pos.span(key_start, i)
                    i = self._skip(i) + 1  # past ':'
                else:
                    child = path + (index,)
                    index += 1
                i = self._skip(self._value(i, child))
                if self.text[i] == ",":
                    i = self._skip(i + 1)
            i += 1
        else:
            _, i = _DECODER.raw_decode(self.text, i)
        self.values[path] = self.pos.span(start, i)
        return i
