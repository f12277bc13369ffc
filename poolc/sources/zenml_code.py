"""ZenML ``@step`` / ``@pipeline`` decorators read statically with ``ast``.

The file is parsed, never imported: a step is a top-level function decorated with
ZenML's ``step`` (bare or called), a pipeline one decorated with ``pipeline``. The
steps of a pipeline are the step calls in its body, in order, named as ZenML names
their invocations (the step's name, then ``_2``, ``_3`` for repeated calls; ``id=``
when given). What counts for demand must be literal: ``settings={"resources":
ResourceSettings(...) or a dict}``, ``step_operator="name"`` and the same inside
``.with_options(...)``; everything else in the decorators (materializers, hooks, other
settings keys) is not read at all, so it may be any expression.
"""

from __future__ import annotations

import ast
from typing import Any

from .. import diagnostics as d
from .found import Found, FoundStep, Layer, SubPath
from .literals import Imports, LiteralReader, NotLiteral, describe
from .pysource import PySource, parse

STEP = ("zenml.step", "zenml.steps.step", "zenml.steps.step_decorator.step")
PIPELINE = ("zenml.pipeline", "zenml.pipelines.pipeline", "zenml.pipelines.pipeline_decorator.pipeline")
RESOURCE_SETTINGS = ("zenml.config.ResourceSettings", "zenml.config.resource_settings.ResourceSettings",
                     "zenml.ResourceSettings")
POOL_DEMAND = ("zenml.config.PoolResourceDemand", "zenml.config.resource_settings.PoolResourceDemand")


def _settings_call(reader: LiteralReader, call: ast.Call, path: SubPath) -> dict[str, Any]:
    return reader.keywords(call, path)


def _demand_call(reader: LiteralReader, call: ast.Call, path: SubPath) -> dict[str, Any]:
    fields = reader.keywords(call, path)
    if "class_name" in fields:   # the Python name of the field aliased "class"
        fields["class"] = fields.pop("class_name")
    return fields


CALLS = {**{name: _settings_call for name in RESOURCE_SETTINGS}, **{name: _demand_call for name in POOL_DEMAND}}


class _Decorated:
    """A step or pipeline function: its ZenML name, decorator keywords and node."""

    def __init__(self, node: ast.FunctionDef | ast.AsyncFunctionDef, decorator: ast.expr) -> None:
        self.node, self.decorator = node, decorator
        self.keywords = {k.arg: k.value for k in decorator.keywords if k.arg} if isinstance(decorator, ast.Call) \
            else {}
        name = self.keywords.get("name")
        self.name = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else node.name


class _Reader:
    def __init__(self, source: PySource, found: Found) -> None:
        self.source, self.found = source, found
        self.imports = Imports(source.tree)

    def _which(self, decorator: ast.expr) -> str | None:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = self.imports.qualified(target)
        return "step" if name in STEP else "pipeline" if name in PIPELINE else None

    def decorated(self) -> tuple[dict[str, _Decorated], dict[str, _Decorated]]:
        steps: dict[str, _Decorated] = {}
        pipelines: dict[str, _Decorated] = {}
        for node in self.source.tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for decorator in node.decorator_list:
                kind = self._which(decorator)
                if kind == "step":
                    steps[node.name] = _Decorated(node, decorator)
                elif kind == "pipeline":
                    pipelines[node.name] = _Decorated(node, decorator)
        return steps, pipelines

    def options(self, keywords: dict[str, ast.expr], where: ast.AST) -> tuple[Layer | None, tuple[str, Any] | None]:
        """The resources layer and the step operator of decorator or with_options keywords."""
        layer = None
        settings = keywords.get("settings")
        if settings is not None:
            layer = self._resources(settings)
        operator = None
        if "step_operator" in keywords:
            node = keywords["step_operator"]
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value):
                raise NotLiteral(node, f"step_operator={describe(node)}: name the step operator as a string, "
                                 "so poolc knows the requester without running the code")
            operator = (node.value, node)
        return layer, operator

    def _resources(self, settings: ast.expr) -> Layer | None:
        if not isinstance(settings, ast.Dict):
            raise NotLiteral(settings, f"settings={describe(settings)} is not a literal dict: write "
                             "settings={\"resources\": ResourceSettings(...)} in place")
        for key, value in zip(settings.keys, settings.values, strict=True):
            if key is None:
                raise NotLiteral(value, f"**{describe(value)} in settings is not a literal: write the keys out")
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise NotLiteral(key, f"settings key {describe(key)} is not a literal string")
            if key.value != "resources":
                continue   # docker, orchestrator.<flavor>, ...: not demand, not read
            reader = LiteralReader(self.source, self.imports, CALLS)
            fields = reader.value(value, ())
            if not isinstance(fields, dict):
                raise NotLiteral(value, "settings[\"resources\"] must be ResourceSettings(...) or a dict of its "
                                 "fields")
            return Layer(fields, {p: at for p, at in reader.places.items() if p}, self.source.place(value),
                         reader.keys)
        return None


def _with_options(call: ast.expr) -> tuple[ast.expr, ast.Call] | None:
    """``x.with_options(...)`` -> (x, the with_options call)."""
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "with_options":
        return call.func.value, call
    return None


def read(path: str, pipeline: str) -> Found:
    """The steps of pipeline ``pipeline`` (its ZenML name, or the function's, or a
    module-level name bound to ``<pipeline>.with_options(...)``) in ``path``."""
    found = Found()
    source, problems = parse(path)
    if source is None:
        found.diagnostics.extend(problems)
        return found
    reader = _Reader(source, found)
    try:
        _read(reader, pipeline)
    except NotLiteral as exc:
        found.diagnostics.append(source.place(exc.node).diagnostic(d.C003, exc.message))
    return found


def _read(reader: _Reader, wanted: str) -> None:
    source, found = reader.source, reader.found
    steps, pipelines = reader.decorated()
    # module-level names bound to <step or pipeline>.with_options(...)
    aliases: dict[str, tuple[str, ast.Call]] = {}
    for node in source.tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            options = _with_options(node.value)
            if options and isinstance(options[0], ast.Name):
                aliases[node.targets[0].id] = (options[0].id, options[1])
    chosen = [p for p in pipelines.values() if p.name == wanted] or ([pipelines[wanted]] if wanted in pipelines
                                                                     else [])
    pipeline_options: ast.Call | None = None
    if not chosen and wanted in aliases and aliases[wanted][0] in pipelines:
        chosen, pipeline_options = [pipelines[aliases[wanted][0]]], aliases[wanted][1]
    if len(chosen) != 1:
        known = ", ".join(sorted({p.name for p in pipelines.values()})) or "none"
        found.diagnostics.append(reader.source.place(source.tree.body[0] if source.tree.body else source.tree)
                                 .diagnostic(d.C004, f"{'no' if not chosen else 'more than one'} ZenML pipeline "
                                             f"named {wanted!r} in this file (pipelines here: {known})"))
        return
    definition = chosen[0]
    for layer in [reader.options(definition.keywords, definition.decorator)[0],
                  reader.options(_keywords(pipeline_options), pipeline_options)[0] if pipeline_options else None]:
        if layer is not None:
            found.pipeline_layers.append(layer)
    for call, loop in _calls(definition.node):
        _invocation(reader, call, loop, steps, aliases)


def _keywords(call: ast.Call | None) -> dict[str, ast.expr]:
    if call is None:
        return {}
    for arg in call.args:
        raise NotLiteral(arg, f"{describe(arg)}: give with_options arguments by name")
    return {k.arg: k.value for k in call.keywords if k.arg}


def _calls(function: ast.AST) -> list[tuple[ast.Call, ast.AST | None]]:
    """Every call in a pipeline body in source order, with the loop it is in (if any)."""
    found: list[tuple[ast.Call, ast.AST | None]] = []

    def visit(node: ast.AST, loop: ast.AST | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) and node is not function:
            return
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.comprehension)):
            loop = node
        if isinstance(node, ast.Call):
            # arguments first: train(load()) invokes load before train
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                visit(argument, loop)
            found.append((node, loop))
            visit(node.func, loop)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, loop)

    visit(function, None)
    return found


def _invocation(reader: _Reader, call: ast.Call, loop: ast.AST | None, steps: dict[str, _Decorated],
                aliases: dict[str, tuple[str, ast.Call]]) -> None:
    """One step call of the pipeline body: its invocation id and its layers."""
    found, layers_options = reader.found, []
    func = call.func
    options = _with_options(func)
    if options is not None:                      # train.with_options(...)(data)
        func, with_call = options
        layers_options.append(with_call)
    if isinstance(func, ast.Name) and func.id in aliases and func.id not in steps:
        base, alias_call = aliases[func.id]
        func = ast.Name(id=base)
        layers_options.insert(0, alias_call)
    if not (isinstance(func, ast.Name) and func.id in steps):
        return                                   # not a step: a helper, a print, ...
    if loop is not None:
        raise NotLiteral(loop, f"step {func.id!r} is called in a loop: poolc cannot count its invocations "
                         "without running the code; call it once per invocation")
    definition = steps[func.id]
    custom = next((k.value for k in call.keywords if k.arg == "id"), None)
    if custom is not None and not (isinstance(custom, ast.Constant) and isinstance(custom.value, str)):
        raise NotLiteral(custom, f"id={describe(custom)} is not a literal string")
    name = custom.value if isinstance(custom, ast.Constant) and isinstance(custom.value, str) else definition.name
    if custom is None and name in found.steps:
        index = 2
        while f"{name}_{index}" in found.steps:
            index += 1
        name = f"{name}_{index}"
    step = FoundStep(name, reader.source.place(call))
    found.steps[name] = step
    for keywords, where in [(definition.keywords, definition.decorator),
                            *((_keywords(c), c) for c in layers_options)]:
        layer, operator = reader.options(keywords, where)
        if layer is not None:
            step.layers.append(layer)
        if operator is not None:
            step.step_operator, step.step_operator_at = operator[0], reader.source.place(operator[1])
