"""ZenML's own precedence, for the settings layers a source gives.

Within one level (the pipeline, or one step) ZenML applies the layers in order, each
updating the last field by field (maps of ``resources`` key by key): decorator, then
``with_options``, then the run configuration. Then the pipeline's settings are laid
*under* each step's: a step without resource settings takes the pipeline's as they
are; a step with its own takes from the pipeline only the fields whose ZenML default
is ``None`` (cpu_count, gpu_count, memory, ...). ``resources``, ``reclaim_tolerance``
and the allocation timeouts have defaults of their own, which a step's settings
carry and so win: a pipeline's ``reclaim_tolerance: none`` does not reach a step that
sets ``gpu_count`` itself (it runs preemptible, as ZenML runs it).
"""

from __future__ import annotations

from typing import Any

from .found import Layer, Place, SubPath

# Fields whose ZenML 0.98 default is not None: a step's own settings always carry them.
STEP_DEFAULTED = ("resources", "reclaim_tolerance", "allocation_wait_timeout_seconds", "initialization_lease_seconds")


def normalized(layer: Layer) -> Layer:
    """The legacy spellings as ZenML 0.98 reads them before merging: preemptible true /
    false is reclaim_tolerance coordinated / none, pool_resources is resources."""
    fields, places = dict(layer.fields), dict(layer.places)
    for old, new in (("preemptible", "reclaim_tolerance"), ("pool_resources", "resources")):
        if old not in fields:
            continue
        value = fields.pop(old)
        if new not in fields:
            fields[new] = ({True: "coordinated", False: "none"}.get(value, value) if old == "preemptible"
                           else value)
            for path in [p for p in places if p[:1] == (old,)]:
                places[(new,) + path[1:]] = places.pop(path)
    return Layer(fields, places, layer.at)


def _update(base: dict[str, Any], update: dict[str, Any], places: dict[SubPath, Place],
            new_places: dict[SubPath, Place], prefix: SubPath) -> dict[str, Any]:
    """ZenML's recursive update: maps merge key by key, anything else is replaced."""
    result = dict(base)
    for key, value in update.items():
        path = prefix + (key,)
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _update(result[key], value, places, new_places, path)
            if path in new_places:
                places[path] = new_places[path]
            continue
        for old in [p for p in places if p[:len(path)] == path]:
            del places[old]
        places.update({p: at for p, at in new_places.items() if p[:len(path)] == path})
        result[key] = value
    return result


def merge_level(layers: list[Layer]) -> Layer | None:
    """One level's layers (lowest precedence first) as one; None when there are none."""
    if not layers:
        return None
    first = normalized(layers[0])
    fields, places, at = dict(first.fields), dict(first.places), first.at
    for layer in layers[1:]:
        layer = normalized(layer)
        fields = _update(fields, layer.fields, places, layer.places, ())
        at = layer.at
    return Layer(fields, places, at)


def under_pipeline(step: Layer | None, pipeline: Layer | None) -> Layer | None:
    """A step's settings with the pipeline's laid under them, as ZenML compiles a step."""
    if step is None or not step.fields:
        return pipeline
    if pipeline is None:
        return step
    fields = {k: v for k, v in pipeline.fields.items() if k not in STEP_DEFAULTED and k not in step.fields}
    places = {p: at for p, at in pipeline.places.items() if p[:1] and p[0] in fields}
    fields.update(step.fields)
    places.update(step.places)
    return Layer(fields, places, step.at)
