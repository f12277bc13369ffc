"""The state file's shape as a typed model (pydantic), declared once: apply, `state rm`
and `state import` write the file from it (``content``), and every reader checks it
through it, its errors as diagnostics.

A state may be edited by hand or come from another tool, so its shape is checked
before anything reads it: each field's type, no unknown fields, and that every
entry of ``allocations`` is an Allocation document (which the Allocation model in
poolc.model then validates like one in a YAML file). Every error becomes a
diagnostic at the offending key or value, as a YAML file's would: a wrong
``files`` entry is reported at that entry, not at the whole map. The sentences
are the field's own, one per field, so the user reads what the field must hold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only from Python 3.12

from .. import diagnostics as d
from ..diagnostics import Diagnostic

StateVersion = Literal[1]
FORMAT_VERSION: int = get_args(StateVersion)[0]

Str = Annotated[str, Field(strict=True)]


class _AllocationKind(TypedDict):
    """An entry of ``allocations``, as far as the state checks it: a mapping of kind
    Allocation (the rest is the Allocation model's to judge, and is kept as written)."""

    __pydantic_config__ = ConfigDict(extra="allow")   # type: ignore[misc]  # not the state's "forbid"
    kind: Literal["Allocation"]


class StateFile(BaseModel):
    """A state file as apply writes it (docs/cli.md#the-state-file); ``preempted``,
    ``finished`` and ``output_dir`` are left out of the file when empty."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: StateVersion        # lax on purpose: 1.0 was always read as 1
    inputs_digest: Str | None = None
    files: dict[str, Str] = {}
    allocations: list[_AllocationKind] = []
    preempted: list[Str] = []
    finished: dict[str, Str] = {}
    output_dir: Annotated[Str, Field(min_length=1)] | None = None


FIELDS = tuple(StateFile.model_fields)
OMITTED_WHEN_EMPTY = frozenset({"preempted", "finished", "output_dir"})


def content(state: StateFile) -> dict[str, Any]:
    """The state's JSON content: every field, but those of OMITTED_WHEN_EMPTY only when set."""
    found = {key: getattr(state, key) for key in FIELDS}   # already JSON values: no copy made by a dump
    return {key: value for key, value in found.items() if value or key not in OMITTED_WHEN_EMPTY}

# What each field must hold, in the user's words (S003).
_MUST = {
    "inputs_digest": "inputs_digest must be a string",
    "files": 'files must map relative paths to "sha256:..." strings',
    "allocations": "allocations must be a list of Allocation documents",
    "preempted": "preempted must be a list of allocation names",
    "finished": "finished must map step ids to input digests",
    "output_dir": "output_dir must be a path",
}
NOT_AN_ALLOCATION = "the state holds only Allocation documents (apiVersion poolc/v1, kind Allocation)"

# (rule, message, path, key): where a diagnostic goes inside the state
Place = Callable[[d.Rule, str, tuple[str | int, ...], bool], Diagnostic]


def version_problem(root: dict[str, Any], place: Place) -> Diagnostic | None:
    """S004 when the state is of a format_version this poolc does not read."""
    try:
        StateFile.model_validate({"format_version": root.get("format_version")})
    except ValidationError:
        version = root.get("format_version")
        where: tuple[str | int, ...] = ("format_version",) if "format_version" in root else ()
        return place(d.S004, f"state format_version {version!r} is not supported; this "
                     f"poolc reads and writes format_version {FORMAT_VERSION}", where, False)
    return None


@dataclass
class Checked:
    """The valid part of a state: ``model`` holds every field without errors (a field
    with errors is left at its default), ``allocations`` the entries of ``allocations``
    that are Allocation documents (their index, the entry as read), ``problems`` a
    diagnostic per error."""

    model: StateFile
    allocations: list[tuple[int, Any]]
    problems: list[Diagnostic] = field(default_factory=list)


def check(root: dict[str, Any], place: Place) -> Checked:
    """The state checked against its model (its format_version already read), each
    error placed by ``place``."""
    try:
        model = StateFile.model_validate(root)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    else:
        return Checked(model, list(enumerate(root.get("allocations", []))))
    problems: list[Diagnostic] = []
    broken: set[str] = set()
    skipped: set[int] = set()
    for error in errors:
        loc = tuple(error["loc"])
        name = str(loc[0])
        if error["type"] == "extra_forbidden":
            problems.append(place(d.S001, f"unknown field {name!r} in the state file", loc, True))
        elif name == "allocations" and len(loc) >= 2 and isinstance(loc[1], int):
            skipped.add(loc[1])
            problems.append(place(d.S004, NOT_AN_ALLOCATION, loc[:3], False))
        else:
            broken.add(name)
            problems.append(place(d.S003, _MUST[name], loc, False))
    kept = {k: v for k, v in root.items() if k in FIELDS and k not in broken and k != "allocations"}
    entries = [] if "allocations" in broken else \
        [(i, item) for i, item in enumerate(root.get("allocations", [])) if i not in skipped]
    return Checked(StateFile.model_validate(kept), entries, problems)
