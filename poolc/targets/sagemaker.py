"""SageMaker target: one complete CreateTrainingJob request body per step on a
SageMaker step operator (docs/targets.md#sagemaker).

A training job names an instance type rather than CPUs and memory, so the body
carries the catalog's choice (poolc.domain.catalog). Preemptible steps become
Managed Spot Training: in both worlds the job may be interrupted and resumed from
its checkpoints. JSON has no comments, so provenance goes into Tags.
"""

from __future__ import annotations

import json
import re

from ..domain.catalog import NoFit, choose_instance
from ..domain.naming import training_job_name
from ..model import SageMakerComponent
from ..requests import StepRequest
from ..units import gigabytes_ceil
from .context import TargetContext

DEFAULT_VOLUME_GB = 30
DEFAULT_RUNTIME_SECONDS = 86_400      # one day; SageMaker's own default when a step sets no max_runtime
SPOT_WAIT_SECONDS = 86_400            # spot: up to a day of waiting for capacity, on top of the run
CHECKPOINT_LOCAL_PATH = "/opt/ml/checkpoints"
_TAG_UNSAFE = re.compile(r"[^\w .:/=+\-@]")


def _tag(key: str, value: str) -> dict[str, str]:
    return {"Key": key, "Value": _TAG_UNSAFE.sub("_", value)[:256]}


def _output_path(component: SageMakerComponent, request: StepRequest) -> str:
    return f"{component.output_s3_uri.rstrip('/')}/{request.pipeline}/{request.step}"


def training_job(ctx: TargetContext, request: StepRequest, component: SageMakerComponent,
                 instance_type: str) -> dict:
    """The CreateTrainingJob body of one step."""
    algorithm: dict = {"TrainingImage": ctx.image_of(request), "TrainingInputMode": "File"}
    command = ctx.command_of(request)
    if command:
        algorithm["ContainerEntrypoint"] = list(command)
    output = _output_path(component, request)
    policy = ctx.policy_of(request)
    environment = {"POOLC_PIPELINE": request.pipeline, "POOLC_STEP": request.step}
    tags = [_tag("poolc:pipeline", request.pipeline), _tag("poolc:step", request.step),
            _tag("poolc:source", request.entry.doc.file), _tag("poolc:region", component.region),
            _tag("poolc:generated-by", f"poolc {ctx.version} - do not edit")]
    if policy is not None:
        environment.update({"POOLC_POLICY": policy.name, "POOLC_POOL": policy.pool})
        tags += [_tag("poolc:policy", policy.name), _tag("poolc:pool", policy.pool)]
    runtime = request.max_runtime_seconds or DEFAULT_RUNTIME_SECONDS
    stopping = {"MaxRuntimeInSeconds": runtime}
    body = {
        "TrainingJobName": training_job_name(request.id),
        "AlgorithmSpecification": algorithm,
        "RoleArn": component.role_arn,
        "OutputDataConfig": {"S3OutputPath": output},
        "ResourceConfig": {
            "InstanceType": instance_type,
            "InstanceCount": 1,
            "VolumeSizeInGB": gigabytes_ceil(request.settings.disk) if request.settings.disk else DEFAULT_VOLUME_GB,
        },
        "StoppingCondition": stopping,
        "Environment": environment,
        "EnableManagedSpotTraining": request.preemptible,
        "Tags": sorted(tags, key=lambda t: t["Key"]),
    }
    if request.preemptible:
        # SageMaker requires MaxWaitTimeInSeconds >= MaxRuntimeInSeconds: the wait
        # includes the run itself.
        stopping["MaxWaitTimeInSeconds"] = runtime + SPOT_WAIT_SECONDS
        body["CheckpointConfig"] = {"S3Uri": f"{output}/checkpoints", "LocalPath": CHECKPOINT_LOCAL_PATH}
    return body


def instance_for(request: StepRequest, component: SageMakerComponent) -> str | None:
    if request.instance_type is not None:      # the step names it (validate checks it is in the catalog)
        return request.instance_type
    choice = choose_instance(mcpu=request.demand.get("mcpu", 0), memory_mb=request.demand.get("memory_mb", 0),
                             gpu=request.demand.get("gpu", 0), gpu_type=request.settings.gpu_type,
                             allowed=component.instance_types)
    return None if isinstance(choice, NoFit) else choice.name


def render(ctx: TargetContext) -> dict[str, str]:
    """``sagemaker/<pipeline>--<step>.json`` per step on a SageMaker step operator
    that the plan allocates, ``held/sagemaker/<pipeline>--<step>.json`` per step it
    queues: nothing in AWS enforces a pool, so the plan is the only gate, and a CI job
    that submits ``sagemaker/*.json`` never submits a queued step. Rejected
    steps, steps without an image and steps no instance fits get no file (validate
    reports each of them as an error)."""
    files: dict[str, str] = {}
    for request in ctx.requests:
        component = ctx.component(request.requester)
        if not isinstance(component, SageMakerComponent) or ctx.is_rejected(request) or not ctx.image_of(request):
            continue
        instance_type = instance_for(request, component)
        if instance_type is None:
            continue
        body = training_job(ctx, request, component, instance_type)
        folder = "held/sagemaker" if ctx.is_queued(request) else "sagemaker"
        files[f"{folder}/{request.pipeline}--{request.step}.json"] = json.dumps(body, indent=2, sort_keys=True) + "\n"
    return dict(sorted(files.items()))
