"""Scenarios ported from Kueue v0.19's own preemption unit tests (pkg/scheduler/preemption/preemption_test.go),
run through the whole simulator: the victims must be the ones upstream expects."""

from __future__ import annotations

from typing import Any

from .builders import cluster_queue, cpu_group, flavor, local_queue, run, wl


def _bwc(within: str, reclaim: str) -> dict[str, Any]:
    return {
        "withinClusterQueue": within, "reclaimWithinCohort": reclaim,
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 0},
    }


def _shared_cohort() -> list[dict[str, Any]]:
    """The "with_shared_cq" cohort of the upstream test: four 1-CPU queues that may borrow 12, and "shared"."""
    queues = [
        cluster_queue("a-standard", cpu_group(1, borrowing=12), cohort="with-shared-cq",
                      preemption=_bwc("Never", "LowerPriority")),
        cluster_queue("b-standard", cpu_group(1, borrowing=12), cohort="with-shared-cq",
                      preemption=_bwc("LowerPriority", "Any")),
        cluster_queue("a-best-effort", cpu_group(1, borrowing=12), cohort="with-shared-cq",
                      preemption=_bwc("Never", "LowerPriority")),
        cluster_queue("b-best-effort", cpu_group(0, borrowing=13), cohort="with-shared-cq",
                      preemption=_bwc("Never", "LowerPriority")),
        cluster_queue("shared", cpu_group(10), cohort="with-shared-cq"),
    ]
    lqs = [local_queue("ns", n, n) for n in ("a-standard", "b-standard", "a-best-effort", "b-best-effort", "shared")]
    return [flavor("default"), *queues, *lqs]


def _victims(sim: Any) -> list[str]:
    return sorted(e.split()[3] + " " + e.split()[4] for e in sim.events if " preempted " in e)


def test_borrow_within_cohort_only_preempts_own_queue_when_nothing_is_below_threshold() -> None:
    """Upstream case "use BorrowWithinCohort; only preempt from CQ if no workloads below threshold and already
    above nominal": a priority-3 workload for b_standard preempts b_standard_1 (InClusterQueue) only."""
    sim = run(_shared_cohort(), [
        wl("a-standard-1", "a-standard", 10, priority=1, admitted_at=1),
        wl("a-standard-2", "a-standard", 1, priority=1, admitted_at=1),
        wl("b-standard-1", "b-standard", 1, priority=1, admitted_at=1),
        wl("b-standard-2", "b-standard", 1, priority=2, admitted_at=1),
        wl("in", "b-standard", 1, priority=3),
    ], max_cycles=1)
    assert _victims(sim) == ["b-standard-1 (withinClusterQueue)"]


def test_borrow_within_cohort_preempts_own_queue_and_others_below_threshold() -> None:
    """Upstream case "use BorrowWithinCohort; preempt from CQ and from other CQs with workloads below threshold":
    a priority-2, 2-CPU workload for b_standard preempts a_best_effort_lower (InCohortReclaimWhileBorrowing) and
    b_standard_mid (InClusterQueue)."""
    sim = run(_shared_cohort(), [
        wl("b-standard-high", "b-standard", 10, priority=2, admitted_at=1),
        wl("b-standard-mid", "b-standard", 1, priority=1, admitted_at=1),
        wl("a-best-effort-low", "a-best-effort", 1, priority=-1, admitted_at=1),
        wl("a-best-effort-lower", "a-best-effort", 1, priority=-2, admitted_at=1),
        wl("in", "b-standard", 2, priority=2),
    ], max_cycles=1)
    assert _victims(sim) == ["a-best-effort-lower (borrowWithinCohort)", "b-standard-mid (withinClusterQueue)"]


def _lend_cohort() -> list[dict[str, Any]]:
    """The "cohort-lend" queues of the upstream test: 6 CPUs each, lending at most 4 (lend1) and 2 (lend2)."""
    policy = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "LowerPriority"}
    return [
        flavor("default"),
        cluster_queue("lend1", cpu_group(6, lending=4), cohort="cohort-lend", preemption=policy),
        cluster_queue("lend2", cpu_group(6, lending=2), cohort="cohort-lend", preemption=policy),
        local_queue("ns", "lend1", "lend1"),
        local_queue("ns", "lend2", "lend2"),
    ]


def test_reclaim_quota_from_lender() -> None:
    """Upstream case "reclaim quota from lender": lend1 gets its lent quota back from lend2's mid workload."""
    sim = run(_lend_cohort(), [
        wl("lend1-low", "lend1", 3, priority=-1, admitted_at=1),
        wl("lend2-mid", "lend2", 3, priority=0, admitted_at=1),
        wl("lend2-high", "lend2", 4, priority=1, admitted_at=1),
        wl("in", "lend1", 3, priority=1),
    ], max_cycles=1)
    assert _victims(sim) == ["lend2-mid (reclaimWithinCohort)"]


def test_preempt_from_all_queues_of_the_lending_cohort() -> None:
    """Upstream case "preempt from all ClusterQueues in cohort-lend": one low workload from each queue goes."""
    sim = run(_lend_cohort(), [
        wl("lend1-low", "lend1", 3, priority=-1, admitted_at=1),
        wl("lend1-mid", "lend1", 2, priority=0, admitted_at=1),
        wl("lend2-low", "lend2", 3, priority=-1, admitted_at=1),
        wl("lend2-mid", "lend2", 4, priority=0, admitted_at=1),
        wl("in", "lend1", 4, priority=0),
    ], max_cycles=1)
    assert _victims(sim) == ["lend1-low (withinClusterQueue)", "lend2-low (reclaimWithinCohort)"]


def test_no_preemption_beyond_what_lending_limits_make_requestable() -> None:
    """Upstream case "cannot preempt from other ClusterQueues if exceeds requestable quota including lending
    limit": lend1 can never reach 9 CPUs (6 + 2 lent by lend2), so nothing is preempted."""
    sim = run(_lend_cohort(), [wl("lend2-low", "lend2", 10, priority=-1, admitted_at=1), wl("in", "lend1", 9)])
    assert _victims(sim) == []
    assert sim.outcomes["in"].status == "pending"
    assert sim.outcomes["lend2-low"].status == "admitted"


def test_capacity_held_for_a_queue_that_cannot_always_reclaim() -> None:
    """Upstream scheduler cases "capacity (not) blocked when lending clusterqueue can (not guaranteed to) reclaim":
    ClusterQueueA (2 GPUs, one in use) has a 2-GPU head that would need preemption but finds no victim; unless A
    reclaims with Any, that head holds A's free GPU for the rest of the cycle, so ClusterQueueB (0 GPUs) cannot
    borrow it in that cycle ("Workload no longer fits after processing another workload"). Once A's head is
    parked, B borrows the GPU in the next cycle."""
    def objs(reclaim: str) -> list[dict[str, Any]]:
        gpu = {"coveredResources": ["gpu"], "flavors": [{"name": "on-demand", "resources": [
            {"name": "gpu", "nominalQuota": 2}]}]}
        none = {"coveredResources": ["gpu"], "flavors": [{"name": "on-demand", "resources": [
            {"name": "gpu", "nominalQuota": 0}]}]}
        return [
            flavor("on-demand"),
            cluster_queue("cluster-queue-a", gpu, cohort="root", preemption={"reclaimWithinCohort": reclaim}),
            cluster_queue("cluster-queue-b", none, cohort="root"),
            local_queue("eng-alpha", "lq", "cluster-queue-a"),
            local_queue("eng-beta", "lq", "cluster-queue-b"),
        ]

    from poolc.kueuesim import Workload

    jobs = [
        Workload("a1-admitted", "eng-alpha", "lq", 0, {"gpu": 1}, 0, admitted_at=1),
        Workload("a2-pending", "eng-alpha", "lq", 0, {"gpu": 2}, 1),
        Workload("b1-pending", "eng-beta", "lq", 0, {"gpu": 1}, 2),
    ]
    any_one = run(objs("Any"), jobs, max_cycles=1).outcomes
    assert any_one["b1-pending"].status == "admitted"
    assert any_one["a2-pending"].status == "pending"
    for reclaim in ("LowerPriority", "Never"):
        one = run(objs(reclaim), jobs, max_cycles=1).outcomes
        assert one["b1-pending"].status == "pending"
        assert "taken or held by a workload processed earlier" in one["b1-pending"].reason
        settled = run(objs(reclaim), jobs).outcomes
        assert settled["b1-pending"].reason.startswith("admitted in cycle 2, borrowing")


def test_hierarchical_cohort_lower_borrowing_level_goes_first() -> None:
    """Upstream scheduler case "in a hierarchical cohort, workload borrowing less is scheduled first": cohort
    "guaranteed" (4 CPUs, child of root) holds queue "guaranteed" (0 CPUs); queue "best-effort" (0 CPUs) hangs off
    root. Both 4-CPU heads borrow, but the guaranteed one only from its own cohort (level 1) and the priority-3
    best-effort one from the root (level 2): the guaranteed one is admitted."""
    from .builders import cohort, group, quota

    objs = [
        flavor("default"),
        cohort("root"),
        cohort("guaranteed", group(["cpu"], ("default", [quota("cpu", 4)])), parent="root"),
        cluster_queue("guaranteed", cpu_group(0), cohort="guaranteed"),
        cluster_queue("best-effort", cpu_group(0), cohort="root"),
        local_queue("eng-alpha", "lq-guaranteed", "guaranteed"),
        local_queue("eng-alpha", "lq-best-effort", "best-effort"),
    ]
    out = run(objs, [
        wl("guaranteed", "lq-guaranteed", 4, ns="eng-alpha", priority=0),
        wl("best-effort", "lq-best-effort", 4, ns="eng-alpha", priority=3),
    ]).outcomes
    assert out["guaranteed"].status == "admitted"
    assert out["guaranteed"].reason == "admitted in cycle 1, borrowing quota from cohort 'guaranteed'"
    assert out["best-effort"].status == "pending"
