"""Classical preemption, as documented in Kueue's preemption.md and cluster_queue.md "Preemption"."""

from __future__ import annotations

from typing import Any

import pytest

from .builders import cluster_queue, cpu_group, flavor, local_queue, run, wl


def _pair(a_nominal: int, b_nominal: int, a_preemption: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        flavor("default"),
        cluster_queue("cq-a", cpu_group(a_nominal), cohort="c", preemption=a_preemption),
        cluster_queue("cq-b", cpu_group(b_nominal), cohort="c"),
        local_queue("ns", "a", "cq-a"),
        local_queue("ns", "b", "cq-b"),
    ]


@pytest.mark.parametrize(
    ("policy", "victim_priority", "expected"),
    [
        ("Any", 10, "preempted"),
        ("LowerPriority", 10, "admitted"),
        ("LowerPriority", -1, "preempted"),
        ("Never", -1, "admitted"),
    ],
)
def test_reclaim_within_cohort(policy: str, victim_priority: int, expected: str) -> None:
    """cluster_queue.md: reclaimWithinCohort "determines whether a pending Workload can preempt Workloads
    from other ClusterQueues in the cohort that are using more than their nominal quota":
    Never "do not preempt", LowerPriority "only preempt Workloads in the cohort that have lower priority",
    Any "preempt any Workload in the cohort, irrespective of priority".

    cq-b borrows cq-a's 4 CPUs with one 8-CPU workload; cq-a's 4-CPU workload (priority 0) wants them back.
    """
    objs = _pair(4, 4, {"reclaimWithinCohort": policy})
    sim = run(objs, [
        wl("borrower", "b", 8, priority=victim_priority, admitted_at=1),
        wl("owner", "a", 4, created=1),
    ])
    out = sim.outcomes
    assert out["borrower"].status == expected
    if expected == "preempted":
        assert out["owner"].status == "admitted"
        assert out["owner"].borrowing is False
        assert out["borrower"].preempted_by == ("owner",)
        assert "reclaimWithinCohort" in out["borrower"].reason
        assert "cycle 1: preempted borrower (reclaimWithinCohort) for owner" in sim.events
        assert out["owner"].reason == "admitted in cycle 2, within its nominal quota"
    else:
        assert out["owner"].status == "pending"
        assert out["borrower"].preempted_by == ()


def test_reclaim_only_from_borrowing_cluster_queues() -> None:
    """preemption.md, Candidates: workloads of other ClusterQueues qualify only if they "belong to other
    ClusterQueues in the cohort, which are actively borrowing".

    cq-b runs within its nominal quota (its workload is the cheapest target by every ordering rule), cq-c
    borrows: only cq-c's workload may be reclaimed.
    """
    objs = [
        flavor("default"),
        cluster_queue("cq-a", cpu_group(4), cohort="c", preemption={"reclaimWithinCohort": "Any"}),
        cluster_queue("cq-b", cpu_group(4), cohort="c"),
        cluster_queue("cq-c", cpu_group(4), cohort="c"),
        local_queue("ns", "a", "cq-a"), local_queue("ns", "b", "cq-b"), local_queue("ns", "c", "cq-c"),
    ]
    sim = run(objs, [
        wl("c-1", "c", 4, priority=5, admitted_at=1),
        wl("c-2", "c", 4, priority=5, admitted_at=2),
        wl("b-1", "b", 4, priority=-10, admitted_at=3),
        wl("a-1", "a", 4, created=1),
    ])
    out = sim.outcomes
    assert out["a-1"].status == "admitted"
    assert out["b-1"].status == "admitted"
    assert {n for n, o in out.items() if o.status == "preempted"} == {"c-2"}


@pytest.mark.parametrize(
    ("bwc", "victim_priority", "expected"),
    [
        ({"policy": "LowerPriority", "maxPriorityThreshold": 5}, 7, "pending"),
        ({"policy": "LowerPriority", "maxPriorityThreshold": 8}, 7, "admitted"),
        ({"policy": "LowerPriority"}, 7, "admitted"),
        ({"policy": "LowerPriority"}, 10, "pending"),
        ({"policy": "Never"}, 7, "pending"),
    ],
)
def test_borrow_within_cohort(bwc: dict[str, Any], victim_priority: int, expected: str) -> None:
    """cluster_queue.md: borrowWithinCohort "determines whether a pending Workload can preempt Workloads from
    other ClusterQueues ... if the workload requires borrowing"; LowerPriority: "only preempt Workloads in
    the cohort that have lower priority"; "only workloads up to the priority indicated by
    maxPriorityThreshold can be preempted in that scenario".

    cq-a (1 CPU) needs 2 CPUs for a priority-10 workload, so it must borrow; cq-b (3 CPUs) runs 4.
    """
    objs = _pair(1, 3, {"reclaimWithinCohort": "LowerPriority", "borrowWithinCohort": bwc})
    sim = run(objs, [wl("b-run", "b", 4, priority=victim_priority, admitted_at=1), wl("a-new", "a", 2, priority=10)])
    out = sim.outcomes
    assert out["a-new"].status == expected
    if expected == "admitted":
        assert out["a-new"].borrowing is True
        assert out["b-run"].status == "preempted"
        assert "borrowWithinCohort" in out["b-run"].reason
    else:
        assert out["b-run"].status == "admitted"
    if bwc["policy"] == "Never":
        assert "ClusterQueue 'cq-a' cannot preempt" in out["a-new"].reason
        assert "borrowWithinCohort is not enabled" in out["a-new"].reason


@pytest.mark.parametrize(
    ("policy", "running", "pending", "expected"),
    [
        # (policy, (priority, created) of the running workload, same for the pending one, running ends)
        ("LowerPriority", (0, 1), (10, 2), "preempted"),
        ("LowerPriority", (5, 2), (5, 1), "admitted"),
        ("LowerOrNewerEqualPriority", (5, 2), (5, 1), "preempted"),
        ("LowerOrNewerEqualPriority", (5, 1), (5, 2), "admitted"),
        ("Never", (0, 1), (10, 2), "admitted"),
    ],
)
def test_within_cluster_queue(policy: str, running: tuple[int, int], pending: tuple[int, int], expected: str) -> None:
    """cluster_queue.md: withinClusterQueue: Never "do not preempt Workloads in the ClusterQueue";
    LowerPriority "only preempt Workloads in the ClusterQueue that have lower priority";
    LowerOrNewerEqualPriority "either have a lower priority than the pending workload or equal priority and
    are newer than the pending workload".
    """
    objs = [
        flavor("default"),
        cluster_queue("cq", cpu_group(4), preemption={"withinClusterQueue": policy}),
        local_queue("ns", "q", "cq"),
    ]
    sim = run(objs, [
        wl("running", "q", 4, priority=running[0], created=running[1], admitted_at=1),
        wl("incoming", "q", 4, priority=pending[0], created=pending[1]),
    ])
    out = sim.outcomes
    assert out["running"].status == expected
    assert out["incoming"].status == ("admitted" if expected == "preempted" else "pending")
    if expected == "preempted":
        assert "withinClusterQueue" in out["running"].reason
        assert out["running"].preempted_by == ("incoming",)


def test_victims_from_other_borrowing_queues_go_first() -> None:
    """preemption.md: candidates are sorted preferring "Workloads from borrowing queues in the cohort" before
    "Workloads with the lowest priority".

    cq-a's own low-priority workload would do, but cq-b's higher-priority borrower is taken first.
    """
    objs = _pair(4, 0, {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"})
    sim = run(objs, [
        wl("a-old", "a", 2, priority=0, admitted_at=1),
        wl("b-borrower", "b", 2, priority=5, admitted_at=2),
        wl("a-new", "a", 2, priority=10, created=1),
    ])
    out = sim.outcomes
    assert out["b-borrower"].status == "preempted"
    assert out["a-old"].status == "admitted"
    assert out["a-new"].status == "admitted"


def test_victims_lowest_priority_then_most_recently_admitted() -> None:
    """preemption.md: candidates sorted by "Workloads with the lowest priority", then "Workloads which got
    admitted the most recently".

    x0 is the most recent but has priority 5; x1 and x2 share priority 1 and x2 was admitted later.
    """
    objs = [
        flavor("default"),
        cluster_queue("cq", cpu_group(6), preemption={"withinClusterQueue": "LowerPriority"}),
        local_queue("ns", "q", "cq"),
    ]
    sim = run(objs, [
        wl("x1", "q", 2, priority=1, admitted_at=1),
        wl("x2", "q", 2, priority=1, admitted_at=2),
        wl("x0", "q", 2, priority=5, admitted_at=3),
        wl("w", "q", 2, priority=10),
    ])
    status = {n: o.status for n, o in sim.outcomes.items()}
    assert status == {"x1": "admitted", "x2": "preempted", "x0": "admitted", "w": "admitted"}


def test_minimal_set_of_victims() -> None:
    """preemption.md: "Kueue greedily traverses the list of initial targets in reverse and removes a Workload
    from the list of targets if the preemptor Workload still can be admitted when accounting back the quota
    usage of the target Workload."

    The 1-CPU workload is tried first (most recent) but, once the 4-CPU one is gone, it need not go.
    """
    objs = [
        flavor("default"),
        cluster_queue("cq", cpu_group(6), preemption={"withinClusterQueue": "LowerPriority"}),
        local_queue("ns", "q", "cq"),
    ]
    sim = run(objs, [
        wl("medium", "q", 4, admitted_at=1),
        wl("small", "q", 1, admitted_at=2),
        wl("w", "q", 4, priority=10),
    ])
    out = sim.outcomes
    assert out["medium"].status == "preempted"
    assert out["small"].status == "admitted"
    assert out["w"].status == "admitted"
    assert [e for e in sim.events if "preempted" in e] == ["cycle 1: preempted medium (withinClusterQueue) for w"]


def test_preempted_workload_is_readmitted_when_quota_frees() -> None:
    """A preempted workload goes back to its queue (workload.md: evicted workloads are requeued) and is
    admitted again when quota frees up; it is then "admitted", with its preemptor still recorded.

    Here the preemptor needs only part of the borrowed quota: the victim fits again in its own nominal quota.
    """
    objs = _pair(4, 4, {"reclaimWithinCohort": "Any"})
    sim = run(objs, [
        wl("b-big", "b", 6, admitted_at=1),
        wl("b-small", "b", 2, admitted_at=2),
        wl("a-1", "a", 3, created=1),
    ])
    out = sim.outcomes
    assert out["a-1"].status == "admitted"
    assert out["b-big"].status == "preempted"
    assert out["b-small"].status == "admitted"


def test_zero_requests_and_evictions_keep_the_books_straight() -> None:
    """Workloads may request 0 of a covered resource (they still get its flavor); evicting such workloads
    after others of the same priority must leave the simulator's accounting consistent."""
    from poolc.kueuesim import Workload

    from .builders import group, quota

    objs = [
        flavor("default"),
        cluster_queue("cq", group(["cpu", "nvidia.com/gpu"],
                                  ("default", [quota("cpu", 4), quota("nvidia.com/gpu", 2)])),
                      preemption={"withinClusterQueue": "LowerPriority"}),
        local_queue("ns", "q", "cq"),
    ]
    sim = run(objs, [
        Workload("gpu-job", "ns", "q", 0, {"cpu": 2000, "nvidia.com/gpu": 2}, 0, admitted_at=1),
        Workload("z-cpu-job", "ns", "q", 0, {"cpu": 2000, "nvidia.com/gpu": 0}, 1, admitted_at=2),
        Workload("urgent", "ns", "q", 10, {"cpu": 4000, "nvidia.com/gpu": 2}, 2),
    ])
    out = sim.outcomes
    assert out["urgent"].status == "admitted"
    assert (out["gpu-job"].status, out["z-cpu-job"].status) == ("preempted", "preempted")
    assert sim.usage["cq"]["default"] == {"cpu": 4000, "nvidia.com/gpu": 2}


def test_eviction_ping_pong_is_detected_and_reported() -> None:
    """Kueue has no memory across cycles of who preempted for whom (PrioritizePreemptorWorkloads is alpha and
    off): y (borrowing) evicts x from its own queue, but z - as borrowing, as high in priority and older - is
    ordered first in the next cycle and takes the quota back, x then reclaims it from z, and so on. The loop
    stops as soon as a post-eviction state repeats, and says so."""
    objs = [
        flavor("default"),
        cluster_queue("cq-a", cpu_group(2), cohort="c", preemption={
            "withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
            "borrowWithinCohort": {"policy": "LowerPriority"}}),
        cluster_queue("cq-b", cpu_group(0), cohort="c"),
        cluster_queue("cq-l", cpu_group(1), cohort="c"),
        local_queue("ns", "a", "cq-a"),
        local_queue("ns", "b", "cq-b"),
    ]
    sim = run(objs, [
        wl("z", "b", 3, priority=10, created=1, admitted_at=1),
        wl("x", "a", 2, priority=5, created=3),
        wl("y", "a", 3, priority=10, created=2),
    ])
    assert sim.events[1:] == (
        "cycle 2: preempted z (reclaimWithinCohort) for x",
        "cycle 3: admitted x in cq-a (flavor default)",
        "cycle 4: preempted x (withinClusterQueue) for y",
        "cycle 5: admitted z in cq-b (flavor default, borrowing)",
        "cycle 7: preempted z (reclaimWithinCohort) for x",
        "stopped in cycle 7: eviction ping-pong, the state after cycle 2 came back (last evicted: z)",
    )
    assert sim.cycles == 7
    assert sim.outcomes["z"].preempted_by == ("x",)
