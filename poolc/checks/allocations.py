"""Rules on running allocations (A001, A002, A004, N002 for an allocation's pool)."""

from __future__ import annotations

from collections.abc import Iterator

from .. import diagnostics as d
from ..diagnostics import Diagnostic
from . import Context, check
from .suggestions import did_you_mean, edit_distance

__all__ = ["did_you_mean", "edit_distance"]  # kept importable from here


@check(d.N002, d.A001)
def allocation_references(ctx: Context) -> Iterator[Diagnostic]:
    """N002 / A001: an allocation's pool exists, the step it runs (``spec.step``) exists,
    and its subject is a component of some
    stack (a typo would hold capacity for nobody, so it is an error with the closest
    component name); a known subject should have a policy on that pool (otherwise it
    keeps its capacity and is never preempted: a warning)."""
    policies = {(e.obj.spec.subject, e.obj.spec.pool) for e in ctx.config.policies.values()}
    for _, entry in sorted(ctx.config.allocations.items()):
        spec = entry.obj.spec
        if spec.pool not in ctx.config.pools and not ctx.config.is_broken("ResourcePool", spec.pool):
            yield entry.doc.diagnostic(d.N002, f"allocation {entry.name!r} runs on pool {spec.pool!r}, which is "
                                       "not defined in the files given"
                                       + did_you_mean(spec.pool, ctx.config.names("ResourcePool"), "pools"),
                                       ("spec", "pool"))
        if spec.step is not None:
            pipeline, _, step = spec.step.partition("/")
            known = ctx.config.pipelines.get(pipeline)
            if known is not None and step not in known.obj.spec.steps:
                yield entry.doc.diagnostic(d.N002, f"allocation {entry.name!r} runs step {spec.step!r}, but pipeline "
                                           f"{pipeline!r} has no step {step!r}"
                                           + did_you_mean(step, list(known.obj.spec.steps), "steps"),
                                           ("spec", "step"))
            elif known is None and not ctx.config.is_broken("Pipeline", pipeline):
                yield entry.doc.diagnostic(d.N002, f"allocation {entry.name!r} runs step {spec.step!r} of pipeline "
                                           f"{pipeline!r}, which is not defined in the files given"
                                           + did_you_mean(pipeline, ctx.config.names("Pipeline"), "pipelines"),
                                           ("spec", "step"))
        if ctx.component_is_broken(spec.subject) or ctx.is_tainted(spec.subject):
            continue
        if spec.subject not in ctx.components:
            yield entry.doc.diagnostic(d.N002, f"allocation {entry.name!r} names subject {spec.subject!r}, which "
                                       "is no component of any stack given"
                                       + did_you_mean(spec.subject, list(ctx.components)), ("spec", "subject"))
        elif spec.pool in ctx.config.pools and (spec.subject, spec.pool) not in policies:
            yield entry.doc.diagnostic(d.A001, f"subject {spec.subject!r} has no policy on pool {spec.pool!r}: "
                                       "this allocation keeps its capacity and is never preempted",
                                       ("spec", "subject"))


@check(d.A004)
def allocation_workloads(ctx: Context) -> Iterator[Diagnostic]:
    """A004: an allocation's `spec.workload` is a Workload in its own subject's namespace:
    apply stops exactly that Workload when a plan preempts the allocation, so one naming
    another team's Workload would deactivate that team's job. The plan ignores such a
    Workload (the allocation is not stopped by poolc)."""
    from ..inputs import namespaces_of

    namespaces = namespaces_of(ctx.config)
    for _, entry in sorted(ctx.config.allocations.items()):
        spec = entry.obj.spec
        if spec.workload is None or ctx.component_is_broken(spec.subject) or spec.subject not in ctx.components:
            continue
        namespace = spec.workload.partition("/")[0]
        own = namespaces.get(spec.subject)
        if namespace != own:
            where = f"runs its Jobs in namespace {own!r}" if own else "is no Kubernetes component"
            yield entry.doc.diagnostic(d.A004, f"allocation {entry.name!r} names Workload {spec.workload!r} in "
                                       f"namespace {namespace!r}, but its subject {spec.subject!r} {where}: poolc "
                                       "never stops another team's Workload", ("spec", "workload"))


@check(d.A002)
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
