"""The public value types of the simulator: what goes in and what comes out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Workload:
    """One pending or running job as Kueue sees it: a single PodSet.

    ``requests`` holds the whole PodSet's requests in Kueue's integer units
    (see ``canonical_units``); ``count`` is the pod count, used for the "pods"
    resource when a ClusterQueue covers it.
    """

    name: str
    namespace: str
    queue_name: str
    priority: int
    requests: Mapping[str, int]
    created: int
    admitted_at: int | None = None
    batch: int = 0
    count: int = 1
    # the pod's nodeSelector and the terms of its required node affinity (each term a
    # tuple of (key, operator, values); None: no required affinity), which Kueue's
    # flavor assigner matches against each flavor's nodeLabels
    node_selector: tuple[tuple[str, str], ...] = ()
    affinity: tuple[tuple[tuple[str, str, tuple[str, ...]], ...], ...] | None = None


@dataclass(frozen=True)
class Outcome:
    """Where one workload ended up, and why, in plain words."""

    name: str
    status: str
    cluster_queue: str | None
    flavors: Mapping[str, str]
    preempted_by: tuple[str, ...]
    reason: str
    borrowing: bool


@dataclass(frozen=True)
class Simulation:
    """The fixed point the scheduler reached, with a readable log of how."""

    outcomes: Mapping[str, Outcome]
    cycles: int
    events: tuple[str, ...]
    usage: Mapping[str, Mapping[str, Mapping[str, int]]] = field(default_factory=dict)
    stopped: str = ""   # why it stopped before settling, when its work bound did (``simulate``'s max_work)
