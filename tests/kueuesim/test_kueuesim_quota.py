"""Quota, borrowing and lending, as documented in Kueue's cluster_queue.md and cohort.md."""

from __future__ import annotations

from poolc.kueuesim import Workload

from .builders import (
    cluster_queue,
    cohort,
    cpu_group,
    flavor,
    group,
    local_queue,
    quota,
    run,
    wl,
)


def _team_ab(a_cpu: dict[str, object], b_cpu: dict[str, object]) -> list[dict[str, object]]:
    return [
        flavor("default-flavor"),
        cluster_queue("team-a-cq", group(["cpu"], ("default-flavor", [a_cpu])), cohort="team-ab"),
        cluster_queue("team-b-cq", group(["cpu"], ("default-flavor", [b_cpu])), cohort="team-ab"),
        local_queue("ns", "a", "team-a-cq"),
        local_queue("ns", "b", "team-b-cq"),
    ]


def test_nominal_quota_admits_then_queues() -> None:
    """A workload is admitted when its requests fit the unused nominalQuota; otherwise it waits.

    cluster_queue.md: a pod set fits a flavor "if the sum of requests ... is less than or equal to the
    unused nominalQuota for the flavor in the ClusterQueue"; a ClusterQueue without a cohort "cannot
    borrow quota from any other ClusterQueue".
    """
    objs = [flavor("default"), cluster_queue("cq", cpu_group(9)), local_queue("ns", "q", "cq")]
    sim = run(objs, [wl("first", "q", 5, created=1), wl("second", "q", 5, created=2), wl("huge", "q", 10, created=3)])
    out = sim.outcomes
    assert out["first"].status == "admitted"
    assert out["first"].flavors == {"cpu": "default"}
    assert out["first"].borrowing is False
    assert out["second"].status == "pending"
    assert "needs 5, 4 available" in out["second"].reason
    assert out["huge"].status == "pending"
    assert "at most 9 can ever be available" in out["huge"].reason
    assert sim.usage["cq"] == {"default": {"cpu": 5000}}


def test_borrowing_from_the_cohort() -> None:
    """cluster_queue.md, "Borrowing example": team-a-cq (9 CPUs) and team-b-cq (12 CPUs) share cohort team-ab.

    "If ClusterQueue team-b-cq has no admitted Workloads, then ClusterQueue team-a-cq can admit
    Workloads with resources adding up to 12+9=21 CPUs".
    """
    objs = _team_ab(quota("cpu", 9), quota("cpu", 12))
    out = run(objs, [wl("big", "a", 21)]).outcomes
    assert out["big"].status == "admitted"
    assert out["big"].borrowing is True
    assert "borrowing quota from cohort 'team-ab'" in out["big"].reason
    assert run(objs, [wl("too-big", "a", 22)]).outcomes["too-big"].status == "pending"


def test_nominal_quota_heads_go_before_borrowing_heads() -> None:
    """cluster_queue.md: "If ClusterQueue team-b-cq has pending Workloads and the ClusterQueue team-a-cq has
    all its nominalQuota quota used, Kueue will admit Workloads in ClusterQueue team-b-cq before admitting
    any new Workloads in team-a-cq" ("Kueue prioritizes scheduling workloads that will fit under nominalQuota").

    team-a runs 9 CPUs; in the same cycle team-a's head (older, higher priority, needs to borrow 4) and
    team-b's head (12, within nominal) compete: team-b's goes first and team-a's no longer fits.
    """
    objs = _team_ab(quota("cpu", 9), quota("cpu", 12))
    sim = run(objs, [
        wl("a-running", "a", 9, admitted_at=1),
        wl("a-more", "a", 4, priority=100, created=1),
        wl("b-job", "b", 12, created=2),
    ])
    out = sim.outcomes
    assert out["b-job"].status == "admitted"
    assert out["b-job"].reason.startswith("admitted in cycle 1")
    assert out["a-more"].status == "pending"
    assert sim.events[1] == "cycle 1: admitted b-job in team-b-cq (flavor default-flavor)"


def test_borrowing_limit() -> None:
    """cluster_queue.md, "BorrowingLimit": team-a-cq has 9 CPUs and borrowingLimit 1, team-b-cq 12 CPUs.

    "if ClusterQueue team-b-cq has no admitted Workloads, then ClusterQueue team-a-cq can admit Workloads
    with resources adding up to 9+1=10 CPUs" and "team-b-cq can use up to 12+9 CPUs".
    """
    objs = _team_ab(quota("cpu", 9, borrowing=1), quota("cpu", 12))
    workloads = [wl("nine", "a", 9, created=1), wl("two", "a", 2, created=2), wl("one", "a", 1, created=3)]
    out = run(objs, workloads).outcomes
    assert (out["nine"].status, out["two"].status, out["one"].status) == ("admitted", "pending", "admitted")
    assert out["one"].borrowing is True
    assert "at most 1 can ever be available" in out["two"].reason or "needs 2, 1 available" in out["two"].reason
    assert run(objs, [wl("b21", "b", 21)]).outcomes["b21"].status == "admitted"
    assert run(objs, [wl("a11", "a", 11)]).outcomes["a11"].status == "pending"


def test_lending_limit() -> None:
    """cluster_queue.md, "LendingLimit": team-a-cq has 9 CPUs, team-b-cq 12 CPUs with lendingLimit 1.

    "team-a-cq can admit Workloads with resources adding up to 9+1=10 CPUs"; without a lendingLimit
    "team-b-cq can use up to 9+12 CPUs".
    """
    objs = _team_ab(quota("cpu", 9), quota("cpu", 12, lending=1))
    out = run(objs, [wl("ten", "a", 10, created=1), wl("more", "a", 1, created=2)]).outcomes
    assert out["ten"].status == "admitted"
    assert out["ten"].borrowing is True
    assert out["more"].status == "pending"
    assert run(objs, [wl("eleven", "a", 11)]).outcomes["eleven"].status == "pending"
    # the 11 private CPUs stay usable by team-b itself
    assert run(objs, [wl("b12", "b", 12)]).outcomes["b12"].status == "admitted"
    free = _team_ab(quota("cpu", 9), quota("cpu", 12))
    assert run(free, [wl("b21", "b", 21)]).outcomes["b21"].status == "admitted"


def test_cohort_own_quota_is_a_shared_pool() -> None:
    """cohort.md, "Configuring Quotas": a Cohort's nominalQuota is "additional resources on top of those
    defined by ClusterQueues"; a ClusterQueue with nominalQuota 0 "may access the 12 shared CPUs defined by
    its Cohort".
    """
    objs = [
        flavor("default-flavor"),
        cohort("hello-cohort", group(["cpu"], ("default-flavor", [quota("cpu", 12)]))),
        cluster_queue("my-cluster-queue", cpu_group(0, flavor_name="default-flavor"), cohort="hello-cohort"),
        local_queue("ns", "q", "my-cluster-queue"),
    ]
    sim = run(objs, [wl("x", "q", 12, created=1), wl("y", "q", 1, created=2)])
    assert sim.outcomes["x"].status == "admitted"
    assert sim.outcomes["x"].borrowing is True
    assert sim.outcomes["y"].status == "pending"
    assert run(objs, [wl("z", "q", 13)]).outcomes["z"].status == "pending"


def test_hierarchical_cohort_limits() -> None:
    """cohort.md, "Hierarchical Cohorts": ClusterQueues of a CohortTree use its resources "subject to
    Borrowing and Lending limits", which "can be specified for Cohorts, as well as for ClusterQueues".

    root (no quota of its own) has two child cohorts. org-a may borrow at most 4 CPUs from root
    (borrowingLimit on the Cohort), so its queue a1 (2 CPUs) reaches 6 although the tree has 12.
    When org-b (8 CPUs of its own + b1's 2) lends only 3 (lendingLimit on the Cohort), a1 reaches 2 + 3.
    """
    def objs(org_b_lending: int | None) -> list[dict[str, object]]:
        return [
            flavor("default"),
            cohort("root"),
            cohort("org-a", group(["cpu"], ("default", [quota("cpu", 0, borrowing=4)])), parent="root"),
            cohort("org-b", group(["cpu"], ("default", [quota("cpu", 8, lending=org_b_lending)])), parent="root"),
            cluster_queue("a1", cpu_group(2), cohort="org-a"),
            cluster_queue("b1", cpu_group(2), cohort="org-b"),
            local_queue("ns", "a", "a1"),
            local_queue("ns", "b", "b1"),
        ]

    six = run(objs(None), [wl("six", "a", 6)]).outcomes["six"]
    assert six.status == "admitted" and six.borrowing is True
    assert run(objs(None), [wl("seven", "a", 7)]).outcomes["seven"].status == "pending"
    assert run(objs(3), [wl("five", "a", 5)]).outcomes["five"].status == "admitted"
    assert run(objs(3), [wl("six", "a", 6)]).outcomes["six"].status == "pending"
    # org-b's 7 private CPUs stay reachable from inside org-b: b1 gets 7 + a1's 2 + org-b's 3 lent = 12
    assert run(objs(3), [wl("b12", "b", 12)]).outcomes["b12"].status == "admitted"
    # b1 running 9 uses its 7 private CPUs and 2 of root's 5: 3 remain for a1
    sim = run(objs(3), [wl("b9", "b", 9, admitted_at=1), wl("a4", "a", 4, created=1), wl("a3", "a", 3, created=2)])
    assert sim.outcomes["a4"].status == "pending"
    assert sim.outcomes["a3"].status == "admitted"


def test_pods_are_counted_when_covered() -> None:
    """workload.md / flavorassigner: when a ClusterQueue covers the "pods" resource, every pod counts 1."""
    objs = [
        flavor("default"),
        cluster_queue("cq", group(["cpu", "pods"], ("default", [quota("cpu", 10), quota("pods", 2)]))),
        cluster_queue("no-pods", cpu_group(10)),
        local_queue("ns", "q", "cq"),
        local_queue("ns", "np", "no-pods"),
    ]
    sim = run(objs, [
        wl("p1", "q", 1, created=1), wl("p2", "q", 1, created=2), wl("p3", "q", 1, created=3),
        wl("n1", "np", 1, created=1), wl("n2", "np", 1, created=2), wl("n3", "np", 1, created=3),
    ])
    statuses = {n: o.status for n, o in sim.outcomes.items()}
    assert statuses == {
        "p1": "admitted", "p2": "admitted", "p3": "pending",
        "n1": "admitted", "n2": "admitted", "n3": "admitted",
    }
    assert "pods" in sim.outcomes["p3"].reason
    assert sim.usage["cq"]["default"] == {"cpu": 2000, "pods": 2}
    assert "pods" not in sim.usage["no-pods"]["default"]


def test_resource_not_covered_stays_pending() -> None:
    """flavorassigner: a request for a resource no resource group covers cannot be admitted."""
    objs = [flavor("default"), cluster_queue("cq", cpu_group(10)), local_queue("ns", "q", "cq")]
    gpu = Workload("g", "ns", "q", 0, {"cpu": 1000, "nvidia.com/gpu": 1}, 0)
    out = run(objs, [gpu]).outcomes["g"]
    assert out.status == "pending"
    assert "nvidia.com/gpu is not covered" in out.reason


def test_flavor_fungibility_when_can_borrow() -> None:
    """cluster_queue.md, "FlavorFungibility": whenCanBorrow "MayStopSearch (default): Kueue stops looking for
    a better assignment"; "TryNextFlavor: Kueue tries the next ResourceFlavor" - which here fits without
    borrowing.
    """
    def objs(fungibility: dict[str, str] | None) -> list[dict[str, object]]:
        two = group(["cpu"], ("spot", [quota("cpu", 2)]), ("on-demand", [quota("cpu", 8)]))
        return [
            flavor("spot"), flavor("on-demand"),
            cluster_queue("cq", two, cohort="c", fungibility=fungibility),
            cluster_queue("lender", group(["cpu"], ("spot", [quota("cpu", 8)])), cohort="c"),
            local_queue("ns", "q", "cq"),
        ]

    stop = run(objs(None), [wl("w", "q", 4)]).outcomes["w"]
    assert (stop.flavors, stop.borrowing) == ({"cpu": "spot"}, True)
    go_on = run(objs({"whenCanBorrow": "TryNextFlavor"}), [wl("w", "q", 4)]).outcomes["w"]
    assert (go_on.flavors, go_on.borrowing) == ({"cpu": "on-demand"}, False)


def test_inactive_cluster_queue_with_missing_flavor() -> None:
    """cluster_queue.md (flavor name): "If a matching ResourceFlavor does not exist, the ClusterQueue will
    have an Active condition set to False" - it admits nothing."""
    objs = [cluster_queue("cq", cpu_group(10, flavor_name="ghost")), local_queue("ns", "q", "cq")]
    out = run(objs, [wl("w", "q", 1)]).outcomes["w"]
    assert out.status == "pending"
    assert out.cluster_queue == "cq"
    assert "inactive" in out.reason and "ghost" in out.reason
