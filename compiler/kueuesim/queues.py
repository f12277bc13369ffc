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
"""

from __future__ import annotations

import heapq

from .model import Workload


def queue_key(wl: Workload) -> tuple[int, int, str]:
    """Heap order: higher priority, then earlier creation, then name."""
    return (-wl.priority, wl.created, wl.name)


class PendingQueue:
    """The pending workloads of one ClusterQueue."""

    def __init__(self, name: str, strict: bool) -> None:
        self.name = name
        self.strict = strict
        self._heap: list[tuple[tuple[int, int, str], int, Workload]] = []
        self._seq = 0
        self._active: dict[str, Workload] = {}
        self.inadmissible: dict[str, Workload] = {}
        self.sticky: str | None = None

    def __len__(self) -> int:
        return len(self._active)

    def push(self, wl: Workload) -> None:
        """Put a workload on the heap (leaving the inadmissible set if it was parked)."""
        self.inadmissible.pop(wl.name, None)
        if wl.name in self._active:
            return
        self._active[wl.name] = wl
        self._heappush(wl)

    def _heappush(self, wl: Workload) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (queue_key(wl), self._seq, wl))

    def park(self, wl: Workload) -> None:
        if wl.name not in self._active:
            self.inadmissible[wl.name] = wl

    def pop(self) -> Workload | None:
        """The head: the sticky preemptor if it is queued, else the best-ordered workload."""
        if self.sticky is not None and self.sticky in self._active:
            return self._active.pop(self.sticky)
        while self._heap:
            _, _, wl = heapq.heappop(self._heap)
            if self._active.get(wl.name) is wl:
                del self._active[wl.name]
                return wl
        return None

    def requeue(self, wl: Workload, immediate: bool) -> None:
        """Return a head that was not admitted: to the heap, or parked as inadmissible."""
        if self.strict or immediate:
            self.push(wl)
        else:
            self.park(wl)

    def unpark_all(self) -> bool:
        """Move every parked workload back to the heap; True if any moved."""
        if not self.inadmissible:
            return False
        for name in sorted(self.inadmissible):
            wl = self.inadmissible[name]
            self._active[name] = wl
            self._heappush(wl)
        self.inadmissible.clear()
        return True

    def forget(self, name: str) -> None:
        self._active.pop(name, None)
        self.inadmissible.pop(name, None)
        if self.sticky == name:
            self.sticky = None

    def pending(self) -> list[Workload]:
        return [*self._active.values(), *self.inadmissible.values()]
