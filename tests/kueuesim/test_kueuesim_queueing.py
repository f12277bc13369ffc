"""Queueing and the scheduling loop: FIFO strategies, cycles, namespaces, batches, determinism."""

from __future__ import annotations

import random
from typing import Any

import pytest

from poolc.kueuesim import Workload

from .builders import (
    CRDS,
    check_crds,
    cluster_queue,
    cpu_group,
    flavor,
    local_queue,
    run,
    wl,
)


def _single(strategy: str | None = None, selector: Any = None, **kwargs: Any) -> list[dict[str, Any]]:
    extra = {"selector": selector} if selector is not None else {}
    cq = cluster_queue("cq", cpu_group(4), strategy=strategy, **extra)
    return [flavor("default"), cq, local_queue("ns", "q", "cq"), *kwargs.get("extra", [])]


@pytest.mark.parametrize(("strategy", "small_status"), [("BestEffortFIFO", "admitted"), ("StrictFIFO", "pending")])
def test_best_effort_fifo_lets_smaller_workloads_pass(strategy: str, small_status: str) -> None:
    """ClusterQueue CRD, queueingStrategy: "StrictFIFO: ... Older workloads that can't be admitted will block
    admitting newer workloads even if they fit available quota"; "BestEffortFIFO: ... older workloads that
    can't be admitted will not block admitting newer workloads that fit existing quota".
    """
    sim = run(_single(strategy), [
        wl("running", "q", 3, admitted_at=1),
        wl("big", "q", 2, created=1),
        wl("small", "q", 1, created=2),
    ])
    out = sim.outcomes
    assert out["big"].status == "pending"
    assert out["small"].status == small_status
    if strategy == "StrictFIFO":
        assert "StrictFIFO" in out["small"].reason


def test_queue_order_is_priority_then_creation() -> None:
    """workload.md / cluster_queue.md: within a ClusterQueue, workloads are ordered by priority, then by
    creation time; only one fits here, and it is the highest-priority one, not the oldest."""
    sim = run(_single(), [wl("old", "q", 4, created=1), wl("urgent", "q", 4, priority=9, created=2)])
    assert sim.outcomes["urgent"].status == "admitted"
    assert sim.outcomes["old"].status == "pending"


def test_one_admission_per_cluster_queue_per_cycle() -> None:
    """scheduler.go: each cycle takes one head per ClusterQueue, so three workloads of one queue take three
    cycles while the heads of two queues are admitted in the same cycle."""
    objs = [
        flavor("default"),
        cluster_queue("cq1", cpu_group(10)), cluster_queue("cq2", cpu_group(10)),
        local_queue("ns", "q1", "cq1"), local_queue("ns", "q2", "cq2"),
    ]
    sim = run(objs, [
        wl("a", "q1", 1, created=1), wl("b", "q1", 1, created=2), wl("c", "q1", 1, created=3),
        wl("d", "q2", 1, created=4),
    ])
    cycles = {n: o.reason for n, o in sim.outcomes.items()}
    assert cycles["a"].startswith("admitted in cycle 1,")
    assert cycles["b"].startswith("admitted in cycle 2,")
    assert cycles["c"].startswith("admitted in cycle 3,")
    assert cycles["d"].startswith("admitted in cycle 1,")
    assert sim.cycles == 3


def test_namespace_selector_and_missing_local_queue() -> None:
    """cluster_queue.md / CRD: namespaceSelector "defines which namespaces are allowed to submit workloads";
    "Defaults to null which is a nothing selector"; "If set to an empty selector {}, then all namespaces
    are eligible". A workload whose LocalQueue does not exist is never queued.
    """
    only_a = {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}}
    objs = [
        flavor("default"),
        cluster_queue("by-label", cpu_group(10), selector=only_a),
        cluster_queue("by-expr", cpu_group(10), selector={"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-c"]}]}),
        cluster_queue("nothing", cpu_group(10), selector=None),
        local_queue("team-a", "q", "by-label"), local_queue("team-b", "q", "by-label"),
        local_queue("team-c", "q", "by-expr"), local_queue("team-a", "n", "nothing"),
        local_queue("team-a", "orphan", "no-such-cq"),
    ]
    sim = run(objs, [
        wl("a", "q", 1, ns="team-a"), wl("b", "q", 1, ns="team-b"), wl("c", "q", 1, ns="team-c"),
        wl("n", "n", 1, ns="team-a"), wl("lost", "missing", 1, ns="team-a"), wl("orphan", "orphan", 1, ns="team-a"),
    ])
    out = sim.outcomes
    assert out["a"].status == "admitted" and out["a"].cluster_queue == "by-label"
    assert out["c"].status == "admitted"
    assert (out["b"].status, out["b"].cluster_queue) == ("pending", None)
    assert out["b"].reason == "namespace 'team-b' is not selected by ClusterQueue 'by-label'"
    assert out["n"].reason == "namespace 'team-a' is not selected by ClusterQueue 'nothing'"
    assert (out["lost"].status, out["lost"].cluster_queue) == ("pending", None)
    assert out["lost"].reason == "LocalQueue 'team-a/missing' does not exist"
    assert out["orphan"].reason == "ClusterQueue 'no-such-cq' of LocalQueue 'team-a/orphan' does not exist"


def test_batches_replay_arrival_order() -> None:
    """Batch b is created after the scheduler settled on earlier batches: team A's job borrows the whole
    cohort first; arriving together, team B's nominal-quota head would go first and A's would not fit."""
    objs = [
        flavor("default"),
        cluster_queue("cq-a", cpu_group(4), cohort="c"), cluster_queue("cq-b", cpu_group(4), cohort="c"),
        local_queue("ns", "a", "cq-a"), local_queue("ns", "b", "cq-b"),
    ]
    apart = run(objs, [wl("a-job", "a", 8, created=1), wl("b-job", "b", 4, created=2, batch=1)]).outcomes
    assert (apart["a-job"].status, apart["b-job"].status) == ("admitted", "pending")
    together = run(objs, [wl("a-job", "a", 8, created=1), wl("b-job", "b", 4, created=2)]).outcomes
    assert (together["a-job"].status, together["b-job"].status) == ("pending", "admitted")


def test_determinism_under_shuffled_input() -> None:
    """Everything is ordered explicitly: the same objects and workloads in any list order give the same
    Simulation, events included."""
    objs = [
        flavor("f1"), flavor("f2"),
        cluster_queue("cq-a", cpu_group(4, flavor_name="f1"), cohort="c",
                      preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}),
        cluster_queue("cq-b", cpu_group(4, flavor_name="f1"), cohort="c"),
        cluster_queue("cq-c", cpu_group(2, flavor_name="f1"), cohort="c", strategy="StrictFIFO"),
        local_queue("ns", "a", "cq-a"), local_queue("ns", "b", "cq-b"), local_queue("ns", "c", "cq-c"),
    ]
    workloads = [
        wl(f"w{i}", "abc"[i % 3], 1 + i % 3, priority=i % 4, created=i // 2, batch=i // 7,
           admitted_at=(i if i < 3 else None))
        for i in range(20)
    ]
    baseline = run(objs, workloads)
    assert any(o.status == "preempted" for o in baseline.outcomes.values()) or baseline.events
    rng = random.Random(7)
    for _ in range(5):
        objs2, wls2 = list(objs), list(workloads)
        rng.shuffle(objs2)
        rng.shuffle(wls2)
        again = run(objs2, wls2)
        assert again == baseline
        assert list(again.outcomes) == list(baseline.outcomes)


def test_max_cycles_guard_is_reported() -> None:
    """The loop stops at max_cycles (guarding against eviction ping-pong) and says so in the events."""
    sim = run(_single(), [wl(f"w{i}", "q", 1, created=i) for i in range(4)], max_cycles=2)
    assert sim.cycles == 2
    assert sim.events[-1].startswith("stopped after 2 cycles")
    assert sum(o.status == "admitted" for o in sim.outcomes.values()) == 2


def test_duplicate_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        run(_single(), [wl("x", "q", 1), wl("x", "q", 2)])


def test_crd_check_rejects_a_wrong_field() -> None:
    """The tests' objects are validated against the upstream CRDs; a misspelled enum must fail there."""
    if not CRDS.exists():
        pytest.skip("upstream Kueue CRDs not on this machine")
    from jsonschema import ValidationError

    bad = cluster_queue("cq", cpu_group(1), strategy="Fifo")
    with pytest.raises(ValidationError):
        check_crds([bad])


def test_gpu_and_memory_units() -> None:
    """Kueue compares integer amounts: memory in bytes, extended resources as counts."""
    from poolc.kueuesim import canonical_units

    objs = [
        flavor("a100"),
        cluster_queue("gpu", {"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [{
            "name": "a100", "resources": [
                {"name": "cpu", "nominalQuota": "7500m"},
                {"name": "memory", "nominalQuota": "64Gi"},
                {"name": "nvidia.com/gpu", "nominalQuota": 4},
            ]}]}),
        local_queue("ml", "train", "gpu"),
    ]
    mem = canonical_units("memory", "48Gi")
    jobs = [
        Workload("t1", "ml", "train", 0, {"cpu": 4000, "memory": mem, "nvidia.com/gpu": 2}, 1),
        Workload("t2", "ml", "train", 0, {"cpu": 3500, "memory": canonical_units("memory", "16Gi"),
                                          "nvidia.com/gpu": 2}, 2),
        Workload("t3", "ml", "train", 0, {"cpu": 1, "nvidia.com/gpu": 1}, 3),
    ]
    sim = run(objs, jobs)
    assert [sim.outcomes[n].status for n in ("t1", "t2", "t3")] == ["admitted", "admitted", "pending"]
    assert sim.usage["gpu"]["a100"] == {"cpu": 7500, "memory": 64 * 2**30, "nvidia.com/gpu": 4}
    assert "nvidia.com/gpu" in sim.outcomes["t3"].reason or "cpu" in sim.outcomes["t3"].reason


def test_equivalent_workloads_are_parked_together() -> None:
    """cluster_queue.go (SchedulingEquivalenceHashing, on by default since v0.18): when a BestEffortFIFO head
    is parked because it does not fit, "equivalent workloads in the heap are bulk-moved to inadmissible" -
    so the next head that differs (here the small one) is tried in the very next cycle."""
    sim = run(_single(), [
        wl("running", "q", 3, admitted_at=1),
        wl("big1", "q", 2, created=1),
        wl("big2", "q", 2, created=2),
        wl("small", "q", 1, created=3),
    ])
    out = sim.outcomes
    assert out["small"].reason.startswith("admitted in cycle 2,")
    assert out["big2"].status == "pending"
    assert out["big2"].reason.startswith("parked with big1, a workload of the same shape")


def test_other_kinds_and_versions_are_ignored() -> None:
    """Only kueue.x-k8s.io objects of the modelled kinds count: a v1alpha1 ClusterQueue of the same name or
    a ConfigMap change nothing."""
    objs = _single()
    noise = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cq"}, "data": {}},
        {"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"resourceGroups": []}},
    ]
    from poolc.kueuesim import simulate

    plain = run(objs, [wl("w", "q", 4)])
    assert simulate(noise + objs + noise, [wl("w", "q", 4)]) == plain
    assert plain.outcomes["w"].status == "admitted"
