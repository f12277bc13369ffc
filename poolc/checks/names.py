"""Collisions of the names poolc derives (N003).

Several sources map onto one derived name: ``<pipeline>--<step>`` is the same for
pipeline ``a`` with step ``b--c`` and pipeline ``a--b`` with step ``c``; a pool
named ``priorities`` would get ``kueue/priorities.yaml``, which holds the
priority classes. Without this rule one of the two silently overwrites the
other's Job file, allocation or training job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .. import diagnostics as d
from ..diagnostics import Diagnostic
from ..domain.naming import allocation_name, step_name, training_job_name
from . import Context, check

RESERVED_POOL_NAMES = {"priorities": "kueue/priorities.yaml, which holds the Kueue priority classes"}

_DERIVED: list[tuple[str, Callable[[str], str]]] = [
    ("generated file name", step_name),            # kubernetes/<ns>/<name>.job.yaml, sagemaker/<name>.json
    ("allocation name", allocation_name),
    ("SageMaker training job name", training_job_name),
]


@check(d.N003)
def step_names(ctx: Context) -> Iterator[Diagnostic]:
    """N003: two steps must not map to one generated file, allocation or training job name."""
    for what, derive in _DERIVED:
        first: dict[str, str] = {}
        for request in ctx.requests:
            name = derive(request.id)
            other = first.setdefault(name, request.id)
            if other != request.id:
                yield request.entry.doc.diagnostic(
                    d.N003, f"step {request.step!r} of pipeline {request.pipeline!r} gets the {what} "
                    f"{name!r}, as step {other!r} already does; rename one of them (pipeline and step "
                    "names are joined with '--', and characters other than letters, digits and '-' "
                    "are rewritten)", request.path, key=True)


# a Kubernetes namespace poolc writes under kubernetes/<namespace>/: not the directory of
# the queued steps' Jobs (kubectl apply -R -f kubernetes/queued/ would start them, #42)
RESERVED_NAMESPACES = {"queued": "kubernetes/queued/, where gate mode keeps the Jobs of queued steps"}


@check(d.N003)
def reserved_namespaces(ctx: Context) -> Iterator[Diagnostic]:
    """N003: a Kubernetes component's namespace must not be named like a directory poolc
    generates for another purpose (``queued``)."""
    for _, entry in sorted(ctx.config.stacks.items()):
        spec = entry.obj.spec
        places: list[tuple[object, tuple[str | int, ...]]] = [
            (spec.orchestrator, ("spec", "orchestrator", "namespace"))]
        places += [(op, ("spec", "step_operators", i, "namespace")) for i, op in enumerate(spec.step_operators)]
        for component, path in places:
            namespace = getattr(component, "namespace", None)
            if getattr(component, "flavor", None) == "kubernetes" and namespace in RESERVED_NAMESPACES:
                yield entry.doc.diagnostic(
                    d.N003, f"namespace {namespace!r} of component {getattr(component, 'name', '')!r} would be "
                    f"written to {RESERVED_NAMESPACES[namespace]}; use another namespace", path)


@check(d.N003)
def reserved_pool_names(ctx: Context) -> Iterator[Diagnostic]:
    """N003: a pool must not be named like a file poolc generates for another purpose."""
    for name, entry in sorted(ctx.config.pools.items()):
        if name in RESERVED_POOL_NAMES:
            yield entry.doc.diagnostic(
                d.N003, f"pool {name!r} would be written to {RESERVED_POOL_NAMES[name]}; rename the pool",
                ("metadata", "name"))
