"""A Pipeline with ``spec.source`` -> the same Pipeline with its steps filled in.

The source's front ends give settings layers; they are validated like any
ResourceSettings (strict, unknown fields are errors), merged with ZenML's own
precedence (``precedence``), and then ``spec.steps`` written in the poolc document
override them field by field, as ``spec.settings`` lies under them as the default.
The result is an ordinary Pipeline, so requests, checks and targets need nothing new;
its document (``SourcedDocument``) points diagnostics into the source files.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from .. import diagnostics as d
from ..diagnostics import Diagnostic, has_errors
from ..load import Document, Path_
from ..model import NEW_SPELLINGS, STEP_NAME, Pipeline, ResourceSettings, Settings, Step
from . import flyte, zenml_code, zenml_config
from .document import SourcedDocument
from .found import Found, FoundStep, Layer, Place
from .paths import outside, repository_root, written_problem
from .precedence import merge_level, under_pipeline
from .suggest import did_you_mean

_STEP_NAME = re.compile(STEP_NAME)


@dataclass
class Resolved:
    pipeline: Pipeline | None
    document: Document | None
    diagnostics: list[Diagnostic] = field(default_factory=list)


def _base(doc: Document) -> str:
    """The directory source paths are relative to: the document's (the current one for standard input)."""
    return os.path.dirname(doc.file) if not doc.file.startswith("<") else ""


def _path(doc: Document, written: str) -> str:
    """A source path relative to the document's file."""
    return os.path.normpath(os.path.join(_base(doc), written)).replace(os.sep, "/")


def _refused_paths(obj: Pipeline, doc: Document, root: str) -> list[Diagnostic]:
    """C006 at each ``spec.source`` path that leaves the repository (nothing is read then)."""
    source = obj.spec.source
    assert source is not None
    problems = []
    for key, written in source.model_dump(exclude_none=True).items():
        if key == "pipeline":
            continue
        problem = written_problem(written, key) or outside(root, _path(doc, written))
        if problem is not None:
            problems.append(doc.diagnostic(d.C006, f"spec.source.{key} {written!r} is not read: {problem}",
                                           ("spec", "source", key)))
    return problems


def _read(obj: Pipeline, doc: Document) -> Found:
    """What the source's files say, combined: the run configuration over the decorators."""
    source = obj.spec.source
    assert source is not None
    root = repository_root(_base(doc) or ".")
    refused = _refused_paths(obj, doc, root)
    if refused:
        return Found(diagnostics=refused)
    if source.flyte is not None:
        return flyte.read(_path(doc, source.flyte), root)
    code = zenml_code.read(_path(doc, source.python), source.pipeline or "", root) if source.python else None
    config = zenml_config.read(_path(doc, source.zenml_config)) if source.zenml_config else None
    if code is None:
        assert config is not None
        return config
    if config is None:
        return code
    if code.config_path_at is not None:
        # zenml pipeline run --config is with_options(config_path=...) once more: ZenML keeps the
        # last file's steps and the first's pipeline settings; poolc does not guess which the run means
        code.diagnostics.append(doc.diagnostic(
            d.C005, f"the code already names its run configuration (with_options(config_path=...) at "
            f"{code.config_path_at.file}:{code.config_path_at.span[0]}); ZenML would keep only one of the two "
            "for the steps: name one of them", ("spec", "source", "zenml_config")))
        return code
    code.diagnostics.extend(config.diagnostics)
    code.pipeline_layers.extend(config.pipeline_layers)
    code.instance_type = config.instance_type or code.instance_type
    for name, configured in config.steps.items():
        step = code.steps.get(name)
        if step is None:
            if not has_errors(code.diagnostics):
                known = ", ".join(code.steps) or "none"
                code.diagnostics.append(configured.at.diagnostic(
                    d.C004, f"step {name!r} of the run configuration is no step of pipeline "
                    f"{source.pipeline!r} (its steps: {known})"))
            continue
        step.layers.extend(configured.layers)
        if configured.instance_type is not None:
            step.instance_type, step.instance_type_at = configured.instance_type, configured.instance_type_at
        if configured.step_operator is not None:
            step.step_operator, step.step_operator_at = configured.step_operator, configured.step_operator_at
    return code


def _rule_of(problem: Any) -> d.Rule:
    if problem["type"] == "extra_forbidden":
        return d.S001
    if "not both" in problem["msg"]:
        return d.S006
    return d.S003


# ZenML 0.98's ResourceSettings.memory pattern: stricter than a poolc document's quantities.
_ZENML_MEMORY = re.compile(r"^[0-9]+(B|KB|KiB|MB|MiB|GB|GiB|TB|TiB|PB|PiB)$")


def _as_strict_as_zenml(layer: Layer, found: Found) -> bool:
    """What ZenML itself refuses in a layer written for it is refused here too, with its reason."""
    memory = layer.fields.get("memory")
    if memory is None or (isinstance(memory, str) and _ZENML_MEMORY.match(memory)):
        return True
    hint = f" ('{memory}B')" if isinstance(memory, str) and re.fullmatch(r"[0-9]+[KMGTP]i", memory) else ""
    found.diagnostics.append(layer.place(("memory",)).diagnostic(
        d.S003, f"memory: {memory!r} is refused by ZenML 0.98 (its memory is a whole number followed by B, KB, "
        f"KiB, MB, MiB, GB, GiB, TB, TiB, PB or PiB{hint}), so the step would not run"))
    return False


def _validated(layer: Layer, found: Found) -> bool:
    """Validate one layer like any ResourceSettings; its problems point into the source."""
    if layer.zenml and not _as_strict_as_zenml(layer, found):
        return False
    try:
        ResourceSettings.model_validate(layer.fields)
    except ValidationError as error:
        for problem in error.errors():
            loc = tuple(p for p in problem["loc"] if not (isinstance(p, str) and p[:1].isupper()))
            message = problem["msg"].removeprefix("Value error, ")
            where = ".".join(map(str, loc)) or "resources"
            rule = _rule_of(problem)
            place = layer.keys.get(loc) if rule is d.S001 else None
            if rule is d.S001 and len(loc) == 1 and isinstance(loc[0], str):
                message = f"{message}: ResourceSettings has no field {loc[0]!r}" + did_you_mean(
                    loc[0], ResourceSettings.model_fields, "fields")
            found.diagnostics.append((place or layer.place(loc)).diagnostic(rule, f"{where}: {message}"))
        return False
    return True


def _step_places(name: str, step: FoundStep, layer: Layer | None) -> tuple[dict[Path_, Place], dict[Path_, Place]]:
    """(where each value of the step was written, where each field name was)."""
    base: Path_ = ("spec", "steps", name)
    places: dict[Path_, Place] = {base: step.at}
    keys: dict[Path_, Place] = {}
    if layer is not None:
        resources = base + ("settings", "resources")
        places[base + ("settings",)] = places[resources] = layer.at
        for spans, target in ((layer.places, places), (layer.keys, keys)):
            for sub, at in spans.items():
                target[resources + sub] = at
                for new, old in NEW_SPELLINGS.items():   # the merged settings use the v1 names
                    if sub[:1] == (new,):
                        target[resources + (old,) + sub[1:]] = at
    if step.step_operator_at is not None:
        places[base + ("step_operator",)] = step.step_operator_at
    return places, keys


def _named_here(found: Found, obj: Pipeline, doc: Document) -> None:
    """A source file that cannot be read has no line to point at: say so where the
    poolc document names it."""
    source = obj.spec.source
    assert source is not None
    named = {_path(doc, written): (key, written) for key, written in source.model_dump(exclude_none=True).items()
             if key != "pipeline"}
    for index, problem in enumerate(found.diagnostics):
        if problem.rule == d.C001.id and problem.file in named:
            key, written = named[problem.file]
            found.diagnostics[index] = doc.diagnostic(d.C001, f"cannot read {written} ({key} source): "
                                                      f"{problem.message.removeprefix('cannot read the file: ')}",
                                                      ("spec", "source", key))


_INSTANCE = re.compile(r"^ml\.[a-z0-9]+\.[a-z0-9-]+$")


def _instance_of(step: FoundStep, found: Found, own: Step | None) -> tuple[str, Place | None] | None:
    """The step's SageMaker instance_type: the poolc document's, the step's own in the
    source, or the pipeline's (with where it was written; None in the document)."""
    if own is not None and own.instance_type:
        return own.instance_type, None
    if step.instance_type is not None:
        return step.instance_type, step.instance_type_at
    return found.instance_type


def _instance_problems(found: Found) -> None:
    for name, at in [*((s.instance_type, s.instance_type_at) for s in found.steps.values()),
                     *([found.instance_type] if found.instance_type else [])]:
        if name is not None and at is not None and not _INSTANCE.match(name):
            found.diagnostics.append(at.diagnostic(d.C005, f"instance_type {name!r} is not a SageMaker instance "
                                                   "type name such as 'ml.p4d.24xlarge'"))


def _pipeline_named_here(found: Found, obj: Pipeline, doc: Document) -> None:
    """A pipeline the code does not have is the poolc document's value: said at
    ``spec.source.pipeline``, where the name is written (the file has no line for it)."""
    for index, problem in enumerate(found.diagnostics):
        if problem.rule == d.C004.id and problem.message.startswith("no ZenML pipeline named"):
            message = problem.message.replace("in this file", f"in {problem.file}", 1).replace(
                "pipelines here:", "its pipelines:", 1)
            found.diagnostics[index] = doc.diagnostic(d.C004, message, ("spec", "source", "pipeline"))


def resolve(obj: Pipeline, doc: Document) -> Resolved:
    """The Pipeline with the steps of its source, or None and the reasons."""
    found = _read(obj, doc)
    _named_here(found, obj, doc)
    _pipeline_named_here(found, obj, doc)
    for layer in [*found.pipeline_layers, *(lay for s in found.steps.values() for lay in s.layers)]:
        _validated(layer, found)
    _instance_problems(found)
    written = obj.spec.steps
    if found.knows_steps:
        for name in written:
            if name not in found.steps and not has_errors(found.diagnostics):
                found.diagnostics.append(doc.diagnostic(
                    d.C004, f"step {name!r} is no step of the source (its steps: {', '.join(found.steps) or 'none'})",
                    ("spec", "steps", name), key=True))
    for name, step in found.steps.items():
        if not _STEP_NAME.fullmatch(name) or len(name) > 63:
            found.diagnostics.append(step.at.diagnostic(
                d.C004, f"step {name!r} cannot be a poolc step name (lower-case letters, digits, '-' and '_', "
                "at most 63 characters); give it an id= or name= that is"))
    if has_errors(found.diagnostics):
        return Resolved(None, None, found.diagnostics)
    pipeline = merge_level(found.pipeline_layers)
    steps: dict[str, Step] = {}
    places: dict[Path_, Place] = {}
    keys: dict[Path_, Place] = {}
    names = list(found.steps) + ([n for n in written if n not in found.steps] if not found.knows_steps else [])
    for name in names:
        step = found.steps.get(name) or FoundStep(name, Place(doc.file, doc.span(("spec", "steps", name))))
        merged = under_pipeline(merge_level(step.layers), pipeline)
        # in v1 names, as a poolc document's merged settings are: ZenML's own spellings
        # are the language of these files, not something to warn about (R007)
        source_settings = (ResourceSettings.model_construct(**ResourceSettings.model_validate(merged.fields)
                                                            .v1_fields()) if merged is not None else None)
        own = written.get(name)
        own_resources = own.settings.resources if own and own.settings and own.settings.resources else None
        resources = source_settings
        if own_resources is not None:
            resources = ResourceSettings.model_construct(**own_resources.merged_fields(source_settings))
        instance = _instance_of(step, found, own)
        steps[name] = Step.model_construct(
            instance_type=instance[0] if instance else None,
            step_operator=own.step_operator if own and own.step_operator else step.step_operator,
            image=own.image if own else None, command=own.command if own else None,
            settings=Settings.model_construct(resources=resources) if resources is not None else None,
            submitted_at=own.submitted_at if own else None)
        step_places, step_keys = _step_places(name, step, merged)
        if instance is not None and instance[1] is not None:
            step_places[("spec", "steps", name, "instance_type")] = instance[1]
        places.update(step_places)
        keys.update(step_keys)
    spec = obj.spec.model_copy(update={"steps": steps})
    return Resolved(obj.model_copy(update={"spec": spec}), SourcedDocument(doc, places, keys), found.diagnostics)
