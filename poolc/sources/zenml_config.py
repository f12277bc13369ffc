"""A ZenML run configuration (the YAML ``zenml pipeline run --config`` reads), read as
ZenML 0.98's PipelineRunConfiguration reads it: ``settings.resources`` for the
pipeline, ``steps.<step>.settings.resources`` and ``steps.<step>.step_operator`` for a
step. Every other key (``enable_cache``, ``settings.docker``, ``orchestrator.<flavor>``
settings, ``parameters``, ...) is accepted and ignored."""

from __future__ import annotations

from typing import Any

from .. import diagnostics as d
from ..load import Document, load_plain
from .found import Found, FoundStep, Layer, Place
from .suggest import did_you_mean

# settings keys ZenML 0.98 accepts: general settings and stack component types (with .flavor or :name)
GENERAL_SETTINGS = ("resources", "deployment", "docker")
COMPONENT_TYPES = ("alerter", "annotator", "artifact_store", "container_registry", "data_validator",
                   "experiment_tracker", "feature_store", "image_builder", "log_store", "model_deployer",
                   "orchestrator", "step_operator", "model_registry", "deployer", "sandbox")


def is_settings_key(key: str) -> bool:
    """Whether ZenML takes ``key`` in ``settings`` (it refuses the pipeline otherwise)."""
    if key in GENERAL_SETTINGS:
        return True
    component = key.split(":", 1)[0].split(".", 1)[0]
    return component in COMPONENT_TYPES


def _settings_keys(doc: Document, path: tuple[str | int, ...], settings: dict[str, Any], found: Found) -> None:
    for key in settings:
        if not (isinstance(key, str) and is_settings_key(key)):
            found.diagnostics.append(_place(doc, path + (key,), key=True).diagnostic(
                d.C005, f"settings key {key!r} is not one ZenML takes ('Invalid setting key'); its keys are "
                f"resources, docker, deployment or a stack component type"
                f"{did_you_mean(str(key), GENERAL_SETTINGS, 'keys')}"))


def _place(doc: Document, path: tuple[str | int, ...], *, key: bool = False) -> Place:
    return Place(doc.file, doc.span(path, key=key))


def _layer(doc: Document, path: tuple[str | int, ...], found: Found, below: tuple[dict, dict]) -> Layer | None:
    """The ResourceSettings at ``path`` (a mapping), or None with C005."""
    value = _get(doc.data, path)
    if not isinstance(value, dict):
        found.diagnostics.append(_place(doc, path).diagnostic(
            d.C005, f"{'.'.join(map(str, path))} must be a mapping of ResourceSettings fields, not "
            f"{type(value).__name__}"))
        return None
    values, keys = below
    places = {sub[len(path):]: Place(doc.file, span) for sub, span in values.get(path, ())}
    key_places = {sub[len(path):]: Place(doc.file, span) for sub, span in keys.get(path, ())}
    return Layer(dict(value), places, _place(doc, path, key=True), key_places)


_LAYER_DEPTHS = (2, 4)   # settings.resources, steps.<name>.settings.resources


def _below(doc: Document) -> tuple[dict, dict]:
    """The document's value and key spans grouped by the layer path above them, built
    once per document: each layer then costs its own size, not the whole file's (#42: a
    391 KB run configuration scanned every span once per step, over 84 CPU s)."""
    grouped: tuple[dict, dict] = ({}, {})
    for table, spans in zip(grouped, (doc.values, doc.keys), strict=True):
        for sub, span in spans.items():
            for depth in _LAYER_DEPTHS:
                if len(sub) > depth:
                    table.setdefault(sub[:depth], []).append((sub, span))
    return grouped


def _instance_type(doc: Document, path: tuple[str | int, ...], settings: dict[str, Any]) -> tuple[str, Place] | None:
    """``<settings>.step_operator[.sagemaker|:<name>].instance_type``, with its place."""
    found = None
    for key, value in settings.items():
        if isinstance(key, str) and key.split(":", 1)[0] in ("step_operator", "step_operator.sagemaker") and \
                isinstance(value, dict) and isinstance(value.get("instance_type"), str):
            found = (value["instance_type"], _place(doc, path + (key, "instance_type")))
    return found


def _get(data: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def read(path: str) -> Found:
    """The layers and steps of one run configuration."""
    found = Found(knows_steps=False)
    doc, problems = load_plain(path)
    if doc is None:
        found.diagnostics.extend(Place(x.file, (x.line, x.column, x.end_line, x.end_column)).diagnostic(
            d.C001 if x.rule == "Y001" else d.C002 if x.rule == "Y002" else d.RULES[x.rule], x.message)
            for x in problems)
        return found
    data = doc.data
    below = _below(doc)
    if not isinstance(data, dict):
        found.diagnostics.append(Place(path, doc.start).diagnostic(
            d.C005, "a ZenML run configuration is a mapping (settings:, steps:, ...)"))
        return found
    settings = data.get("settings")
    if settings is not None and not isinstance(settings, dict):
        found.diagnostics.append(_place(doc, ("settings",)).diagnostic(d.C005, "settings must be a mapping"))
    elif isinstance(settings, dict) and "resources" in settings:
        layer = _layer(doc, ("settings", "resources"), found, below)
        if layer is not None:
            found.pipeline_layers.append(layer)
    if isinstance(settings, dict):
        _settings_keys(doc, ("settings",), settings, found)
        found.instance_type = _instance_type(doc, ("settings",), settings)
    steps = data.get("steps")
    if steps is None:
        return found
    if not isinstance(steps, dict):
        found.diagnostics.append(_place(doc, ("steps",)).diagnostic(
            d.C005, "steps must be a mapping of step names to their configuration"))
        return found
    for name, config in steps.items():
        step = FoundStep(name, _place(doc, ("steps", name), key=True))
        found.steps[name] = step
        if not isinstance(config, dict):
            found.diagnostics.append(_place(doc, ("steps", name)).diagnostic(
                d.C005, f"steps.{name} must be a mapping (settings:, step_operator:, ...)"))
            continue
        step_settings = config.get("settings")
        if step_settings is not None and not isinstance(step_settings, dict):
            found.diagnostics.append(_place(doc, ("steps", name, "settings")).diagnostic(
                d.C005, f"steps.{name}.settings must be a mapping"))
        elif isinstance(step_settings, dict) and "resources" in step_settings:
            layer = _layer(doc, ("steps", name, "settings", "resources"), found, below)
            if layer is not None:
                step.layers.append(layer)
        if isinstance(step_settings, dict):
            _settings_keys(doc, ("steps", name, "settings"), step_settings, found)
            instance = _instance_type(doc, ("steps", name, "settings"), step_settings)
            if instance is not None:
                step.instance_type, step.instance_type_at = instance
        if "step_operator" in config:
            operator = config["step_operator"]
            where = _place(doc, ("steps", name, "step_operator"))
            if isinstance(operator, str) and operator:
                step.step_operator, step.step_operator_at = operator, where
            else:
                found.diagnostics.append(where.diagnostic(
                    d.C005, f"step_operator must name a step operator of the pipeline's stack, not "
                    f"{operator!r} (poolc needs the component's name to know the requester)"))
    return found
