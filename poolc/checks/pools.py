"""Rules on pools and policies (P001-P006, P010, and N002 for a policy's pool)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .. import diagnostics as d
from ..diagnostics import Diagnostic
from ..model import ResourceMap, ResourcePoolSpec
from . import Context, check
from .suggestions import did_you_mean

_ALIAS = {"mcpu": "cpu", "memory_mb": "memory"}


def _key_path(resource_map: ResourceMap | None, field: str, key: str) -> tuple[str, ...]:
    """Where a canonical key was written: under its own name or its friendly alias."""
    extra = (resource_map.__pydantic_extra__ if resource_map is not None else None) or {}
    written = key if key in extra or key not in _ALIAS else _ALIAS[key]
    return ("spec", field, written)


def _capacity_path(spec: ResourcePoolSpec, key: str) -> tuple[str, ...]:
    """Where a capacity key comes from: its row, else the node groups it is summed from."""
    if spec.capacity is not None and key in spec.capacity.units():
        return _key_path(spec.capacity, "capacity", key)
    return ("spec", "nodes")


@check(d.N002)
def policy_references(ctx: Context) -> Iterator[Diagnostic]:
    """N002: a policy's pool and subject must exist (the subject is a stack component)."""
    for _, entry in sorted(ctx.config.policies.items()):
        spec = entry.obj.spec
        if spec.pool not in ctx.config.pools and not ctx.config.is_broken("ResourcePool", spec.pool):
            yield entry.doc.diagnostic(d.N002, f"policy {entry.name!r} names pool {spec.pool!r}, which is not "
                                       "defined in the files given"
                                       + _fix(spec.pool, ctx.config.names("ResourcePool"), "pools",
                                              "define the ResourcePool or fix the name"), ("spec", "pool"))
        if spec.subject not in ctx.components and not ctx.component_is_broken(spec.subject):
            yield entry.doc.diagnostic(d.N002, f"policy {entry.name!r} names subject {spec.subject!r}, which is no "
                                       "component of any stack given"
                                       + _fix(spec.subject, ctx.component_names, "components",
                                              "add it to a Stack or fix the name"), ("spec", "subject"))


def _fix(name: str, known: Iterable[str], what: str, otherwise: str) -> str:
    hint = did_you_mean(name, known, what)
    return hint if hint.startswith(";") else f"; {otherwise}{hint}"


@check(d.P001, d.P002, d.P003)
def policy_keys_and_bounds(ctx: Context) -> Iterator[Diagnostic]:
    """P001-P003: reserved/limit keys exist in the pool; reserved <= limit <= capacity."""
    for _, entry in sorted(ctx.config.policies.items()):
        spec = entry.obj.spec
        pool = ctx.config.pools.get(spec.pool)
        if pool is None:
            continue
        capacity = pool.obj.spec.capacity_units()
        reserved = spec.reserved.units()
        limit = spec.limit.units() if spec.limit is not None else {}
        for field, values, resource_map in (("reserved", reserved, spec.reserved), ("limit", limit, spec.limit)):
            for key, value in values.items():
                path = _key_path(resource_map, field, key)
                if key not in capacity:
                    yield entry.doc.diagnostic(d.P001, f"pool {spec.pool!r} has no capacity row for {key!r}; "
                                               f"add {key} to its capacity or remove it from {field}", path, key=True)
                elif value > capacity[key]:
                    yield entry.doc.diagnostic(d.P003, f"{field} {key}={value} is above the capacity of pool "
                                               f"{spec.pool!r} ({key}={capacity[key]}); lower it or raise the "
                                               "capacity", path)
        for key, value in reserved.items():
            if key in limit and value > limit[key] and key in capacity:
                yield entry.doc.diagnostic(d.P002, f"reserved {key}={value} is above the policy's own limit "
                                           f"{key}={limit[key]}; raise the limit or lower the reservation",
                                           _key_path(spec.reserved, "reserved", key))


@check(d.P004)
def reserved_sum(ctx: Context) -> Iterator[Diagnostic]:
    """P004: per pool and key, the reserved shares of all its policies fit its capacity."""
    reserved_on: dict[str, list[tuple[str, dict[str, int]]]] = {}
    for name, entry in sorted(ctx.config.policies.items()):
        reserved_on.setdefault(entry.obj.spec.pool, []).append((name, entry.obj.spec.reserved.units()))
    for pool_name, pool in sorted(ctx.config.pools.items()):
        on_pool = reserved_on.get(pool_name, [])
        for key, cap in pool.obj.spec.capacity_units().items():
            total = sum(reserved.get(key, 0) for _, reserved in on_pool)
            if total > cap:
                parts = ", ".join(f"{name}={reserved[key]}" for name, reserved in on_pool if reserved.get(key))
                yield pool.doc.diagnostic(d.P004, f"policies reserve {key}={total} on pool {pool_name!r} "
                                          f"({parts}) but its capacity is {key}={cap}",
                                          _capacity_path(pool.obj.spec, key))


@check(d.P005)
def one_policy_per_subject_and_pool(ctx: Context) -> Iterator[Diagnostic]:
    """P005: at most one policy per (subject, pool): a request would not know which to use."""
    seen: dict[tuple[str, str], str] = {}
    for name, entry in sorted(ctx.config.policies.items()):
        pair = (entry.obj.spec.subject, entry.obj.spec.pool)
        if pair in seen:
            yield entry.doc.diagnostic(d.P005, f"policies {seen[pair]!r} and {name!r} both link subject "
                                       f"{pair[0]!r} to pool {pair[1]!r}; merge them into one",
                                       ("metadata", "name"))
        else:
            seen[pair] = name


BUILTIN_KEYS = {"gpu", "mcpu", "memory_mb", "step_run"}


@check(d.P006)
def custom_keys_not_enforced(ctx: Context) -> Iterator[Diagnostic]:
    """P006 (warning): a custom capacity key (a licence, a session count) is planned by
    poolc but not enforced by Kueue at runtime; reported once per key."""
    seen: set[str] = set()
    for _, pool in sorted(ctx.config.pools.items()):
        for key in pool.obj.spec.capacity.units() if pool.obj.spec.capacity is not None else ():
            if key not in BUILTIN_KEYS and key not in seen:
                seen.add(key)
                yield pool.doc.diagnostic(d.P006, f"custom key {key!r} is planned by poolc but Kueue does not "
                                          "enforce it at runtime (no node advertises it)",
                                          ("spec", "capacity", key), key=True)


@check(d.P010)
def step_run_not_reserved(ctx: Context) -> Iterator[Diagnostic]:
    """P010 (warning): a policy that reserves a share on a pool metering ``step_run``
    but reserves no ``step_run``: every step asks ``step_run: 1``, so every step of
    the policy lies partly above its share, borrows, and may be preempted by a
    higher-priority policy; a non-preemptible step of it can never be admitted
    there. A policy that reserves nothing (``reserved: {}``) borrows on purpose."""
    for name, entry in sorted(ctx.config.policies.items()):
        spec = entry.obj.spec
        pool = ctx.config.pools.get(spec.pool)
        reserved = spec.reserved.units()
        if pool is None or not any(reserved.values()) or reserved.get("step_run", 0) > 0:
            continue
        if pool.obj.spec.capacity_units().get("step_run", 0) <= 0:
            continue
        keys = ", ".join(k for k in sorted(reserved) if reserved[k])
        yield entry.doc.diagnostic(d.P010, f"policy {name!r} reserves {keys} on pool {spec.pool!r} but no step_run, "
                                   "which the pool meters: every step takes one step_run above the share, so "
                                   "every step of it borrows (a higher-priority policy may preempt it, and a "
                                   "non-preemptible step can never be admitted); reserve step_run too, one per "
                                   "step the share should hold", ("spec", "reserved"), key=True)
