"""Builders for Kueue v1beta2 objects, and a check of them against the upstream CRDs."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from ruamel.yaml import YAML

from poolc.kueuesim import Simulation, Workload, simulate

API = "kueue.x-k8s.io/v1beta2"
CRDS = Path(__file__).resolve().parents[3] / "shared" / "oracles" / "kueue-crds"
_PLURAL = {
    "ClusterQueue": "clusterqueues", "Cohort": "cohorts", "LocalQueue": "localqueues",
    "ResourceFlavor": "resourceflavors", "WorkloadPriorityClass": "workloadpriorityclasses",
}
ALL_NAMESPACES: dict[str, Any] = {}


def flavor(name: str) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {}}


def quota(name: str, nominal: Any, borrowing: Any = None, lending: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "nominalQuota": nominal}
    if borrowing is not None:
        out["borrowingLimit"] = borrowing
    if lending is not None:
        out["lendingLimit"] = lending
    return out


def group(covered: list[str], *flavors: tuple[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {"coveredResources": covered, "flavors": [{"name": n, "resources": r} for n, r in flavors]}


def cpu_group(nominal: Any, borrowing: Any = None, lending: Any = None, flavor_name: str = "default") -> dict[str, Any]:
    return group(["cpu"], (flavor_name, [quota("cpu", nominal, borrowing, lending)]))


def cluster_queue(
    name: str,
    *groups: dict[str, Any],
    cohort: str | None = None,
    preemption: dict[str, Any] | None = None,
    strategy: str | None = None,
    selector: dict[str, Any] | None = ALL_NAMESPACES,
    fungibility: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"resourceGroups": list(groups)}
    if selector is not None:
        spec["namespaceSelector"] = selector
    if cohort:
        spec["cohortName"] = cohort
    if preemption:
        spec["preemption"] = preemption
    if strategy:
        spec["queueingStrategy"] = strategy
    if fungibility:
        spec["flavorFungibility"] = fungibility
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def cohort(name: str, *groups: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent:
        spec["parentName"] = parent
    if groups:
        spec["resourceGroups"] = list(groups)
    return {"apiVersion": API, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def local_queue(namespace: str, name: str, cq: str) -> dict[str, Any]:
    return {
        "apiVersion": API, "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": cq},
    }


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}


@cache
def _validator(kind: str) -> Any:
    path = CRDS / f"kueue.x-k8s.io_{_PLURAL[kind]}.yaml"
    if not path.exists():
        return None
    crd = YAML(typ="safe").load(path.read_text())
    for version in crd["spec"]["versions"]:
        if version["name"] == "v1beta2":
            schema = version["schema"]["openAPIV3Schema"]
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            return cls(schema)
    return None


def check_crds(objects: list[dict[str, Any]]) -> None:
    """Validate test objects against the upstream CRD schemas (only when they are on this machine)."""
    for obj in objects:
        validator = _validator(obj["kind"])
        if validator is not None:
            validator.validate(obj)


def run(objects: list[dict[str, Any]], workloads: list[Workload], **kwargs: Any) -> Simulation:
    check_crds(objects)
    return simulate(objects, workloads, **kwargs)


def wl(
    name: str, queue: str, cpu: int, *, ns: str = "ns", priority: int = 0, created: int = 0,
    admitted_at: int | None = None, batch: int = 0, **extra: int,
) -> Workload:
    """A workload asking for ``cpu`` whole cores (plus any other resources in base units)."""
    requests = {"cpu": cpu * 1000, **{k.replace("_", "-"): v for k, v in extra.items()}}
    return Workload(name, ns, queue, priority, requests, created, admitted_at, batch)
