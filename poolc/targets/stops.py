"""Stop objects (docs/apply.md#gate-mode-the-cluster-runs-the-plan): in gate mode poolc, not Kueue, stops the
running work a plan preempts, so the cluster loses exactly the victims the plan chose.

Each victim whose Kueue Workload the state knows (`poolc state import --kueue`
records it) gets ``kubernetes/<namespace>/stop/<allocation>.workload.yaml``: that
Workload with ``spec.active: false``, Kueue's own way to stop a workload. Kueue
evicts a deactivated workload, releases its quota and never queues it again
(unlike a preemption, which requeues it, so it could win its reserve back), and
suspends its Job, which stops the pods. ``kubectl apply`` patches only what the
file names (``spec.active``) on the Workload Kueue created. The file lives as long
as the plan preempts the allocation: once the state shows it stopped, the next
plan no longer lists it and apply removes the file.

A victim whose Workload is unknown gets no file; the runtime check then says that
poolc cannot stop it. With ``--submit all`` Kueue chooses its victims itself and no
stop object is written.
"""

from __future__ import annotations

from ..domain.plan import Preemption
from ..vocabulary import GATE
from .context import LABEL_PREFIX, TargetContext
from .yamlout import dump_all

WORKLOAD_API = "kueue.x-k8s.io/v1beta2"


def stopped(ctx: TargetContext) -> list[Preemption]:
    """The plan's victims poolc stops itself: gate mode, Workload known."""
    if ctx.submit != GATE:
        return []
    return [p for p in ctx.plan.preempted if p.workload is not None]


def stop_object(preemption: Preemption) -> dict:
    """The Workload patch that stops one victim."""
    assert preemption.workload is not None
    namespace, name = preemption.workload.split("/", 1)
    return {
        "apiVersion": WORKLOAD_API,
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {f"{LABEL_PREFIX}stopped-allocation": preemption.id},
            "annotations": {f"{LABEL_PREFIX}stopped-for": ", ".join(preemption.for_) or "the plan",
                            f"{LABEL_PREFIX}stop-reason": preemption.message.text},
        },
        "spec": {"active": False},
    }


def render(ctx: TargetContext) -> dict[str, str]:
    """``kubernetes/<namespace>/stop/<allocation>.workload.yaml`` per stopped victim."""
    files = {}
    for preemption in stopped(ctx):
        obj = stop_object(preemption)
        path = f"kubernetes/{obj['metadata']['namespace']}/stop/{preemption.id}.workload.yaml"
        sources = sorted({ctx.config.allocations[preemption.id].doc.file} if preemption.id in ctx.config.allocations
                         else set())
        files[path] = dump_all([obj], version=ctx.version, sources=sources or ["the state file"])
    return dict(sorted(files.items()))
