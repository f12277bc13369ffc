"""A scenario's arrivals as runs of the inputs' steps: one request of its own per
arrival (id ``<step>@<time>``), the step's demand, component and placement, ranked
after everything in the files in the order they arrive."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..forecast.durations import SCENARIO, step_duration
from ..forecast.make import Arriving
from ..inputs import request_of
from ..model import Arrival
from ..requests import StepRequest
from ..units import duration_seconds
from ..vocabulary import DurationSource

FIRST_RANK = 1_000_000_000   # arrivals come after every step of the files


def seconds(value: int | str) -> int:
    """A scenario time or duration in seconds (0, 90, 30m, 2h, 1d)."""
    return value if isinstance(value, int) else duration_seconds(value)


def clock(at: int) -> str:
    """An arrival time as its id suffix: 30m, 2h, 1d2h30m, 0s."""
    days, rest = divmod(at, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{v}{u}" for v, u in ((days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")) if v]
    return "".join(parts) or "0s"


def expand(arrivals: Sequence[Arrival], requests: Sequence[StepRequest],
           durations: Mapping[str, int]) -> list[Arriving]:
    """Every arrival of every entry (``count`` times, ``every`` apart), in time order.
    An arrival of a step the inputs reject or do not have is left out (validate says why)."""
    by_id = {r.id: r for r in requests if r.requester is not None}
    found: list[tuple[int, str, StepRequest, Arrival]] = []
    for entry in arrivals:
        steps = [by_id[entry.step]] if entry.step in by_id else \
            [r for r in by_id.values() if r.id.partition("/")[0] == entry.pipeline]
        first, gap = seconds(entry.at), seconds(entry.every) if entry.every is not None else 0
        for k in range(entry.count or 1):
            for step in steps:
                found.append((first + k * gap, step.id, step, entry))
    found.sort(key=lambda item: (item[0], item[1]))
    made: list[Arriving] = []
    seen: dict[str, int] = {}
    for rank, (at, step_id, step, entry) in enumerate(found):
        rid = f"{step_id}@{clock(at)}"
        seen[rid] = seen.get(rid, 0) + 1
        if seen[rid] > 1:               # the same step arriving twice at one instant
            rid = f"{rid}#{seen[rid]}"
        request = request_of(step, FIRST_RANK + rank, dict(step.demand))
        secs: int | None
        source: DurationSource
        if entry.duration is not None:
            secs, source = seconds(entry.duration), SCENARIO
        elif step_id in durations:
            secs, source = durations[step_id], SCENARIO
        else:
            written = step_duration(step)
            secs, source = written.seconds, written.source
        made.append(Arriving(at, replace(request, id=rid), step_id, secs, source))
    return made
