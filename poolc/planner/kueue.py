"""Strategy `kueue`, and the runtime check of every plan: what Kueue will do with
the objects `apply` writes (docs/planning.md#kueue-what-the-cluster-will-do).

This stage takes values only: the Kueue objects and the Jobs that the targets
render for a plan (as API objects), and the running allocations as Kueue sees
them. It replays them through ``poolc.kueuesim`` (Kueue's scheduler, offline)
and reads the outcome back in poolc's terms: which request Kueue admits through
which policy (a Solution, for ``--strategy kueue``), and where the cluster will do
otherwise than a plan says (the plan's ``runtime`` section).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..domain.plan import ALLOCATED, QUEUED, Plan, RuntimeDifference
from ..domain.said import Said, read_said
from ..kueuesim import Simulation, Workload, canonical_units, simulate

ENGINE = "kueue"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
POLICY_LABEL = "poolc.dev/policy"
# poolc's request keys as the Kubernetes resources a pod asks for.
K8S_RESOURCE = {"mcpu": "cpu", "memory_mb": "memory", "gpu": "nvidia.com/gpu", "step_run": "pods"}
ADMITTED, PENDING, PREEMPTED = "admitted", "pending", "preempted"


@dataclass(frozen=True)
class RunningWorkload:
    """A running allocation as an admitted Kueue workload (its step's Job, or what
    its subject would have submitted)."""

    name: str                    # the allocation's name
    namespace: str
    queue: str                   # LocalQueue
    priority_class: str | None   # WorkloadPriorityClass name
    holds: Mapping[str, int]     # poolc request keys
    start_rank: int              # 0 = started earliest


def pod_requests(job: Mapping) -> dict[str, int]:
    """What a Job's pod asks for, in Kueue's units (a container's limit stands for
    a request it does not give, as Kubernetes defaults it)."""
    total: dict[str, int] = {"pods": 1}
    spec = job["spec"]["template"]["spec"]
    for container in spec.get("containers", []):
        resources = container.get("resources", {})
        asked = {**resources.get("limits", {}), **resources.get("requests", {})}
        for name, quantity in asked.items():
            total[name] = total.get(name, 0) + canonical_units(name, quantity)
    return total


def node_selection(job: Mapping) -> tuple[tuple[tuple[str, str], ...], tuple | None]:
    """A Job's pod nodeSelector and the terms of its required node affinity, as the
    simulator's Workload holds them (what Kueue's flavor assigner matches)."""
    spec = job["spec"]["template"]["spec"]
    selector = tuple(sorted((str(k), str(v)) for k, v in (spec.get("nodeSelector") or {}).items()))
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is None:
        return selector, None
    terms = tuple(tuple((e["key"], e["operator"], tuple(e.get("values") or ()))
                        for e in term.get("matchExpressions") or ())
                  for term in required.get("nodeSelectorTerms") or ())
    return selector, terms


def holds_requests(holds: Mapping[str, int]) -> dict[str, int]:
    """A running allocation's holds in Kueue's units (custom keys are not pod resources)."""
    total = {"pods": 1}
    for key, units in holds.items():
        if key == "mcpu" and units:
            total["cpu"] = units
        elif key == "memory_mb" and units:
            total["memory"] = units * 1_000_000
        elif key == "gpu" and units:
            total["nvidia.com/gpu"] = units
    return total


def priority_values(objects: Iterable[Mapping]) -> dict[str, int]:
    return {o["metadata"]["name"]: int(o.get("value", 0)) for o in objects if o.get("kind") == "WorkloadPriorityClass"}


def workloads(objects: Sequence[Mapping], jobs: Mapping[str, Mapping], arrival: Mapping[str, int],
              running: Iterable[RunningWorkload], batch_of: Mapping[str, int] | None = None) -> list[Workload]:
    """The workloads Kueue would see: every running allocation admitted (by start
    order), and every Job with a queue created in arrival order (``batch_of``: a
    request's arrival batch, for replays of Jobs created in waves)."""
    values = priority_values(objects)
    found = []
    for alloc in running:
        found.append(Workload(name=alloc.name, namespace=alloc.namespace, queue_name=alloc.queue,
                              priority=values.get(alloc.priority_class or "", 0),
                              requests=holds_requests(alloc.holds), created=-1_000_000 + alloc.start_rank,
                              admitted_at=alloc.start_rank))
    order = sorted(jobs)
    order.sort(key=arrival.__getitem__)  # stable: by arrival, then id (no key tuple per Job)
    for request_id in order:
        job = jobs[request_id]
        labels = job["metadata"].get("labels", {})
        if QUEUE_LABEL not in labels:
            continue  # unmanaged: Kueue does not hold it back
        selector, affinity = node_selection(job)
        found.append(Workload(name=request_id, namespace=job["metadata"]["namespace"], queue_name=labels[QUEUE_LABEL],
                              priority=values.get(labels.get(PRIORITY_LABEL, ""), 0), requests=pod_requests(job),
                              created=arrival[request_id], batch=(batch_of or {}).get(request_id, 0),
                              node_selector=selector, affinity=affinity))
    return found


# The replay's work bound (kueuesim's ``simulate(max_work=...)``): nominations weighted by the
# ClusterQueues of their cohort, counted, never timed, so a stopped replay stops at the same
# cycle on every run. Hundreds of step operators with a policy each on one pool make hundreds of
# ClusterQueues in one cohort, and every nomination that looks for preemption candidates walks
# them all: 2,500 steps and 400 operators took 71 CPU s to replay. The bound grows with the
# workloads (a plan ten times larger may replay ten times longer) from a floor no small platform
# reaches; docs/targets.md says what a plan says when it stops the replay.
REPLAY_WORK_MIN = 200_000
REPLAY_WORK_PER_WORKLOAD = 200


def work_bound(workloads: int) -> int:
    """The replay's work bound for this many workloads (pending and running)."""
    return REPLAY_WORK_MIN + REPLAY_WORK_PER_WORKLOAD * workloads


def replay(objects: Sequence[Mapping], jobs: Mapping[str, Mapping], arrival: Mapping[str, int],
           running: Iterable[RunningWorkload], batch_of: Mapping[str, int] | None = None,
           max_work: int | None = None) -> Simulation:
    """Kueue's scheduler over these objects until nothing more can be admitted, or
    until ``max_work`` (default `work_bound`; then ``Simulation.stopped`` says so)."""
    items = workloads(objects, jobs, arrival, running, batch_of)
    return simulate(objects, items, max_work=work_bound(len(items)) if max_work is None else max_work)


def admitted_policies(simulation: Simulation, objects: Iterable[Mapping]) -> dict[str, str]:
    """Workload name -> the policy it runs under, for every admitted workload."""
    cq_policy = {o["metadata"]["name"]: o["metadata"].get("labels", {}).get(POLICY_LABEL)
                 for o in objects if o.get("kind") == "ClusterQueue"}
    return {name: cq_policy[o.cluster_queue] for name, o in simulation.outcomes.items()
            if o.status == ADMITTED and o.cluster_queue in cq_policy and cq_policy[o.cluster_queue]}


def differences(plan: Plan, simulation: Simulation, running_of_step: Mapping[str, str],
                unstoppable: Mapping[str, str] | None = None) -> list[RuntimeDifference]:
    """Where the cluster will do otherwise than ``plan``: per Kubernetes request
    (allocated vs left pending, queued vs admitted) and per running allocation
    (preempted by one and not the other). ``running_of_step``: step id -> the
    allocation that already runs it; ``unstoppable``: victims poolc meant to stop
    itself but cannot, and why. A workload the simulation never saw (a queued step
    held back, a victim its stop object removed) is no difference."""
    outcomes = simulation.outcomes
    found: list[RuntimeDifference] = []
    for request in plan.requests:
        outcome = outcomes.get(request.id)
        if request.id in running_of_step or outcome is None:
            continue  # a running step is judged by its allocation; no outcome: not a Kueue workload
        if request.status == ALLOCATED and outcome.status != ADMITTED:
            found.append(RuntimeDifference(request.id, ALLOCATED, PENDING,
                                           _kueue_says(f"the plan allocates it, but Kueue will leave it pending: "
                                                       f"{outcome.reason}")))
        elif request.status == QUEUED and outcome.status == ADMITTED:
            found.append(RuntimeDifference(request.id, QUEUED, ADMITTED,
                                           _kueue_says(f"the plan queues it, but Kueue will admit it in ClusterQueue "
                                                       f"{outcome.cluster_queue}: {outcome.reason}")))
    steps = {r.id for r in plan.requests}
    preempted = {p.id for p in plan.preempted}
    for name, outcome in sorted(outcomes.items()):
        if name in steps:
            continue
        if outcome.status == PREEMPTED and name not in preempted:
            found.append(RuntimeDifference(name, "running", PREEMPTED,
                                           _kueue_says(f"the plan keeps it running, but Kueue will preempt it: "
                                                       f"{outcome.reason}")))
        elif outcome.status == ADMITTED and name in preempted:
            why = (unstoppable or {}).get(name, "no workload Kueue admits needs its quota")
            found.append(RuntimeDifference(name, PREEMPTED, "running",
                                           _kueue_says(f"the plan preempts it, but Kueue will keep it running: {why}")))
    return sorted(found, key=lambda x: x.id)


def _kueue_says(text: str) -> Said:
    """A difference in the words of the simulated Kueue (its reasons are its own
    sentences, with amounts as Kueue writes them): marked by reading, as a plan
    file's messages are (domain.said)."""
    return read_said(text)
