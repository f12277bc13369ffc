"""How long a step waited for a reconcile cycle (docs/apply.md#the-reconcile-cycle).

In gate mode a step starts only when a plan admits it, and plans are made once per
cycle: a step submitted between two cycles waits for the next one. The plan can say
how long when it knows both ends: the step's ``submitted_at`` and the time of this
cycle, given as ``SOURCE_DATE_EPOCH`` (the same for `plan` and `apply` of one cycle,
and no clock in the plan, so the same inputs still give the same plan). Without
them the plan says nothing about it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime

from ..domain.plan import ALLOCATED, QUEUED, Plan
from ..domain.said import said
from ..requests import StepRequest


def duration(seconds: int) -> str:
    """``45s``, ``12m``, ``3h 5m``, ``2d 4h``: the two largest units."""
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size or (unit == "s" and not parts):
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
        if len(parts) == 2:
            break
    return " ".join(p for p in parts if not p.startswith("0") or len(parts) == 1)


def with_waits(plan: Plan, requests: Iterable[StepRequest], now: datetime) -> Plan:
    """``plan`` with each new step that has a ``submitted_at`` no later than ``now``
    saying how long it has waited: an allocated one for this cycle, a queued one so far."""
    submitted = {r.id: r.submitted_at for r in requests if r.submitted_at is not None}
    changed = []
    for planned in plan.requests:
        when = submitted.get(planned.id)
        if when is None or planned.running or when > now or planned.status not in (ALLOCATED, QUEUED):
            changed.append(planned)
            continue
        waited = duration(int((now - when).total_seconds()))
        note = (f"it waited {waited} for this reconcile cycle (submitted {when:%Y-%m-%dT%H:%M:%SZ})"
                if planned.status == ALLOCATED else
                f"it has waited {waited} since it was submitted; gate mode starts it in the first cycle "
                "whose plan admits it")
        changed.append(dataclasses.replace(planned, message=said(planned.message, "; ", note)))
    return dataclasses.replace(plan, requests=tuple(changed))
