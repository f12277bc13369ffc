"""The platform's bounds a scenario's outcome turns on (each policy's priority,
reserved share and limit, each pool's capacity), kept in the JSON report, so that
a base branch's report and this one can say which of them a pull request moved:
the comment's "because" beside an expectation the change breaks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config import Config
from ..domain.amounts import Units, key_word
from ..inputs import policies_of, pools_of

Bounds = dict[str, dict[str, int]]      # "Policy/name" | "ResourcePool/name" -> field -> value


def bounds_of(config: Config) -> Bounds:
    """Every bound, in the planner's integer units (what `poolc plan` plans with)."""
    pools = {p.name: p for p in pools_of(config)}
    found: Bounds = {f"ResourcePool/{p.name}": {f"capacity.{k}": v for k, v in sorted(p.capacity.items())}
                     for p in pools.values()}
    for q in policies_of(config, pools):
        found[f"Policy/{q.name}"] = {"priority": q.priority,
                                     **{f"reserved.{k}": v for k, v in sorted(q.reserved.items())},
                                     **{f"limit.{k}": v for k, v in sorted(q.limit.items())}}
    return dict(sorted(found.items()))


def read_bounds(data: Any) -> Bounds:
    """The bounds of a base report (untrusted): only well-formed entries are kept."""
    found: Bounds = {}
    if not isinstance(data, Mapping):
        return found
    for doc, fields in data.items():
        if isinstance(doc, str) and isinstance(fields, Mapping):
            kept = {f: v for f, v in fields.items() if isinstance(f, str) and type(v) is int}
            if kept:
                found[doc] = kept
    return found


def moved(base: Bounds, head: Bounds, units: Units) -> list[str]:
    """What the change moved, one phrase per field: ``research-gpu-dc1's reserved
    GPU: 4 GPU -> 3 GPU``, ``datacenter-one's capacity of CPU: 128 cores -> 96 cores``,
    ``prod-k8s-dc1's priority: 1000 -> 100``; a document on one side only is added or
    removed."""
    phrases = []
    for doc in sorted(base.keys() | head.keys()):
        kind, _, name = doc.partition("/")
        if doc not in base or doc not in head:
            phrases.append(f"{kind} {name} {'added' if doc not in base else 'removed'}")
            continue
        old, new = base[doc], head[doc]
        for field in sorted(old.keys() | new.keys()):
            if old.get(field) == new.get(field):
                continue
            if field == "priority":
                phrases.append(f"{name}'s priority: {_or_none(old.get(field))} → {_or_none(new.get(field))}")
                continue
            what, _, key = field.partition(".")
            label = {"capacity": "capacity of", "reserved": "reserved", "limit": "limit of"}.get(what, what)

            def amount(value: int | None, key: str = key) -> str:
                return "none" if value is None else units.amount(key, value)

            phrases.append(f"{name}'s {label} {key_word(key)}: {amount(old.get(field))} → {amount(new.get(field))}")
    return phrases


def _or_none(value: int | None) -> str:
    return "none" if value is None else str(value)
