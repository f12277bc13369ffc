"""Rules on where Kubernetes work lands: pools' nodes and components' namespaces (T002, T003)."""

from __future__ import annotations

from collections.abc import Iterator

from .. import diagnostics as d
from ..diagnostics import Diagnostic
from ..domain.eligibility import eligible_policies
from ..model import KubernetesComponent
from ..requests import GPU_PRODUCT_LABEL
from . import Context, check


@check(d.T002)
def gpu_type_on_no_node(ctx: Context) -> Iterator[Diagnostic]:
    """T002 (warning): a Kubernetes step that asks for GPUs with a gpu_type gets the
    node selector nvidia.com/gpu.product=<gpu_type>. When every pool the step is
    eligible on says which GPU model its nodes carry (nvidia.com/gpu.product in its
    node_labels) and none of them is that model, no node the step may use matches:
    worse, Kueue does not admit the Job on such a pool at all, since the selector
    contradicts the pool's ResourceFlavor. A pool without node_labels, or whose
    node_labels do not name nvidia.com/gpu.product, says nothing about its GPU models
    and silences the warning."""
    by_id = {r.id: r for r in ctx.requests}
    for request in ctx.problem.requests:
        source = by_id[request.id]
        product = source.gpu_product
        component = ctx.components.get(request.requester, (None,))[0]
        if product is None or not isinstance(component, KubernetesComponent):
            continue
        ok, _ = eligible_policies(ctx.problem, request)
        pools = sorted({q.pool for q in ok})
        offered: dict[str, str] = {}
        for name in pools:
            labels = ctx.config.pools[name].obj.spec.node_labels or {}
            if GPU_PRODUCT_LABEL not in labels:
                break  # this pool may well have such nodes
            offered[name] = labels[GPU_PRODUCT_LABEL]
        else:
            if pools and product not in offered.values():
                what = ", ".join(f"pool {name!r} offers {GPU_PRODUCT_LABEL}={value}" for name, value in offered.items())
                yield source.entry.doc.diagnostic(
                    d.T002, f"step {source.step!r} selects nodes with {GPU_PRODUCT_LABEL}={product} (its gpu_type), "
                    f"but {what}: no node it may use matches and Kueue will not admit its Job; set gpu_type to a "
                    "model these pools offer, or give the step a policy on a pool with such nodes",
                    source.field_path("gpu_type"))


@check(d.T003)
def shared_namespaces(ctx: Context) -> Iterator[Diagnostic]:
    """T003 (warning): a LocalQueue lives in a namespace, and a ClusterQueue admits
    from the namespace its namespaceSelector names. When Kubernetes components that
    have policies submit from one namespace, a Job of either can name the other's
    LocalQueue and run on the other's share, at the other's priority. Give each such
    component its own namespace (the same component with policies on several pools
    is fine)."""
    with_policies: dict[str, list[str]] = {}
    for name, entry in sorted(ctx.config.policies.items()):
        with_policies.setdefault(entry.obj.spec.subject, []).append(name)
    by_namespace: dict[str, list[str]] = {}
    for name in sorted(with_policies):
        component = ctx.components.get(name, (None,))[0]
        if isinstance(component, KubernetesComponent):
            by_namespace.setdefault(component.namespace, []).append(name)
    for namespace, names in sorted(by_namespace.items()):
        first = names[0]
        for name in names[1:]:
            component, stack = ctx.components[name]
            spec = stack.obj.spec
            index = next(i for i, op in enumerate(spec.step_operators) if op is component) \
                if component is not spec.orchestrator else None
            where: tuple = ("spec", "orchestrator") if index is None else ("spec", "step_operators", index)
            # at its namespace, or at its name when it takes the default namespace
            path = where + (("namespace",) if "namespace" in component.model_fields_set else ("name",))
            yield stack.doc.diagnostic(
                d.T003, f"components {first!r} (policies {', '.join(with_policies[first])}) and {name!r} "
                f"(policies {', '.join(with_policies[name])}) both submit from namespace {namespace!r}, so each "
                "can use the other's LocalQueues and share; give each component its own namespace",
                path)
