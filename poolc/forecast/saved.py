"""A forecast read back from a plan file, for `plan --base --forecast`.

A plan written with `--forecast --out` keeps its ``forecast``; the base branch's
plan file is how the base forecast reaches the pull request's plan (the base's
inputs are not there to forecast again). The file is poolc's own output but
arrives from another job, so it is validated as untrusted input: a bad one is a
one-line reason, never a traceback. What it may hold is the Forecast's own
declaration (summary.py, with the bounds of bounds.py), the one poolc writes it by.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from .summary import Forecast, form


def read_forecast(data: Any) -> Forecast:
    """The Forecast a plan file's ``forecast`` holds; ValueError says what is wrong."""
    try:
        return form(Forecast).validate_python(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"its forecast is not one poolc writes: {where or 'forecast'}: {first['msg']}") from None
