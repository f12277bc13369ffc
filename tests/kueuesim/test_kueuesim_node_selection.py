"""Flavor assignment honours the pod's node selection, as Kueue v0.19's flavor assigner
does: a flavor whose nodeLabels contradict the pod's nodeSelector or required node
affinity is skipped ("doesn't match node affinity"); only the label keys that the
flavors of the resource group name count."""

from __future__ import annotations

import dataclasses
from typing import Any

from poolc.kueuesim import Workload

from .builders import API, cluster_queue, group, local_queue, quota, run, wl

PRODUCT = "nvidia.com/gpu.product"


def labelled(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {"nodeLabels": labels}}


def platform() -> list[dict[str, Any]]:
    """One ClusterQueue whose group lists an A100 flavor first, then an H100 one."""
    return [
        labelled("a100", {PRODUCT: "A100", "zone": "x"}),
        labelled("h100", {PRODUCT: "H100", "zone": "y"}),
        cluster_queue("cq", group(["cpu"], ("a100", [quota("cpu", 4)]), ("h100", [quota("cpu", 4)]))),
        local_queue("ns", "q", "cq"),
    ]


def selecting(workload: Workload, selector: dict[str, str] | None = None, affinity: Any = None) -> Workload:
    return dataclasses.replace(workload, node_selector=tuple(sorted((selector or {}).items())), affinity=affinity)


def test_a_node_selector_skips_the_flavors_it_contradicts() -> None:
    out = run(platform(), [selecting(wl("h", "q", 1), {PRODUCT: "H100"}),
                           selecting(wl("a", "q", 1, created=1), {PRODUCT: "A100"}),
                           wl("any", "q", 1, created=2)]).outcomes
    assert out["h"].flavors == {"cpu": "h100"}
    assert out["a"].flavors == {"cpu": "a100"}
    assert out["any"].flavors == {"cpu": "a100"}


def test_keys_no_flavor_names_are_left_to_the_scheduler() -> None:
    """A selector on a key none of the group's flavors label says nothing to Kueue."""
    out = run(platform(), [selecting(wl("disk", "q", 1), {"disk": "nvme"})]).outcomes
    assert (out["disk"].status, out["disk"].flavors) == ("admitted", {"cpu": "a100"})


def test_required_node_affinity_terms_are_ored_and_filtered_to_known_keys() -> None:
    not_a100 = (((PRODUCT, "NotIn", ("A100",)),),)
    either = (((PRODUCT, "In", ("B200",)),), ((PRODUCT, "In", ("H100",)), ("zone", "Exists", ())))
    unconstrained = (((PRODUCT, "In", ("B200",)),), (("disk", "In", ("nvme",)),))
    out = run(platform(), [selecting(wl("not-a100", "q", 1), affinity=not_a100),
                           selecting(wl("either", "q", 1, created=1), affinity=either),
                           selecting(wl("free", "q", 1, created=2), affinity=unconstrained)]).outcomes
    assert out["not-a100"].flavors == {"cpu": "h100"}
    assert out["either"].flavors == {"cpu": "h100"}
    assert out["free"].flavors == {"cpu": "a100"}    # a term of unknown keys only matches anything


def test_no_matching_flavor_leaves_the_workload_pending_with_the_reason() -> None:
    out = run(platform(), [selecting(wl("b200", "q", 1), {PRODUCT: "B200"})]).outcomes
    assert out["b200"].status == "pending"
    assert "flavor 'a100' doesn't match node affinity" in out["b200"].reason
    assert "flavor 'h100' doesn't match node affinity" in out["b200"].reason


def test_the_selection_is_part_of_the_scheduling_shape() -> None:
    """A parked H100 workload does not park an otherwise equal A100 one with it."""
    objs = platform()
    objs[2] = cluster_queue("cq", group(["cpu"], ("a100", [quota("cpu", 4)]), ("h100", [quota("cpu", 0)])))
    out = run(objs, [selecting(wl("h", "q", 1), {PRODUCT: "H100"}),
                     selecting(wl("a", "q", 1, created=1), {PRODUCT: "A100"})]).outcomes
    assert out["h"].status == "pending" and out["a"].status == "admitted"
