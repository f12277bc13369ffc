"""The quota tree: ClusterQueues as leaves under a forest of Cohorts.

Models Kueue's resource nodes (``pkg/cache/scheduler/resource_node.go``):
every node has its own quotas and a SubtreeQuota, which for a Cohort is its own
nominal quota plus what each child lends to it (the child's SubtreeQuota minus
the part its lendingLimit keeps private). Usage that a node cannot cover from
its private ("local") quota is recorded in its parent too, so asking "how much
is free for this ClusterQueue" is a walk to the root: O(depth).
"""

from __future__ import annotations

from collections.abc import Mapping

from .objects import Config, FlavorResource, Quota

_NO_QUOTA = Quota(0)


class Node:
    """One ClusterQueue or Cohort with its quotas and current usage."""

    __slots__ = (
        "_ancestors", "_available_steps", "_chain", "_height", "_path", "_potential", "borrow_limits", "child_cohorts",
        "child_cqs", "is_cohort", "local", "name", "nominal", "parent", "quotas", "subtree", "usage",
    )

    def __init__(self, name: str, is_cohort: bool, quotas: Mapping[FlavorResource, Quota]) -> None:
        self.name = name
        self.is_cohort = is_cohort
        self.parent: Node | None = None
        self.quotas = dict(quotas)
        self.borrow_limits = {fr: q.borrowing_limit for fr, q in quotas.items() if q.borrowing_limit is not None}
        self.subtree: dict[FlavorResource, int] = {}
        self.local: dict[FlavorResource, int] = {}  # private quota per flavor-resource, fixed once built
        self.usage: dict[FlavorResource, int] = {}
        self.nominal: dict[FlavorResource, int] = {}  # set with ``local``
        self.child_cqs: list[Node] = []
        self.child_cohorts: list[Node] = []
        self._path: tuple[Node, ...] | None = None  # self up to the root, once the tree is linked
        self._ancestors: tuple[Node, ...] | None = None  # the same without self
        self._height: int | None = None
        # Per flavor-resource, what the hot walks to the root read that never changes once the tree
        # is built (quotas, lending and borrowing limits), next to each node's live usage dict;
        # worked out on first use. ``usage`` is never rebound, so holding the dict is safe.
        self._chain: dict[FlavorResource, tuple[tuple[dict[FlavorResource, int], int], ...]] = {}
        self._available_steps: dict[FlavorResource, tuple[int, dict[FlavorResource, int],
                                                          tuple[tuple[dict[FlavorResource, int], int,
                                                                      int | None, int], ...]]] = {}
        self._potential: dict[FlavorResource, int] = {}

    def freeze(self) -> None:
        """The tree is linked and never changes shape again: remember the walks to the root."""
        path: list[Node] = []
        node: Node | None = self
        while node is not None:
            path.append(node)
            node = node.parent
        self._path = tuple(path)
        self._ancestors = self._path[1:]

    def path(self) -> tuple[Node, ...]:
        if self._path is None:
            self.freeze()
        assert self._path is not None
        return self._path

    def __repr__(self) -> str:
        return f"Node({'cohort' if self.is_cohort else 'cq'} {self.name})"

    def quota(self, fr: FlavorResource) -> Quota:
        return self.quotas.get(fr, _NO_QUOTA)

    def local_quota(self, fr: FlavorResource) -> int:
        """Quota this node keeps to itself: what its lendingLimit does not lend (0 without one)."""
        return self.local.get(fr, 0)

    def _compute_local(self) -> None:
        """Once the subtree quota is known: the private quota, and the limit ``borrowing_with``
        compares against (a ClusterQueue's nominal quota, a cohort's subtree quota)."""
        self.nominal = self.subtree if self.is_cohort else {fr: q.nominal for fr, q in self.quotas.items()}
        self.local = {
            fr: max(0, self.subtree.get(fr, 0) - q.lending_limit)
            for fr, q in self.quotas.items()
            if q.lending_limit is not None
        }

    def local_available(self, fr: FlavorResource) -> int:
        free = self.local.get(fr, 0) - self.usage.get(fr, 0)
        return free if free > 0 else 0

    def available(self, fr: FlavorResource) -> int:
        """What can still be used here: private leftovers plus what the ancestors let us borrow."""
        steps = self._available_steps.get(fr)
        if steps is None:
            steps = self._available_steps[fr] = self._steps_for_available(fr)
        top_quota, top_usage, below = steps
        avail = top_quota - top_usage.get(fr, 0)
        for usage, lq, borrow, stored_in_parent in below:
            used = usage.get(fr, 0)
            if borrow is not None:
                capped = stored_in_parent - (used - lq if used > lq else 0) + borrow
                if capped < avail:
                    avail = capped
            if lq > used:
                avail += lq - used
        return avail

    def _steps_for_available(self, fr: FlavorResource) -> tuple[
            int, dict[FlavorResource, int], tuple[tuple[dict[FlavorResource, int], int, int | None, int], ...]]:
        """``available``'s walk, root first: the root's subtree quota and usage, then per node
        below it its usage, private quota, borrowing limit and the quota it stores in its parent."""
        path = self.path()
        top = path[-1]
        below = tuple(
            (node.usage, node.local.get(fr, 0), node.borrow_limits.get(fr),
             node.subtree.get(fr, 0) - node.local.get(fr, 0))
            for node in reversed(path[:-1])
        )
        return top.subtree.get(fr, 0), top.usage, below

    def potential_available(self, fr: FlavorResource) -> int:
        """The most this node could ever get with every other node idle (quotas only: remembered)."""
        found = self._potential.get(fr)
        if found is None:
            if self.parent is None:
                found = self.subtree.get(fr, 0)
            else:
                found = self.local_quota(fr) + self.parent.potential_available(fr)
                borrow = self.quota(fr).borrowing_limit
                if borrow is not None:
                    found = min(self.subtree.get(fr, 0) + borrow, found)
            self._potential[fr] = found
        return found

    def _chain_for(self, fr: FlavorResource) -> tuple[tuple[dict[FlavorResource, int], int], ...]:
        chain = self._chain.get(fr)
        if chain is None:
            chain = self._chain[fr] = tuple((node.usage, node.local.get(fr, 0)) for node in self.path())
        return chain

    def add_usage(self, fr: FlavorResource, value: int) -> None:
        """Use ``value`` more here; what the private quota cannot cover is used in the parent too."""
        for usage, lq in self._chain.get(fr) or self._chain_for(fr):
            used = usage.get(fr, 0)
            usage[fr] = used + value
            local = lq - used if lq > used else 0
            if value <= local:
                return
            value -= local

    def remove_usage(self, fr: FlavorResource, value: int) -> None:
        """Release ``value``; the part that was held in the parent is released there too."""
        for usage, lq in self._chain.get(fr) or self._chain_for(fr):
            used = usage.get(fr, 0)
            usage[fr] = used - value
            stored_in_parent = used - lq
            if stored_in_parent <= 0:
                return
            if stored_in_parent < value:
                value = stored_in_parent

    def borrowing_with(self, fr: FlavorResource, value: int) -> bool:
        """Would using ``value`` more take this node above its (subtree) nominal quota?"""
        return self.nominal.get(fr, 0) < self.usage.get(fr, 0) + value

    def borrowing(self, fr: FlavorResource) -> bool:
        return self.borrowing_with(fr, 0)

    def within_nominal(self, frs: frozenset[FlavorResource]) -> bool:
        """Kueue's IsWithinNominalInResources: usage <= SubtreeQuota for each resource."""
        usage, subtree = self.usage, self.subtree
        for fr in frs:
            if usage.get(fr, 0) > subtree.get(fr, 0):
                return False
        return True

    def ancestors(self) -> tuple[Node, ...]:
        """The cohorts above, lowest first (remembered: the preemption walks read them often)."""
        if self._ancestors is None:
            self.freeze()
        assert self._ancestors is not None
        return self._ancestors

    def root(self) -> Node:
        return self.path()[-1]

    def height(self) -> int:
        """Distance to the furthest leaf (a cohort with only ClusterQueues has height 1)."""
        if self._height is None:
            best = min(len(self.child_cqs) + len(self.child_cohorts), 1)
            for child in self.child_cohorts:
                best = max(best, child.height() + 1)
            self._height = best
        return self._height

    def subtree_cqs(self) -> list[Node]:
        out = list(self.child_cqs)
        for child in self.child_cohorts:
            out.extend(child.subtree_cqs())
        return out


def fits_in_quota(node: Node, requests: Mapping[FlavorResource, int]) -> tuple[bool, dict[FlavorResource, int]]:
    """Does ``requests`` fit in this node's SubtreeQuota, and what is left for the parent to cover."""
    fits = True
    remaining: dict[FlavorResource, int] = {}
    usage, subtree, local = node.usage, node.subtree, node.local
    for fr, value in requests.items():
        used = usage.get(fr, 0)
        if subtree.get(fr, 0) < used + value:
            fits = False
        free = local.get(fr, 0) - used  # local_available, before the clamp at 0
        rest = value - free if free > 0 else value
        remaining[fr] = rest if rest > 0 else 0
    return fits, remaining


def lowest_fitting_subtree(cq: Node, fr: FlavorResource, value: int) -> tuple[int, bool]:
    """Height of the lowest subtree whose quota covers ``value`` more (Kueue's borrowing level).

    0 means no borrowing. The flag says whether that subtree is smaller than the
    whole cohort tree (so something above could still be reclaimed).
    """
    if not cq.borrowing_with(fr, value) or cq.parent is None:
        return 0, cq.parent is not None
    node = lender(cq, fr, value)
    if node is None:
        return cq.root().height(), False
    return node.height(), node.parent is not None


def lender(cq: Node, fr: FlavorResource, value: int) -> Node | None:
    """The lowest cohort whose subtree quota covers ``value`` more for ``cq`` (None: not even the root)."""
    remaining = value - cq.local_available(fr)
    for node in cq.ancestors():  # borrowing_with and local_available, inlined: a hot walk
        used = node.usage.get(fr, 0)
        if node.nominal.get(fr, 0) >= used + remaining:
            return node
        free = node.local.get(fr, 0) - used
        if free > 0:
            remaining -= free
    return None


class QuotaTree:
    """All nodes, plus the set of ClusterQueues whose cohort chain has a cycle (inactive)."""

    def __init__(self, config: Config) -> None:
        self.cqs: dict[str, Node] = {}
        self.cohorts: dict[str, Node] = {}
        self.cyclic: set[str] = set()
        for name in sorted(config.cohorts):
            self.cohorts[name] = Node(name, True, config.cohorts[name].quotas)
        for name in sorted(config.cluster_queues):
            spec = config.cluster_queues[name]
            self.cqs[name] = Node(name, False, spec.quotas)
            if spec.cohort:
                self._cohort(spec.cohort)
        for name in sorted(config.cohorts):
            parent = config.cohorts[name].parent
            if parent:
                self._cohort(parent)
        for name in sorted(self.cohorts):
            spec_parent = config.cohorts[name].parent if name in config.cohorts else None
            if spec_parent and not self._creates_cycle(name, spec_parent, config):
                self._link(self.cohorts[name], self.cohorts[spec_parent])
            elif spec_parent:
                self.cyclic.add(name)
        for name in sorted(self.cqs):
            cohort = config.cluster_queues[name].cohort
            if cohort:
                self._link(self.cqs[name], self.cohorts[cohort])
        for node in self.cohorts.values():
            if node.parent is None:
                self._accumulate(node)
        for node in self.cqs.values():
            if node.parent is None:
                node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
                node._compute_local()
        for node in [*self.cohorts.values(), *self.cqs.values()]:
            node.freeze()

    def _cohort(self, name: str) -> Node:
        if name not in self.cohorts:
            self.cohorts[name] = Node(name, True, {})
        return self.cohorts[name]

    def _creates_cycle(self, name: str, parent: str, config: Config) -> bool:
        seen = {name}
        current: str | None = parent
        while current:
            if current in seen:
                return True
            seen.add(current)
            current = config.cohorts[current].parent if current in config.cohorts else None
        return False

    @staticmethod
    def _link(child: Node, parent: Node) -> None:
        child.parent = parent
        (parent.child_cohorts if child.is_cohort else parent.child_cqs).append(child)

    def _accumulate(self, node: Node) -> None:
        node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
        for child in node.child_cohorts:
            self._accumulate(child)
        for cq in node.child_cqs:
            cq.subtree = {fr: q.nominal for fr, q in cq.quotas.items()}
            cq._compute_local()
        for child in [*node.child_cohorts, *node.child_cqs]:
            for fr, value in child.subtree.items():
                node.subtree[fr] = node.subtree.get(fr, 0) + value - child.local_quota(fr)
        node._compute_local()

    def in_cycle(self, cq: str) -> bool:
        """A ClusterQueue under a cohort whose parent chain loops is inactive in Kueue."""
        node = self.cqs[cq].parent
        while node is not None:
            if node.name in self.cyclic:
                return True
            node = node.parent
        return False
