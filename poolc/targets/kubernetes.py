"""Kubernetes target: one suspended batch/v1 Job per step on a Kubernetes component,
plus one PriorityClass per policy priority (docs/targets.md#kubernetes).

A managed Job is created suspended and carries Kueue's queue and priority labels:
Kueue, not the Job controller, decides when it starts, which keeps the pool rules
at runtime. An unmanaged step (its component has no policy) gets a plain Job that
runs at once; a rejected step gets no file at all.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict

from ..domain.gpu_models import node_selection
from ..domain.naming import MAX_NAME, dns_label, hash_suffixed, local_queue_name, priority_class_name, short_name
from ..domain.plan import QUEUED
from ..model import KubernetesComponent
from ..requests import StepRequest, step_inputs
from ..units import format_mcpu, format_memory_mb
from ..vocabulary import GATE
from .context import LABEL_PREFIX, MANAGED_BY, TargetContext
from .yamlout import dump_all

BUILTIN_KEYS = ("gpu", "mcpu", "memory_mb", "step_run")
# How long Kubernetes keeps a finished Job (and Kueue its Workload) before deleting
# them: long enough for the next observation of the cluster (`state import`, `plan
# --observed`) to record the step as finished, short enough not to pile up.
TTL_AFTER_FINISHED = 7 * 24 * 3600
# The Job's name ends in this many hex digits of its spec: a Job's pod template is
# immutable, so a changed step is a new Job (docs/targets.md#changing-and-rerunning-a-job).
SPEC_DIGITS = 6
# A held-back Job's name ends in this (no hex digit): it never equals the name of an
# admitted Job, which ends in SPEC_DIGITS hex digits, so a held-back Job applied by
# mistake can never be the running Job of its step (kubectl would leave that alone).
HELD_SUFFIX = "-held"
# Where gate mode puts the Jobs of the steps a plan queues: a top-level directory of
# its own, beside kubernetes/, so no recursive apply of kubernetes/ reaches them.
HELD_DIR = "held/kubernetes"
GPU_RESOURCE = "nvidia.com/gpu"

# poolc/ZenML unit spellings -> Kubernetes quantity suffixes ("4GB" is not valid there).
_K8S_SUFFIX = {"KB": "k", "K": "k", "k": "k", "MB": "M", "M": "M", "GB": "G", "G": "G", "TB": "T", "T": "T",
               "PB": "P", "P": "P", "KiB": "Ki", "Ki": "Ki", "MiB": "Mi", "Mi": "Mi", "GiB": "Gi", "Gi": "Gi",
               "TiB": "Ti", "Ti": "Ti", "PiB": "Pi", "Pi": "Pi"}
_QUANTITY = re.compile(r"^([0-9]*\.?[0-9]+)([A-Za-z]+)$")


def kubernetes_quantity(text: str) -> str:
    """A poolc quantity (``100GB``, ``8Gi``, ``.5TiB``) in Kubernetes syntax (``100G``, ``8Gi``, ``0.5Ti``)."""
    match = _QUANTITY.match(text)
    if not match or match.group(2) not in _K8S_SUFFIX:
        raise ValueError(f"not a quantity: {text!r}")
    number = match.group(1)
    return f"{'0' if number.startswith('.') else ''}{number}{_K8S_SUFFIX[match.group(2)]}"


def kubernetes_steps(ctx: TargetContext) -> list[tuple[StepRequest, KubernetesComponent]]:
    """Steps whose requester is a Kubernetes component, except rejected ones and
    steps with no image (validate reports both)."""
    found = []
    for request in ctx.requests:
        component = ctx.component(request.requester)
        if (isinstance(component, KubernetesComponent) and not ctx.is_rejected(request)
                and ctx.image_of(request)):
            found.append((request, component))
    return found


def job_names(steps: list[tuple[StepRequest, KubernetesComponent]]) -> dict[str, str]:
    """Request id -> Job name: ``<pipeline>--<step>`` as a DNS-1123 label; names
    that would clash in one namespace (``a_b`` and ``a-b``) all get a hash suffix."""
    wanted = {r.id: (c.namespace, dns_label(f"{r.pipeline}--{r.step}")) for r, c in steps}
    count: dict[tuple[str, str], int] = defaultdict(int)
    for key in wanted.values():
        count[key] += 1
    names = {}
    for request_id, (namespace, name) in wanted.items():
        if count[(namespace, name)] > 1:
            name = hash_suffixed(name, request_id)
        names[request_id] = name
    return names


def versioned_name(name: str, spec: dict) -> str:
    """``<name>-<digest of the Job's spec>``: the same spec keeps its name (``kubectl
    apply`` leaves the Job alone), a changed one gets a new name, so applying it
    creates a new Job instead of failing on the old one's immutable pod template."""
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return f"{short_name(name, MAX_NAME - SPEC_DIGITS - 1)}-{digest[:SPEC_DIGITS]}"


def held_name(job: dict) -> str:
    """The name a held-back Job carries: its admitted name with `HELD_SUFFIX`, cut to fit."""
    name = job["metadata"]["name"]
    return f"{name[:MAX_NAME - len(HELD_SUFFIX)].rstrip('-')}{HELD_SUFFIX}"


def _resources(request: StepRequest) -> dict:
    demand, settings = request.demand, request.settings
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    if demand.get("mcpu"):
        requests["cpu"] = format_mcpu(demand["mcpu"])
    if demand.get("memory_mb"):
        requests["memory"] = limits["memory"] = format_memory_mb(demand["memory_mb"])
    if settings.disk:
        requests["ephemeral-storage"] = limits["ephemeral-storage"] = kubernetes_quantity(settings.disk)
    if demand.get("gpu"):
        requests[GPU_RESOURCE] = limits[GPU_RESOURCE] = str(demand["gpu"])
    resources = {}
    if limits:
        resources["limits"] = dict(sorted(limits.items()))
    if requests:
        resources["requests"] = dict(sorted(requests.items()))
    return resources


def _container(ctx: TargetContext, request: StepRequest) -> dict:
    container: dict = {"name": "step", "image": ctx.image_of(request)}
    command = ctx.command_of(request)
    if command:
        container["command"] = list(command)
    container["env"] = [{"name": "POOLC_PIPELINE", "value": request.pipeline},
                        {"name": "POOLC_STEP", "value": request.step}]
    resources = _resources(request)
    if resources:
        container["resources"] = resources
    if request.settings.shm:
        container["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    return container


def _shm_volume(shm: str) -> dict:
    empty_dir = {"medium": "Memory"}
    if shm != "auto":
        empty_dir["sizeLimit"] = kubernetes_quantity(shm)
    return {"name": "dshm", "emptyDir": empty_dir}


def render_job(ctx: TargetContext, request: StepRequest, component: KubernetesComponent, name: str) -> dict:
    """The batch/v1 Job of one step."""
    policy = ctx.policy_of(request)
    step_labels = {**MANAGED_BY, f"{LABEL_PREFIX}pipeline": request.pipeline, f"{LABEL_PREFIX}step": request.step,
                   f"{LABEL_PREFIX}inputs": step_inputs(request)}
    labels = dict(step_labels)
    if policy is not None:
        labels.update({
            f"{LABEL_PREFIX}policy": policy.name,
            f"{LABEL_PREFIX}pool": policy.pool,
            "kueue.x-k8s.io/queue-name": local_queue_name(policy.name, request.preemptible),
            "kueue.x-k8s.io/priority-class": priority_class_name(policy.priority),
        })
    annotations = {f"{LABEL_PREFIX}source": request.entry.doc.file}
    custom = {k: v for k, v in request.demand.items() if k not in BUILTIN_KEYS}
    if custom:
        annotations[f"{LABEL_PREFIX}pool-resources"] = json.dumps(custom, sort_keys=True, separators=(",", ":"))

    pod: dict = {"restartPolicy": "Never"}
    if component.service_account:
        pod["serviceAccountName"] = component.service_account
    if policy is not None:
        pod["priorityClassName"] = priority_class_name(policy.priority)
    if request.gpu_product is not None and request.settings.gpu_type:
        pod.update(node_selection(request.settings.gpu_type))   # the models its gpu_type accepts
    pod["containers"] = [_container(ctx, request)]
    if request.settings.shm:
        pod["volumes"] = [_shm_volume(request.settings.shm)]

    spec: dict = {
        # Kueue unsuspends a managed Job when it admits it; an unmanaged one runs at once.
        "suspend": policy is not None,
        # Retries belong to the pipeline; a pod disrupted by preemption or node
        # drain does not count as a failure of the step.
        "backoffLimit": 0,
        "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
        "ttlSecondsAfterFinished": TTL_AFTER_FINISHED,
    }
    if request.max_runtime_seconds is not None:
        # max_runtime: the Job fails (and its pods stop) this long after it starts;
        # a suspended Job's clock starts again when Kueue admits it.
        spec["activeDeadlineSeconds"] = request.max_runtime_seconds
    spec["template"] = {"metadata": {"labels": dict(sorted(step_labels.items()))}, "spec": pod}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": versioned_name(name, spec),
            "namespace": component.namespace,
            "labels": dict(sorted(labels.items())),
            "annotations": dict(sorted(annotations.items())),
        },
        "spec": spec,
    }


def render_priority_classes(ctx: TargetContext) -> tuple[list[dict], list[str]] | None:
    """One PriorityClass per distinct priority of a policy whose subject is a
    Kubernetes component, by value descending; None when there is none."""
    by_value: dict[int, list[str]] = defaultdict(list)
    for policy in ctx.kubernetes_policies():
        by_value[policy.priority].append(policy.name)
    if not by_value:
        return None
    objects = []
    for value in sorted(by_value, reverse=True):
        objects.append({
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": priority_class_name(value), "labels": dict(MANAGED_BY)},
            "value": value,
            "globalDefault": False,
            # Kueue decides preemption; the scheduler must not evict pods by itself
            # (it could evict a non-preemptible step).
            "preemptionPolicy": "Never",
            "description": f"poolc policy priority {value} (policies: {', '.join(sorted(by_value[value]))})",
        })
    sources = [ctx.policy_entry(n).doc.file for names in by_value.values() for n in names]
    return objects, sources


def _steps(ctx: TargetContext) -> list[tuple[StepRequest, KubernetesComponent]]:
    """``kubernetes_steps``, worked out once per context (the Jobs and their files read it)."""
    found = ctx.rendered.get("steps")
    if found is None:
        found = ctx.rendered["steps"] = kubernetes_steps(ctx)
    return found  # type: ignore[return-value]


def jobs(ctx: TargetContext) -> dict[str, dict]:
    """Request id -> the Job apply writes for it, as the API object (rendered once
    per context: the runtime check replays the very objects the files hold)."""
    found = ctx.rendered.get("jobs")
    if found is None:
        steps = _steps(ctx)
        names = job_names(steps)
        found = ctx.rendered["jobs"] = {request.id: render_job(ctx, request, component, names[request.id])
                                        for request, component in steps}
    return found  # type: ignore[return-value]


def is_held(ctx: TargetContext, request: StepRequest) -> bool:
    """Gate mode holds back the Job of a step the plan queues: a later plan admits it."""
    return ctx.submit == GATE and ctx.is_queued(request)


def job_dir(ctx: TargetContext, request: StepRequest) -> str:
    """Where a step's Job goes: ``kubernetes``, or in gate mode ``held/kubernetes`` for
    a step the plan queues (never matched by any ``kubectl apply -R -f kubernetes/``:
    a queued step starts only when a later plan admits it)."""
    return HELD_DIR if is_held(ctx, request) else "kubernetes"


def submitted_jobs(ctx: TargetContext) -> dict[str, dict]:
    """The Jobs that reach Kueue: every Job with ``--submit all``; in gate mode only
    those of the steps the plan does not queue (what the runtime check replays)."""
    rendered = jobs(ctx)
    if ctx.submit != GATE:
        return rendered
    planned = ctx.planned
    return {rid: job for rid, job in rendered.items() if rid not in planned or planned[rid].status != QUEUED}


def job_path(ctx: TargetContext, request: StepRequest, component: KubernetesComponent) -> str:
    return f"{job_dir(ctx, request)}/{component.namespace}/{request.pipeline}--{request.step}.job.yaml"


def job_paths(ctx: TargetContext) -> dict[str, str]:
    """Request id -> the path of its Job file (the plan reads which running Jobs apply replaces)."""
    return {request.id: job_path(ctx, request, component) for request, component in _steps(ctx)}


def render(ctx: TargetContext) -> dict[str, str]:
    """``kubernetes/<namespace>/<pipeline>--<step>.job.yaml`` and ``kubernetes/priorityclasses.yaml``;
    in gate mode ``held/kubernetes/<namespace>/...`` for the Jobs held back, named apart."""
    files: dict[str, str] = {}
    rendered = jobs(ctx)
    for request, component in _steps(ctx):
        job = rendered[request.id]
        if is_held(ctx, request):
            job = {**job, "metadata": {**job["metadata"], "name": held_name(job)}}
        sources = [request.entry.doc.file, ctx.component_file(component.name)]
        policy = ctx.policy_of(request)
        if policy is not None:
            sources.append(ctx.policy_entry(policy.name).doc.file)
        files[job_path(ctx, request, component)] = dump_all([job], version=ctx.version, sources=sources)
    classes = render_priority_classes(ctx)
    if classes is not None:
        files["kubernetes/priorityclasses.yaml"] = dump_all(classes[0], version=ctx.version, sources=classes[1])
    return dict(sorted(files.items()))
