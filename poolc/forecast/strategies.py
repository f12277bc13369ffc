"""The plan's own strategy, as the forecast's ``replan(problem) -> Solution``.

At each completion the forecast plans the freed capacity again the way the plan
was made: ``optimal`` with the same tiers (the planner on the reduced problem),
``zenml`` with the reconciler, ``kueue`` by letting Kueue's scheduler go on from
what runs (the very Kueue objects and Jobs apply writes, rendered once).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..commands.planning import PlanResult
from ..commands.runtime_check import Replay, kueue_solution, running_workloads
from ..domain.naming import local_queue_name, priority_class_name
from ..domain.problem import Problem
from ..kueuesim import Workload, simulate
from ..model import KubernetesComponent
from ..planner import kueue as replaying
from ..planner.solution import Solution
from ..targets import kubernetes, kueue
from ..targets.context import TargetContext
from .rollforward import Replan

STOPPED = "a Kueue re-plan reached its work bound"


def replanner(result: PlanResult, notes: list[str] | None = None, aliases: Mapping[str, str] | None = None) -> Replan:
    """``notes``: where a re-plan says something the forecast must repeat (a Kueue
    re-plan its work bound stopped). ``aliases``: request id -> the step whose Job
    it is (a scenario's arrival runs a step of the inputs again, as a Job of its own)."""
    strategy = result.solution.strategy
    if strategy == "zenml":
        from ..planner import zenml

        return zenml.solve
    from ..planner import optimal

    if strategy == "kueue":
        return _kueue(result, optimal.solve, notes if notes is not None else [], aliases or {})
    return optimal.solve


def _kueue(result: PlanResult, optimal: Replan, notes: list[str], aliases: Mapping[str, str]) -> Replan:
    """Kueue's scheduler from the state the forecast is in: what runs is admitted,
    what waits is pending in its Job's queue. Work that is not a Job (SageMaker
    steps) is planned as the optimal strategy would, as in the plan. Each re-plan
    has the replay's work bound (counted, not timed, so the forecast stays the
    same bytes): a re-plan it stops leaves what it did not reach waiting, and the
    forecast's notes say how often that happened."""
    ctx = TargetContext.of(result.validation.config, result.plan, result.validation.requests)
    objects = kueue.cluster_objects(ctx)
    jobs = kubernetes.jobs(ctx)
    priorities = replaying.priority_values(objects)

    def replan(problem: Problem) -> Solution:
        arrival = {r.id: r.rank for r in problem.requests}
        pending = {r.id: jobs[aliases.get(r.id, r.id)] for r in problem.requests if aliases.get(r.id, r.id) in jobs}
        # only the queues of this problem's pools: the others' quota is not in it
        queues = {local_queue_name(q.name, flag) for q in problem.policies for flag in (False, True)}
        workloads = [w for w in replaying.workloads(objects, pending, arrival, running_workloads(ctx, problem))
                     if w.queue_name in queues]
        for request in problem.requests:
            if request.id in pending:
                continue
            component = ctx.component(request.requester)
            policies = problem.policies_of(request.requester)
            if not isinstance(component, KubernetesComponent) or not policies:
                continue
            # preempted work that is not a step's Job: back in its subject's first queue
            workloads.append(Workload(
                name=request.id, namespace=component.namespace,
                queue_name=local_queue_name(policies[0].name, request.preemptible),
                priority=priorities.get(priority_class_name(policies[0].priority), 0),
                requests=replaying.holds_requests(request.demand), created=request.rank))
        simulation = simulate(objects, workloads, max_work=replaying.work_bound(len(workloads)))
        if simulation.stopped and not any(n.startswith(STOPPED) for n in notes):
            notes.append(f"{STOPPED} ({simulation.stopped}): the steps it left pending wait for the next "
                         "completion")
        on_kueue = {r.id for r in problem.requests if r.id in pending or r.id in simulation.outcomes}
        elsewhere = tuple(r for r in problem.requests if r.id not in on_kueue)
        others = optimal(Problem(problem.pools, problem.policies, elsewhere, problem.running)) if elsewhere \
            else Solution("optimal", {})
        return kueue_solution(Replay(objects, simulation, {}), others, on_kueue, {a.name for a in problem.running})

    return replan
