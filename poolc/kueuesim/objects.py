"""A typed, read-only view of the Kueue API objects the scheduler reads.

Only ``kueue.x-k8s.io/v1beta2`` (and, for ClusterQueue ``spec.cohort``, the
deprecated v1beta1 spelling) is read; other kinds and versions are ignored, as
they do not change admission decisions. Defaults are the CRD defaults: a
missing ``namespaceSelector`` selects no namespace, ``queueingStrategy`` is
BestEffortFIFO, every preemption policy is Never, and flavor fungibility is
whenCanBorrow=MayStopSearch / whenCanPreempt=TryNextFlavor.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .quantity import canonical_units

GROUP = "kueue.x-k8s.io"
VERSIONS = (f"{GROUP}/v1beta2", f"{GROUP}/v1beta1")
NAMESPACE_LABEL = "kubernetes.io/metadata.name"

FlavorResource = tuple[str, str]  # (flavor, resource)


@dataclass(frozen=True)
class Quota:
    """nominalQuota / borrowingLimit / lendingLimit of one flavor-resource."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True)
class ResourceGroup:
    """Covered resources and, in preference order, the flavors that provide them."""

    covered: tuple[str, ...]
    flavors: tuple[str, ...]


@dataclass(frozen=True)
class Preemption:
    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: str = "Never"
    max_priority_threshold: int | None = None


@dataclass(frozen=True)
class Fungibility:
    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    preference: str | None = None


@dataclass(frozen=True)
class Selector:
    """A namespace LabelSelector; ``None`` fields mean the CRD's null (selects nothing)."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in self.match_labels):
            return False
        for key, op, values in self.match_expressions:
            present = key in labels
            if op == "In" and not (present and labels[key] in values):
                return False
            if op == "NotIn" and present and labels[key] in values:
                return False
            if op == "Exists" and not present:
                return False
            if op == "DoesNotExist" and present:
                return False
        return True


@dataclass(frozen=True)
class ClusterQueueSpec:
    name: str
    cohort: str | None
    groups: tuple[ResourceGroup, ...]
    quotas: Mapping[FlavorResource, Quota]
    preemption: Preemption
    strategy: str
    selector: Selector | None
    fungibility: Fungibility

    def group_for(self, resource: str) -> ResourceGroup | None:
        index = self.group_index.get(resource)
        return None if index is None else self.groups[index]

    @cached_property
    def group_index(self) -> Mapping[str, int]:
        """Resource -> the index of the first group that covers it (asked for every nomination)."""
        found: dict[str, int] = {}
        for index, group in enumerate(self.groups):
            for resource in group.covered:
                found.setdefault(resource, index)
        return found

    def selects(self, namespace: str) -> bool:
        return self.selector is not None and self.selector.matches({NAMESPACE_LABEL: namespace})


@dataclass(frozen=True)
class CohortSpec:
    name: str
    parent: str | None
    quotas: Mapping[FlavorResource, Quota]


@dataclass(frozen=True)
class Config:
    """Every object the simulator models, keyed by name (LocalQueues by "ns/name")."""

    flavors: frozenset[str]
    cluster_queues: Mapping[str, ClusterQueueSpec]
    cohorts: Mapping[str, CohortSpec]
    local_queues: Mapping[str, str]  # "namespace/name" -> ClusterQueue name
    priority_classes: Mapping[str, int]
    flavor_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # flavor -> its nodeLabels


def _groups(spec: Mapping[str, Any]) -> tuple[tuple[ResourceGroup, ...], dict[FlavorResource, Quota]]:
    groups: list[ResourceGroup] = []
    quotas: dict[FlavorResource, Quota] = {}
    for group in spec.get("resourceGroups") or ():
        flavors: list[str] = []
        for flavor in group.get("flavors") or ():
            flavors.append(flavor["name"])
            for res in flavor.get("resources") or ():
                name = res["name"]
                borrow, lend = res.get("borrowingLimit"), res.get("lendingLimit")
                quotas[(flavor["name"], name)] = Quota(
                    nominal=canonical_units(name, res.get("nominalQuota", 0)),
                    borrowing_limit=None if borrow is None else canonical_units(name, borrow),
                    lending_limit=None if lend is None else canonical_units(name, lend),
                )
        groups.append(ResourceGroup(tuple(group.get("coveredResources") or ()), tuple(flavors)))
    return tuple(groups), quotas


def _selector(raw: Any) -> Selector | None:
    if raw is None:
        return None
    labels = tuple(sorted((str(k), str(v)) for k, v in (raw.get("matchLabels") or {}).items()))
    exprs = tuple(
        (e["key"], e["operator"], tuple(e.get("values") or ())) for e in raw.get("matchExpressions") or ()
    )
    return Selector(labels, exprs)


def _cluster_queue(name: str, spec: Mapping[str, Any]) -> ClusterQueueSpec:
    groups, quotas = _groups(spec)
    pre = spec.get("preemption") or {}
    bwc = pre.get("borrowWithinCohort") or {}
    fung = spec.get("flavorFungibility") or {}
    return ClusterQueueSpec(
        name=name,
        cohort=spec.get("cohortName") or spec.get("cohort") or None,
        groups=groups,
        quotas=quotas,
        preemption=Preemption(
            within_cluster_queue=pre.get("withinClusterQueue") or "Never",
            reclaim_within_cohort=pre.get("reclaimWithinCohort") or "Never",
            borrow_within_cohort=bwc.get("policy") or "Never",
            max_priority_threshold=bwc.get("maxPriorityThreshold"),
        ),
        strategy=spec.get("queueingStrategy") or "BestEffortFIFO",
        selector=_selector(spec.get("namespaceSelector")),
        fungibility=Fungibility(
            when_can_borrow=fung.get("whenCanBorrow") or "MayStopSearch",
            when_can_preempt=fung.get("whenCanPreempt") or "TryNextFlavor",
            preference=fung.get("preference"),
        ),
    )


def parse_objects(objects: Iterable[Mapping[str, Any]]) -> Config:
    """Read the modelled kinds; later duplicates of a name replace earlier ones."""
    flavors: set[str] = set()
    cqs: dict[str, ClusterQueueSpec] = {}
    cohorts: dict[str, CohortSpec] = {}
    lqs: dict[str, str] = {}
    wpcs: dict[str, int] = {}
    labels: dict[str, dict[str, str]] = {}
    for obj in objects:
        if not isinstance(obj, Mapping) or obj.get("apiVersion") not in VERSIONS:
            continue
        kind = obj.get("kind")
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        spec = obj.get("spec") or {}
        if not name:
            continue
        if kind == "ResourceFlavor":
            flavors.add(name)
            labels[name] = {str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()}
        elif kind == "ClusterQueue":
            cqs[name] = _cluster_queue(name, spec)
        elif kind == "Cohort":
            _, quotas = _groups(spec)
            cohorts[name] = CohortSpec(name, spec.get("parentName") or spec.get("parent") or None, quotas)
        elif kind == "LocalQueue":
            lqs[f"{meta.get('namespace') or 'default'}/{name}"] = spec.get("clusterQueue", "")
        elif kind == "WorkloadPriorityClass":
            wpcs[name] = int(obj.get("value", 0))
    return Config(frozenset(flavors), cqs, cohorts, lqs, wpcs, labels)
