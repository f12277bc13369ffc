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

from collections.abc import Mapping
from dataclasses import dataclass

from .model import Workload
from .objects import ClusterQueueSpec, FlavorResource
from .quota import Node, QuotaTree, fits_in_quota, lowest_fitting_subtree

WITHIN_CQ = "withinClusterQueue"
RECLAIM = "reclaimWithinCohort"
BORROW = "borrowWithinCohort"

# candidate variants
_WITHIN, _HIERARCHICAL, _RECLAIM_NO_BORROW, _RECLAIM_WHILE_BORROW = 1, 2, 3, 4
_REASON = {_WITHIN: WITHIN_CQ, _HIERARCHICAL: RECLAIM, _RECLAIM_NO_BORROW: RECLAIM, _RECLAIM_WHILE_BORROW: BORROW}

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

    def uses_any(self, frs: frozenset[FlavorResource]) -> bool:
        return any((flavor, res) in frs for res, flavor in self.flavors.items())


@dataclass(frozen=True)
class Target:
    victim: Admitted
    reason: str  # withinClusterQueue | reclaimWithinCohort | borrowWithinCohort


def creation_key(wl: Workload) -> tuple[int, str]:
    """Creation order; equal timestamps are broken by name, as the contract says."""
    return (wl.created, wl.name)


def satisfies_policy(policy: str, preemptor: Workload, candidate: Workload) -> bool:
    """Kueue's SatisfiesPreemptionPolicy for LowerPriority / LowerOrNewerEqualPriority / Any."""
    if policy == "LowerPriority":
        return preemptor.priority > candidate.priority
    if policy == "LowerOrNewerEqualPriority":
        return preemptor.priority > candidate.priority or (
            preemptor.priority == candidate.priority and creation_key(preemptor) < creation_key(candidate)
        )
    return policy == "Any"


def remove(tree: QuotaTree, adm: Admitted) -> None:
    node = tree.cqs[adm.cq]
    for fr, value in adm.usage.items():
        node.remove_usage(fr, value)


def add(tree: QuotaTree, adm: Admitted) -> None:
    node = tree.cqs[adm.cq]
    for fr, value in adm.usage.items():
        node.add_usage(fr, value)


@dataclass
class _Candidate:
    adm: Admitted
    lca: Node | None
    variant: int


class Preemptor:
    """One preemption question: can ``workload`` in ``spec`` fit ``usage`` by evicting others?"""

    def __init__(
        self,
        tree: QuotaTree,
        admitted: Mapping[str, Mapping[str, Admitted]],
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

    # -- candidates ---------------------------------------------------------
    def _forbidden_borrow(self) -> bool:
        return self.spec.preemption.borrow_within_cohort == "Never"

    def _classify(self, adm: Admitted, hierarchical: bool) -> int | None:
        if not adm.uses_any(self.frs):
            return None
        pre = self.spec.preemption
        same = adm.cq == self.spec.name
        policy = pre.within_cluster_queue if same else pre.reclaim_within_cohort
        if not satisfies_policy(policy, self.workload, adm.workload):
            return None
        if same:
            return _WITHIN
        if hierarchical:
            return _HIERARCHICAL
        if self._forbidden_borrow():
            return _RECLAIM_NO_BORROW
        cand, inc = adm.workload.priority, self.workload.priority
        threshold = pre.max_priority_threshold
        if cand >= inc or (threshold is not None and cand > threshold):
            return _RECLAIM_NO_BORROW
        return _RECLAIM_WHILE_BORROW

    def _from_cq(self, cq: str, lca: Node | None, hierarchical: bool, out: list[_Candidate]) -> None:
        for adm in self.admitted.get(cq, {}).values():
            variant = self._classify(adm, hierarchical)
            if variant is not None:
                out.append(_Candidate(adm, lca, variant))

    def _in_subtree(self, current: Node, root: Node, skip: Node | None, hier: bool, out: list[_Candidate]) -> None:
        for child in current.child_cohorts:
            if child is skip or child.within_nominal(self.frs):
                continue
            self._in_subtree(child, root, skip, hier, out)
        for cq in current.child_cqs:
            if cq is not self.node and not cq.within_nominal(self.frs):
                self._from_cq(cq.name, root, hier, out)

    def _order(self, cand: _Candidate) -> tuple[bool, int, int, int, str]:
        adm = cand.adm
        return (adm.cq == self.spec.name, adm.workload.priority, -adm.order[0], -adm.order[1], adm.workload.name)

    def candidates(self) -> tuple[list[_Candidate], bool, bool]:
        """All candidates in trial order, and whether none / no hierarchical ones come from other queues."""
        same: list[_Candidate] = []
        if self.spec.preemption.within_cluster_queue != "Never":
            self._from_cq(self.spec.name, None, False, same)
        hierarchy: list[_Candidate] = []
        by_priority: list[_Candidate] = []
        if self.node.parent is not None and self.spec.preemption.reclaim_within_cohort != "Never":
            previous: Node | None = None
            advantage, remaining = fits_in_quota(self.node, self.usage)
            for root in self.node.ancestors():
                self._in_subtree(root, root, previous, advantage, hierarchy if advantage else by_priority)
                fits, remaining = fits_in_quota(root, remaining)
                advantage = advantage or fits
                previous = root
        for group in (same, hierarchy, by_priority):
            group.sort(key=self._order)
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

    def targets(self) -> list[Target]:
        """The minimal set of victims Kueue would pick, or [] if none makes the workload fit."""
        ordered, none_from_others, none_hierarchical = self.candidates()
        forbidden = self._forbidden_borrow()
        if none_from_others or (forbidden and not self._under_nominal()):
            attempts = [True]
        elif forbidden and none_hierarchical:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for allow_borrowing in attempts:
            chosen: list[_Candidate] = []
            for cand in ordered:
                if not self._valid(cand, allow_borrowing):
                    continue
                remove(self.tree, cand.adm)
                chosen.append(cand)
                if self.fits(allow_borrowing):
                    chosen = self._fill_back(chosen, allow_borrowing)
                    for kept in chosen:
                        add(self.tree, kept.adm)
                    return [Target(c.adm, _REASON[c.variant]) for c in chosen]
            for kept in chosen:
                add(self.tree, kept.adm)
        return []

    def _fill_back(self, chosen: list[_Candidate], allow_borrowing: bool) -> list[_Candidate]:
        """Return victims (all but the last one tried, newest first) whose eviction turned out unneeded."""
        for i in range(len(chosen) - 2, -1, -1):
            add(self.tree, chosen[i].adm)
            if self.fits(allow_borrowing):
                chosen[i] = chosen[-1]
                chosen.pop()
            else:
                remove(self.tree, chosen[i].adm)
        return chosen


def simulate_preemption(
    tree: QuotaTree,
    admitted: Mapping[str, Mapping[str, Admitted]],
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
        remove(tree, target.victim)
    borrow = lowest_fitting_subtree(node, fr, value)[0]
    for target in found:
        add(tree, target.victim)
    if any(t.victim.cq == spec.name for t in found):
        return PREEMPT, borrow
    return RECLAIM_ONLY, borrow
