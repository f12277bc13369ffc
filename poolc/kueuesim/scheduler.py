"""The scheduling loop: cycles of "pop one head per ClusterQueue, nominate, admit in order".

Models ``pkg/scheduler/scheduler.go`` (classical mode) on a single in-memory
state instead of snapshots. Each cycle:

1. pops the head of every active ClusterQueue that has queued workloads;
2. nominates every head against the quota as it was at the start of the cycle
   (namespace check, flavor assignment, preemption targets when needed);
3. orders the heads: no borrowing before borrowing (lower borrowing level
   first), then higher priority, then earlier creation;
4. walks them in that order: a head that no longer fits because of an earlier
   head of this cycle, or whose victims overlap an earlier head's, is skipped
   and requeued; a head that fits is admitted; a head that needs preemption
   reserves its quota for the rest of the cycle and has its victims evicted;
   a head that needs preemption but found no victims still holds back what
   it would use (unless its ClusterQueue reclaims with ``Any``);
5. at the end, evicted workloads release their quota and queue again, and
   every parked workload of the cohort trees where quota was released is
   queued again.

Workloads that were admitted before the simulation are placed first, in
admission order; batches are released one at a time, each after the previous
one reached a fixed point (a run of cycles that admit, evict and park nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import count
from operator import attrgetter
from types import MappingProxyType
from typing import Any

from .api import Outcome, Simulation, Workload
from .flavors import FIT, NO_FIT, PREEMPT_MODE, Assignment, FlavorAssigner, RequestPlan
from .objects import ClusterQueueSpec, Config, FlavorResource, parse_objects
from .preemption import (
    Admitted,
    AdmittedIndex,
    Preemptor,
    Target,
    add,
    remove,
    simulate_preemption,
)
from .queues import PendingQueue, Shape, ShapeCache, queue_key
from .quota import Node, QuotaTree, lender


@dataclass
class _Entry:
    cq: str
    workload: Workload
    assignment: Assignment
    targets: list[Target]
    result: str = ""


_STAMPS = count(1)  # orders the writes of reasons: only which came later matters


class _Track:
    """What the simulator remembers about one workload across cycles. A plain class whose
    defaults live on the class: one is made per workload, and most never leave them.

    ``reason`` is stamped when written, as a bulk park writes the reason of all the workloads
    it moves at once elsewhere (``Scheduler.parked_with``): the later of the two is the reason."""

    cq: str | None = None
    _reason: str = ""
    reason_stamp: int = 0
    admitted: Admitted | None = None
    admitted_cycle: int | None = None
    borrowing: bool = False
    evicted: bool = False
    scan: Mapping[int, int] = MappingProxyType({})  # replaced, never changed in place
    preempting: bool = False  # its last nomination issued preemptions

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.preempted_by: list[str] = []
        self.preemptions: list[str] = []

    @property
    def reason(self) -> str:
        return self._reason

    @reason.setter
    def reason(self, text: str) -> None:
        self._reason = text
        self.reason_stamp = next(_STAMPS)


class Scheduler:
    """The mutable state of one simulation."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.tree = QuotaTree(config)
        shapes = ShapeCache()
        self.queues: dict[str, PendingQueue] = {
            name: PendingQueue(name, spec.strategy == "StrictFIFO", shapes)
            for name, spec in sorted(config.cluster_queues.items())
        }
        self._resolved: dict[tuple[str, str], tuple[str | None, str]] = {}
        self._selects: dict[tuple[str, str], bool] = {}  # (ClusterQueue, namespace) -> selected
        self._plans: dict[tuple[str, Shape], RequestPlan] = {}  # (ClusterQueue, shape) -> request plan
        self.admitted = AdmittedIndex(self.queues)
        self.inactive: dict[str, str] = {}
        for name, spec in sorted(config.cluster_queues.items()):
            missing = sorted({f for g in spec.groups for f in g.flavors} - config.flavors)
            if missing:
                self.inactive[name] = f"references missing ResourceFlavor(s) {', '.join(missing)}"
            elif self.tree.in_cycle(name):
                self.inactive[name] = "its cohort tree has a cycle"
        self.tracks: dict[str, _Track] = {}
        # workload -> (stamp, reason) of the last bulk park that moved it: thousands of workloads
        # of one shape are parked at once, and one dict update records that for all of them
        self.parked_with: dict[str, tuple[int, str]] = {}
        self.ping_pong = False  # the simulation stopped because a state after evictions came back
        # workload -> its flavor scan's progress, while one is under way (kept for ``signature``)
        self.scanning: dict[str, tuple[tuple[int, int], ...]] = {}
        self.cycle = 0
        self.events: list[str] = []
        self._order = 0
        self.last_evicted: list[str] = []
        self.stopped = ""  # why ``simulate`` stopped at its work bound
        self.work = 0  # nominations so far, each weighted by its cohort tree's ClusterQueues (`_weight`)
        self._weights: dict[str, int] = {}

    # -- placement helpers -------------------------------------------------
    def _resolve(self, wl: Workload) -> tuple[str | None, str]:
        """The ClusterQueue of a workload's LocalQueue, or why there is none (worked out once per LocalQueue)."""
        found = self._resolved.get((wl.namespace, wl.queue_name))
        if found is None:
            found = self._resolved[(wl.namespace, wl.queue_name)] = self._resolve_queue(wl)
        return found

    def _resolve_queue(self, wl: Workload) -> tuple[str | None, str]:
        key = f"{wl.namespace}/{wl.queue_name}"
        cq = self.config.local_queues.get(key)
        if cq is None:
            return None, f"LocalQueue '{key}' does not exist"
        if cq not in self.config.cluster_queues:
            return None, f"ClusterQueue '{cq}' of LocalQueue '{key}' does not exist"
        return cq, ""

    def _requests(self, wl: Workload, spec: ClusterQueueSpec) -> dict[str, int]:
        """Kueue counts one "pods" unit per pod when the ClusterQueue covers "pods"."""
        requests = {r: int(q) for r, q in wl.requests.items() if r != "pods"}
        if spec.group_for("pods") is not None:
            requests["pods"] = int(wl.requests.get("pods", wl.count))
        return requests

    def _plan(self, cq: str, spec: ClusterQueueSpec, wl: Workload) -> RequestPlan:
        """The request plan of ``wl`` in ``cq``: one per shape, as thousands of Jobs share a few."""
        key = (cq, self.queues[cq].shape_of(wl))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = RequestPlan.of(spec, self._requests(wl, spec)).with_selection(
                spec, self.config.flavor_labels, wl)
        return plan

    def _next_order(self) -> tuple[int, int]:
        self._order += 1
        return (1, self._order)

    def _is_borrowing(self, cq: str, usage: Mapping[FlavorResource, int]) -> bool:
        node = self.tree.cqs[cq]
        return any(node.borrowing(fr) for fr in usage)

    def _lenders(self, cq: str, usage: Mapping[FlavorResource, int]) -> str:
        """The cohorts that lend what ``usage`` borrows, before it is added (" from cohort 'x'")."""
        node = self.tree.cqs[cq]
        names = sorted({
            found.name for fr, qty in usage.items()
            if node.borrowing_with(fr, qty) and (found := lender(node, fr, qty)) is not None
        })
        if not names:
            return ""
        return " from cohort " + ", ".join(f"'{n}'" for n in names)

    # -- inputs ------------------------------------------------------------
    def place_running(self, workloads: Iterable[Workload]) -> None:
        """Account already-admitted workloads, oldest admission first, on the best flavor that fits."""
        for wl in sorted(workloads, key=lambda w: (w.admitted_at or 0, w.name)):
            track = self.tracks[wl.name]
            cq, why = self._resolve(wl)
            track.cq = cq
            if cq is None:
                track.reason = f"marked as running, but {why}"
                continue
            spec = self.config.cluster_queues[cq]
            requests = self._requests(wl, spec)
            node = self.tree.cqs[cq]
            flavors: dict[str, str] = {}
            usage: dict[FlavorResource, int] = {}
            for group in spec.groups:
                wanted = {r: q for r, q in requests.items() if r in group.covered}
                if not wanted:
                    continue
                chosen = group.flavors[0] if len(group.flavors) == 1 else next(  # one flavor: no choice
                    (f for f in group.flavors if all(q <= node.available((f, r)) for r, q in wanted.items())),
                    group.flavors[0],
                )
                for res, qty in wanted.items():
                    flavors[res] = chosen
                    usage[(chosen, res)] = qty
            adm = Admitted(wl, cq, flavors, usage, (0, wl.admitted_at or 0))
            add(self.tree, adm)
            self.admitted.add(adm)
            track.admitted = adm
            track.borrowing = self._is_borrowing(cq, usage)
            track.reason = "already admitted before the simulation started"
            self.events.append(f"cycle 0: running {wl.name} in {cq} ({self._flavor_text(flavors)})")

    def enqueue(self, workloads: Iterable[Workload]) -> None:
        """New workloads arrive, each in its LocalQueue's ClusterQueue. Arrivals do not affect
        each other (a queue's order is its keys'), so each queue takes its arrivals at once."""
        arrivals: dict[str, list[Workload]] = {}
        for wl in workloads:
            track = self.tracks[wl.name]
            cq, why = self._resolve(wl)
            track.cq = cq
            if cq is None:
                track.reason = why
            elif cq in self.inactive:
                track.reason = f"ClusterQueue '{cq}' is inactive: {self.inactive[cq]}"
            else:
                arrivals.setdefault(cq, []).append(wl)
        for cq, found in arrivals.items():
            for wl in self.queues[cq].add_all(found):
                self.tracks[wl.name].reason = (
                    "parked on arrival: a queued workload of the same shape could not be admitted"
                )

    # -- one cycle ---------------------------------------------------------
    def _nominate(self, cq: str, wl: Workload) -> _Entry | None:
        spec = self.config.cluster_queues[cq]
        track = self.tracks[wl.name]
        selected = self._selects.get((cq, wl.namespace))
        if selected is None:
            selected = self._selects[(cq, wl.namespace)] = spec.selects(wl.namespace)
        if not selected:
            track.cq = None
            track.reason = f"namespace '{wl.namespace}' is not selected by ClusterQueue '{cq}'"
            self.queues[cq].park(wl)
            return None
        track.cq = cq

        def oracle(fr: FlavorResource, value: int) -> tuple[int, int]:
            return simulate_preemption(self.tree, self.admitted, spec, wl, fr, value)

        assigner = FlavorAssigner(self.tree, spec, self.config.flavors, wl, self._plan(cq, spec, wl), oracle)
        assignment = assigner.assign(track.scan)
        targets: list[Target] = []
        if assignment.mode == PREEMPT_MODE:
            targets = Preemptor(
                self.tree, self.admitted, spec, wl, assignment.usage, assignment.needs_preemption()
            ).targets()
        return _Entry(cq, wl, assignment, targets)

    def _fits(self, entry: _Entry, victims: Iterable[Admitted]) -> bool:
        """Does the entry fit with ``victims`` gone? Each flavor-resource is accounted on its own in
        the tree, so only the victims' usage of the entry's flavor-resources is taken out (and put
        back: taking out and adding back is exact)."""
        wanted = entry.assignment.usage
        gone = [(self.tree.cqs[adm.cq], fr, value) for adm in victims for fr, value in adm.usage.items()
                if fr in wanted]
        for node, fr, value in gone:
            node.remove_usage(fr, value)
        node = self.tree.cqs[entry.cq]
        ok = all(q <= max(0, node.available(fr)) for fr, q in wanted.items())
        for node, fr, value in reversed(gone):
            node.add_usage(fr, value)
        return ok

    def _reserve(self, entry: _Entry) -> dict[FlavorResource, int]:
        """What a preempting head without victims holds back for the rest of the cycle."""
        node = self.tree.cqs[entry.cq]
        out: dict[FlavorResource, int] = {}
        for fr, qty in entry.assignment.usage.items():
            quota, used = node.quota(fr), node.usage.get(fr, 0)
            if entry.assignment.borrowing > 0:
                cap = qty if quota.borrowing_limit is None else quota.nominal + quota.borrowing_limit - used
            else:
                cap = quota.nominal - used
            out[fr] = max(0, min(qty, cap))
        return out

    def run_cycle(self) -> bool | None:
        """One scheduling cycle; None if no ClusterQueue had a head, else whether anything changed."""
        heads = [(name, q.pop()) for name, q in self.queues.items() if name not in self.inactive and q.has_queued()]
        popped = [(cq, wl) for cq, wl in heads if wl is not None]
        if not popped:
            return None
        self.cycle += 1
        self.work += sum(self._weight(cq) for cq, _ in popped)
        parked_before = sum(q.parked_count for q in self.queues.values())
        entries = [e for e in (self._nominate(cq, wl) for cq, wl in popped) if e is not None]
        entries.sort(key=lambda e: (e.assignment.borrowing, -e.workload.priority, e.workload.created, e.workload.name))
        victims: dict[str, tuple[Admitted, Target, str]] = {}
        held: list[tuple[Node, dict[FlavorResource, int]]] = []
        changed = False
        for entry in entries:
            changed |= self._process(entry, victims, held)
        for node, usage in reversed(held):
            for fr, qty in usage.items():
                node.remove_usage(fr, qty)
        for entry in entries:
            self._requeue(entry)
        self.last_evicted = sorted(victims)
        changed |= self._evict(victims)
        parked_after = sum(q.parked_count for q in self.queues.values())
        return changed or parked_after > parked_before

    def _weight(self, cq: str) -> int:
        """The work of nominating a head of ``cq``: the ClusterQueues of its cohort tree,
        which a nomination that looks for preemption candidates walks (a queue without
        a cohort counts 1). Deterministic, and roughly proportional to the CPU it costs."""
        if cq not in self._weights:
            root = self.tree.cqs[cq].root()
            self._weights[cq] = len(root.subtree_cqs()) if root.is_cohort else 1
        return self._weights[cq]

    def _process(
        self,
        entry: _Entry,
        victims: dict[str, tuple[Admitted, Target, str]],
        held: list[tuple[Node, dict[FlavorResource, int]]],
    ) -> bool:
        track = self.tracks[entry.workload.name]
        spec = self.config.cluster_queues[entry.cq]
        node = self.tree.cqs[entry.cq]
        mode = entry.assignment.mode
        if mode == NO_FIT:
            entry.result = "nofit"
            track.reason = "; ".join(entry.assignment.reasons) or "does not fit"
            return False
        if mode == PREEMPT_MODE and not entry.targets:
            entry.result = "nofit"
            track.reason = "; ".join(entry.assignment.reasons) or "no workload can be preempted to make room"
            if spec.preemption.reclaim_within_cohort != "Any":
                reserved = self._reserve(entry)
                for fr, qty in reserved.items():
                    node.add_usage(fr, qty)
                held.append((node, reserved))
            return False
        if any(t.victim.workload.name in victims for t in entry.targets):
            entry.result = "skipped"
            track.reason = (
                f"skipped in cycle {self.cycle}: its preemption targets overlap with those of a workload "
                "processed earlier in the same cycle"
            )
            return False
        pending_victims = {n: v[0] for n, v in victims.items()}
        for t in entry.targets:
            pending_victims[t.victim.workload.name] = t.victim
        if not self._fits(entry, [pending_victims[n] for n in sorted(pending_victims)]):
            entry.result = "skipped"
            track.reason = (
                f"skipped in cycle {self.cycle}: the quota it needs was taken or held by a workload processed "
                "earlier in the same cycle"
            )
            return False
        usage = dict(entry.assignment.usage)
        # the lenders are named only when a plain fit borrows; read them before the usage is added
        lenders = self._lenders(entry.cq, usage) if mode == FIT and entry.assignment.borrowing > 0 else ""
        for fr, qty in usage.items():
            node.add_usage(fr, qty)
        if mode == PREEMPT_MODE:
            held.append((node, usage))
            for t in entry.targets:
                victims[t.victim.workload.name] = (t.victim, t, entry.workload.name)
                self.events.append(
                    f"cycle {self.cycle}: preempted {t.victim.workload.name} ({t.reason}) for {entry.workload.name}"
                )
            entry.result = "preempting"
            names = ", ".join(sorted(t.victim.workload.name for t in entry.targets))
            track.reason = f"waiting for {len(entry.targets)} preempted workload(s) to release quota ({names})"
            track.preempting = True
            return True
        adm = Admitted(entry.workload, entry.cq, dict(entry.assignment.flavors), usage, self._next_order())
        self.admitted.add(adm)
        track.admitted = adm
        track.admitted_cycle = self.cycle
        track.borrowing = entry.assignment.borrowing > 0
        self._set_scan(track, {})
        queue = self.queues[entry.cq]
        if queue.sticky == entry.workload.name:
            queue.sticky = None
        entry.result = "admitted"
        track.preempting = False
        track.reason = f"admitted in cycle {self.cycle}" + (
            f", borrowing quota{lenders}" if track.borrowing else ", within its nominal quota"
        )
        extra = ", borrowing" if track.borrowing else ""
        self.events.append(
            f"cycle {self.cycle}: admitted {entry.workload.name} in {entry.cq} "
            f"({self._flavor_text(adm.flavors)}{extra})"
        )
        return True

    @staticmethod
    def _flavor_text(flavors: Mapping[str, str]) -> str:
        names = sorted(set(flavors.values()))
        if not names:
            return "no flavor"
        if len(names) == 1:
            return f"flavor {names[0]}"
        return "flavors " + ", ".join(f"{r}={flavors[r]}" for r in sorted(flavors))

    def _set_scan(self, track: _Track, scan: Mapping[int, int]) -> None:
        track.scan = scan
        if scan:
            self.scanning[track.workload.name] = tuple(sorted(scan.items()))
        else:
            self.scanning.pop(track.workload.name, None)

    def _requeue(self, entry: _Entry) -> None:
        if entry.result == "admitted":
            return
        queue = self.queues[entry.cq]
        track = self.tracks[entry.workload.name]
        if entry.result == "preempting":
            self._set_scan(track, {})
            if not queue.strict:
                queue.sticky = entry.workload.name
            queue.requeue(entry.workload, immediate=True)
        elif entry.result == "skipped":
            self._set_scan(track, dict(entry.assignment.tried))
            queue.requeue(entry.workload, immediate=True)
        else:
            self._set_scan(track, dict(entry.assignment.tried))
            moved = queue.requeue(entry.workload, entry.assignment.pending_flavors(), bulk=True)
            if moved:
                note = (next(_STAMPS), f"parked with {entry.workload.name}, a workload of the same shape that "
                                       f"could not be admitted: {track.reason}")
                self.parked_with.update(dict.fromkeys(moved, note))


    def _evict(self, victims: Mapping[str, tuple[Admitted, Target, str]]) -> bool:
        roots: dict[str, Node] = {}
        for name in sorted(victims):
            adm, target, by = victims[name]
            remove(self.tree, adm)
            self.admitted.remove(adm)
            track = self.tracks[name]
            track.admitted = None
            track.admitted_cycle = None
            track.borrowing = False
            track.evicted = True
            self._set_scan(track, {})
            if by not in track.preempted_by:
                track.preempted_by.append(by)
            track.preemptions.append(f"in cycle {self.cycle} by {by} under {target.reason}")
            track.reason = ""
            root = self.tree.cqs[adm.cq].root()
            roots[root.name if root.is_cohort else "cq:" + root.name] = root
            self.queues[adm.cq].add(adm.workload)
        for key in sorted(roots):
            root = roots[key]
            for cq in ([root] if not root.is_cohort else sorted(root.subtree_cqs(), key=lambda n: n.name)):
                self.queues[cq.name].unpark_all()
        return bool(victims)

    def signature(self) -> tuple[object, ...]:
        """Everything that decides future cycles (admitted set, queues, scan progress), to spot loops.

        Within a batch every workload that is not admitted waits in its own queue, active or parked,
        so the admitted set, the parked sets and the active counts pin the queues down; the counts
        also tell batches apart. Per ClusterQueue, in their fixed order (a workload's ClusterQueue
        never changes): its admitted names, active count, parked set and sticky head, each part
        remembered until it changes, as this runs after every cycle that evicts."""
        admitted = self.admitted
        queues = tuple([(admitted.names(name), q.state(), q.sticky) for name, q in self.queues.items()])
        return (queues, frozenset(self.scanning.items()))

    # -- results -----------------------------------------------------------
    def outcomes(self) -> dict[str, Outcome]:
        out: dict[str, Outcome] = {}
        tracks, notes = self.tracks, self.parked_with
        for name in sorted(tracks):
            track = tracks[name]
            note = notes.get(name)  # the last reason written: its own, or its last bulk park's if later
            reason = note[1] if note is not None and note[0] > track.reason_stamp else track._reason
            if track.admitted is not None:
                out[name] = Outcome(
                    name, "admitted", track.admitted.cq, dict(sorted(track.admitted.flavors.items())),
                    tuple(track.preempted_by), reason, track.borrowing,
                )
                continue
            reason = reason or self._untried_reason(track)
            if track.preempting and self.ping_pong:
                reason += ("; they are admitted again ahead of it in the next cycle (Kueue takes the workloads "
                           "that borrow less first), so it preempts them again, over and over, and never runs")
            if track.evicted:
                reason = f"preempted {'; then '.join(track.preemptions)}; not re-admitted: {reason}"
            out[name] = Outcome(
                name, "preempted" if track.evicted else "pending", track.cq, {},
                tuple(track.preempted_by), reason, False,
            )
        return out

    def _untried_reason(self, track: _Track) -> str:
        queue = self.queues.get(track.cq) if track.cq is not None else None
        if queue is not None and queue.strict:
            head = min(queue.pending(), key=queue_key)
            return f"queued behind '{head.name}', which cannot be admitted, in StrictFIFO ClusterQueue '{track.cq}'"
        return "not yet tried by the scheduler"

    def usage(self) -> dict[str, dict[str, dict[str, int]]]:
        out: dict[str, dict[str, dict[str, int]]] = {}
        for cq in sorted(self.tree.cqs):
            node = self.tree.cqs[cq]
            per: dict[str, dict[str, int]] = {}
            for flavor, res in sorted(set(node.quotas) | set(node.usage)):
                per.setdefault(flavor, {})[res] = node.usage.get((flavor, res), 0)
            out[cq] = per
        return out


def _idle_limit(config: Config) -> int:
    """Quiet cycles that prove a fixed point: enough for every flavor scan to wrap around."""
    longest = max((len(g.flavors) for cq in config.cluster_queues.values() for g in cq.groups), default=1)
    return longest + 2


def simulate(
    objects: Iterable[Mapping[str, Any]], workloads: Iterable[Workload], *, max_cycles: int = 100_000,
    max_work: int | None = None,
) -> Simulation:
    """Run Kueue's admission loop over ``workloads`` against the Kueue ``objects`` until it settles,
    or until its work (``Scheduler.work``) reaches ``max_work``: a bound counted, not timed, so a
    replay stops at the same cycle on every run and machine (``Simulation.stopped`` says so)."""
    config = parse_objects(objects)
    sched = Scheduler(config)
    items = sorted(workloads, key=attrgetter("name"))
    seen: set[str] = set()
    for wl in items:
        if wl.name in seen:
            raise ValueError(f"duplicate workload name {wl.name!r}")
        seen.add(wl.name)
        sched.tracks[wl.name] = _Track(wl)
    sched.place_running(w for w in items if w.admitted_at is not None)
    batches: dict[int, list[Workload]] = {}
    for wl in items:
        if wl.admitted_at is None:
            batches.setdefault(wl.batch, []).append(wl)
    limit = _idle_limit(config)
    stopped = False
    after_evictions: dict[tuple[object, ...], int] = {}
    for batch in sorted(batches):
        if stopped:
            break
        sched.enqueue(sorted(batches[batch], key=attrgetter("created", "name")))
        idle = 0
        last_busy = sched.cycle
        while True:
            if sched.cycle >= max_cycles:
                sched.events.append(
                    f"stopped after {max_cycles} cycles without reaching a fixed point (possible eviction ping-pong)"
                )
                stopped = True
                break
            if max_work is not None and sched.work >= max_work:
                sched.stopped = (f"stopped at its work bound in cycle {sched.cycle}, before it settled "
                                 f"({sched.work:,} units of work: nominations, each weighted by the "
                                 f"ClusterQueues of its cohort)")
                sched.events.append(sched.stopped)
                stopped = True
                break
            changed = sched.run_cycle()
            if changed is None:
                break
            if sched.last_evicted:
                state = sched.signature()
                if state in after_evictions:
                    sched.events.append(
                        f"stopped in cycle {sched.cycle}: eviction ping-pong, the state after cycle "
                        f"{after_evictions[state]} came back (last evicted: {', '.join(sched.last_evicted)})"
                    )
                    stopped = sched.ping_pong = True
                    break
                after_evictions[state] = sched.cycle
            if changed:
                idle = 0
                last_busy = sched.cycle
            else:
                idle += 1
                if idle >= limit:
                    break
        if not stopped:
            sched.cycle = last_busy
    return Simulation(
        outcomes=sched.outcomes(),
        cycles=sched.cycle,
        events=tuple(sched.events),
        usage=sched.usage(),
        stopped=sched.stopped,
    )

