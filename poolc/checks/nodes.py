"""Rules on where Kubernetes work lands: pools' GPU models and node groups, and components'
namespaces (T002, T003, P008, P009)."""

from __future__ import annotations

from collections.abc import Iterator

from .. import diagnostics as d
from ..config import Entry
from ..diagnostics import Diagnostic
from ..domain.eligibility import eligible_policies
from ..model import GPU_PRODUCT_LABEL, MAX_FLAVOR_ITEMS, KubernetesComponent, ResourcePool, ResourcePoolSpec
from . import Context, check


@check(d.T002)
def gpu_model_unchecked(ctx: Context) -> Iterator[Diagnostic]:
    """T002 (warning): a step's gpu_type is part of its eligibility: it runs only on
    pools whose nodes offer that model (docs/format.md#gpu-models). A pool with GPUs
    that does not say its model (no nvidia.com/gpu.product in its node_labels, no
    gpu_type on its node groups) accepts any gpu_type, so poolc cannot check it
    there: such a Job may wait forever for a node of its model. Reported once per
    pool that a Kubernetes step with a gpu_type may use, naming the first such step."""
    by_id = {r.id: r for r in ctx.requests}
    seen: set[str] = set()
    for request in ctx.problem.requests:
        if request.gpu_type is None:
            continue
        component = ctx.components.get(request.requester, (None,))[0]
        if not isinstance(component, KubernetesComponent):
            continue
        ok, _ = eligible_policies(ctx.problem, request)
        for q in ok:
            pool = ctx.problem.pool(q.pool)
            if pool.gpu_models is not None or q.pool in seen:
                continue
            seen.add(q.pool)
            entry = ctx.config.pools[q.pool]
            source = by_id[request.id]
            yield entry.doc.diagnostic(
                d.T002, f"pool {q.pool!r} does not say which GPU model its nodes carry, so the gpu_type of the "
                f"steps that may run on it cannot be checked (step {source.pipeline}/{source.step} asks "
                f"{request.gpu_type}); add {GPU_PRODUCT_LABEL} to its node_labels, or gpu_type to its node groups",
                ("metadata", "name"))


@check(d.P008, d.P009)
def node_groups(ctx: Context) -> Iterator[Diagnostic]:
    """P008 / P009: a pool's node groups (``nodes``) are where its capacity lives.
    A capacity row for gpu, cpu or memory may only be smaller than what the groups
    hold (e.g. a pool shared with users poolc does not plan), never larger (P008).
    Group names are unique in their pool; a group's gpu_type agrees with the GPU
    model its labels or the pool's node_labels name; a group's labels do not
    contradict the pool's node_labels; and the node groups with GPUs of one pool
    carry one GPU model (P009): poolc plans a pool's GPUs, reservations and limits
    as one quantity, and Kueue admits on one ResourceFlavor per pool, so GPUs of two
    models in one pool would let a step count against the other model's GPUs; give
    each model its own pool and steer steps with gpu_type, pools or pool_selector."""
    for name, entry in sorted(ctx.config.pools.items()):
        spec = entry.obj.spec
        if not spec.nodes:
            continue
        summed: dict[str, int] = {}
        for group in spec.nodes:
            for key, value in group.units().items():
                summed[key] = summed.get(key, 0) + value
        written = spec.capacity.units() if spec.capacity is not None else {}
        for key, value in sorted(written.items()):
            if key in summed and value > summed[key]:
                yield entry.doc.diagnostic(
                    d.P008, f"capacity {key}={value} of pool {name!r} is more than its node groups hold "
                    f"({key}={summed[key]}); a capacity row may only be smaller than the nodes (leave it out to "
                    "use their sum)", _capacity_key(spec, key))
        yield from _groups_agree(entry, name)


def _capacity_key(spec: ResourcePoolSpec, key: str) -> tuple[str, ...]:
    extra = (spec.capacity.__pydantic_extra__ if spec.capacity is not None else None) or {}
    alias = {"mcpu": "cpu", "memory_mb": "memory"}.get(key)
    return ("spec", "capacity", key if key in extra or alias is None else alias)


def _groups_agree(entry: Entry[ResourcePool], name: str) -> Iterator[Diagnostic]:
    spec = entry.obj.spec
    pool_labels = spec.node_labels or {}
    pool_model = pool_labels.get(GPU_PRODUCT_LABEL)
    names: set[str] = set()
    models: dict[str, str] = {}
    for index, group in enumerate(spec.nodes or ()):
        where = ("spec", "nodes", index)
        if group.name in names:
            yield entry.doc.diagnostic(d.P009, f"pool {name!r} has two node groups named {group.name!r}; "
                                       "rename one", where + ("name",))
        names.add(group.name)
        labels = group.labels or {}
        for key, value in sorted(labels.items()):
            if key in pool_labels and pool_labels[key] != value:
                yield entry.doc.diagnostic(d.P009, f"node group {group.name!r} labels {key}={value}, but the node "
                                           f"labels of pool {name!r} say {key}={pool_labels[key]} for every node",
                                           where + ("labels", key))
        said = [m for m in (labels.get(GPU_PRODUCT_LABEL), pool_model) if m]
        if group.gpu_type and any(m != group.gpu_type for m in said):
            yield entry.doc.diagnostic(d.P009, f"node group {group.name!r} has gpu_type {group.gpu_type}, but its "
                                       f"{GPU_PRODUCT_LABEL} label says {said[0]}", where + ("gpu_type",))
        model = group.model(pool_model)
        if group.gpu > 0 and model is not None:
            models.setdefault(model, group.name)
    if len(models) > 1:
        listed = ", ".join(f"{m} (group {g!r})" for m, g in sorted(models.items()))
        yield entry.doc.diagnostic(d.P009, f"pool {name!r} has GPUs of {len(models)} models: {listed}; poolc plans "
                                   "a pool's GPUs as one quantity and Kueue admits them on one flavor, so a step "
                                   "could be counted against the other model's GPUs: give each GPU model its own "
                                   "pool", ("spec", "nodes"))
    if len(spec.flavor_node_labels()) > MAX_FLAVOR_ITEMS:
        yield entry.doc.diagnostic(d.P009, f"the nodes of pool {name!r} share {len(spec.flavor_node_labels())} "
                                   f"labels, but a Kueue ResourceFlavor holds at most {MAX_FLAVOR_ITEMS}; "
                                   "label the nodes with fewer", ("spec", "nodes"))


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
