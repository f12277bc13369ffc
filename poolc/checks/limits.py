"""Quantities too large to plan (P007).

Each integer in the model is capped at 10^12, but ``memory`` is a quantity
converted to megabytes after that cap (``99999999999999999999999PiB``), and the
solver works in 64-bit integers: a value past them is a crash in the planner,
not a plan. Caught here, with the file and line, before anything is solved.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .. import diagnostics as d
from ..config import Entry
from ..diagnostics import Diagnostic
from ..model import MAX_INT, ResourceMap
from . import Context, check

_FIELD = {"mcpu": "cpu", "memory_mb": "memory"}


def _where(units_key: str, resource_map: ResourceMap) -> str:
    """The key as written: cpu and memory are the aliases of mcpu and memory_mb."""
    alias = _FIELD.get(units_key)
    return alias if alias is not None and getattr(resource_map, alias) is not None else units_key


@check(d.P007)
def resource_maps(ctx: Context) -> Iterator[Diagnostic]:
    """P007: capacity, reserved and limit values must be at most 10^12 units once converted."""
    tables: list[tuple[Entry[Any], str, ResourceMap]] = [
        (pool, "capacity", pool.obj.spec.capacity) for _, pool in sorted(ctx.config.pools.items())
        if pool.obj.spec.capacity is not None]
    for _, policy in sorted(ctx.config.policies.items()):
        tables.append((policy, "reserved", policy.obj.spec.reserved))
        if policy.obj.spec.limit is not None:
            tables.append((policy, "limit", policy.obj.spec.limit))
    for entry, field, resource_map in tables:
        for key, value in sorted(resource_map.units().items()):
            if value > MAX_INT:
                yield entry.doc.diagnostic(
                    d.P007, f"{field} {key} is {value} units, more than poolc plans with ({MAX_INT}); "
                    "check the unit", ("spec", field, _where(key, resource_map)))
