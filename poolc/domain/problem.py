"""The domain every stage shares: pools, policies, pending requests and running
allocations, normalized to integer units on the pools' metered keys.

Pure data with no I/O and no solver, so `validate`, the planners, the targets and
the renderers can all read one definition. The rules over these values live beside
it: ``eligibility`` (which policy may admit a request) and ``borrowing`` (reserved
shares, borrowed parts, victim order).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

# Keys that are unbounded in a pool that has no row for them (docs/format.md#metered-keys).
BUILTIN_UNBOUNDED = ("mcpu", "memory_mb", "step_run")


@dataclass(frozen=True)
class Node:
    """One node of a pool's node group, in request keys (gpu, mcpu, memory_mb)."""

    group: str
    shape: Mapping[str, int]
    gpu_model: str | None = None   # its nvidia.com/gpu.product value, None when not said


@dataclass(frozen=True)
class Pool:
    name: str
    capacity: Mapping[str, int]  # metered keys only, every value > 0
    # where the pool's capacity lives (docs/format.md#resourcepool): its metadata.labels
    # (what a step's pool_selector matches), the GPU models its nodes offer (None: the
    # pool does not say), and its node groups (empty: not declared)
    labels: Mapping[str, str] = field(default_factory=dict)
    gpu_models: frozenset[str] | None = None
    nodes: tuple[Node, ...] = ()

    def metered(self, key: str) -> bool:
        return key in self.capacity

    @property
    def has_gpus(self) -> bool:
        return self.capacity.get("gpu", 0) > 0


@dataclass(frozen=True)
class PolicyRule:
    """A policy q = (subject, pool) with reserved/limit on the pool's metered keys.

    ``limit`` holds every metered key (default: the capacity); ``reserved`` holds
    only keys with a positive reservation (default 0)."""

    name: str
    subject: str
    pool: str
    priority: int
    reserved: Mapping[str, int]
    limit: Mapping[str, int]

    def rsv(self, key: str) -> int:
        return self.reserved.get(key, 0)


@dataclass(frozen=True)
class Request:
    id: str                      # "<pipeline>/<step>"
    requester: str               # component name
    demand: Mapping[str, int]    # request keys, step_run included
    preemptible: bool
    rank: int                    # arrival rank, 0 = first
    # where it may run (docs/format.md#steering): the GPU model it asks (only with a
    # GPU demand), the pools it prefers in order, and the pool labels it requires
    gpu_type: str | None = None
    pools: tuple[str, ...] = ()
    pool_selector: tuple[tuple[str, str], ...] = ()
    # the one pool it may run on: running work of no step that was preempted waits
    # again in its own pool (the forecast's roll-forward), as Kueue requeues a
    # Workload in its own ClusterQueue; None for every step
    pinned_pool: str | None = None

    @property
    def placement(self) -> tuple[str, tuple[str, ...], tuple[tuple[str, str], ...], str]:
        """What besides requester, demand and preemptible decides where it may go:
        requests equal in all of these are interchangeable."""
        return (self.gpu_type or "", self.pools, self.pool_selector, self.pinned_pool or "")


@dataclass(frozen=True)
class Running:
    """A running allocation (an Allocation document)."""

    name: str
    subject: str
    pool: str
    preemptible: bool
    holds: Mapping[str, int]
    started_at: datetime | None
    start_rank: int = 0          # 0 = started earliest (missing started_at = earliest, then name)
    workload: str | None = None  # its Kueue Workload, <namespace>/<name>, when the state knows it


@dataclass(frozen=True)
class Problem:
    pools: tuple[Pool, ...]
    policies: tuple[PolicyRule, ...]
    requests: tuple[Request, ...]
    running: tuple[Running, ...] = ()
    _by_pool: dict[str, Pool] = field(default_factory=dict, compare=False, repr=False)
    _by_subject: dict[str, list[PolicyRule]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_pool", {p.name: p for p in self.pools})
        by_subject: dict[str, list[PolicyRule]] = {}
        for q in self.policies:
            by_subject.setdefault(q.subject, []).append(q)
        for rules in by_subject.values():
            rules.sort(key=lambda q: (-q.priority, q.pool))
        object.__setattr__(self, "_by_subject", by_subject)

    def pool(self, name: str) -> Pool:
        return self._by_pool[name]

    def find_pool(self, name: str) -> Pool | None:
        return self._by_pool.get(name)

    def policies_of(self, subject: str) -> list[PolicyRule]:
        """The subject's policies, by priority (desc) then pool name — the order the
        reference reconciler tries pools in."""
        return list(self._by_subject.get(subject, ()))

    def policy_for(self, subject: str, pool: str) -> PolicyRule | None:
        for q in self._by_subject.get(subject, ()):
            if q.pool == pool:
                return q
        return None


EARLIEST = datetime.min.replace(tzinfo=UTC)


def start_time(when: datetime | None) -> datetime:
    """A started_at for ordering: missing = earliest; a naive time is taken as UTC."""
    if when is None:
        return EARLIEST
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def start_ranks(running: list[Running]) -> list[Running]:
    """Assign start_rank: 0 = started earliest (missing started_at = earliest), then name."""
    ordered = sorted(running, key=lambda a: (start_time(a.started_at), a.name))
    ranks = {a.name: i for i, a in enumerate(ordered)}
    return [Running(a.name, a.subject, a.pool, a.preemptible, a.holds, a.started_at, ranks[a.name], a.workload)
            for a in running]
