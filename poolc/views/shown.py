"""What a view hands the command line to write: standard output and standard error."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shown:
    out: str = ""        # written as it is (every line already ends with its newline)
    err: str = ""
