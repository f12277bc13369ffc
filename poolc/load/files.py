"""Reading the files poolc is given: which files a path names, and their text.

Only regular files are read, through poolc's one reader (``writer.read_bytes``): a
FIFO, a device or a symbolic link is refused without blocking on it, at most
MAX_FILE_BYTES of them, as UTF-8 (a UTF-16 file is told
so). Every problem is a Diagnostic at the file, never an exception.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from .. import diagnostics as d
from ..diagnostics import Diagnostic
from ..writer import ReadRefused, read_bytes

MAX_FILE_BYTES = 8 * 1024 * 1024

YAML_SUFFIXES = (".yaml", ".yml")


def error_at(file: str, rule: d.Rule, message: str, line: int = 1, col: int = 1) -> Diagnostic:
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


def decode(file: str, raw: bytes) -> tuple[str | None, Diagnostic | None]:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None, error_at(file, d.Y001, "the file is UTF-16; save it as UTF-8")
    if b"\x00" in raw[:4096] and _looks_utf16(raw):
        return None, error_at(file, d.Y001, "the file is UTF-16 (without a byte order mark); save it as UTF-8")
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        col = len(before[before.rfind(b"\n") + 1:].decode("utf-8", "replace")) + 1
        return None, error_at(file, d.Y001, f"the file is not valid UTF-8 (byte 0x{raw[exc.start]:02x}); "
                               "save it as UTF-8", line, col)


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


def read_regular(path: str) -> bytes | Diagnostic:
    """The bytes of a regular file, at most MAX_FILE_BYTES; a FIFO, a device or a link is
    refused without blocking on it or reading it for ever."""
    try:
        return read_bytes(path, MAX_FILE_BYTES)
    except ReadRefused as exc:
        if exc.kind != "size":
            return error_at(path, d.Y001, exc.why)
        if exc.size is not None:
            return error_at(path, d.Y007, f"the file is {exc.size} bytes; poolc reads files of at most "
                             f"{MAX_FILE_BYTES} bytes")
        return error_at(path, d.Y007, f"the file is over {MAX_FILE_BYTES} bytes; poolc reads files of "
                         f"at most {MAX_FILE_BYTES} bytes")
    except OSError as exc:
        return error_at(path, d.Y001, f"cannot read the file: {exc.strerror or exc}")


def read_text(path: str) -> tuple[str | None, Diagnostic | None]:
    """A whole file as text with the guards of our own files (regular file, size,
    UTF-8), or the diagnostic that says why not."""
    raw = read_regular(path)
    if isinstance(raw, Diagnostic):
        return None, raw
    return decode(path, raw)


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
            problems.append(error_at(given, d.Y001, "no such file or directory"))
            continue
        for f in candidates:
            if f not in seen:
                seen.add(f)
                files.append(f)
    return files, problems


def too_large(file: str, size: int) -> Diagnostic:
    return error_at(file, d.Y007, f"the file is over {MAX_FILE_BYTES} bytes ({size} read); poolc reads files of "
                     f"at most {MAX_FILE_BYTES} bytes")
