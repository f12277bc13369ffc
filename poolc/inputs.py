"""Build the planner's Problem from the validated configuration (no solver here)."""

from __future__ import annotations

from collections.abc import Sequence

from .config import Config
from .domain.problem import PolicyRule, Pool, Problem, Request, Running, start_ranks
from .model import MAX_INT, Allocation, parse_timestamp
from .requests import StepRequest


def _capped(units: dict[str, int]) -> dict[str, int]:
    """A quantity converted past MAX_INT (``memory: 1e23PiB``) is a validation error (P007);
    capped here so the planner, which may still run to show the plan, never overflows."""
    return {k: min(v, MAX_INT) for k, v in units.items()}


def _shared_cap(capped: dict[int, dict[str, int]], units: dict[str, int]) -> dict[str, int]:
    """_capped, once per distinct dict (the caller keeps every ``units`` alive)."""
    found = capped.get(id(units))
    if found is None:
        found = capped[id(units)] = _capped(units)
    return found


def pools_of(config: Config) -> tuple[Pool, ...]:
    return tuple(Pool(name, _capped(entry.obj.spec.capacity.units())) for name, entry in sorted(config.pools.items()))


def policies_of(config: Config, pools: dict[str, Pool]) -> tuple[PolicyRule, ...]:
    """Policies on known pools, restricted to metered keys; a metered key without a
    limit is capped by the capacity (docs/format.md#policy). A written limit of 0
    stays 0 (the key is forbidden); a reservation of 0 is dropped, because reserving
    nothing is the same as no reservation."""
    rules = []
    for name, entry in sorted(config.policies.items()):
        spec = entry.obj.spec
        pool = pools.get(spec.pool)
        if pool is None:
            continue
        reserved = {k: v for k, v in _capped(spec.reserved.units()).items() if v > 0 and pool.metered(k)}
        given = _capped(spec.limit.units()) if spec.limit is not None else {}
        limit = {k: min(given.get(k, cap), cap) for k, cap in pool.capacity.items()}
        rules.append(PolicyRule(name, spec.subject, spec.pool, spec.priority, reserved, limit))
    return tuple(rules)


def running_of(allocations: list[tuple[str, Allocation]]) -> tuple[Running, ...]:
    running = [Running(name, a.spec.subject, a.spec.pool, a.spec.preemptible,
                       dict(sorted((k, v) for k, v in a.spec.holds.items() if v > 0)),
                       parse_timestamp(a.spec.started_at) if a.spec.started_at else None,
                       workload=a.spec.workload)
               for name, a in sorted(allocations)]
    return tuple(start_ranks(running))


def problem_from_config(config: Config, requests: list[StepRequest],
                        extra_allocations: Sequence[Allocation] = ()) -> Problem:
    """Requests keep their arrival rank; allocations come from the files and the state."""
    pools = pools_of(config)
    by_name = {p.name: p for p in pools}
    allocations = [(name, e.obj) for name, e in config.allocations.items()]
    allocations += [(a.metadata.name, a) for a in extra_allocations
                    if a.metadata.name not in config.allocations]
    capped: dict[int, dict[str, int]] = {}   # requests share their demand dicts: cap each once
    return Problem(
        pools=pools,
        policies=policies_of(config, by_name),
        requests=tuple(Request(r.id, r.requester, _shared_cap(capped, r.demand), r.preemptible, rank)
                       for rank, r in enumerate(requests) if r.requester is not None),
        running=tuple(a for a in running_of(allocations) if a.pool in by_name),
    )
