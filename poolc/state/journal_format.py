"""The journal's shape as a typed model (pydantic), declared once: poolc.state.transaction
writes the journal from it (``JournalModel.to_text``) and recovery reads it back
through it, trusting nothing else.

Recovery acts on the journal (renames, unlinks, restores), so a journal that is
not exactly what apply writes is refused as a whole, never half-followed. What
is wrong is said with its place in the file (line and column, and the field as
``entries[2].backup``), so whoever looks at it by hand finds it.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..diagnostics import Span
from ..text.jsonpos import JsonScan, error_span, where
from ..writer import UnsafePath, split_relative

JournalVersion = Literal[1]
JOURNAL_VERSION: int = get_args(JournalVersion)[0]


class BadJournal(Exception):
    """Why a journal cannot be trusted, and where in its text."""

    def __init__(self, why: str, span: Span = (1, 1, 1, 1)) -> None:
        super().__init__(why)
        self.why, self.span = why, span


class EntryModel(BaseModel):
    """One file the transaction changes (the fields' order is the file's)."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    tree: Literal["out", "state"]
    path: str                # relative to its tree
    new: str | None = None   # digest of the new text; None: remove the file
    backup: bool             # the target existed: it has a .bak link
    old: str | None = None   # the digest at prepare (the state's generation, a removed file's); None: absent


class _Header(BaseModel):
    """What makes a JSON text a journal at all; lax on purpose, as before (1.0 is 1)."""

    model_config = ConfigDict(extra="ignore")

    poolc_journal: JournalVersion


class JournalModel(BaseModel):
    """A journal as poolc.state.transaction writes it (the fields' order is the file's)."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    id: Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")]
    phase: Literal["prepare", "commit", "rollback"]
    output_dir: str          # relative to the state's directory, so a moved checkout still recovers
    state: str               # the state file's name, in the directory of the journal
    dirs: list[str] = []     # directories created below the output directory
    entries: list[EntryModel] = []

    def to_text(self) -> str:
        """The journal's bytes: its version first, then the fields in their declared order."""
        return json.dumps({"poolc_journal": JOURNAL_VERSION, **self.model_dump()}, indent=1) + "\n"


def _number(digits: str) -> int:
    return int(digits) if len(digits) < 20 else 0   # bounded: no journal field is a large number


def read_journal(text: str) -> JournalModel:
    """The journal in ``text``; BadJournal says what is wrong and where."""
    try:
        raw = json.loads(text, parse_int=_number)
    except json.JSONDecodeError as exc:
        raise BadJournal(f"not JSON: {exc.msg}", (exc.lineno, exc.colno, exc.lineno, exc.colno)) from None
    except (ValueError, RecursionError):
        raise BadJournal("not JSON") from None
    try:
        _Header.model_validate(raw)
    except ValidationError:
        raise BadJournal("unknown format", _scan(text).span(("poolc_journal",))) from None
    try:
        journal = JournalModel.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        raise BadJournal(f"{where(error['loc'])} {_sentence(error)}", error_span(_scan(text), error)) from None
    for index, directory in enumerate(journal.dirs):
        _inside(text, directory, ("dirs", index))
    for index, entry in enumerate(journal.entries):
        _inside(text, entry.path, ("entries", index, "path"))
        if entry.tree == "state" and entry.path != journal.state:
            raise BadJournal(f"entries[{index}].path {entry.path!r} is a state entry, but the journal's state is "
                             f"{journal.state!r}",
                             _scan(text).span(("entries", index, "path")))
    return journal


def _inside(text: str, relative: str, path: tuple[str | int, ...]) -> None:
    """A path the journal names must stay inside its tree (writer.split_relative)."""
    try:
        split_relative(relative)
    except UnsafePath:
        raise BadJournal(f"{where(path)} {relative!r} is not a plain relative path inside its directory",
                         _scan(text).span(path)) from None


_MUST = {"model_type": "must be an object", "dict_type": "must be an object", "list_type": "must be a list",
         "string_type": "must be a string", "bool_type": "must be true or false", "missing": "is missing",
         "string_pattern_mismatch": "must be 16 lowercase hexadecimal digits"}


def _sentence(error: Any) -> str:
    """What a field must hold, in words (``phase must be 'prepare', 'commit' or 'rollback'``)."""
    kind = error["type"]
    if kind == "literal_error":
        return f"must be {error['ctx']['expected']}"
    return _MUST.get(kind) or str(error["msg"]).lower()


def _scan(text: str) -> JsonScan:
    """Positions of the journal's text, worked out only for an error."""
    return JsonScan(text)
