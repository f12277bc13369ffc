"""Indented JSON with sorted keys, the same bytes as ``json.dumps(value, indent=2,
sort_keys=True)`` but several times faster.

Why: with ``indent`` set, the standard library falls back to its pure-Python
encoder, a chain of generators per value; a 50,000-request plan spent seconds
there. This writer walks the value once, appends finished pieces to one list and
encodes every string with the C escaper. Anything it does not know as JSON (a
non-string key, a custom type) goes to ``json.dumps`` itself, so the answer,
errors included, is always the standard library's.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any


class _Unknown(Exception):
    """A value this writer leaves to ``json.dumps``."""


def dumps_sorted(value: Any, *, indent: int = 2, ensure_ascii: bool = True) -> str:
    """``json.dumps(value, indent=indent, sort_keys=True, ensure_ascii=ensure_ascii)``."""
    out: list[str] = []
    encode = encode_basestring_ascii if ensure_ascii else encode_basestring
    keys: dict[str, str] = {}   # key -> its JSON text and ": " (a plan repeats a few keys thousands of times)
    try:
        _write(value, "\n", " " * indent, encode, keys, out)
    except _Unknown:
        return json.dumps(value, indent=indent, sort_keys=True, ensure_ascii=ensure_ascii)
    return "".join(out)


def _scalar(value: Any, encode: Any) -> str | None:
    """A scalar's JSON text; None for a container or anything else."""
    kind = type(value)
    if kind is str:
        return encode(value)
    if kind is int:
        return int.__repr__(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is float and value == value and value not in (_INF, -_INF):
        return float.__repr__(value)
    return None


_INF = float("inf")


def _write(value: Any, newline: str, step: str, encode: Any, keys: dict[str, str], out: list[str]) -> None:
    """Append ``value`` laid out at the depth whose line break is ``newline``."""
    kind = type(value)
    if kind is dict:
        if not value:
            out.append("{}")
            return
        inner = newline + step
        separator = "," + inner
        head = "{" + inner
        for key in sorted(value):
            if type(key) is not str:
                raise _Unknown
            name = keys.get(key)
            if name is None:
                name = keys[key] = encode(key) + ": "
            item = value[key]
            kind = type(item)
            if kind is str:
                out.append(f"{head}{name}{encode(item)}")   # an f-string joins once; '+' twice
            elif kind is int:
                out.append(f"{head}{name}{int.__repr__(item)}")
            elif kind is dict or kind is list:
                out.append(head + name)
                _write(item, inner, step, encode, keys, out)
            elif item is None:
                out.append(f"{head}{name}null")
            else:
                _item(head + name, item, inner, step, encode, keys, out)
            head = separator
        out.append(newline + "}")
    elif kind is list or kind is tuple:
        if not value:
            out.append("[]")
            return
        inner = newline + step
        separator = "," + inner
        head = "[" + inner
        for item in value:
            kind = type(item)
            if kind is str:
                out.append(head + encode(item))
            elif kind is dict or kind is list:
                out.append(head)
                _write(item, inner, step, encode, keys, out)
            else:
                _item(head, item, inner, step, encode, keys, out)
            head = separator
        out.append(newline + "]")
    else:
        text = _scalar(value, encode)
        if text is None:
            raise _Unknown
        out.append(text)


def _item(prefix: str, item: Any, inner: str, step: str, encode: Any, keys: dict[str, str], out: list[str]) -> None:
    """Append one member of a container after ``prefix`` (its key or separator)."""
    text = _scalar(item, encode)
    if text is None:
        out.append(prefix)
        _write(item, inner, step, encode, keys, out)
    else:
        out.append(prefix + text)
