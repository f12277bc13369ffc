"""The simulator's fast paths against plain models of what they stand for.

* ``PendingQueue`` keeps workloads on per-shape shelves and moves whole shelves when a
  shape is parked or the parked set returns; a plain dict-and-min model of Kueue's queue
  (one workload at a time) must see the same heads, parked sets and counts after any
  sequence of operations.
* The preemption bound skips attempts by arithmetic: freeing X units of usage anywhere in
  a cohort tree never lowers ``available`` and raises it by at most X. Random trees with
  lending and borrowing limits check both, against the tree's own accounting.
"""

from __future__ import annotations

import random

import pytest

from poolc.kueuesim import Workload
from poolc.kueuesim.flavors import RequestPlan
from poolc.kueuesim.objects import parse_objects
from poolc.kueuesim.queues import PendingQueue, queue_key, shape
from poolc.kueuesim.quota import QuotaTree

from .builders import cluster_queue, cohort, flavor, group, local_queue, quota, run
from .builders import wl as workload


class _PlainQueue:
    """Kueue's queue one workload at a time: an active dict whose head is its minimum."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.active: dict[str, Workload] = {}
        self.parked: dict[str, Workload] = {}
        self.bulk_moved: set[object] = set()
        self.sticky: str | None = None

    def add(self, wl: Workload) -> bool:
        if not self.strict and wl.name not in self.active and shape(wl) in self.bulk_moved:
            self.parked[wl.name] = wl
            return False
        self.push(wl)
        return True

    def push(self, wl: Workload) -> None:
        self.parked.pop(wl.name, None)
        self.active[wl.name] = wl

    def pop(self) -> Workload | None:
        if self.sticky is not None and self.sticky in self.active:
            return self.active.pop(self.sticky)
        if not self.active:
            return None
        return self.active.pop(min(self.active.values(), key=queue_key).name)

    def requeue(self, wl: Workload, immediate: bool, bulk: bool) -> set[str]:
        if self.strict or immediate:
            self.push(wl)
            return set()
        if wl.name not in self.active:
            self.parked[wl.name] = wl
        if not bulk:
            return set()
        self.bulk_moved.add(shape(wl))
        moved = {n for n, other in self.active.items() if shape(other) == shape(wl)}
        for name in moved:
            self.parked[name] = self.active.pop(name)
        return moved

    def park(self, wl: Workload) -> None:
        if wl.name not in self.active:
            self.parked[wl.name] = wl

    def unpark_all(self) -> bool:
        self.bulk_moved.clear()
        moved = bool(self.parked)
        self.active.update(self.parked)
        self.parked.clear()
        return moved


def _workloads(rng: random.Random, count: int) -> list[Workload]:
    """Few priorities and request sizes, so that shapes repeat and bulk moves carry many."""
    return [
        Workload(f"w{i:03d}", "ns", "q", rng.choice([0, 1, 2]), {"cpu": 1000 * rng.choice([1, 2])},
                 rng.randrange(20))
        for i in range(count)
    ]


@pytest.mark.parametrize("strict", [False, True])
def test_pending_queue_matches_a_plain_queue(strict: bool) -> None:
    for seed in range(60):
        rng = random.Random(seed)
        fast, plain = PendingQueue("cq", strict), _PlainQueue(strict)
        pool = _workloads(rng, 40)
        out: list[Workload] = []  # popped heads, not queued anywhere until they come back
        for wl in pool[:20]:
            assert fast.add(wl) == plain.add(wl)
        waiting = pool[20:]
        for _ in range(300):
            op = rng.random()
            if op < 0.35:
                head = fast.pop()
                assert head == plain.pop()
                if head is not None:
                    out.append(head)
            elif op < 0.65 and out:
                head = out.pop(rng.randrange(len(out)))
                immediate, bulk = rng.random() < 0.3, rng.random() < 0.7
                if rng.random() < 0.2 and not strict:
                    fast.sticky = plain.sticky = head.name
                assert set(fast.requeue(head, immediate, bulk)) == plain.requeue(head, immediate, bulk)
            elif op < 0.72 and out:
                head = out.pop(rng.randrange(len(out)))
                fast.park(head)
                plain.park(head)
            elif op < 0.82:
                assert fast.unpark_all() == plain.unpark_all()
            elif op < 0.92 and waiting:
                wl = waiting.pop()
                assert fast.add(wl) == plain.add(wl)
            elif out:
                head = out.pop(rng.randrange(len(out)))  # an evicted workload comes back
                assert fast.add(head) == plain.add(head)
            assert len(fast) == len(plain.active)
            assert fast.has_queued() == bool(plain.active)
            assert fast.parked_count == len(plain.parked)
            parked_names = {name for _, names in fast.state()[1] for name in names}
            assert parked_names == set(plain.parked)
            assert {wl.name for wl in fast.pending()} == set(plain.active) | set(plain.parked)


def _random_tree(rng: random.Random) -> QuotaTree:
    """A root cohort with quota, two child cohorts and four ClusterQueues, every limit optional."""

    def res() -> dict[str, object]:
        return quota("cpu", rng.randrange(0, 9), rng.choice([None, 0, 1, 3, 6]), rng.choice([None, 0, 1, 3, 6]))

    objs = [flavor("f"), cohort("root", group(["cpu"], ("f", [quota("cpu", rng.randrange(0, 6))])))]
    for mid in ("left", "right"):
        objs.append(cohort(mid, group(["cpu"], ("f", [res()])), parent="root"))
        for leaf in ("a", "b"):
            objs.append(cluster_queue(f"{mid}-{leaf}", group(["cpu"], ("f", [res()])), cohort=mid))
    return QuotaTree(parse_objects(objs))


def test_freeing_usage_raises_available_by_at_most_what_is_freed() -> None:
    fr = ("f", "cpu")
    checked = 0
    for seed in range(400):
        rng = random.Random(seed)
        tree = _random_tree(rng)
        leaves = [tree.cqs[name] for name in sorted(tree.cqs)]
        held: list[tuple[int, int]] = []  # (leaf, amount) still in use
        for _ in range(rng.randrange(1, 12)):
            leaf, amount = rng.randrange(len(leaves)), 1000 * rng.randrange(1, 5)  # millicores
            leaves[leaf].add_usage(fr, amount)
            held.append((leaf, amount))
        before = {node.name: node.available(fr) for node in leaves}
        usage = {node.name: dict(node.usage) for node in [*tree.cqs.values(), *tree.cohorts.values()]}
        freed = rng.sample(held, rng.randrange(1, len(held) + 1))
        for leaf, amount in freed:
            leaves[leaf].remove_usage(fr, amount)
        total = sum(amount for _, amount in freed)
        for node in leaves:
            after = node.available(fr)
            assert before[node.name] <= after <= before[node.name] + total
            checked += after > before[node.name]
        for leaf, amount in reversed(freed):
            leaves[leaf].add_usage(fr, amount)
        # taking out and putting back is exact, down to every node's usage
        assert {node.name: dict(node.usage) for node in [*tree.cqs.values(), *tree.cohorts.values()]} == usage
    assert checked > 100  # the bound was exercised where freeing did help


def test_request_plan_walks_groups_by_first_resource_and_stops_at_an_uncovered_one() -> None:
    """``RequestPlan.of`` is what ``FlavorAssigner.assign`` walks: groups in the order of their first
    requested resource (alphabetical), each with all the requests it covers; an uncovered request
    of 0 is ignored, an uncovered nonzero one ends the walk where it sorts."""
    config = parse_objects([
        flavor("f"),
        cluster_queue("cq",
                      group(["memory", "cpu"], ("f", [quota("memory", "8Gi"), quota("cpu", 4)])),
                      group(["nvidia.com/gpu"], ("f", [quota("nvidia.com/gpu", 2)]))),
    ])
    spec = config.cluster_queues["cq"]
    plan = RequestPlan.of(spec, {"nvidia.com/gpu": 1, "memory": 5, "cpu": 1000, "zzz": 0})
    assert plan.groups == ((0, {"cpu": 1000, "memory": 5}), (1, {"nvidia.com/gpu": 1}))
    assert plan.uncovered is None
    # "example.com/x" sorts after cpu and before memory and gpu: the cpu group is walked first, then it stops
    plan = RequestPlan.of(spec, {"nvidia.com/gpu": 1, "memory": 5, "cpu": 1000, "example.com/x": 1})
    assert plan.groups == ((0, {"cpu": 1000, "memory": 5}),)
    assert plan.uncovered == "example.com/x"
    assert RequestPlan.of(spec, {"a": 1, "cpu": 1000}) == RequestPlan((), "a")


def test_request_plans_are_kept_per_cluster_queue_not_only_per_shape() -> None:
    """The scheduler keeps one request plan per (ClusterQueue, shape). Workloads of one shape in
    two ClusterQueues that cover different resources (and one covers "pods", which changes the
    requests themselves) must each get their own queue's plan: a plan shared by shape alone would
    admit the second like the first, or count pods where they are not covered."""
    objects = [
        flavor("f"),
        cluster_queue("wide", group(["cpu", "pods", "ephemeral-storage"],
                                    ("f", [quota("cpu", 10), quota("pods", 5), quota("ephemeral-storage", "4Gi")]))),
        cluster_queue("narrow", group(["cpu"], ("f", [quota("cpu", 10)]))),
        local_queue("ns", "w", "wide"),
        local_queue("ns", "n", "narrow"),
    ]
    for first, second in (("w", "n"), ("n", "w")):  # either queue's plan is worked out first
        sim = run(objects, [
            workload("a1", first, 1, created=1, ephemeral_storage=2**30),
            workload("a2", second, 1, created=2, ephemeral_storage=2**30),
            workload("b1", first, 1, created=3),
            workload("b2", second, 1, created=4),
        ])
        wide, narrow = (("a1", "b1"), ("a2", "b2")) if first == "w" else (("a2", "b2"), ("a1", "b1"))
        assert sim.outcomes[wide[0]].status == "admitted"
        assert sim.outcomes[narrow[0]].status == "pending"
        assert "ephemeral-storage is not covered by ClusterQueue 'narrow'" in sim.outcomes[narrow[0]].reason
        assert sim.outcomes[wide[1]].status == sim.outcomes[narrow[1]].status == "admitted"
        assert sim.usage["wide"]["f"] == {"cpu": 2000, "pods": 2, "ephemeral-storage": 2**30}
        assert sim.usage["narrow"]["f"] == {"cpu": 1000}
