"""Per-ClusterQueue pending queues: the active heap and the parked "inadmissible" set.

Models ``pkg/cache/queue/cluster_queue.go``: workloads are ordered by priority
(higher first) then creation time. Each scheduling cycle pops one head per
ClusterQueue. A head that fails goes back to the heap at once when
StrictFIFO is used (so it blocks the queue), when it failed only because of
other admissions in the same cycle, when it is waiting for its preemptions, or
when its flavor scan stopped early; otherwise (BestEffortFIFO) it is parked as
inadmissible and the next workload becomes head. Parked workloads return to
the heap when quota is released in their cohort tree. A workload that issued
preemptions in a BestEffortFIFO queue stays "sticky" at the head until it is
admitted.

Scheduling equivalence (Kueue's SchedulingEquivalenceHashing, on by default
in v0.19): when a BestEffortFIFO head is parked because it does not fit or
found nothing to preempt, every queued workload of the same shape (priority,
pod count, requests) is parked with it, and new ones of that shape are parked
on arrival, until quota is released.
"""

from __future__ import annotations

import heapq

from .model import Workload

Shape = tuple[int, int, tuple[tuple[str, int], ...]]


def queue_key(wl: Workload) -> tuple[int, int, str]:
    """Heap order: higher priority, then earlier creation, then name."""
    return (-wl.priority, wl.created, wl.name)


def shape(wl: Workload) -> Shape:
    """What Kueue's scheduling hash covers for our single-PodSet workloads."""
    return (wl.priority, wl.count, tuple(sorted((r, int(q)) for r, q in wl.requests.items())))


class PendingQueue:
    """The pending workloads of one ClusterQueue."""

    def __init__(self, name: str, strict: bool) -> None:
        self.name = name
        self.strict = strict
        self._heap: list[tuple[tuple[int, int, str], int, Workload]] = []
        self._seq = 0
        self._active: dict[str, Workload] = {}
        self._by_shape: dict[Shape, dict[str, Workload]] = {}
        self.inadmissible: dict[str, Workload] = {}
        self.bulk_moved: set[Shape] = set()
        self.sticky: str | None = None
        self._shapes: dict[str, Shape] = {}  # a workload never changes, so its shape is worked out once

    def _shape(self, wl: Workload) -> Shape:
        found = self._shapes.get(wl.name)
        if found is None:
            found = self._shapes[wl.name] = shape(wl)
        return found

    def __len__(self) -> int:
        return len(self._active)

    def _activate(self, wl: Workload) -> None:
        self._active[wl.name] = wl
        self._by_shape.setdefault(self._shape(wl), {})[wl.name] = wl
        self._seq += 1
        heapq.heappush(self._heap, (queue_key(wl), self._seq, wl))

    def _deactivate(self, wl: Workload) -> None:
        del self._active[wl.name]
        key = self._shape(wl)
        same = self._by_shape[key]
        del same[wl.name]
        if not same:
            del self._by_shape[key]

    def add(self, wl: Workload) -> bool:
        """A new (or evicted) workload arrives; False if it was parked at once by a bulk move."""
        if not self.strict and wl.name not in self._active and self._shape(wl) in self.bulk_moved:
            self.inadmissible[wl.name] = wl
            return False
        self.push(wl)
        return True

    def push(self, wl: Workload) -> None:
        """Put a workload on the heap (leaving the inadmissible set if it was parked)."""
        self.inadmissible.pop(wl.name, None)
        if wl.name not in self._active:
            self._activate(wl)

    def pop(self) -> Workload | None:
        """The head: the sticky preemptor if it is queued, else the best-ordered workload."""
        if self.sticky is not None and self.sticky in self._active:
            wl = self._active[self.sticky]
            self._deactivate(wl)
            return wl
        while self._heap:
            _, _, wl = heapq.heappop(self._heap)
            if self._active.get(wl.name) is wl:
                self._deactivate(wl)
                return wl
        return None

    def requeue(self, wl: Workload, immediate: bool, bulk: bool = False) -> list[Workload]:
        """Return a head that was not admitted, to the heap or parked; the list holds workloads parked with it."""
        if self.strict or immediate:
            self.push(wl)
            return []
        if wl.name not in self._active:
            self.inadmissible[wl.name] = wl
        if not bulk:
            return []
        key = self._shape(wl)
        self.bulk_moved.add(key)
        moved = sorted(self._by_shape.get(key, {}).values(), key=queue_key)
        for other in moved:
            self._deactivate(other)
            self.inadmissible[other.name] = other
        return moved

    def park(self, wl: Workload) -> None:
        if wl.name not in self._active:
            self.inadmissible[wl.name] = wl

    def unpark_all(self) -> bool:
        """Quota was released: every parked workload goes back to the heap; True if any moved."""
        self.bulk_moved.clear()
        if not self.inadmissible:
            return False
        for name in sorted(self.inadmissible):
            wl = self.inadmissible[name]
            if name not in self._active:
                self._activate(wl)
        self.inadmissible.clear()
        return True

    def pending(self) -> list[Workload]:
        return [*self._active.values(), *self.inadmissible.values()]
