"""ZenML's own precedence, for the settings layers a source gives.

ZenML 0.98 applies the layers in order, each updating the last field by field (and a
map of ``resources`` key by key; any other value, a list of demands included,
replaces what was there): the pipeline decorator, the pipeline's ``with_options``,
the run configuration's ``settings``, then for each step its decorator, its
``with_options`` and the run configuration's ``steps.<step>.settings``. Legacy
spellings are read first, layer by layer (``preemptible: true`` is
``reclaim_tolerance: coordinated``, ``pool_resources`` is ``resources``), so a later
layer's ``reclaim_tolerance`` replaces an earlier ``preemptible``. tests/test_zenml_oracle.py
holds this to what the real zenml 0.98.0 compiles.
"""

from __future__ import annotations

from typing import Any

from .found import Layer, Place, SubPath


def normalized(layer: Layer) -> Layer:
    """The legacy spellings as ZenML 0.98 reads them before merging: preemptible true /
    false is reclaim_tolerance coordinated / none, pool_resources is resources."""
    fields, places, keys = dict(layer.fields), dict(layer.places), dict(layer.keys)
    for old, new in (("preemptible", "reclaim_tolerance"), ("pool_resources", "resources")):
        if old not in fields:
            continue
        value = fields.pop(old)
        if new not in fields:
            fields[new] = ({True: "coordinated", False: "none"}.get(value, value) if old == "preemptible"
                           else value)
            for spans in (places, keys):
                for path in [p for p in spans if p[:1] == (old,)]:
                    spans[(new,) + path[1:]] = spans.pop(path)
    return Layer(fields, places, layer.at, keys)


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
    fields, places, at, keys = dict(first.fields), dict(first.places), first.at, dict(first.keys)
    for layer in layers[1:]:
        layer = normalized(layer)
        fields = _update(fields, layer.fields, places, layer.places, ())
        keys.update(layer.keys)
        at = layer.at
    return Layer(fields, places, at, keys)


def under_pipeline(step: Layer | None, pipeline: Layer | None) -> Layer | None:
    """A step's settings with the pipeline's laid under them, as ZenML compiles a step."""
    if step is None or not step.fields:
        return pipeline
    if pipeline is None:
        return step
    return merge_level([pipeline, step])
