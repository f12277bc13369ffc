"""Read YAML files into poolc's documents, each with the position of every key and value.

One job per module: ``files`` reads (regular files only, size limits, encodings),
``parse`` turns YAML into plain data behind the guards against hostile input,
``kinds`` tells poolc's documents from foreign ones, ``positions`` holds the
``Document`` and works out where its parts stand, and ``dispatch`` ties them into
``load_paths``/``load_text``. Every problem becomes a Diagnostic, never an exception.
This module is the public face the rest of poolc imports from.
"""

from __future__ import annotations

from ..diagnostics import Path_, Span
from .dispatch import (
    MAX_DOCUMENTS,
    MAX_TOTAL_BYTES,
    LoadResult,
    load_file,
    load_paths,
    load_plain,
    load_text,
    too_many_documents,
)
from .files import MAX_FILE_BYTES, YAML_SUFFIXES, decode, expand_paths, read_stdin, read_text, too_large
from .kinds import POOLC_KINDS
from .parse import MAX_DEPTH, MAX_EXPANDED_NODES
from .positions import Document, PositionCache

__all__ = [
    "MAX_DEPTH", "MAX_DOCUMENTS", "MAX_EXPANDED_NODES", "MAX_FILE_BYTES", "MAX_TOTAL_BYTES", "POOLC_KINDS",
    "YAML_SUFFIXES", "Document", "LoadResult", "Path_", "PositionCache", "Span", "decode", "expand_paths",
    "load_file", "load_paths", "load_plain", "load_text", "read_stdin", "read_text", "too_large",
    "too_many_documents",
]
