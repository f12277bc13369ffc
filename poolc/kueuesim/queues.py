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
pod count, requests, node selection) is parked with it, and new ones of that shape are parked
on arrival, until quota is released.

Why the workloads are kept per shape: the two bulk moves above (park every
queued workload of one shape; return every parked workload) are where large
replays spend their time, as thousands of same-shape Jobs wait behind one that
does not fit. Each shape's active workloads and its parked workloads are a
``_Shelf`` (a dict by name plus a heap of their queue keys), so a bulk move
hands a whole shelf over instead of moving its workloads one by one. The head
is the best top among the shape shelves (a queue holds few shapes); which
shelf a workload sits on never changes the order in which heads are popped.
"""

from __future__ import annotations

import heapq
from itertools import chain

from .api import Workload

Shape = tuple[int, int, tuple[tuple[str, int], ...], tuple, tuple | None]
_Entry = tuple[tuple[int, int, str], Workload]


def queue_key(wl: Workload) -> tuple[int, int, str]:
    """Heap order: higher priority, then earlier creation, then name."""
    return (-wl.priority, wl.created, wl.name)


def shape(wl: Workload) -> Shape:
    """What Kueue's scheduling hash covers for our single-PodSet workloads (the pod's
    node selection included: it decides which flavors match)."""
    return (wl.priority, wl.count, tuple(sorted((r, int(q)) for r, q in wl.requests.items())),
            wl.node_selector, wl.affinity)


class ShapeCache:
    """``shape`` for many workloads: thousands of Jobs repeat a few requests, so the shape is
    remembered by the requests as given (equal items give equal shapes; an equal dict in
    another order is merely a miss)."""

    def __init__(self) -> None:
        self._known: dict[tuple, Shape] = {}

    def __call__(self, wl: Workload) -> Shape:
        raw = (wl.priority, wl.count, tuple(wl.requests.items()), wl.node_selector, wl.affinity)
        found = self._known.get(raw)
        if found is None:
            found = self._known[raw] = shape(wl)
        return found


class _Shelf:
    """Workloads of one shape in one state (queued or parked): ``members`` by name, and a heap
    of ``(queue_key, workload)`` entries holding one for every member. Entries of workloads
    that left are dropped lazily: an entry counts only while its workload is a member (keys
    are unique per name, so a duplicate entry of a member ties with nothing else). Members
    change only through these methods, which forget the remembered ``names``."""

    __slots__ = ("_names", "heap", "members")

    def __init__(self) -> None:
        self.members: dict[str, Workload] = {}
        self.heap: list[_Entry] = []
        self._names: frozenset[str] | None = None

    def put(self, wl: Workload) -> None:
        self.members[wl.name] = wl
        heapq.heappush(self.heap, (queue_key(wl), wl))
        self._names = None

    def discard(self, name: str) -> Workload | None:
        found = self.members.pop(name, None)
        if found is not None:
            self._names = None
        return found

    def top(self) -> _Entry:
        """The best member's entry (the shelf must have members)."""
        heap, members = self.heap, self.members
        while members.get(heap[0][1].name) is not heap[0][1]:
            heapq.heappop(heap)
        return heap[0]

    def pop_top(self) -> Workload:
        wl = self.top()[1]
        heapq.heappop(self.heap)
        del self.members[wl.name]
        self._names = None
        return wl

    def merge(self, other: _Shelf) -> None:
        """Take over ``other``'s members (disjoint from ours): the smaller shelf's live entries
        are pushed onto the larger one's heap, so a lone head joining thousands costs O(log n)."""
        if len(other.members) > len(self.members):
            self.members, other.members = other.members, self.members
            self.heap, other.heap = other.heap, self.heap
        members, heap = other.members, self.heap
        for entry in other.heap:
            if members.get(entry[1].name) is entry[1]:
                heapq.heappush(heap, entry)
        self.members.update(members)
        self._names = other._names = None

    def names(self) -> frozenset[str]:
        """The members' names, remembered until they change (the loop check reads them often)."""
        if self._names is None:
            self._names = frozenset(self.members)
        return self._names


class PendingQueue:
    """The pending workloads of one ClusterQueue."""

    def __init__(self, name: str, strict: bool, shapes: ShapeCache | None = None) -> None:
        self.name = name
        self._shape_of = shapes if shapes is not None else ShapeCache()
        self.strict = strict
        self._queued: dict[Shape, _Shelf] = {}  # the active heap, per shape (no empty shelves)
        self._parked: dict[Shape, _Shelf] = {}  # the inadmissible set, per shape (no empty shelves)
        self._parked_count = 0
        self.bulk_moved: set[Shape] = set()
        self.sticky: str | None = None
        self._shapes: dict[str, Shape] = {}  # a workload never changes, so its shape is worked out once
        self._changes = 0  # bumped by every call that may change the queue, for ``state``
        self._state: tuple[int, tuple[int, frozenset[tuple[Shape, frozenset[str]]]]] | None = None

    def shape_of(self, wl: Workload) -> Shape:
        """``wl``'s shape (priority, pod count, requests), worked out once per workload."""
        found = self._shapes.get(wl.name)
        if found is None:
            found = self._shapes[wl.name] = self._shape_of(wl)
        return found

    def __len__(self) -> int:
        """How many workloads are on the active heap."""
        return sum(len(shelf.members) for shelf in self._queued.values())

    def has_queued(self) -> bool:
        return bool(self._queued)

    @property
    def parked_count(self) -> int:
        return self._parked_count

    def state(self) -> tuple[int, frozenset[tuple[Shape, frozenset[str]]]]:
        """How many workloads are queued, and the parked set, exactly, as (shape, names) pairs: a
        workload's shape is fixed, so equal pairs mean equal sets. Remembered until the queue
        changes, and a shelf that did not change hands over the same frozenset (the loop check
        reads every queue after every cycle that evicts)."""
        if self._state is None or self._state[0] != self._changes:
            parked = frozenset((key, shelf.names()) for key, shelf in self._parked.items())
            self._state = (self._changes, (len(self), parked))
        return self._state[1]

    def _is_queued(self, wl: Workload, key: Shape) -> bool:
        shelf = self._queued.get(key)
        return shelf is not None and wl.name in shelf.members

    def _activate(self, wl: Workload, key: Shape) -> None:
        shelf = self._queued.get(key)
        if shelf is None:
            shelf = self._queued[key] = _Shelf()
        shelf.put(wl)

    def _take(self, shelves: dict[Shape, _Shelf], key: Shape, name: str) -> Workload | None:
        """Remove ``name`` from its shelf in ``shelves`` (dropping the shelf once empty)."""
        shelf = shelves.get(key)
        if shelf is None:
            return None
        found = shelf.discard(name)
        if not shelf.members:
            del shelves[key]
        return found

    def _park_one(self, wl: Workload, key: Shape) -> None:
        shelf = self._parked.get(key)
        if shelf is None:
            shelf = self._parked[key] = _Shelf()
        if wl.name not in shelf.members:
            self._parked_count += 1
        shelf.put(wl)

    def add(self, wl: Workload) -> bool:
        """A new (or evicted) workload arrives; False if it was parked at once by a bulk move."""
        return not self.add_all([wl])

    def add_all(self, arrivals: list[Workload]) -> list[Workload]:
        """``add`` for each of ``arrivals`` (a batch: tens of thousands of Jobs arrive at once, so
        the steps are written out here); the result lists those parked at once."""
        self._changes += 1
        parked: list[Workload] = []
        shapes, queued = self._shapes, self._queued
        bulk = self.bulk_moved if not self.strict else frozenset()
        for wl in arrivals:
            name = wl.name
            key = shapes.get(name)
            if key is None:
                key = shapes[name] = self._shape_of(wl)
            shelf = queued.get(key)
            if shelf is not None and name in shelf.members:
                continue
            if key in bulk:
                self._park_one(wl, key)
                parked.append(wl)
                continue
            if self._parked and self._take(self._parked, key, name) is not None:
                self._parked_count -= 1
            if shelf is None:
                shelf = queued[key] = _Shelf()
            shelf.put(wl)
        return parked

    def push(self, wl: Workload) -> None:
        """Put a workload on the heap (leaving the inadmissible set if it was parked)."""
        self._changes += 1
        key = self.shape_of(wl)
        if self._parked and self._take(self._parked, key, wl.name) is not None:
            self._parked_count -= 1
        if not self._is_queued(wl, key):
            self._activate(wl, key)

    def pop(self) -> Workload | None:
        """The head: the sticky preemptor if it is queued, else the best-ordered workload."""
        self._changes += 1
        if self.sticky is not None:
            key = self._shapes.get(self.sticky)
            if key is not None:
                found = self._take(self._queued, key, self.sticky)
                if found is not None:
                    return found
        best: _Entry | None = None
        best_key: Shape | None = None
        for key, shelf in self._queued.items():
            top = shelf.top()
            if best is None or top[0] < best[0]:
                best, best_key = top, key
        if best is None or best_key is None:
            return None
        shelf = self._queued[best_key]
        shelf.pop_top()
        if not shelf.members:
            del self._queued[best_key]
        return best[1]

    def requeue(self, wl: Workload, immediate: bool, bulk: bool = False) -> list[str]:
        """Return a head that was not admitted, to the heap or parked; the result names the workloads
        parked with it (in no particular order)."""
        self._changes += 1
        if self.strict or immediate:
            self.push(wl)
            return []
        key = self.shape_of(wl)
        if not self._is_queued(wl, key):
            self._park_one(wl, key)
        if not bulk:
            return []
        self.bulk_moved.add(key)
        moved = self._queued.pop(key, None)
        if moved is None:
            return []
        found = list(moved.members)  # before the merge, which may hand this dict over
        self._parked_count += len(found)
        parked = self._parked.get(key)
        if parked is None:
            self._parked[key] = moved
        else:
            parked.merge(moved)
        return found

    def park(self, wl: Workload) -> None:
        self._changes += 1
        key = self.shape_of(wl)
        if not self._is_queued(wl, key):
            self._park_one(wl, key)

    def unpark_all(self) -> bool:
        """Quota was released: every parked workload goes back to the heap; True if any moved."""
        self._changes += 1
        self.bulk_moved.clear()
        if not self._parked:
            return False
        for key, parked in self._parked.items():
            queued = self._queued.get(key)
            if queued is None:
                self._queued[key] = parked
            else:
                queued.merge(parked)
        self._parked = {}
        self._parked_count = 0
        return True

    def pending(self) -> list[Workload]:
        return [wl for shelf in chain(self._queued.values(), self._parked.values()) for wl in shelf.members.values()]
