"""The runtime check of a plan, and the `kueue` strategy: render what apply would
write for a plan, replay it through Kueue's scheduler, and read the outcome back.

This composes two stages (targets, planner.kueue), so it lives with the commands:
the replay reads exactly the objects and Jobs apply writes (the same code path,
not a second model of them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from .. import diagnostics as d
from ..config import Config
from ..diagnostics import Diagnostic, report_order
from ..domain.naming import local_queue_name, priority_class_name
from ..domain.plan import ALLOCATED, QUEUED, Plan, Runtime, RuntimeDifference
from ..domain.problem import Problem, Running
from ..model import KubernetesComponent
from ..planner import kueue as replaying
from ..planner.solution import Solution
from ..requests import StepRequest
from ..targets import kubernetes, kueue, stops
from ..targets.context import TargetContext
from ..vocabulary import ALL, GATE, SubmitMode


@dataclasses.dataclass(frozen=True)
class Replay:
    objects: list[dict]
    simulation: replaying.Simulation
    running_of_step: dict[str, str]
    submit: SubmitMode = GATE
    stopped: frozenset[str] = frozenset()   # victims the stop objects stop (gone from the cluster)


def running_workloads(ctx: TargetContext, problem: Problem) -> list[replaying.RunningWorkload]:
    """The running allocations of Kubernetes subjects as admitted workloads, in the
    queue their step's Job would use (guaranteed for non-preemptible, burst else)."""
    found = []
    for alloc in problem.running:
        policy = problem.policy_for(alloc.subject, alloc.pool)
        component = ctx.component(alloc.subject)
        if policy is None or not isinstance(component, KubernetesComponent):
            continue
        found.append(replaying.RunningWorkload(alloc.name, component.namespace,
                                               local_queue_name(policy.name, alloc.preemptible),
                                               priority_class_name(policy.priority), alloc.holds, alloc.start_rank))
    return found


def replay(config: Config, plan: Plan, requests: Iterable[StepRequest], problem: Problem,
           running: Mapping[str, Running], batch_of: Mapping[str, int] | None = None,
           context: TargetContext | None = None, submit: SubmitMode = GATE) -> Replay:
    """Kueue's outcome for what apply would write for ``plan``. ``running``: step id
    -> the allocation that already runs it (its Job is that admitted workload);
    ``batch_of``: request id -> the wave its Job is created in (default: all at once);
    ``context``: the targets' context of ``plan``, when the caller renders the files too
    (its submit mode wins over ``submit``).

    Gate mode (docs/apply.md#gate-mode-the-cluster-runs-the-plan) replays exactly what it writes: the Jobs of
    the steps the plan allocates (queued steps' Jobs are held back), and the running
    workloads without those the stop objects stop (deactivated: gone, not requeued)."""
    ctx = context if context is not None else TargetContext.of(config, plan, requests, submit=submit)
    objects = kueue.cluster_objects(ctx)
    waiting = {r.id for r in plan.requests if r.status in (ALLOCATED, QUEUED) and r.id not in running}
    jobs = {rid: job for rid, job in kubernetes.submitted_jobs(ctx).items() if rid in waiting}
    arrival = {r.id: r.rank for r in problem.requests}
    gone = {p.id for p in stops.stopped(ctx)}
    workloads = [w for w in running_workloads(ctx, problem) if w.name not in gone]
    simulation = replaying.replay(objects, jobs, arrival, workloads, batch_of)
    return Replay(objects, simulation, {step: alloc.name for step, alloc in running.items()}, ctx.submit,
                  frozenset(gone))


def runtime_of(plan: Plan, replayed: Replay) -> Runtime:
    """The plan against the replay. A replay its work bound stopped has not decided
    every workload: the ones it left pending are not differences, only the ones it
    decided otherwise, and the runtime section says where it stopped."""
    differences = tuple(replaying.differences(plan, replayed.simulation, replayed.running_of_step,
                                              _unstoppable(plan, replayed)))
    stopped = replayed.simulation.stopped
    if stopped:
        differences = tuple(x for x in differences if x.cluster != "pending")
        stopped = (f"the Kueue replay {stopped}: the steps it left pending were not checked against the plan "
                   "(a platform of hundreds of ClusterQueues in one cohort)")
    notes = _notes(differences, replayed)
    if replayed.submit == ALL and plan.solver.strategy != "kueue":
        notes = (SUBMIT_ALL_NOTE, *notes)
    return Runtime(replaying.ENGINE, differences, notes, stopped, replayed.submit)


SUBMIT_ALL_NOTE = ("every Job goes to Kueue (--submit all): Kueue, not this plan, decides which wait and "
                   "which running work it preempts; the plan to read is `poolc plan --strategy kueue --submit all`")


def _unstoppable(plan: Plan, replayed: Replay) -> dict[str, str]:
    """Victims gate mode cannot stop itself, and why (their Workload is unknown)."""
    if replayed.submit != GATE:
        return {}
    return {p.id: ("poolc cannot stop it: the state does not know its Kueue Workload (run `poolc state import "
                   "--kueue` first), so no stop object is written")
            for p in plan.preempted if p.id not in replayed.stopped}


def _notes(differences: tuple[RuntimeDifference, ...], replayed: Replay) -> tuple[str, ...]:
    """Say why, where a whole queue differs by construction: the plan and Kueue pick
    different sets of waiting workloads from one ClusterQueue under contention."""
    outcomes = replayed.simulation.outcomes
    pending = {outcomes[x.id].cluster_queue for x in differences if x.cluster == "pending" and x.id in outcomes}
    admitted = {outcomes[x.id].cluster_queue for x in differences if x.cluster == "admitted" and x.id in outcomes}
    both = sorted(q for q in pending & admitted if q)
    if not both:
        return ()
    more = f" (and {len(both) - 1} more)" if len(both) > 1 else ""
    return (f"in ClusterQueue {both[0]}{more} Kueue admits a different set of waiting workloads than the plan: "
            "Kueue takes a queue's workloads in priority and arrival order and admits each that fits, while "
            "the optimal strategy maximises how many run at each priority, so under contention they pick "
            "different sets; `poolc plan --strategy kueue` plans what the cluster will do",)


def runtime_diagnostics(runtime: Runtime, requests: Iterable[StepRequest], config: Config) -> list[Diagnostic]:
    """One warning (T001) per difference, on the step's settings or the
    allocation's document, saying what the cluster will do and why."""
    by_id = {r.id: r for r in requests}
    found = []
    for difference in runtime.differences:
        request = by_id.get(difference.id)
        if request is not None:
            found.append(request.entry.doc.diagnostic(d.T001, f"step {request.step!r}: {difference.message.text}",
                                                      request.settings_path(), request=request.id))
            continue
        entry = config.allocations.get(difference.id)
        if entry is not None:
            found.append(entry.doc.diagnostic(d.T001, f"allocation {difference.id!r}: {difference.message.text}",
                                              ("metadata", "name")))
    return found


def with_runtime(plan: Plan, replayed: Replay, requests: Iterable[StepRequest], config: Config) -> Plan:
    """``plan`` with its runtime section and one T001 warning per difference."""
    runtime = runtime_of(plan, replayed)
    extra = runtime_diagnostics(runtime, requests, config)
    diagnostics = tuple(sorted([*plan.diagnostics, *extra], key=report_order))
    return dataclasses.replace(plan, runtime=runtime, diagnostics=diagnostics)


def kueue_solution(replayed: Replay, others: Solution, kubernetes_ids: set[str], running: set[str]) -> Solution:
    """The `kueue` strategy's Solution: Kubernetes requests as Kueue admits them,
    the others (SageMaker: nothing in AWS enforces a pool) as ``others`` decided.
    ``running``: the names of the running allocations (a request Kueue admits and
    then evicts again is simply not admitted)."""
    admitted = replaying.admitted_policies(replayed.simulation, replayed.objects)
    chosen = {rid: policy for rid, policy in admitted.items() if rid in kubernetes_ids}
    chosen.update({rid: policy for rid, policy in others.admitted.items() if rid not in kubernetes_ids})
    preempted: dict[str, list[str]] = {}
    for name, outcome in replayed.simulation.outcomes.items():
        if outcome.status == replaying.PREEMPTED and name in running:
            preempted[name] = sorted(set(outcome.preempted_by) & (kubernetes_ids | running))
    for name, for_ in others.preempted.items():
        outside = [rid for rid in for_ if rid not in kubernetes_ids]
        if outside:
            preempted.setdefault(name, sorted(set(preempted.get(name, [])) | set(outside)))
    return Solution(strategy="kueue", admitted=dict(sorted(chosen.items())), preempted=dict(sorted(preempted.items())),
                    status="SIMULATED", objective=[], gap=0.0)


__all__ = ["RuntimeDifference", "kueue_solution", "replay", "runtime_of", "with_runtime"]
