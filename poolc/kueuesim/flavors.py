"""Flavor assignment: for each resource group, which flavor a workload gets and how.

Models ``pkg/scheduler/flavorassigner``: the flavors of a group are tried in
the ClusterQueue's order. For every requested resource the flavor either fits
in the available quota (possibly by borrowing, with a "borrowing level" = the
height of the smallest cohort subtree that has room), needs preemption (only
asked of the preemption oracle when the request is within nominal quota, when
something in the tree could be reclaimed, or when borrowWithinCohort is on),
or cannot fit at all (more than the most this ClusterQueue could ever get).
flavorFungibility decides whether to stop at the first flavor that needs
borrowing or preemption or to keep looking and keep the best one
(default: stop when borrowing, go on when preemption is needed). The scan
resumes after the last flavor tried when the previous attempt stopped early.

Before quota, a flavor must match the pod's node selection, as Kueue's
``flavorSelector`` does: only label keys that some flavor of the resource group
names in its ``nodeLabels`` count (other keys are the kube-scheduler's business);
the pod's ``nodeSelector`` on those keys must equal the flavor's labels, and its
required node affinity, its expressions on those keys kept, must match them in one
of its terms (a term left without expressions makes the affinity match anything).
A flavor that does not match is skipped with "doesn't match node affinity".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .api import Workload
from .objects import ClusterQueueSpec, FlavorResource, Fungibility
from .preemption import NO_CANDIDATES, PREEMPT
from .quantity import format_amount
from .quota import QuotaTree, lowest_fitting_subtree

# representative modes of an assignment, as Kueue orders them
NO_FIT, PREEMPT_MODE, FIT = 0, 1, 3
# finer modes used to compare flavors
_G_NOFIT, _G_NOCAND, _G_PREEMPT, _G_RECLAIM, _G_FIT = 0, 1, 2, 3, 4
_BIG = 1 << 62

Oracle = Callable[[FlavorResource, int], tuple[int, int]]


@dataclass
class Assignment:
    """The outcome of one flavor assignment attempt."""

    flavors: dict[str, str] = field(default_factory=dict)  # resource -> flavor
    modes: dict[str, int] = field(default_factory=dict)  # resource -> NO_FIT / PREEMPT_MODE / FIT
    borrowing: int = 0
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    tried: dict[int, int] = field(default_factory=dict)  # group index -> last flavor index tried (-1: all)
    failed: bool = False

    @property
    def mode(self) -> int:
        if self.failed:
            return NO_FIT
        return min(self.modes.values(), default=FIT)

    def needs_preemption(self) -> frozenset[FlavorResource]:
        return frozenset((self.flavors[r], r) for r, m in self.modes.items() if m == PREEMPT_MODE)

    def pending_flavors(self) -> bool:
        return any(idx != -1 for idx in self.tried.values())


@dataclass(frozen=True)
class RequestPlan:
    """How ``assign`` walks one request: the resource groups in the order Kueue visits them (by
    their first requested resource, alphabetically), each with the requests it covers, then the
    first nonzero request that no group covers (the attempt fails there). It depends only on the
    ClusterQueue and the requests, so the scheduler keeps one per ClusterQueue and shape."""

    groups: tuple[tuple[int, Mapping[str, int]], ...]
    uncovered: str | None = None
    # (group index, flavor) -> why the pod's node selection rules the flavor out
    mismatched: Mapping[tuple[int, str], str] = field(default_factory=dict)

    def with_selection(self, spec: ClusterQueueSpec, labels: Mapping[str, Mapping[str, str]],
                       workload: Workload) -> RequestPlan:
        """This plan with the flavors the workload's node selection rules out."""
        if not workload.node_selector and workload.affinity is None:
            return self
        found: dict[tuple[int, str], str] = {}
        for gidx, _ in self.groups:
            group = spec.groups[gidx]
            keys = frozenset(k for f in group.flavors for k in labels.get(f, {}))
            for flavor in group.flavors:
                why = selection_mismatch(labels.get(flavor, {}), keys, workload)
                if why:
                    found[gidx, flavor] = f"flavor '{flavor}' doesn't match node affinity ({why})"
        return RequestPlan(self.groups, self.uncovered, found) if found else self

    @classmethod
    def of(cls, spec: ClusterQueueSpec, requests: Mapping[str, int]) -> RequestPlan:
        groups: list[tuple[int, Mapping[str, int]]] = []
        done: set[str] = set()
        for res in sorted(requests):
            if res in done:
                continue
            gidx = spec.group_index.get(res)
            if gidx is None:
                if requests[res] == 0:
                    continue
                return cls(tuple(groups), res)
            covered = spec.groups[gidx].covered
            wanted = {r: q for r, q in sorted(requests.items()) if r in covered}
            done.update(wanted)
            groups.append((gidx, wanted))
        return cls(tuple(groups))


def _expression_matches(labels: Mapping[str, str], key: str, op: str, values: tuple[str, ...]) -> bool:
    """One node selector requirement against a node's labels (Kubernetes' operators)."""
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def selection_mismatch(labels: Mapping[str, str], keys: frozenset[str], workload: Workload) -> str:
    """Why a flavor with node ``labels`` does not match the workload's node selection,
    looking only at ``keys`` (the label keys of the flavors of its resource group);
    "" when it matches."""
    for key, value in workload.node_selector:
        if key in keys and labels.get(key) != value:
            has = f"{key}={labels[key]}" if key in labels else f"no {key}"
            return f"the pod selects {key}={value}, the flavor's nodes have {has}"
    if workload.affinity is None:
        return ""
    terms = []
    for term in workload.affinity:
        kept = tuple(e for e in term if e[0] in keys)
        if not kept:
            return ""  # an unconstrained term: the affinity matches anything
        terms.append(kept)
    if not terms or any(all(_expression_matches(labels, *e) for e in term) for term in terms):
        return ""
    said = " or ".join(" and ".join(f"{k} {op} {','.join(v)}".rstrip() for k, op, v in term) for term in terms)
    have = ", ".join(f"{k}={labels[k]}" for k in sorted(labels) if k in keys) or "no such labels"
    return f"the pod's node affinity asks {said}, the flavor's nodes have {have}"


def _preferred(a: tuple[int, int], b: tuple[int, int], fung: Fungibility) -> bool:
    """Is granular mode ``a`` (preemption mode, borrowing level) better than ``b``?"""
    if a[0] == _G_NOFIT:
        return False
    if b[0] == _G_NOFIT:
        return True
    if (a[0] == _G_NOCAND) != (b[0] == _G_NOCAND):
        return a[0] != _G_NOCAND
    if fung.preference == "PreemptionOverBorrowing":
        if a[1] != b[1]:
            return a[1] < b[1]
        return a[0] > b[0]
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


def _try_next(mode: tuple[int, int], fung: Fungibility) -> bool:
    if mode[0] in (_G_NOFIT, _G_NOCAND):
        return True
    if mode[0] in (_G_PREEMPT, _G_RECLAIM) and fung.when_can_preempt == "TryNextFlavor":
        return True
    return mode[1] != 0 and fung.when_can_borrow == "TryNextFlavor"


class FlavorAssigner:
    """Assigns flavors to one workload in one ClusterQueue against the current quota tree."""

    def __init__(
        self,
        tree: QuotaTree,
        spec: ClusterQueueSpec,
        known_flavors: frozenset[str],
        workload: Workload,
        plan: RequestPlan,
        oracle: Oracle,
    ) -> None:
        self.tree = tree
        self.spec = spec
        self.node = tree.cqs[spec.name]
        self.known = known_flavors
        self.workload = workload
        self.plan = plan
        self.oracle = oracle

    def _can_preempt_while_borrowing(self) -> bool:
        return self.spec.preemption.borrow_within_cohort != "Never"

    def _where(self) -> str:
        root = self.node.root()
        return f"ClusterQueue '{self.spec.name}'" + (f" (cohort '{root.name}')" if root is not self.node else "")

    def _fits(self, fr: FlavorResource, value: int) -> tuple[int, int, str | None]:
        """Kueue's fitsResourceQuota: (granular preemption mode, borrowing level, reason if not a plain fit)."""
        node = self.node
        available = node.available(fr)
        if value <= available or value <= 0:  # what is available now never exceeds what could ever be
            if node.parent is None or not node.borrowing_with(fr, value):
                return _G_FIT, 0, None  # lowest_fitting_subtree's answer when nothing is borrowed
            return _G_FIT, lowest_fitting_subtree(node, fr, value)[0], None
        available = max(0, available)
        flavor, res = fr
        quota = node.quota(fr)
        ceiling = node.potential_available(fr)
        amount = f"{format_amount(res, value)}"
        if value > ceiling:
            limit = (f", borrowingLimit {format_amount(res, quota.borrowing_limit)}"
                     if quota.borrowing_limit is not None else "")
            return _G_NOFIT, 0, (
                f"insufficient quota for {res} in flavor '{flavor}': needs {amount}, but at most "
                f"{format_amount(res, ceiling)} can ever be available to {self._where()} "
                f"(nominal {format_amount(res, quota.nominal)}{limit})"
            )
        short = (
            f"insufficient unused quota for {res} in flavor '{flavor}': needs {amount}, "
            f"{format_amount(res, available)} available to {self._where()}"
        )
        # the borrowing level is read only when the cheaper tests do not settle it (the oracle
        # works it out again after its own search)
        if quota.nominal < value and not self._can_preempt_while_borrowing():
            borrow, may_reclaim = lowest_fitting_subtree(node, fr, value)
            if not may_reclaim:
                return _G_NOFIT, borrow, (
                    short + f"; ClusterQueue '{self.spec.name}' cannot preempt: the request exceeds its nominal "
                    f"quota ({format_amount(res, quota.nominal)}) and borrowWithinCohort is not enabled"
                )
        possibility, borrow_after = self.oracle(fr, value)
        if possibility == NO_CANDIDATES:
            return _G_NOCAND, borrow_after, short + "; no workload can be preempted to make room"
        return (_G_PREEMPT if possibility == PREEMPT else _G_RECLAIM), borrow_after, short

    def assign(self, start: Mapping[int, int]) -> Assignment:
        out = Assignment()
        for gidx, wanted in self.plan.groups:
            if not self._assign_group(gidx, wanted, start.get(gidx, -1) + 1, out):
                out.failed = True
                out.tried = {}  # a pod set that gets no flavors records no scan progress
                return out
        if self.plan.uncovered is not None:
            out.reasons.append(f"resource {self.plan.uncovered} is not covered by ClusterQueue '{self.spec.name}'")
            out.failed = True
        return out

    def _assign_group(self, gidx: int, wanted: Mapping[str, int], first: int, out: Assignment) -> bool:
        flavors = self.spec.groups[gidx].flavors
        fung = self.spec.fungibility
        best: dict[str, tuple[str, int, int]] | None = None
        best_mode = (_G_NOFIT, _BIG)
        reasons: list[str] = []
        attempted = -1
        for idx in range(first, len(flavors)):
            attempted = idx
            flavor = flavors[idx]
            if flavor not in self.known:
                reasons.append(f"flavor '{flavor}' not found")
                continue
            mismatch = self.plan.mismatched.get((gidx, flavor))
            if mismatch is not None:
                reasons.append(mismatch)
                continue
            picked: dict[str, tuple[str, int, int]] = {}
            rep = (_G_FIT, 0)
            for res, qty in wanted.items():
                gmode, borrow, why = self._fits((flavor, res), qty)
                if why:
                    reasons.append(why)
                mode = (gmode, borrow)
                if mode != rep and _preferred(rep, mode, fung):  # a mode is never preferred to itself
                    rep = mode
                if rep[0] == _G_NOFIT:
                    break
                picked[res] = (flavor, FIT if gmode == _G_FIT else PREEMPT_MODE, borrow)
            if not _try_next(rep, fung):
                best, best_mode = picked, rep
                break
            if _preferred(rep, best_mode, fung):
                best, best_mode = picked, rep
        if best is None:
            out.reasons.extend(reasons)
            return False
        out.tried[gidx] = -1 if attempted == len(flavors) - 1 else attempted
        if best_mode[0] != _G_FIT:
            out.reasons.extend(reasons)
        for res, (flavor, res_mode, res_borrow) in best.items():
            out.flavors[res] = flavor
            out.modes[res] = res_mode
            out.borrowing = max(out.borrowing, res_borrow)
            out.usage[(flavor, res)] = out.usage.get((flavor, res), 0) + wanted[res]
        return True
