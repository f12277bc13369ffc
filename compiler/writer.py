"""Atomic file writes: a temp file in the same directory, fsync, then rename.

A reader (or a crash) sees either the old file or the new one, never half.
"""

from __future__ import annotations

import os
import tempfile


def write_atomic(path: str, text: str) -> None:
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".poolc-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_files(directory: str, texts: dict[str, str]) -> None:
    for name, text in sorted(texts.items()):
        write_atomic(os.path.join(directory, name), text)
