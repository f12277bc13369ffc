"""Classical preemption: which admitted workloads to evict so a pending one fits.

Models ``pkg/scheduler/preemption`` (classical mode, no fair sharing):

* candidates come from the preemptor's own ClusterQueue (``withinClusterQueue``)
  and, with ``reclaimWithinCohort`` set, from other ClusterQueues of the cohort
  tree that use more than their quota (only subtrees above their quota are
  visited);
* a candidate in another ClusterQueue is a *hierarchical reclaim* one when the
  preemptor's own subtree has the quota it needs; otherwise it may only be
  taken if the preemptor ends up not borrowing, unless ``borrowWithinCohort``
  allows it for candidates of lower priority (and at most
  ``maxPriorityThreshold``);
* candidates are tried in order: other ClusterQueues before the preemptor's
  own, lower priority first, most recently admitted first; the first prefix
  that makes the preemptor fit is then pruned, newest-tried-first, by putting
  back every victim whose return still leaves the preemptor fitting.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter

from .api import Workload
from .objects import ClusterQueueSpec, FlavorResource
from .quota import Node, QuotaTree, fits_in_quota, lowest_fitting_subtree

WITHIN_CQ = "withinClusterQueue"
RECLAIM = "reclaimWithinCohort"
BORROW = "borrowWithinCohort"

# candidate variants
_WITHIN, _HIERARCHICAL, _RECLAIM_NO_BORROW, _RECLAIM_WHILE_BORROW = 1, 2, 3, 4
_REASON = {_WITHIN: WITHIN_CQ, _HIERARCHICAL: RECLAIM, _RECLAIM_NO_BORROW: RECLAIM, _RECLAIM_WHILE_BORROW: BORROW}

_RANK = attrgetter("rank")
_VICTIM_RANK = attrgetter("victim_rank")

# what the oracle reports for one flavor-resource
NO_CANDIDATES, PREEMPT, RECLAIM_ONLY = 0, 1, 2


@dataclass(eq=False)
class Admitted:
    """A workload holding quota: its ClusterQueue, flavors, usage and admission order."""

    workload: Workload
    cq: str
    flavors: dict[str, str]
    usage: dict[FlavorResource, int]
    order: tuple[int, int]  # larger = admitted more recently
    victim_rank: tuple[int, int, int, str] = field(init=False)

    def __post_init__(self) -> None:
        # victim order within one group of candidates: lower priority, then most recently admitted
        self.victim_rank = (self.workload.priority, -self.order[0], -self.order[1], self.workload.name)


class AdmittedIndex:
    """Admitted workloads per ClusterQueue, also indexed by the flavor-resources they use."""

    def __init__(self, cluster_queues: Iterable[str]) -> None:
        self.by_cq: dict[str, dict[str, Admitted]] = {cq: {} for cq in cluster_queues}
        self._by_fr: dict[str, dict[FlavorResource, dict[str, Admitted]]] = {cq: {} for cq in self.by_cq}
        # cq -> flavor-resource -> priority -> usage: a cheap upper bound of what preemption can free
        self._by_priority: dict[str, dict[FlavorResource, dict[int, int]]] = {cq: {} for cq in self.by_cq}
        # sorted candidate lists are reused until the ClusterQueue's admitted set changes
        self._version: dict[str, int] = dict.fromkeys(self.by_cq, 0)
        self._sorted: dict[tuple[str, frozenset[FlavorResource]], tuple[int, list[Admitted]]] = {}
        self._names: dict[str, tuple[int, frozenset[str]]] = {}

    def add(self, adm: Admitted) -> None:
        self._version[adm.cq] += 1
        self.by_cq[adm.cq][adm.workload.name] = adm
        for res, flavor in adm.flavors.items():
            self._by_fr[adm.cq].setdefault((flavor, res), {})[adm.workload.name] = adm
        prio = adm.workload.priority
        for fr, value in adm.usage.items():
            bucket = self._by_priority[adm.cq].setdefault(fr, {})
            bucket[prio] = bucket.get(prio, 0) + value

    def remove(self, adm: Admitted) -> None:
        self._version[adm.cq] += 1
        del self.by_cq[adm.cq][adm.workload.name]
        for res, flavor in adm.flavors.items():
            self._by_fr[adm.cq][(flavor, res)].pop(adm.workload.name, None)
        prio = adm.workload.priority
        for fr, value in adm.usage.items():
            bucket = self._by_priority[adm.cq].setdefault(fr, {})
            left = bucket.get(prio, 0) - value
            if left:
                bucket[prio] = left
            else:
                bucket.pop(prio, None)

    def names(self, cq: str) -> frozenset[str]:
        """The workloads admitted in ``cq``, remembered until that set changes (for the loop check)."""
        cached = self._names.get(cq)
        if cached is None or cached[0] != self._version[cq]:
            cached = self._names[cq] = (self._version[cq], frozenset(self.by_cq[cq]))
        return cached[1]

    def usage_up_to(self, cq: str, fr: FlavorResource, max_priority: int | None) -> int:
        """Usage of ``fr`` in ``cq`` by workloads of at most ``max_priority`` (None: any priority)."""
        bucket = self._by_priority[cq].get(fr)
        if not bucket:
            return 0
        if max_priority is None:
            return sum(bucket.values())
        total = 0
        for priority, value in bucket.items():
            if priority <= max_priority:
                total += value
        return total

    def using(self, cq: str, frs: frozenset[FlavorResource]) -> list[Admitted]:
        """The admitted workloads of ``cq`` that use any of ``frs``, in victim order (lowest priority first)."""
        key = (cq, frs)
        cached = self._sorted.get(key)
        if cached is not None and cached[0] == self._version[cq]:
            return cached[1]
        index = self._by_fr[cq]
        found: dict[str, Admitted] = {}
        for fr in sorted(frs):
            found.update(index.get(fr, {}))
        ordered = sorted(found.values(), key=_VICTIM_RANK)
        self._sorted[key] = (self._version[cq], ordered)
        return ordered


@dataclass(frozen=True)
class Target:
    victim: Admitted
    reason: str  # withinClusterQueue | reclaimWithinCohort | borrowWithinCohort


def creation_key(wl: Workload) -> tuple[int, str]:
    """Creation order; equal timestamps are broken by name, as the contract says."""
    return (wl.created, wl.name)


def remove(tree: QuotaTree, adm: Admitted) -> None:
    node = tree.cqs[adm.cq]
    for fr, value in adm.usage.items():
        node.remove_usage(fr, value)


def add(tree: QuotaTree, adm: Admitted) -> None:
    node = tree.cqs[adm.cq]
    for fr, value in adm.usage.items():
        node.add_usage(fr, value)


@dataclass(slots=True)
class _Candidate:
    adm: Admitted
    lca: Node | None
    variant: int
    rank: tuple[int, int, int, str]


class Preemptor:
    """One preemption question: can ``workload`` in ``spec`` fit ``usage`` by evicting others?"""

    def __init__(
        self,
        tree: QuotaTree,
        admitted: AdmittedIndex,
        spec: ClusterQueueSpec,
        workload: Workload,
        usage: Mapping[FlavorResource, int],
        frs: frozenset[FlavorResource],
    ) -> None:
        self.tree = tree
        self.admitted = admitted
        self.spec = spec
        self.node = tree.cqs[spec.name]
        self.workload = workload
        self.usage = dict(usage)
        self.frs = frs
        self._levels: list[tuple[Node, list[Node], bool]] | None = None

    # Only the preemptor's flavor-resources are read while searching, and every
    # flavor-resource is accounted independently in the tree, so victims are taken
    # out and put back for those flavor-resources only (looked up in the victim's
    # usage: the oracle asks about one flavor-resource, a victim uses several).
    def _take(self, adm: Admitted) -> None:
        node, used = self.tree.cqs[adm.cq], adm.usage
        for fr in self.usage:
            value = used.get(fr)
            if value is not None:
                node.remove_usage(fr, value)

    def _give(self, adm: Admitted) -> None:
        node, used = self.tree.cqs[adm.cq], adm.usage
        for fr in self.usage:
            value = used.get(fr)
            if value is not None:
                node.add_usage(fr, value)

    # -- candidates ---------------------------------------------------------
    def _forbidden_borrow(self) -> bool:
        return self.spec.preemption.borrow_within_cohort == "Never"

    def _from_cq(self, cq: str, lca: Node | None, hierarchical: bool, out: list[_Candidate]) -> None:
        """Candidates of one ClusterQueue: the policy filter and the variant (own queue, hierarchical
        reclaim, reclaim only without borrowing, reclaim while borrowing), in one loop as it is the hot path."""
        pre = self.spec.preemption
        same = cq == self.spec.name
        policy = pre.within_cluster_queue if same else pre.reclaim_within_cohort
        if policy not in ("LowerPriority", "LowerOrNewerEqualPriority", "Any"):
            return
        p = self.workload.priority
        mine = creation_key(self.workload)
        if same:
            variant = _WITHIN
        elif hierarchical:
            variant = _HIERARCHICAL
        elif self._forbidden_borrow():
            variant = _RECLAIM_NO_BORROW
        else:
            variant = 0  # decided per candidate
        threshold = pre.max_priority_threshold
        for adm in self.admitted.using(cq, self.frs):  # lowest priority first: stop at the first too high
            cand = adm.workload.priority
            if policy == "LowerPriority" and cand >= p:
                break
            if policy == "LowerOrNewerEqualPriority":
                if cand > p:
                    break
                if cand == p and not mine < creation_key(adm.workload):
                    continue
            kind = variant
            if not kind:
                below = cand < p and (threshold is None or cand <= threshold)
                kind = _RECLAIM_WHILE_BORROW if below else _RECLAIM_NO_BORROW
            out.append(_Candidate(adm, lca, kind, adm.victim_rank))

    def levels(self) -> list[tuple[Node, list[Node], bool]]:
        """Per ancestor of the preemptor's ClusterQueue, lowest first: the other ClusterQueues
        above their quota that it adds (``_over_quota_cqs``), and whether the preemptor's subtree
        below it already has the quota the preemptor needs (then its candidates are hierarchical
        reclaim ones). Both ``_reach`` and ``candidates`` read this before any victim is taken out,
        on the same tree, so it is worked out once."""
        if self._levels is None:
            levels: list[tuple[Node, list[Node], bool]] = []
            previous: Node | None = None
            advantage, remaining = fits_in_quota(self.node, self.usage)
            ancestors = self.node.ancestors()
            for i, root in enumerate(ancestors):
                levels.append((root, self._over_quota_cqs(root, previous), advantage))
                if not advantage and i + 1 < len(ancestors):  # once it holds, it holds above too
                    advantage, remaining = fits_in_quota(root, remaining)
                previous = root
            self._levels = levels
        return self._levels

    def candidates(self) -> tuple[list[_Candidate], bool, bool]:
        """All candidates in trial order, and whether none / no hierarchical ones come from other queues."""
        same: list[_Candidate] = []
        if self.spec.preemption.within_cluster_queue != "Never":
            self._from_cq(self.spec.name, None, False, same)
        hierarchy: list[_Candidate] = []
        by_priority: list[_Candidate] = []
        if self.node.parent is not None and self.spec.preemption.reclaim_within_cohort != "Never":
            for root, over_quota, advantage in self.levels():
                for cq in over_quota:
                    self._from_cq(cq.name, root, advantage, hierarchy if advantage else by_priority)
        for group in (same, hierarchy, by_priority):
            group.sort(key=_RANK)  # other queues' groups and the own queue's are kept apart
        ordered = hierarchy + by_priority + same
        return ordered, not hierarchy and not by_priority, not hierarchy

    def _valid(self, cand: _Candidate, borrow: bool) -> bool:
        if cand.adm.cq == self.spec.name:
            return True
        if borrow and cand.variant == _RECLAIM_NO_BORROW:
            return False
        node = self.tree.cqs[cand.adm.cq]
        if node.within_nominal(self.frs):
            return False
        for ancestor in node.ancestors():
            if ancestor is cand.lca:
                break
            if ancestor.within_nominal(self.frs):
                return False
        return True

    # -- search -------------------------------------------------------------
    def fits(self, allow_borrowing: bool) -> bool:
        for fr, value in self.usage.items():
            if not allow_borrowing and self.node.borrowing_with(fr, value):
                return False
            if value > max(0, self.node.available(fr)):
                return False
        return True

    def _under_nominal(self) -> bool:
        return all(self.node.quota(fr).nominal > self.node.usage.get(fr, 0) for fr in self.frs)

    def _priority_cap(self, policy: str) -> tuple[bool, int | None]:
        """Whether ``policy`` allows any victim, and the highest victim priority it can allow."""
        p = self.workload.priority
        if policy == "LowerPriority":
            return True, p - 1
        if policy == "LowerOrNewerEqualPriority":
            return True, p
        return policy == "Any", None

    def _reach(self) -> tuple[dict[str, int | None], dict[str, int | None]]:
        """For the attempts with and without borrowing: ClusterQueue -> the highest victim
        priority that attempt could take there (None: any), walking the tree as
        ``candidates`` does but without listing the candidates."""
        pre = self.spec.preemption
        borrowing: dict[str, int | None] = {}
        allowed, cap = self._priority_cap(pre.within_cluster_queue)
        if allowed:
            borrowing[self.spec.name] = cap
        plain = dict(borrowing)
        allowed, cap = self._priority_cap(pre.reclaim_within_cohort)
        if not allowed or self.node.parent is None:
            return borrowing, plain
        # while borrowing, only candidates below the preemptor (and the threshold) stay
        below = min(x for x in (cap, self.workload.priority - 1, pre.max_priority_threshold) if x is not None)
        forbidden = self._forbidden_borrow()
        for _, over_quota, advantage in self.levels():
            for cq in over_quota:
                plain[cq.name] = cap
                if advantage:
                    borrowing[cq.name] = cap
                elif not forbidden:
                    borrowing[cq.name] = below
        return borrowing, plain

    def _over_quota_cqs(self, current: Node, skip: Node | None) -> list[Node]:
        """The other ClusterQueues under ``current`` that are above their nominal quota, outside
        ``skip`` and below no cohort within its own: where candidates come from."""
        found: list[Node] = []
        frs = self.frs
        for child in current.child_cohorts:
            if child is not skip and not child.within_nominal(frs):
                found.extend(self._over_quota_cqs(child, None))
        own = self.node
        for cq in current.child_cqs:
            if cq is not own:
                usage, subtree = cq.usage, cq.subtree  # within_nominal, inlined: most nodes are ClusterQueues
                for fr in frs:
                    if usage.get(fr, 0) > subtree.get(fr, 0):
                        found.append(cq)
                        break
        return found

    def _could_fit(self) -> bool:
        """A quick bound: would the workload fit, in either attempt, with every workload
        that attempt could reach gone? Freeing usage never lowers what is available, so
        when it would not, no set of victims does and the candidates need not be listed.

        Most preemptors asked are hopeless, so two exact arithmetic bounds (``_freeable``,
        ``_nominal_room``) answer most attempts before the tree is changed to try them."""
        borrowing, plain = self._reach()
        if borrowing:
            freed = self._freed(borrowing)
            if self._freeable(freed) and self._fits_freed(freed, True):
                return True
        if not plain or not self._nominal_room(plain):
            return False
        freed = self._freed(plain)
        return self._freeable(freed) and self._fits_freed(freed, False)

    def _freed(self, reach: Mapping[str, int | None]) -> list[tuple[Node, FlavorResource, int]]:
        """What every workload ``reach`` allows would free, per ClusterQueue and flavor-resource
        (nonzero only); read once for both ``_freeable`` and ``_fits_freed``."""
        usage_up_to, cqs = self.admitted.usage_up_to, self.tree.cqs
        return [(cqs[cq], fr, value) for cq, cap in reach.items() for fr in self.usage
                if (value := usage_up_to(cq, fr, cap))]

    def _freeable(self, freed: list[tuple[Node, FlavorResource, int]]) -> bool:
        """Could freeing ``freed`` make room for every flavor-resource? Freeing X units
        anywhere in the tree raises ``available`` here by at most X: a freed unit either reaches the
        root or is kept by the lendingLimit of one node on its way up, and in ``available``'s walk
        down our path the root's term grows by the units that reached it, a borrowingLimit's cap by
        no more than what was released into that cohort, and a node's private leftover by the units
        it kept. So when ``value > max(0, available + X)`` no victims drawn from ``reach`` suffice."""
        total = dict.fromkeys(self.usage, 0)
        for _, fr, value in freed:
            total[fr] += value
        for fr, value in self.usage.items():
            if value > max(0, self.node.available(fr) + total[fr]):
                return False
        return True

    def _nominal_room(self, reach: Mapping[str, int | None]) -> bool:
        """The attempt without borrowing needs our own usage within nominal quota afterwards, and
        only our own victims lower our own usage (the others' release reaches only cohorts)."""
        own = self.spec.name
        for fr, value in self.usage.items():
            used = self.node.usage.get(fr, 0)
            if own in reach:
                used -= self.admitted.usage_up_to(own, fr, reach[own])
            if self.node.quota(fr).nominal < used + value:
                return False
        return True

    def _fits_freed(self, freed: list[tuple[Node, FlavorResource, int]], allow_borrowing: bool) -> bool:
        for node, fr, value in freed:
            node.remove_usage(fr, value)
        ok = self.fits(allow_borrowing)
        for node, fr, value in reversed(freed):
            node.add_usage(fr, value)
        return ok

    def targets(self) -> list[Target]:
        """The minimal set of victims Kueue would pick, or [] if none makes the workload fit."""
        if not self._could_fit():
            return []
        ordered, none_from_others, none_hierarchical = self.candidates()
        forbidden = self._forbidden_borrow()
        if none_from_others or (forbidden and not self._under_nominal()):
            attempts = [True]
        elif forbidden and none_hierarchical:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for allow_borrowing in attempts:
            pool = [c for c in ordered if not (allow_borrowing and c.variant == _RECLAIM_NO_BORROW)]
            if not pool or not self._fits_without(pool, allow_borrowing):
                continue
            chosen: list[_Candidate] = []
            for cand in pool:
                if not self._valid(cand, allow_borrowing):
                    continue
                self._take(cand.adm)
                chosen.append(cand)
                if self.fits(allow_borrowing):
                    chosen = self._fill_back(chosen, allow_borrowing)
                    for kept in chosen:
                        self._give(kept.adm)
                    return [Target(c.adm, _REASON[c.variant]) for c in chosen]
            for kept in chosen:
                self._give(kept.adm)
        return []

    def _fits_without(self, pool: list[_Candidate], allow_borrowing: bool) -> bool:
        """Might the preemptor fit with every candidate gone? If not, no prefix of them can do it.

        Answered by the arithmetic of ``_freeable`` and ``_nominal_room`` on what the candidates
        use, without changing the tree: when the bound says no, the search would fail (freeing
        never lowers what is available); when it says maybe, the search itself finds out."""
        freed = dict.fromkeys(self.usage, 0)
        own_freed = dict.fromkeys(self.usage, 0)
        own = self.spec.name
        for cand in pool:
            used = cand.adm.usage
            own_too = cand.adm.cq == own
            for fr in freed:  # a pool holds dozens of victims; the oracle asks about one flavor-resource
                value = used.get(fr)
                if value is not None:
                    freed[fr] += value
                    if own_too:
                        own_freed[fr] += value
        for fr, value in self.usage.items():
            if value > max(0, self.node.available(fr) + freed[fr]):
                return False
            if not allow_borrowing and self.node.borrowing_with(fr, value - own_freed[fr]):
                return False
        return True

    def _fill_back(self, chosen: list[_Candidate], allow_borrowing: bool) -> list[_Candidate]:
        """Return victims (all but the last one tried, newest first) whose eviction turned out unneeded."""
        for i in range(len(chosen) - 2, -1, -1):
            self._give(chosen[i].adm)
            if self.fits(allow_borrowing):
                chosen[i] = chosen[-1]
                chosen.pop()
            else:
                self._take(chosen[i].adm)
        return chosen


def simulate_preemption(
    tree: QuotaTree,
    admitted: AdmittedIndex,
    spec: ClusterQueueSpec,
    workload: Workload,
    fr: FlavorResource,
    value: int,
) -> tuple[int, int]:
    """The flavor assigner's oracle: could preemption make ``value`` of ``fr`` fit, and how much borrowing then."""
    node = tree.cqs[spec.name]
    found = Preemptor(tree, admitted, spec, workload, {fr: value}, frozenset([fr])).targets()
    if not found:
        return NO_CANDIDATES, lowest_fitting_subtree(node, fr, value)[0]
    for target in found:
        tree.cqs[target.victim.cq].remove_usage(fr, target.victim.usage.get(fr, 0))
    borrow = lowest_fitting_subtree(node, fr, value)[0]
    for target in found:
        tree.cqs[target.victim.cq].add_usage(fr, target.victim.usage.get(fr, 0))
    if any(t.victim.cq == spec.name for t in found):
        return PREEMPT, borrow
    return RECLAIM_ONLY, borrow
