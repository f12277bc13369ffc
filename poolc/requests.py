"""One request per pipeline step: merged ResourceSettings -> demand vector (docs/format.md#how-step-settings-merge).

Arrival order (docs/format.md#arrival-order): steps that set ``submitted_at`` arrived at that time and
come first, by time; the others arrive in the order of their files on the command
line (directories in sorted path order), then document order, then step order.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .config import Config, Entry
from .domain.gpu_models import product_value
from .model import NEW_SPELLINGS, Pipeline, ResourceSettings, data_key, parse_timestamp
from .units import duration_seconds, mcpu_ceil, memory_mb_ceil

# The node label a gpu_type selects on Kubernetes (NVIDIA GPU feature discovery's).
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"


@dataclass(frozen=True, slots=True)   # one per step: 100,000 of them in a large repository
class StepRequest:
    id: str                          # "<pipeline>/<step>"
    pipeline: str
    step: str
    requester: str | None            # component name; None when the stack is unknown
    settings: ResourceSettings       # pipeline default merged with the step's own
    demand: dict[str, int]
    preemptible: bool
    submitted_at: datetime | None
    entry: Entry[Pipeline]
    instance_type: str | None = None   # a SageMaker instance type the step names (its demand is that instance)

    @property
    def gpu_product(self) -> str | None:
        """The value of the GPU product node selector of this step's Kubernetes Job:
        its gpu_type as a label value, only when it asks for GPUs."""
        if not self.settings.gpu_type or not self.demand.get("gpu"):
            return None
        return product_value(self.settings.gpu_type)

    @property
    def max_runtime_seconds(self) -> int | None:
        """The step's hard time limit in seconds, None when it sets none."""
        value = self.settings.max_runtime
        return None if value is None else duration_seconds(value)

    @property
    def path(self) -> tuple[str, ...]:
        return ("spec", "steps", self.step)

    def settings_path(self) -> tuple[str, ...]:
        """Where the step's own resources are written, else the pipeline default's."""
        step = self.entry.obj.spec.steps[self.step]
        if step.settings is not None and step.settings.resources is not None:
            return self.path + ("settings", "resources")
        if self.entry.obj.spec.settings is not None and self.entry.obj.spec.settings.resources is not None:
            return ("spec", "settings", "resources")
        return self.path

    def field_path(self, name: str) -> tuple[str, ...]:
        """Where a settings field (e.g. "memory") that this request uses was written,
        under its v1 name or its ZenML 0.98 spelling."""
        step = self.entry.obj.spec.steps[self.step]
        own = step.settings.resources if step.settings and step.settings.resources else None
        written = _written_as(own, name)
        if written is not None:
            return self.path + ("settings", "resources", written)
        default = self.entry.obj.spec.settings
        written = _written_as(default.resources if default else None, name)
        if written is not None:
            return ("spec", "settings", "resources", written)
        return self.settings_path()


def step_inputs(request: StepRequest) -> str:
    """16 hex digits naming what a step runs: requester, merged settings, demand,
    image and command. A finished step is requested again once this changes; the
    Kubernetes Job carries it as a label, so a finished Workload says what it ran."""
    step = request.entry.obj.spec.steps[request.step]
    data = {"requester": request.requester, "settings": request.settings.model_dump(mode="json", exclude_none=True),
            "demand": dict(sorted(request.demand.items())), "preemptible": request.preemptible,
            "image": step.image, "command": step.command}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _written_as(settings: ResourceSettings | None, name: str) -> str | None:
    """The key a v1 field was written under in these settings (its own name or its
    ZenML 0.98 spelling), or None when it is not set there."""
    if settings is None:
        return None
    for key in (name, *(new for new, old in NEW_SPELLINGS.items() if old == name)):
        if getattr(settings, key, None) is not None:
            return key
    return None


def demand_of(settings: ResourceSettings) -> dict[str, int]:
    """docs/format.md#how-step-settings-merge, in that order; keys sorted."""
    demand: dict[str, int] = dict(settings.pool_resources or {})
    if settings.gpu_count is not None:
        if settings.gpu_count > 0:
            demand["gpu"] = settings.gpu_count
        else:
            demand.pop("gpu", None)
    if settings.cpu_count is not None:
        demand["mcpu"] = mcpu_ceil(settings.cpu_count)
    if settings.memory is not None:
        demand["memory_mb"] = memory_mb_ceil(settings.memory)
    demand["step_run"] = 1
    return dict(sorted(demand.items()))


def requester_of(config: Config, pipeline: Pipeline, step_operator: str | None) -> str | None:
    """The step operator, else the orchestrator; None when the stack is unknown or does not hold the step
    operator (K002 reports it; such a step requests nothing)."""
    stack = config.stacks.get(pipeline.spec.stack)
    if stack is None:
        return None
    if step_operator is None:
        return stack.obj.spec.orchestrator.name
    operators = {op.name for op in stack.obj.spec.step_operators}
    return step_operator if step_operator in operators else None


def _submitted(request: StepRequest) -> datetime:
    """Sort key of a step that set submitted_at."""
    assert request.submitted_at is not None
    return request.submitted_at


def _distinct(distinct: dict[str, tuple[ResourceSettings, dict[str, int]]],
              fields: dict[str, Any]) -> tuple[ResourceSettings, dict[str, int]]:
    """The shared settings and demand of these merged fields."""
    key = data_key(dict(sorted(fields.items())))
    found = distinct.get(key) if key is not None else None
    if found is None:
        settings = ResourceSettings.model_construct(**fields)  # both sides are validated already
        found = settings, demand_of(settings)
        if key is not None:
            distinct[key] = found
    return found


def _instance_demand(name: str, demand: dict[str, int]) -> dict[str, int]:
    """A step that names its SageMaker instance takes all of it: its GPUs, vCPUs and
    memory (other keys as the settings say). An unknown name leaves the demand (R006 says why)."""
    from .domain.catalog import load_catalog

    instance = next((t for t in load_catalog() if t.name == name), None)
    if instance is None:
        return demand
    whole = {**demand, "mcpu": instance.vcpu * 1000, "memory_mb": instance.memory_mb}
    if instance.gpu_count:
        whole["gpu"] = instance.gpu_count
    else:
        whole.pop("gpu", None)
    return dict(sorted(whole.items()))


def build_requests(config: Config) -> list[StepRequest]:
    """Every step of every pipeline, in arrival order."""
    file_rank = {f: i for i, f in enumerate(config.files)}
    entries = sorted(config.pipelines.values(), key=lambda e: (file_rank.get(e.doc.file, len(file_rank)),
                                                               e.doc.file, e.doc.index))
    found: list[StepRequest] = []
    # Steps that merge to equal settings share one ResourceSettings and one demand:
    # a repository of 100,000 steps holds a few thousand distinct ones. Validation
    # shares equal parts (model.Shared), so a repeated (own, default) pair is known
    # by identity and not even merged again.
    merged: dict[tuple[int, int], tuple[ResourceSettings, dict[str, int]]] = {}
    distinct: dict[str, tuple[ResourceSettings, dict[str, int]]] = {}
    for entry in entries:
        pipeline = entry.obj
        default = pipeline.spec.settings.resources if pipeline.spec.settings else None
        for step_name, step in pipeline.spec.steps.items():
            own = step.settings.resources if step.settings and step.settings.resources else None
            pair = (id(own), id(default))   # both stay alive with the config during the loop
            if pair not in merged:
                merged[pair] = _distinct(distinct, (own or ResourceSettings()).merged_fields(default))
            settings, demand = merged[pair]
            if step.instance_type is not None:
                demand = _instance_demand(step.instance_type, demand)
            found.append(StepRequest(
                id=f"{pipeline.metadata.name}/{step_name}",
                pipeline=pipeline.metadata.name,
                step=step_name,
                requester=requester_of(config, pipeline, step.step_operator),
                settings=settings,
                demand=demand,
                preemptible=settings.preemptible if settings.preemptible is not None else True,
                submitted_at=parse_timestamp(step.submitted_at) if step.submitted_at else None,
                entry=entry,
                instance_type=step.instance_type,
            ))
    timed = sorted((r for r in found if r.submitted_at is not None), key=_submitted)
    return timed + [r for r in found if r.submitted_at is None]
