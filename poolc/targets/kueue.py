"""Kueue target: the cluster keeps the pool rules at runtime (docs/targets.md#kueue).

Per pool, in ``kueue/<pool>.yaml`` (API kueue.x-k8s.io/v1beta2):
- a ResourceFlavor ``<pool>`` and a root Cohort ``<pool>`` whose nominal quota is
  the shared part (capacity minus every reservation on the pool);
- per policy whose subject is a Kubernetes component: a child Cohort
  ``<pool>.<policy>`` (parent ``<pool>``) whose borrowing limit is limit minus
  reserved, and in it the ClusterQueues ``<policy>-guaranteed`` (nominal = reserved,
  borrows nothing: non-preemptible steps) and ``<policy>-burst`` (nominal 0: every
  use is borrowed and so reclaimable: preemptible steps);
- a LocalQueue per ClusterQueue in the subject's namespace.
WorkloadPriorityClasses are cluster-wide and shared by pools, so each is written
once, in ``kueue/priorities.yaml``. Pools no Kubernetes component uses get no file.
"""

from __future__ import annotations

from collections import defaultdict

from ..domain.naming import cluster_queue_name, cohort_name, local_queue_name, priority_class_name
from ..domain.problem import BUILTIN_UNBOUNDED, PolicyRule, Pool
from ..model import ResourcePoolSpec
from ..units import format_mcpu, format_memory_mb
from .context import LABEL_PREFIX, MANAGED_BY, TargetContext
from .yamlout import dump_all

API_VERSION = "kueue.x-k8s.io/v1beta2"
# Covered in this order in every flavor of every object (Kueue requires one order).
RESOURCES = ("cpu", "memory", "pods", "nvidia.com/gpu", "ephemeral-storage")
POOL_KEY = {"cpu": "mcpu", "memory": "memory_mb", "pods": "step_run", "nvidia.com/gpu": "gpu"}
# Quota for a dimension the pool does not meter: never binds in practice, and stays
# far inside Kueue's int64 arithmetic (10^9 millicores, 10^15 bytes, 10^6 pods) when
# summed over thousands of queues.
UNBOUNDED = {"cpu": "1000000", "memory": "1P", "pods": "1000000", "ephemeral-storage": "1P"}
NAMESPACE_LABEL = "kubernetes.io/metadata.name"


def _format(resource: str, units: int) -> str:
    if units == 0:
        return "0"
    if resource == "cpu":
        return format_mcpu(units)
    if resource == "memory":
        return format_memory_mb(units)
    return str(units)


def capacity(pool: Pool, resource: str) -> int | None:
    """Units of ``resource`` in the pool; None when the pool does not meter it (a
    built-in key without a row, or ephemeral-storage). ``gpu`` without a row is 0."""
    key = POOL_KEY.get(resource)
    if key is None:
        return None
    if key in pool.capacity:
        return pool.capacity[key]
    return None if key in BUILTIN_UNBOUNDED else 0


def _quota(name: str, nominal: str, borrowing: str | None = None, lending: str | None = None) -> dict:
    entry = {"name": name, "nominalQuota": nominal}
    if borrowing is not None:
        entry["borrowingLimit"] = borrowing
    if lending is not None:
        entry["lendingLimit"] = lending
    return entry


def _groups(pool: Pool, quotas: list[dict]) -> list[dict]:
    return [{"coveredResources": list(RESOURCES), "flavors": [{"name": pool.name, "resources": quotas}]}]


def _meta(name: str, labels: dict[str, str], namespace: str | None = None) -> dict:
    meta: dict = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = dict(sorted({**MANAGED_BY, **labels}.items()))
    return meta


def root_cohort(pool: Pool, policies: list[PolicyRule]) -> dict:
    """Nominal quota = the unreserved part of the pool (every policy's reservation,
    also a SageMaker subject's, is kept out of the shared part)."""
    quotas = []
    for resource in RESOURCES:
        cap = capacity(pool, resource)
        if cap is None:
            quotas.append(_quota(resource, UNBOUNDED[resource]))
        else:
            reserved = sum(q.rsv(POOL_KEY[resource]) for q in policies)
            quotas.append(_quota(resource, _format(resource, max(0, cap - reserved))))
    return {"apiVersion": API_VERSION, "kind": "Cohort",
            "metadata": _meta(pool.name, {f"{LABEL_PREFIX}pool": pool.name}),
            "spec": {"resourceGroups": _groups(pool, quotas)}}


def child_cohort(pool: Pool, policy: PolicyRule) -> dict:
    """Borrowing limit = limit - reserved: with the reserved part inside (the
    guaranteed queue's nominal quota) the policy's total is capped at its limit."""
    quotas = []
    for resource in RESOURCES:
        cap = capacity(pool, resource)
        zero = _format(resource, 0)
        if cap is None:
            quotas.append(_quota(resource, zero))
        else:
            key = POOL_KEY[resource]
            room = max(0, policy.limit.get(key, cap) - policy.rsv(key))
            quotas.append(_quota(resource, zero, borrowing=_format(resource, room)))
    return {"apiVersion": API_VERSION, "kind": "Cohort",
            "metadata": _meta(cohort_name(pool.name, policy.name), _policy_labels(policy)),
            "spec": {"parentName": pool.name, "resourceGroups": _groups(pool, quotas)}}


def _policy_labels(policy: PolicyRule) -> dict[str, str]:
    return {f"{LABEL_PREFIX}pool": policy.pool, f"{LABEL_PREFIX}policy": policy.name}


# Preemptible steps (burst): inside the policy's free reserve they reclaim it from
# any borrower (Kueue's hierarchical reclaim at the policy's cohort, as poolc's
# in-share rule); past the reserve they may displace lower-priority borrowers only
# (borrowWithinCohort), as poolc's priority rule.
BURST_PREEMPTION = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                    "borrowWithinCohort": {"policy": "LowerPriority"}}
# Non-preemptible steps (guaranteed): they never borrow, so never get reclaimed;
# they reclaim their reserve from lower-priority borrowers only, so they never
# evict their own policy's preemptible steps that hold the reserve (same priority).
GUARANTEED_PREEMPTION = {"withinClusterQueue": "Never", "reclaimWithinCohort": "LowerPriority"}


def cluster_queue(pool: Pool, policy: PolicyRule, namespace: str, preemptible: bool) -> dict:
    quotas = []
    for resource in RESOURCES:
        cap = capacity(pool, resource)
        zero = _format(resource, 0)
        if cap is None:
            # Unmetered: as much as it likes, never borrowed (so never reclaimable, and
            # never what makes a queue "borrowing" when Kueue decides who may reclaim),
            # and nothing lent (so it does not inflate the cohort's totals).
            quotas.append(_quota(resource, UNBOUNDED[resource], borrowing=zero, lending=zero))
        elif preemptible:
            quotas.append(_quota(resource, zero))
        else:
            quotas.append(_quota(resource, _format(resource, policy.rsv(POOL_KEY[resource])), borrowing=zero))
    preemption = BURST_PREEMPTION if preemptible else GUARANTEED_PREEMPTION
    return {"apiVersion": API_VERSION, "kind": "ClusterQueue",
            "metadata": _meta(cluster_queue_name(policy.name, preemptible), _policy_labels(policy)),
            "spec": {
                "cohortName": cohort_name(pool.name, policy.name),
                "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: namespace}},
                "queueingStrategy": "BestEffortFIFO",
                "preemption": preemption,
                "resourceGroups": _groups(pool, quotas),
            }}


def local_queue(policy: PolicyRule, namespace: str, preemptible: bool) -> dict:
    return {"apiVersion": API_VERSION, "kind": "LocalQueue",
            "metadata": _meta(local_queue_name(policy.name, preemptible), _policy_labels(policy), namespace),
            "spec": {"clusterQueue": cluster_queue_name(policy.name, preemptible)}}


def resource_flavor(pool: Pool, spec: ResourcePoolSpec | None = None) -> dict:
    """One flavor per pool (a pool is one quota in poolc, and one GPU model: P009).
    The labels every node of the pool carries (its ``node_labels``, the labels all its
    node groups share, their GPU model) and its ``tolerations`` become the flavor's:
    Kueue admits a workload on this flavor only when the pod's node selector and
    required node affinity agree with these labels, then adds them to the pods' node
    selector and the tolerations to their tolerations, so work admitted on the pool's
    quota runs on the pool's nodes, and a Job asking another GPU model is never
    admitted here (docs/targets.md#kueue)."""
    flavor: dict = {}
    labels = spec.flavor_node_labels() if spec is not None else {}
    if labels:
        flavor["nodeLabels"] = labels
    if spec is not None and spec.tolerations:
        # Kubernetes' field order; the list keeps the user's order (it is atomic in the CRD)
        flavor["tolerations"] = [t.model_dump(exclude_none=True) for t in spec.tolerations]
    return {"apiVersion": API_VERSION, "kind": "ResourceFlavor",
            "metadata": _meta(pool.name, {f"{LABEL_PREFIX}pool": pool.name}), "spec": flavor}


def render_pool(ctx: TargetContext, pool: Pool) -> tuple[list[dict], list[str]] | None:
    """The objects of one pool and their source files; None if no Kubernetes policy."""
    k8s = ctx.kubernetes_policies(pool.name)
    if not k8s:
        return None
    every = [q for q in ctx.policy_rules if q.pool == pool.name]
    objects = [resource_flavor(pool, ctx.config.pools[pool.name].obj.spec), root_cohort(pool, every)]
    queues = []
    sources = [ctx.config.pools[pool.name].doc.file]
    for policy in k8s:
        namespace = ctx.kubernetes_component(policy.subject).namespace
        objects.append(child_cohort(pool, policy))
        for preemptible in (False, True):
            objects.append(cluster_queue(pool, policy, namespace, preemptible))
            queues.append(local_queue(policy, namespace, preemptible))
        sources += [ctx.policy_entry(policy.name).doc.file, ctx.component_file(policy.subject)]
    sources += [ctx.policy_entry(q.name).doc.file for q in every]
    queues.sort(key=lambda lq: (lq["metadata"]["namespace"], lq["metadata"]["name"]))
    return objects + queues, sources


def render_priorities(ctx: TargetContext) -> tuple[list[dict], list[str]] | None:
    by_value: dict[int, list[PolicyRule]] = defaultdict(list)
    for policy in ctx.kubernetes_policies():
        by_value[policy.priority].append(policy)
    if not by_value:
        return None
    objects = [{"apiVersion": API_VERSION, "kind": "WorkloadPriorityClass",
                "metadata": _meta(priority_class_name(value), {}),
                "value": value,
                "description": f"poolc policy priority {value} (policies: "
                               f"{', '.join(q.name for q in by_value[value])})"}
               for value in sorted(by_value, reverse=True)]
    sources = [ctx.policy_entry(q.name).doc.file for qs in by_value.values() for q in qs]
    return objects, sources


KueueFile = tuple[str, list[dict], list[str]]   # path, objects, their source files


def _files(ctx: TargetContext) -> list[KueueFile]:
    """Every Kueue file's objects, pools first, rendered once per context: the
    runtime check and the files read the same objects."""
    found = ctx.rendered.get("kueue")
    if found is None:
        files: list[KueueFile] = []
        for pool in ctx.pools:
            rendered = render_pool(ctx, pool)
            if rendered is not None:
                files.append((f"kueue/{pool.name}.yaml", *rendered))
        priorities = render_priorities(ctx)
        if priorities is not None:
            files.append(("kueue/priorities.yaml", *priorities))
        found = ctx.rendered["kueue"] = files
    return found  # type: ignore[return-value]


def cluster_objects(ctx: TargetContext) -> list[dict]:
    """Every Kueue object apply writes, as the API objects (what a replay of the
    cluster reads: the same objects, not a second model of them)."""
    return [obj for _, objects, _ in _files(ctx) for obj in objects]


def render(ctx: TargetContext) -> dict[str, str]:
    """``kueue/<pool>.yaml`` per pool a Kubernetes component uses, and ``kueue/priorities.yaml``."""
    files = {path: dump_all(objects, version=ctx.version, sources=sources) for path, objects, sources in _files(ctx)}
    return dict(sorted(files.items()))
