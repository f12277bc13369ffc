"""How long each step runs, for the forecast (docs/forecast.md#durations).

A step's duration is its ``expected_runtime``, else its ``max_runtime`` (the
longest it may run, so the forecast errs late, never early), both merged from
the pipeline's ``settings.resources`` (the pipeline's default) like every other
setting. A step with neither is *unknown*: the forecast never guesses, it says so,
and a running step of unknown duration holds its capacity beyond the horizon.
A running allocation lasts as long as the step it runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from .. import diagnostics as d
from ..diagnostics import Diagnostic
from ..domain.naming import allocation_name
from ..requests import StepRequest
from ..units import duration_seconds
from ..vocabulary import DurationSource

EXPECTED: Final = "expected_runtime"
MAXIMUM: Final = "max_runtime"
UNKNOWN: Final = "unknown"
SCENARIO: Final = "scenario"   # a scenario's estimate (`poolc test`)
DEFAULT_HORIZON = "7d"
# A duration this many times the horizon is a typo (a unit or a few zeros too many).
TOO_LONG_FACTOR = 10**6
_HORIZON = re.compile(r"^[1-9][0-9]{0,9}[smhd]$")


@dataclass(frozen=True)
class StepDuration:
    seconds: int | None
    source: DurationSource


def parse_horizon(text: str) -> int:
    """Seconds in a horizon such as 7d, 36h or 90m; ValueError names the syntax."""
    if not _HORIZON.match(text.strip()):
        raise ValueError(f"not a duration: {text!r}; write a whole number of seconds, minutes, hours or days "
                         "(90m, 36h, 7d)")
    return duration_seconds(text.strip())


def step_duration(request: StepRequest) -> StepDuration:
    settings = request.settings
    if settings.expected_runtime is not None:
        return StepDuration(duration_seconds(settings.expected_runtime), EXPECTED)
    if settings.max_runtime is not None:
        return StepDuration(duration_seconds(settings.max_runtime), MAXIMUM)
    return StepDuration(None, UNKNOWN)


def durations_of(requests: Iterable[StepRequest]) -> dict[str, StepDuration]:
    """Request id and the name of the allocation that runs it -> its duration."""
    found: dict[str, StepDuration] = {}
    for request in requests:
        duration = step_duration(request)
        found[request.id] = duration
        found.setdefault(allocation_name(request.id), duration)
    return found


def too_long(requests: Iterable[StepRequest], horizon: int) -> list[Diagnostic]:
    """F001: a duration more than 10^6 times the horizon, at the field that set it."""
    found = []
    for request in requests:
        duration = step_duration(request)
        if duration.seconds is None or duration.seconds <= horizon * TOO_LONG_FACTOR:
            continue
        written = getattr(request.settings, duration.source)
        found.append(request.entry.doc.diagnostic(
            d.F001, f"step {request.step!r} sets {duration.source}={written!r} ({duration.seconds:,} seconds), "
            f"more than 10^6 times the forecast's horizon of {horizon:,} seconds; a unit or some digits too many?",
            request.field_path(duration.source), request=request.id))
    return found
