"""Reading a PLANFILE back, for `poolc show` and `poolc apply --plan`, through the
plan's one declaration (domain/plan.py's records and their adapter).

A plan file may come from anywhere (an artifact of another CI run, an edited
copy), so every field is checked before a renderer sees it: the types, the
closed vocabularies (status, action, strategy, tier kind), integers within
±10^18 (a huge ``used`` would overflow the comment's bars), a finite ``gap``, a
``changes`` section of the shape `poolc plan` writes. What is wrong is one
PlanFormatError naming the field (``requests[3].demand.gpu``), never a crash;
read from its text, a ``PlanFileError`` that also knows the line and column.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from ..text.jsonpos import JsonScan
from .plan import FORMAT_VERSION, Plan, PlanFormatError, plan_file_adapter

_SHOWN_ERRORS = 3


def _where(loc: tuple[int | str, ...]) -> tuple[str, str]:
    """(``requests[3].demand``, ``gpu``): the place and the field of an error."""
    path = ""
    for part in loc[:-1]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    last = loc[-1] if loc else "plan"
    return path or "plan", f"[{last}]" if isinstance(last, int) else str(last)


_TYPES = {"list_type": "list", "tuple_type": "list", "dict_type": "dict", "mapping_type": "dict",
          "string_type": "str", "int_type": "int", "bool_type": "bool", "float_type": "a number",
          "model_type": "dict", "dataclass_type": "dict", "dict_attributes_type": "dict", "none_required": "null"}


def _sentence(error: Any) -> str:
    where, key = _where(tuple(error["loc"]))
    kind = error["type"]
    if kind in _TYPES:
        return f"{where}: {key!r} must be {_TYPES[kind]}"
    if kind == "missing":
        return f"{where}: {key!r} is missing"
    if kind == "literal_error":
        shown = repr(error["input"])
        if len(shown) > 60:
            shown = shown[:60] + "…"
        return f"{where}: {key} {shown} is not one of {error['ctx']['expected']}"
    if kind in ("greater_than_equal", "less_than_equal"):
        return f"{where}: {key!r} is out of range (at most 10^18 either way)"
    if kind == "value_error":
        return f"{where}: {error['ctx']['error']}"
    return f"{where}: {key}: {error['msg']}"


class PlanFileError(PlanFormatError):
    """What is wrong with a plan file's text, and where: 1-based line and column."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.line, self.column = line, column


def problem(file: str, exc: PlanFormatError) -> str:
    """``plan.json:12:7: not a poolc plan file: ...``, like a YAML file's diagnostics
    (``plan.json: ...`` when the error knows no position)."""
    if isinstance(exc, PlanFileError):
        return f"{file}:{exc.line}:{exc.column}: {exc}"
    return f"{file}: {exc}"


def _at(text: str | None, loc: tuple[str | int, ...], message: str) -> PlanFormatError:
    """The error, placed at ``loc`` in ``text`` when the text is known (scanned only now:
    a valid plan file, 40 MB at 50,000 requests, is never scanned)."""
    if text is None:
        return PlanFormatError(message)
    line, column = JsonScan(text).span(loc)[:2]
    return PlanFileError(message, line, column)


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > 30:
        raise ValueError("an integer of more than 30 digits")
    return int(digits)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no number a plan file holds")


def parse_json(text: str) -> Any:
    """A plan file's JSON, with every number bounded: an integer of at most 30 digits, no
    NaN or Infinity (PlanFormatError, never an OverflowError later)."""
    try:
        return json.loads(text.removeprefix("\ufeff"), parse_int=_bounded_int, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise PlanFileError(f"not a plan file: {exc.msg}", exc.lineno, exc.colno) from None
    except (RecursionError, ValueError) as exc:
        raise PlanFormatError(f"not a plan file: {exc}") from None


def read_plan(data: str | Any, text: str | None = None) -> Plan:
    """The Plan in a plan file's text (or its parsed JSON, and the ``text`` it was parsed
    from when known, for positions); PlanFormatError says what is wrong with anything else."""
    if isinstance(data, str):
        text = data.removeprefix("\ufeff")
        data = parse_json(text)
    if not isinstance(data, dict):
        raise _at(text, (), "not a poolc plan file (a JSON object, as `poolc plan --out` writes it)")
    version = data.get("format_version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        shown = repr(version) if len(repr(version)) < 40 else repr(version)[:40] + "…"
        raise _at(text, ("format_version",), f"not a poolc plan file: format_version {shown} is not "
                  f"{FORMAT_VERSION}, the version this poolc reads")
    try:
        return plan_file_adapter().validate_python(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        more = f" (and {len(errors) - _SHOWN_ERRORS} more)" if len(errors) > _SHOWN_ERRORS else ""
        sentences = "; ".join(_sentence(e) for e in errors[:_SHOWN_ERRORS]) + more
        if errors[0]["loc"][:1] == ("base",):
            sentences = f"'base' is not the comparison `plan --base` writes: {sentences}"
        raise _at(text, tuple(errors[0]["loc"]), "not a poolc plan file: " + sentences) from None
