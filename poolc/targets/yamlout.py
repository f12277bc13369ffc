"""A small, strict YAML emitter for generated manifests.

Why not a general dumper: Kubernetes reads YAML with 1.1 rules (``on``, ``no``,
``0755``, ``1:30`` are not strings there) while ruamel.yaml writes 1.2, so a
1.2-plain string can change type in the cluster. This emitter writes a string
plain only when it starts with a letter, ``/`` or ``_``, uses a safe character set
and is no 1.1/1.2 keyword; everything else is quoted (single quotes when that
spares backslashes, else double quotes with ASCII-only escapes). Output is block
style with two-space indents and keys in the order the caller built them (targets
build Kubernetes-conventional order and sort the maps whose order carries no
meaning).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

# Letters, digits and a few separators; ':' is allowed but not before a space or at
# the end (that would start a mapping); '#' never (comments).
_PLAIN = re.compile(r"[A-Za-z/_][A-Za-z0-9 _./@+=,;:()~-]*")
# Words that YAML 1.1 or 1.2 resolves to booleans or null.
_KEYWORDS = frozenset({"y", "n", "yes", "no", "true", "false", "on", "off", "null", "~"})


def scalar(value: Any) -> str:
    """One scalar as YAML text that every YAML 1.1 and 1.2 reader takes back unchanged."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, str):
        raise TypeError(f"cannot emit {type(value).__name__} as YAML")
    if (value == value.strip() and _PLAIN.fullmatch(value) and value.lower() not in _KEYWORDS
            and ": " not in value and not value.endswith(":")):
        return value
    if ('"' in value or "\\" in value) and _printable_ascii(value):
        return "'" + value.replace("'", "''") + "'"  # e.g. JSON in an annotation, without escapes
    return _double_quoted(value)


def _printable_ascii(text: str) -> bool:
    """Every character is between " " and "~" (printable ASCII, space included)."""
    return text.isascii() and text.isprintable()


def _double_quoted(value: str) -> str:
    """ASCII-only double-quoted scalar; YAML's \\U escape keeps astral characters
    whole (JSON's surrogate pairs would be read back as two characters)."""
    out = []
    for char in value:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


# Scalar text by string: a manifest set repeats the same keys and values (labels,
# queue names, images) thousands of times; bounded so a long-lived process does
# not keep every string it ever wrote.
_SCALARS: dict[str, str] = {}
_SCALARS_MAX = 1 << 16


def _text(value: Any) -> str:
    """``scalar(value)``, remembered for strings."""
    if type(value) is str:
        found = _SCALARS.get(value)
        if found is None:
            if len(_SCALARS) >= _SCALARS_MAX:
                _SCALARS.clear()
            found = _SCALARS[value] = scalar(value)
        return found
    if value is True:   # every Job's suspend and backoffLimit: spared scalar's checks
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return str(value)
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return scalar(value)


# Per indent, key -> its line head ``pad + key + ": "``: the same few keys open most
# lines of every manifest; bounded like ``_SCALARS``.
_HEADS: dict[str, dict[str, str]] = {}
_NO_HEADS: dict[str, str] = {}


def _head(pad: str, key: object) -> str:
    """``pad + key + ": "``, remembered among the heads of ``pad``."""
    if not isinstance(key, str):
        raise TypeError("mapping keys must be strings")
    heads = _HEADS.setdefault(pad, {})
    if len(heads) >= _SCALARS_MAX:
        heads.clear()
    found = heads[key] = pad + _text(key) + ": "
    return found


def _write(value: dict[str, Any] | list[Any], pad: str, out: list[str]) -> None:
    """Append the block lines of a mapping or sequence, each indented by ``pad``.
    A string, the most common scalar, is looked up in ``_SCALARS`` here rather
    than through ``_text``: one call less per line."""
    inner = pad + "  "
    if isinstance(value, dict):
        heads = _HEADS.get(pad, _NO_HEADS)
        for key, item in value.items():
            head = heads.get(key) or _head(pad, key)
            if type(item) is str:
                out.append(head + (_SCALARS.get(item) or _text(item)))
            elif item and isinstance(item, (dict, list)):
                out.append(head[:-1])   # "key:" alone, the block follows
                _write(item, inner, out)
            else:
                out.append(head + _text(item))
        return
    dash = pad + "- "
    for item in value:
        if type(item) is str:
            out.append(dash + (_SCALARS.get(item) or _text(item)))
        elif item and isinstance(item, (dict, list)):
            first = len(out)
            _write(item, inner, out)
            out[first] = dash + out[first][len(inner):]   # the item's first line moves up onto the dash
        else:
            out.append(dash + _text(item))


def dump_document(obj: dict[str, Any]) -> str:
    """One mapping as a block YAML document (no header, no separator)."""
    if not obj:
        return "{}\n"
    out: list[str] = []
    _write(obj, "", out)
    out.append("")
    return "\n".join(out)


def comment_safe(name: str) -> str:
    """A file name as it may stand in a one-line comment: as it is when it is printable
    ASCII, else JSON-quoted with escapes, so a newline (or U+0085, U+2028: line breaks
    to some YAML readers) in a name cannot end the comment and inject YAML."""
    if _printable_ascii(name) and not name.startswith('"'):
        return name
    return json.dumps(name, ensure_ascii=True)


_HEADERS: dict[tuple[str, ...], str] = {}


def header(version: str, sources: Iterable[str]) -> str:
    """The traceability comment every generated YAML file starts with (remembered:
    the Jobs of one pipeline file share their sources)."""
    key = (version, *sources)
    found = _HEADERS.get(key)
    if found is None:
        if len(_HEADERS) >= _SCALARS_MAX:
            _HEADERS.clear()
        names = ", ".join(comment_safe(s) for s in sorted(set(key[1:]))) or "no source files"
        found = _HEADERS[key] = f"# Generated by poolc {comment_safe(version)} from {names}. Do not edit.\n"
    return found


def dump_all(objects: list[dict[str, Any]], *, version: str, sources: Iterable[str]) -> str:
    """A header comment, then the objects separated by ``---``."""
    return header(version, sources) + "---\n".join(dump_document(o) for o in objects)
