"""Rules on the requests built from pipeline steps (R001-R006, K004)."""

from __future__ import annotations

from collections.abc import Iterator

from .. import diagnostics as d
from ..diagnostics import Diagnostic
from ..domain.eligibility import eligible_policies, rejection
from ..model import MAX_INT, NEW_SPELLINGS, RECLAIM_TOLERANCE, PipelineSpec, ResourceSettings, SageMakerComponent
from ..requests import StepRequest
from ..units import parse_bytes
from . import Context, check

# The settings field a request key comes from, to point at what the user wrote.
_FIELD = {"gpu": "gpu_count", "mcpu": "cpu_count", "memory_mb": "memory", "gpu_type": "gpu_type",
          "gpu_count": "gpu_count", "pool_selector": "pool_selector"}


def _key_location(request: StepRequest, key: str) -> tuple:
    if key in _FIELD:
        return request.field_path(_FIELD[key])
    if key == "step_run":
        return request.path
    return request.field_path("pool_resources") + (key,)


@check(d.R001)
def quantities(ctx: Context) -> Iterator[Diagnostic]:
    """R001: memory, disk and shm must be more than zero bytes, and the request a
    step's cpu_count and memory make (mcpu, memory_mb) is at most 10^12 units, the
    bound of every integer in the language (cpu_count: 2000000000 is 2 x 10^12 mcpu,
    memory: 2000PB is 2 x 10^12 memory_mb). Without the bound such a step would pass
    on a pool that does not meter the key and overflow the planner's arithmetic."""
    for request in ctx.requests:
        for name in ("memory", "disk", "shm"):
            value = getattr(request.settings, name)
            if value not in (None, "auto") and parse_bytes(value) == 0:
                yield request.entry.doc.diagnostic(
                    d.R001, f"step {request.step!r} sets {name}={value!r}, which is zero bytes; "
                    f"give a positive quantity or leave {name} out", request.field_path(name), request=request.id)
        for key, name in (("mcpu", "cpu_count"), ("memory_mb", "memory")):
            units, written = request.demand.get(key, 0), getattr(request.settings, name)
            if units > MAX_INT and written is not None:
                if isinstance(written, float) and written.is_integer():
                    written = int(written)  # cpu_count is read as a number: say 2000000000, not 2e9
                yield request.entry.doc.diagnostic(
                    d.R001, f"step {request.step!r} sets {name}={written!r}, which asks "
                    f"{key}={units:,}; a request is at most 10^12 units ({MAX_INT:,} {key}): ask for less",
                    request.field_path(name), request=request.id)


# SageMaker's ResourceConfig.VolumeSizeInGB: 1 to 16,384 (botocore's SageMaker service
# model: "min": 1, "max": 16384; the API reads it as decimal gigabytes, poolc rounds up).
SAGEMAKER_MAX_VOLUME_GB = 16_384


@check(d.R001)
def sagemaker_disk(ctx: Context) -> Iterator[Diagnostic]:
    """R001: on a SageMaker step operator, ``disk`` becomes the training job's
    VolumeSizeInGB, which SageMaker accepts from 1 to 16,384 GB; a larger disk
    would be written into the job and refused by SageMaker at submission."""
    from ..units import gigabytes_ceil

    for request in ctx.requests:
        disk = request.settings.disk
        component = ctx.components.get(request.requester or "", (None,))[0]
        if disk is None or not isinstance(component, SageMakerComponent):
            continue
        size = gigabytes_ceil(disk)
        if size > SAGEMAKER_MAX_VOLUME_GB:
            yield request.entry.doc.diagnostic(
                d.R001, f"step {request.step!r} runs on SageMaker step operator {component.name!r} with "
                f"disk={disk!r} ({size:,} GB), beyond SageMaker's largest training volume of "
                f"{SAGEMAKER_MAX_VOLUME_GB:,} GB (VolumeSizeInGB); ask for at most 16384GB",
                request.field_path("disk"), request=request.id)


# SageMaker's maximum MaxRuntimeInSeconds for a training job: 28 days (botocore's
# SageMaker service model, StoppingCondition: "The maximum value is 28 days").
SAGEMAKER_MAX_RUNTIME_SECONDS = 28 * 86_400


@check(d.R008)
def max_runtime(ctx: Context) -> Iterator[Diagnostic]:
    """R008: a step's max_runtime must fit its target. On a SageMaker step operator it
    becomes StoppingCondition.MaxRuntimeInSeconds, whose maximum is 28 days (2419200
    seconds); SageMaker refuses a longer training job. Anywhere it is at most 10^12
    seconds, like every integer in the language."""
    for request in ctx.requests:
        seconds = request.max_runtime_seconds
        if seconds is None:
            continue
        component = ctx.components.get(request.requester or "", (None,))[0]
        written = request.settings.max_runtime
        if isinstance(component, SageMakerComponent) and seconds > SAGEMAKER_MAX_RUNTIME_SECONDS:
            yield request.entry.doc.diagnostic(
                d.R008, f"step {request.step!r} runs on SageMaker step operator {component.name!r} with "
                f"max_runtime={written!r} ({seconds:,} seconds), beyond SageMaker's maximum training time of 28 "
                f"days ({SAGEMAKER_MAX_RUNTIME_SECONDS:,} seconds); write at most 28d and checkpoint to resume",
                request.field_path("max_runtime"), request=request.id)
        elif seconds > MAX_INT:
            yield request.entry.doc.diagnostic(
                d.R008, f"step {request.step!r} sets max_runtime={written!r} ({seconds:,} seconds), above the "
                f"limit of 10^12 seconds; write a shorter time limit", request.field_path("max_runtime"),
                request=request.id)


def _replicas_conflict(settings: ResourceSettings) -> tuple[int, int] | None:
    """(min, max) when min_replicas is above a max_replicas that is not 0 (no limit)."""
    low, high = settings.min_replicas, settings.max_replicas
    return (low, high) if low is not None and high and low > high else None


@check(d.R002)
def replicas(ctx: Context) -> Iterator[Diagnostic]:
    """R002: min_replicas <= max_replicas unless max_replicas is 0 (no limit). Checked
    on every step's merged settings and on the pipeline default by itself: ZenML
    refuses a pipeline whose default is inconsistent, even when every step overrides
    one of the two fields."""
    for request in ctx.requests:
        conflict = _replicas_conflict(request.settings)
        if conflict:
            yield request.entry.doc.diagnostic(
                d.R002, f"step {request.step!r} has min_replicas={conflict[0]} above max_replicas={conflict[1]}; "
                "raise max_replicas (0 means no limit) or lower min_replicas", request.field_path("min_replicas"),
                request=request.id)
    for _, entry in sorted(ctx.config.pipelines.items()):
        default = entry.obj.spec.settings.resources if entry.obj.spec.settings else None
        conflict = _replicas_conflict(default) if default is not None else None
        if conflict:
            yield entry.doc.diagnostic(
                d.R002, f"pipeline {entry.name!r} has min_replicas={conflict[0]} above max_replicas={conflict[1]} "
                "in its default settings; raise max_replicas (0 means no limit) or lower min_replicas",
                ("spec", "settings", "resources", "min_replicas"))


@check(d.R007)
def zenml_098_spellings(ctx: Context) -> Iterator[Diagnostic]:
    """R007 (warning): a ZenML 0.98 name for a v1 ResourceSettings field is accepted with
    the same meaning (resources = pool_resources, gpu_class = gpu_type,
    reclaim_tolerance none/any = preemptible false/true); the warning names the v1
    field, so files stay readable by tools that know only v1."""
    for _, entry in sorted(ctx.config.pipelines.items()):
        for path, settings in _resource_settings(entry.obj.spec):
            for new in settings.new_spellings() if settings is not None else []:
                yield entry.doc.diagnostic(d.R007, _spelling_message(new, getattr(settings, new)),
                                           path + (new,), key=True)


def _resource_settings(spec: PipelineSpec) -> list[tuple[tuple[str, ...], ResourceSettings | None]]:
    """(document path, settings) of a pipeline's own resources and of each step's: the
    places the ZenML 0.98 spellings and capacity classes are reported at."""
    places: list[tuple[tuple[str, ...], ResourceSettings | None]] = [
        (("spec", "settings", "resources"), spec.settings.resources if spec.settings else None)]
    places += [(("spec", "steps", name, "settings", "resources"), step.settings.resources if step.settings
                else None) for name, step in spec.steps.items()]
    return places


def _spelling_message(new: str, value: object) -> str:
    if new == "reclaim_tolerance":
        v1 = f"preemptible: {str(RECLAIM_TOLERANCE[str(value)]).lower()}"
        return f"reclaim_tolerance: {value} is ZenML 0.98's spelling of {v1}; poolc reads it so, write {v1}"
    return f"{new} is ZenML 0.98's spelling of {NEW_SPELLINGS[new]}; poolc reads it so, write {NEW_SPELLINGS[new]}"


def _capacity_classes(settings: ResourceSettings) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """(path within the settings, what it says) of every capacity class and selector."""
    if settings.gpu_class is not None:
        yield ("gpu_class",), f"gpu_class {settings.gpu_class!r}"
    if isinstance(settings.resources, list):
        for index, demand in enumerate(settings.resources):
            for name in ("class_", "resource_selector", "class_selector"):
                if getattr(demand, name) is not None:
                    key = name.rstrip("_")
                    yield ("resources", index, key), f"the {key} of demand {demand.units()[0]!r}"


@check(d.R009)
def capacity_classes(ctx: Context) -> Iterator[Diagnostic]:
    """R009 (warning): ZenML 0.98's gpu_class, and a demand's class and selectors, choose
    among the capacity classes of ZenML's own resource pools. poolc pools have no
    capacity classes, so it ignores them (the demand counts in full on any pool the
    step may use). gpu_class is not a GPU model: write gpu_type for a node selector."""
    for _, entry in sorted(ctx.config.pipelines.items()):
        for path, settings in _resource_settings(entry.obj.spec):
            for sub, what in _capacity_classes(settings) if settings is not None else []:
                yield entry.doc.diagnostic(d.R009, f"{what} is a ZenML capacity class; poolc has none and ignores "
                                           "it" + (" (for a GPU model, write gpu_type)" if sub == ("gpu_class",)
                                                   else ""), path + sub, key=True)


@check(d.R003, d.R004, d.R005, d.R010, d.R011)
def eligibility(ctx: Context) -> Iterator[Diagnostic]:
    """R003 / R004 / R005 / R010 / R011: a step must be eligible on some pool of its
    requester (its GPU model on offer there (R010, naming the models on offer), the
    pool's labels matching its pool_selector, one node of the pool's node groups
    holding it (R011), capacity, limit and, when non-preemptible, the reserved share
    (R004)); a requester with no policy at all runs unmanaged, outside every pool
    (warning)."""
    by_id = {r.id: r for r in ctx.requests}
    warned: set[str] = set()
    for request in ctx.problem.requests:
        source = by_id[request.id]
        if source.requester not in ctx.components or ctx.is_tainted(source.requester):
            continue  # an unknown component is reported by the reference checks, a broken policy or pool by itself
        ok, reasons = eligible_policies(ctx.problem, request)
        if ok:
            continue
        doc = source.entry.doc
        if not reasons:
            if request.requester not in warned:
                warned.add(request.requester)
                yield doc.diagnostic(d.R005, f"component {request.requester!r} has no policy on any pool: "
                                     f"step {source.step!r} and every other step it runs are unmanaged "
                                     "(outside every pool); add a Policy for it", source.path, key=True)
            continue
        rule_id, sentence = rejection(source.step, reasons, request.gpu_type, ctx.units)
        yield doc.diagnostic(d.RULES[rule_id], sentence.text, _key_location(source, reasons[0].key), request=source.id)


def _named_instance_problem(name: str, gpu_type: str | None, component: object) -> str | None:
    """Why a step's own instance_type cannot be used, or None."""
    from ..domain.catalog import gpu_model_matches, load_catalog

    if not isinstance(component, SageMakerComponent):
        return (f"instance_type {name!r} is for a SageMaker step operator, and the step runs on "
                f"{getattr(component, 'name', 'no SageMaker component')!r}")
    instance = next((t for t in load_catalog() if t.name == name), None)
    if instance is None:
        return f"instance type {name!r} is not in poolc's SageMaker catalog (docs/instance-catalog.md)"
    if component.instance_types and name not in component.instance_types:
        return (f"instance type {name!r} is not one of {component.name!r}'s instance_types "
                f"({', '.join(component.instance_types)})")
    if gpu_type and not gpu_model_matches(gpu_type, instance):
        return f"instance type {name!r} has no {gpu_type} GPUs ({instance.gpu_model or 'no GPUs'})"
    return None


@check(d.R006, d.K004)
def sagemaker_fit(ctx: Context) -> Iterator[Diagnostic]:
    """R006 / K004: a step on a SageMaker step operator needs an instance type of the
    catalog (restricted to the component's allow-list) with enough vCPUs, memory and
    GPUs of its gpu_type."""
    if not any(isinstance(c, SageMakerComponent) for c, _ in ctx.components.values()) and \
            not any(r.instance_type for r in ctx.requests):
        return  # the catalog is not even read
    from ..domain.catalog import NoFit, choose_instance, unknown_instance_types

    for _, (component, stack) in sorted(ctx.components.items()):
        if isinstance(component, SageMakerComponent) and component.instance_types:
            index = stack.obj.spec.step_operators.index(component)
            for unknown in unknown_instance_types(component.instance_types):
                position = component.instance_types.index(unknown)
                yield stack.doc.diagnostic(d.K004, f"instance type {unknown!r} is not in poolc's SageMaker "
                                           "catalog, so it is never chosen",
                                           ("spec", "step_operators", index, "instance_types", position))
    for request in ctx.requests:
        component = ctx.components.get(request.requester or "", (None,))[0]
        if request.instance_type is not None:
            problem = _named_instance_problem(request.instance_type, request.settings.gpu_type, component)
            if problem is not None:
                yield request.entry.doc.diagnostic(d.R006, f"step {request.step!r}: {problem}",
                                                   ("spec", "steps", request.step, "instance_type"),
                                                   request=request.id)
            continue
        if not isinstance(component, SageMakerComponent):
            continue
        choice = choose_instance(mcpu=request.demand.get("mcpu", 0), memory_mb=request.demand.get("memory_mb", 0),
                                 gpu=request.demand.get("gpu", 0), gpu_type=request.settings.gpu_type,
                                 allowed=component.instance_types)
        if isinstance(choice, NoFit):
            yield request.entry.doc.diagnostic(d.R006, f"step {request.step!r} fits no SageMaker instance of "
                                               f"{component.name!r}: {choice.message}", request.settings_path(),
                                               request=request.id)
