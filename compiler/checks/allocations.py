"""Rules on running allocations (A001, A002, N002 for an allocation's pool)."""

from __future__ import annotations

from collections.abc import Iterator

from .. import diagnostics as d
from ..diagnostics import Diagnostic
from . import Context, check


@check
def allocation_references(ctx: Context) -> Iterator[Diagnostic]:
    """N002 / A001: an allocation's pool exists; its subject should have a policy there
    (otherwise it keeps its capacity and is never preempted)."""
    policies = {(e.obj.spec.subject, e.obj.spec.pool) for e in ctx.config.policies.values()}
    for _, entry in sorted(ctx.config.allocations.items()):
        spec = entry.obj.spec
        if spec.pool not in ctx.config.pools:
            yield entry.doc.diagnostic(d.N002, f"allocation {entry.name!r} runs on pool {spec.pool!r}, which is "
                                       "not defined in the files given", ("spec", "pool"))
        elif (spec.subject, spec.pool) not in policies:
            yield entry.doc.diagnostic(d.A001, f"subject {spec.subject!r} has no policy on pool {spec.pool!r}: "
                                       "this allocation keeps its capacity and is never preempted",
                                       ("spec", "subject"))


@check
def pools_over_capacity(ctx: Context) -> Iterator[Diagnostic]:
    """A002 (warning): running allocations already hold more than a pool's capacity on
    a key; nothing that needs that key is admitted there until they finish."""
    for pool in ctx.problem.pools:
        held: dict[str, int] = {}
        for alloc in ctx.problem.running:
            if alloc.pool == pool.name:
                for key, value in alloc.holds.items():
                    held[key] = held.get(key, 0) + value
        for key, cap in pool.capacity.items():
            if held.get(key, 0) > cap:
                entry = ctx.config.pools[pool.name]
                yield entry.doc.diagnostic(d.A002, f"running allocations hold {key}={held[key]} on pool "
                                           f"{pool.name!r}, above its capacity {key}={cap}",
                                           ("spec", "capacity"), key=True)
