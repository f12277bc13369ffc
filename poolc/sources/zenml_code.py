"""ZenML ``@step`` / ``@pipeline`` code read statically with ``ast``, across the
repository's modules (``modules``), never imported or run.

A step or pipeline object is what the code makes of a function: ``@step``,
``step(...)(fn)``, ``x.with_options(...)`` of one, each with the module-level
``x.configure(...)`` calls made on it. The steps of a pipeline are the step calls in
its body, in order, named as ZenML names its invocations (the step's name, then
``_2``, ``_3`` for repeated calls; ``id=`` when given), wherever the step was
defined. What counts for demand must be literal (``literals``): ``settings=
{"resources": ...}``, ``step_operator="name"``, ``with_options(steps=...,
config_path=...)``; everything else in these calls (materializers, hooks, other
settings keys) is not read, only checked to be an argument ZenML has.

Whatever would change the set of steps or their settings at run time is refused at
its place (docs/format.md#what-poolc-refuses-in-code): a step called in a loop, under
a condition or through a helper, a step made by a factory, a name bound twice, a
dynamic pipeline, an import poolc cannot follow into the repository.
"""

from __future__ import annotations

import ast
import builtins
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from .. import diagnostics as d
from . import zenml_config
from .found import Found, FoundStep, Layer, Place, Refused, SubPath
from .literals import LiteralReader, NotLiteral, describe
from .modules import Module, Project
from .paths import outside, repository_root
from .suggest import closest, did_you_mean

STEP = ("zenml.step", "zenml.steps.step", "zenml.steps.step_decorator.step")
PIPELINE = ("zenml.pipeline", "zenml.pipelines.pipeline", "zenml.pipelines.pipeline_decorator.pipeline")
RESOURCE_SETTINGS = ("zenml.config.ResourceSettings", "zenml.config.resource_settings.ResourceSettings",
                     "zenml.ResourceSettings", "zenml.steps.ResourceSettings")
POOL_DEMAND = ("zenml.config.PoolResourceDemand", "zenml.config.resource_settings.PoolResourceDemand")

# The arguments ZenML 0.98 takes (anything else is a TypeError when the module is imported).
_COMMON = ("enable_cache", "enable_artifact_metadata", "enable_step_logs", "environment", "secrets", "settings",
           "extra", "on_failure", "on_success", "model", "retry", "substitutions", "cache_policy")
_STEP_ONLY = ("enable_artifact_visualization", "experiment_tracker", "step_operator", "output_materializers",
              "on_start", "on_end", "runtime", "heartbeat_healthy_threshold", "group")
_PIPELINE_ONLY = ("enable_heartbeat", "enable_pipeline_logs", "tags", "on_start", "on_end", "on_pause",
                  "on_resume", "on_init", "on_init_kwargs", "on_cleanup", "execution_mode")
ARGUMENTS = {
    ("step", "decorator"): {"name", "step_type", *_COMMON, *_STEP_ONLY},
    ("step", "configure"): {"parameters", "merge", *_COMMON, *_STEP_ONLY},
    ("pipeline", "decorator"): {"name", "dynamic", "depends_on", "enable_artifact_visualization", *_COMMON,
                                *_PIPELINE_ONLY},
    ("pipeline", "configure"): {"parameters", "merge", *_COMMON, *_PIPELINE_ONLY},
    ("pipeline", "with_options"): {"run_name", "schedule", "build", "step_configurations", "steps", "config_path",
                                   "unlisted", "prevent_build_reuse", "parameters", "merge", *_COMMON,
                                   *_PIPELINE_ONLY},
}
ARGUMENTS[("step", "with_options")] = ARGUMENTS[("step", "configure")]
# a call in a pipeline body to a name from these packages is never a step (zenml's own API,
# not its integrations, which ship steps)
_NOT_STEPS = frozenset(sys.stdlib_module_names) | {"zenml", "typing_extensions", "pydantic"}


def _settings_call(reader: LiteralReader, call: ast.Call, path: SubPath) -> dict[str, Any]:
    return reader.keywords(call, path)


def _demand_call(reader: LiteralReader, call: ast.Call, path: SubPath) -> dict[str, Any]:
    fields = reader.keywords(call, path)
    if "class_name" in fields:   # the Python name of the field aliased "class"
        fields["class"] = fields.pop("class_name")
    return fields


CALLS = {**{name: _settings_call for name in RESOURCE_SETTINGS}, **{name: _demand_call for name in POOL_DEMAND}}


@dataclass
class Options:
    """The arguments of one decorator, ``configure`` or ``with_options`` call, in its module."""

    keywords: dict[str, ast.expr]
    at: ast.AST
    module: Module
    kind: str     # decorator, configure, with_options


@dataclass
class ZenObject:
    """A step or pipeline as the code makes it: its function and every call that configured it."""

    kind: str                  # step or pipeline
    name: str                  # its ZenML name
    function: ast.FunctionDef | ast.AsyncFunctionDef
    module: Module
    options: list[Options] = field(default_factory=list)

    def with_more(self, options: Options) -> ZenObject:
        return ZenObject(self.kind, self.name, self.function, self.module, [*self.options, options])


@dataclass
class Other:
    """A name that is no step or pipeline: why (``function``, ``made``, ``rebound``,
    ``external``, ``missing``, ``module``, ``value`` or ``unbound``) and where."""

    why: str
    module: Module | None = None
    node: ast.AST | None = None
    detail: str = ""     # the name; the qualified name (external); why (missing)
    target: Module | str | None = None   # the module a ``module`` name stands for (a path for a namespace)


Symbol = ZenObject | Other


_BUILTINS = frozenset(dir(builtins))


def _exported(module: Module, name: str) -> bool:
    """Whether ``from module import *`` brings ``name``: its literal ``__all__``, else every
    public name."""
    declared = module.binding("__all__")
    if isinstance(declared, ast.Assign) and isinstance(declared.value, (ast.List, ast.Tuple)):
        return any(isinstance(e, ast.Constant) and e.value == name for e in declared.value.elts)
    return not name.startswith("_")


def _place(module: Module, node: ast.AST) -> Place:
    return module.source.place(node)


def _refuse(module: Module, node: ast.AST, rule: d.Rule, message: str) -> Refused:
    return Refused(_place(module, node).diagnostic(rule, message))


class Code:
    """The repository's ZenML objects, resolved name by name through its imports."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._depth = 0
        # each name resolved once: a pipeline of a thousand calls must not walk its module a thousand times
        self._names: dict[tuple[int, str, int | None], Symbol] = {}
        self._resolving: set[tuple[int, str, int | None]] = set()

    # --- modules -------------------------------------------------------------------
    def module(self, path: str, importer: Module | None = None, at: ast.AST | None = None) -> Module | None:
        found = self.project.package_module(path)
        if isinstance(found, list):
            if found:
                raise Refused(found[0])
            assert importer is not None and at is not None
            raise _refuse(importer, at, d.C006, "the modules this source leads to are more than poolc reads "
                          "(500 modules, 16 MiB): the import stops here")
        return found

    def kind(self, module: Module, decorator: ast.expr) -> str | None:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = module.imports.qualified(target)
        return "step" if name in STEP else "pipeline" if name in PIPELINE else None

    # --- names -----------------------------------------------------------------------
    def name(self, module: Module, name: str, before: int | None = None) -> Symbol:
        """What a module-level name stands for (as of statement ``before`` for the
        ``configure`` calls on it)."""
        key = (id(module), name, before)
        if key not in self._names:
            if key in self._resolving:          # a circle of imports (a star import of itself): no binding
                return Other("unbound", module, None, name)
            self._resolving.add(key)
            try:
                self._names[key] = self._name(module, name, before)
            finally:
                self._resolving.discard(key)
        return self._names[key]

    def _name(self, module: Module, name: str, before: int | None) -> Symbol:
        if module.rebound(name):
            return Other("rebound", module, module.bindings[name][-1], name)
        node = module.binding(name)
        if node is None:
            return self._star(module, name)
        self._depth += 1
        try:
            if self._depth > 64:
                raise _refuse(module, node, d.C006, f"{name}: imports that lead in a circle or go on too long")
            symbol = self._bound(module, name, node)
        finally:
            self._depth -= 1
        if isinstance(symbol, ZenObject):
            symbol = self._configured(symbol, module, name, node, before)
        return symbol

    def _bound(self, module: Module, name: str, node: ast.AST) -> Symbol:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                kind = self.kind(module, decorator)
                if kind is not None:
                    return self.made(module, kind, node, decorator)
            return Other("function", module, node, name)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            return self.expression(module, node.value)
        if isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
            return self.expression(module, node.value)
        if isinstance(node, ast.ImportFrom):
            return self._imported(module, name, node)
        if isinstance(node, ast.Import):
            return self._module_import(module, name, node)
        return Other("value", module, node, name)

    def _star(self, module: Module, name: str) -> Symbol:
        """A name no statement binds: one a ``from x import *`` may bring (from a module of
        the repository, followed; from outside it, not known, unless a builtin)."""
        for node in module.bindings.get("*", []):
            if not isinstance(node, ast.ImportFrom):
                continue
            found = self.project.find(module, node.module, node.level)
            if found.path is None:
                if name not in _BUILTINS and (node.module or "").split(".")[0] not in _NOT_STEPS:
                    return Other("external", module, node, f"{node.module}.* (as {name})")
                continue
            target = self.module(found.path, module, node)
            if target is not None and _exported(target, name):
                symbol = self.name(target, name)
                if not (isinstance(symbol, Other) and symbol.why == "unbound"):
                    return symbol
        return Other("unbound", module, None, name)

    def _imported(self, module: Module, name: str, node: ast.ImportFrom) -> Symbol:
        alias = next(a for a in node.names if (a.asname or a.name) == name)
        dotted = f"{'.' * node.level}{node.module or ''}"
        found = self.project.find(module, node.module, node.level)
        if found.path is None:
            if node.level == 0 and not found.leaves:
                return Other("external", module, node, f"{node.module}.{alias.name}")
            return Other("missing", module, node, found.problem or dotted)
        target = self.module(found.path, module, node)
        symbol = self.name(target, alias.name) if target is not None else Other("unbound")
        if isinstance(symbol, Other) and symbol.why == "unbound" and \
                (os.path.isdir(found.path) or found.path.endswith("__init__.py")):
            package = found.path if os.path.isdir(found.path) else os.path.dirname(found.path)
            sub = self.project.find_in(package, alias.name)
            if sub is not None:
                return Other("module", module, node, name, target=self.module(sub, module, node) or sub)
        if isinstance(symbol, Other) and symbol.why == "unbound":
            return Other("missing", module, node, f"{dotted} has no {alias.name}")
        return symbol

    def _module_import(self, module: Module, name: str, node: ast.Import) -> Symbol:
        alias = next(a for a in node.names if (a.asname or a.name.split(".")[0]) == name)
        dotted = alias.name if alias.asname else alias.name.split(".")[0]
        found = self.project.find(module, dotted, 0)
        if found.path is None:
            if found.leaves:
                return Other("missing", module, node, found.problem or dotted)
            return Other("external", module, node, dotted)
        return Other("module", module, node, name, target=self.module(found.path, module, node) or found.path)

    def attribute(self, base: Symbol, attr: str, module: Module, node: ast.AST) -> Symbol:
        if isinstance(base, Other) and base.why == "module":
            target = base.target
            if isinstance(target, Module):
                symbol = self.name(target, attr)
                if not (isinstance(symbol, Other) and symbol.why == "unbound"):
                    return symbol
            package = target if isinstance(target, str) else \
                os.path.dirname(target.path) if isinstance(target, Module) and \
                target.path.endswith("__init__.py") else None
            sub = self.project.find_in(package, attr) if package else None
            if sub is not None:
                return Other("module", module, node, attr, target=self.module(sub, module, node) or sub)
            return Other("missing", module, node, f"{attr} is not in {base.detail}")
        if isinstance(base, Other) and base.why == "external":
            return Other("external", module, node, f"{base.detail}.{attr}")
        return Other("value", module, node, attr)

    def expression(self, module: Module, node: ast.expr) -> Symbol:
        """What an expression stands for: a name, ``a.b``, ``x.with_options(...)``, ``step(...)(fn)``."""
        if isinstance(node, ast.Name):
            return self.name(module, node.id)
        if isinstance(node, ast.Attribute):
            return self.attribute(self.expression(module, node.value), node.attr, module, node)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "with_options":
                base = self.expression(module, func.value)
                if isinstance(base, ZenObject):
                    return base.with_more(self.options(module, node, base.kind, "with_options"))
            kind = self.kind(module, func)          # step(fn), step(...)(fn)
            if kind is not None and len(node.args) == 1 and isinstance(node.args[0], ast.Name):
                inner = self.name(module, node.args[0].id)
                if isinstance(inner, Other) and inner.why == "function" and inner.module is not None and \
                        isinstance(inner.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    return self.made(inner.module, kind, inner.node, func if isinstance(func, ast.Call) else node,
                                     at=module)
            return Other("made", module, node, describe(node))
        return Other("value", module, node, describe(node))

    def made(self, module: Module, kind: str, function: ast.FunctionDef | ast.AsyncFunctionDef,
             decorator: ast.expr, *, at: Module | None = None) -> ZenObject:
        """A step or pipeline made of ``function`` by ``decorator`` (``@step``, ``@step(...)``
        or the call ``step(fn, ...)``, written in ``at``)."""
        at = at or module
        options = self.options(at, decorator, kind, "decorator") if isinstance(decorator, ast.Call) else \
            Options({}, decorator, at, "decorator")
        name_node = options.keywords.get("name")
        name = function.name
        if name_node is not None:
            if not (isinstance(name_node, ast.Constant) and isinstance(name_node.value, str)):
                raise _refuse(at, name_node, d.C003, f"name={describe(name_node)} is not a literal string: "
                              "poolc names the step's invocations by it")
            name = name_node.value
        dynamic = options.keywords.get("dynamic")
        if kind == "pipeline" and dynamic is not None and not (isinstance(dynamic, ast.Constant) and
                                                                dynamic.value is False):
            raise _refuse(at, dynamic, d.C007, "a dynamic pipeline decides its steps when it runs: poolc cannot "
                          "plan them without running the code (write a static pipeline, or the steps in the "
                          "poolc document)")
        return ZenObject(kind, name, function, module, [options])

    def options(self, module: Module, call: ast.Call, kind: str, how: str) -> Options:
        """The keywords of a call that configures a step or pipeline, each one ZenML takes."""
        known = ARGUMENTS[(kind, how)]
        for arg in call.args:
            if how != "decorator" or not isinstance(arg, ast.Name):
                raise _refuse(module, arg, d.C003, f"{describe(arg)}: give {how} arguments by name")
        keywords: dict[str, ast.expr] = {}
        for keyword in call.keywords:
            if keyword.arg is None:
                raise _refuse(module, keyword.value, d.C003, f"**{describe(keyword.value)} is not a literal: "
                              "write the arguments out, so poolc can read the settings without running the code")
            if keyword.arg not in known:
                raise _refuse(module, keyword, d.C005, f"{keyword.arg}= is not an argument of ZenML's {kind} "
                              f"{how} (ZenML refuses it when the module is imported)"
                              f"{did_you_mean(keyword.arg, known, 'arguments')}")
            keywords[keyword.arg] = keyword.value
        merge = keywords.get("merge")
        if merge is not None and not (isinstance(merge, ast.Constant) and merge.value is True):
            raise _refuse(module, merge, d.C007, "merge= other than True replaces the whole configuration: poolc "
                          "reads merged configurations only")
        return Options(keywords, call, module, how)

    def _configured(self, symbol: ZenObject, module: Module, name: str, bound: ast.AST,
                    before: int | None) -> ZenObject:
        """``symbol`` with the module-level ``name.configure(...)`` calls of ``module`` after its binding.
        One under a module-level condition or loop (or, for a step, in any function) is
        decided when the code runs: refused."""
        start = module.order.get(id(bound), -1)
        for index, call, where in module.configures.get(name, []):
            if where == "function" and symbol.kind == "pipeline":
                continue     # a run script's main(): read as the run's options (_run_sites)
            if where != "top":
                raise _refuse(module, call, d.C007, f"{name}.configure(...) under a condition, a loop or in a "
                              "function: whether it applies is decided when the code runs; configure at "
                              "module level")
            if index > start and (before is None or index < before):
                symbol = symbol.with_more(self.options(module, call, symbol.kind, "configure"))
        return symbol


# --- reading the settings of one call --------------------------------------------------

def _names(code: Code) -> Any:
    """The literal reader's view of module-level names, through the repository's imports."""

    def bound(source: Any, node: ast.Name) -> tuple[Any, ast.expr] | None:
        module = code.project.by_source(source)
        return _constant(code, module, node.id) if module is not None else None

    return bound


def _constant(code: Code, module: Module, name: str, hops: int = 0) -> tuple[Any, ast.expr] | None:
    """The expression a module-level name is bound to once (through an import of the repository)."""
    node = module.binding(name)
    if hops > 32:      # a circle of imports
        return None
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return module.source, node.value
    if isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
        return module.source, node.value
    if isinstance(node, ast.ImportFrom):
        alias = next(a for a in node.names if (a.asname or a.name) == name)
        found = code.project.find(module, node.module, node.level)
        target = code.module(found.path, module, node) if found.path is not None else None
        return _constant(code, target, alias.name, hops + 1) if target is not None else None
    return None


def _settings_dict(code: Code, module: Module, settings: ast.expr) -> tuple[Module, ast.expr]:
    """A ``settings=`` argument, or the literal dict a module-level name of it is bound to
    (``settings=COMMON``), with the module that dict is written in."""
    if isinstance(settings, ast.Name):
        bound = _constant(code, module, settings.id)
        owner = code.project.by_source(bound[0]) if bound is not None else None
        if bound is not None and owner is not None and isinstance(bound[1], ast.Dict):
            return owner, bound[1]
    return module, settings


def resources_layer(code: Code, module: Module, settings: ast.expr) -> Layer | None:
    """The ResourceSettings of a ``settings=`` argument, or None when it has none."""
    module, settings = _settings_dict(code, module, settings)
    if not isinstance(settings, ast.Dict):
        raise _refuse(module, settings, d.C003, f"settings={describe(settings)} is not a literal dict: write "
                      "settings={\"resources\": ResourceSettings(...)} in place")
    layer = None
    for key, value in zip(settings.keys, settings.values, strict=True):
        if key is None:
            raise _refuse(module, value, d.C003, f"**{describe(value)} in settings is not a literal: write the "
                          "keys out")
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            raise _refuse(module, key, d.C003, f"settings key {describe(key)} is not a literal string")
        if not zenml_config.is_settings_key(key.value):
            raise _refuse(module, key, d.C005, f"settings key {key.value!r} is not one ZenML takes (it refuses the "
                          "step: 'Invalid setting key'); its keys are resources, docker, deployment or a stack "
                          f"component type{did_you_mean(key.value, zenml_config.GENERAL_SETTINGS, 'keys')}")
        if key.value != "resources":
            continue   # docker, orchestrator.<flavor>, ...: not demand, not read
        reader = LiteralReader(module.source, module.imports, CALLS, _names(code))
        try:
            fields = reader.value(value, ())
        except NotLiteral as exc:
            raise Refused(reader.source.place(exc.node).diagnostic(d.C003, exc.message)) from None
        if not isinstance(fields, dict):
            raise _refuse(module, value, d.C005, "settings[\"resources\"] must be ResourceSettings(...) or a dict of "
                          "its fields")
        layer = Layer(fields, {p: at for p, at in reader.places.items() if p}, _place(module, value), reader.keys)
    return layer


SAGEMAKER_SETTINGS = ("zenml.integrations.aws.flavors.SagemakerStepOperatorSettings",
                      "zenml.integrations.aws.flavors.sagemaker_step_operator_flavor.SagemakerStepOperatorSettings")


def instance_type(code: Code, module: Module, settings: ast.expr) -> tuple[str, Place] | None:
    """The instance_type of the SageMaker step operator settings in a ``settings=``
    dict (key ``step_operator``, ``step_operator.sagemaker`` or ``step_operator:<name>``)."""
    module, settings = _settings_dict(code, module, settings)
    if not isinstance(settings, ast.Dict):
        return None
    found = None
    for key, value in zip(settings.keys, settings.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)) or \
                key.value.split(":", 1)[0] not in ("step_operator", "step_operator.sagemaker"):
            continue
        node = None
        if isinstance(value, ast.Call) and module.imports.qualified(value.func) in SAGEMAKER_SETTINGS:
            node = next((k.value for k in value.keywords if k.arg == "instance_type"), None)
        elif isinstance(value, ast.Dict):
            node = next((v for k, v in zip(value.keys, value.values, strict=True)
                         if isinstance(k, ast.Constant) and k.value == "instance_type"), None)
        else:
            raise _refuse(module, value, d.C003, f"settings[{key.value!r}]={describe(value)}: write "
                          "SagemakerStepOperatorSettings(instance_type=...) or a dict in place, so poolc knows the "
                          "instance the step runs on")
        if node is None:
            continue
        reader = LiteralReader(module.source, module.imports, {}, _names(code))
        try:
            name = reader.value(node, ())
        except NotLiteral as exc:
            raise Refused(reader.source.place(exc.node).diagnostic(d.C003, exc.message)) from None
        if not isinstance(name, str):
            raise _refuse(module, node, d.C005, f"instance_type={describe(node)} is not an instance type name")
        found = (name, reader.places[()])
    return found


def step_operator(code: Code, module: Module, node: ast.expr) -> tuple[str, Place]:
    """The step operator's name (a literal string, or a module-level name bound to one) and its place."""
    reader = LiteralReader(module.source, module.imports, {}, _names(code))
    try:
        value = reader.value(node, ())
    except NotLiteral:
        value = None
    if not (isinstance(value, str) and value):
        raise _refuse(module, node, d.C003, f"step_operator={describe(node)}: name the step operator as a string, "
                      "so poolc knows the requester without running the code")
    return value, reader.places[()]


def _apply(code: Code, step: FoundStep, options: list[Options]) -> None:
    for option in options:
        settings = option.keywords.get("settings")
        if settings is not None:
            layer = resources_layer(code, option.module, settings)
            if layer is not None:
                step.layers.append(layer)
            instance = instance_type(code, option.module, settings)
            if instance is not None:
                step.instance_type, step.instance_type_at = instance
        if "step_operator" in option.keywords:
            step.step_operator, step.step_operator_at = step_operator(code, option.module,
                                                                      option.keywords["step_operator"])


# --- the pipeline's body ---------------------------------------------------------------

_CONDITIONAL = (ast.If, ast.IfExp, ast.Match, ast.BoolOp, ast.Try, ast.TryStar)
_LOOP = (ast.For, ast.AsyncFor, ast.While, ast.comprehension, ast.ListComp, ast.SetComp, ast.DictComp,
         ast.GeneratorExp)


def _calls(function: ast.AST) -> list[tuple[ast.Call, ast.AST | None, ast.AST | None]]:
    """Every call in a pipeline body in the order it runs, with the loop and the
    conditional it is in (if any)."""
    found: list[tuple[ast.Call, ast.AST | None, ast.AST | None]] = []

    def visit(node: ast.AST, loop: ast.AST | None, branch: ast.AST | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) and node is not function:
            return
        if isinstance(node, _LOOP):
            loop = loop or node
        if isinstance(node, ast.Try):     # the body runs; handlers and else only sometimes
            for child in node.body:
                visit(child, loop, branch)
            for other in [*node.handlers, *node.orelse]:
                visit(other, loop, branch or node)
            for child in node.finalbody:
                visit(child, loop, branch)
            return
        if isinstance(node, ast.If):
            visit(node.test, loop, branch)
            for child in [*node.body, *node.orelse]:
                visit(child, loop, branch or node)
            return
        if isinstance(node, ast.BoolOp):
            visit(node.values[0], loop, branch)
            for value in node.values[1:]:
                visit(value, loop, branch or node)
            return
        if isinstance(node, (ast.IfExp, ast.Match)):
            branch = branch or node
        if isinstance(node, ast.Call):
            # arguments first: train(load()) invokes load before train
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                visit(argument, loop, branch)
            found.append((node, loop, branch))
            visit(node.func, loop, branch)
            return
        for inner in ast.iter_child_nodes(node):
            visit(inner, loop, branch)

    for statement in function.body if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) else [function]:
        visit(statement, None, None)
    return found


def _early_returns(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """Conditions of a pipeline body with a ``return`` under them: steps after them may not run."""
    order = list(ast.walk(function))        # every parent before its children
    parent = {id(child): node for node in order for child in ast.iter_child_nodes(node)}
    holds_return: set[int] = set()          # one pass from the leaves up, not one walk per block (#42)
    for node in reversed(order):
        if (isinstance(node, ast.Return) or id(node) in holds_return) and id(node) in parent:
            holds_return.add(id(parent[id(node)]))
    return [node for node in order if isinstance(node, (ast.If, ast.Try, ast.Match)) and node is not function
            and id(node) in holds_return]


class Pipeline:
    """The steps of one pipeline object, invocation by invocation."""

    def __init__(self, code: Code, pipeline: ZenObject, found: Found) -> None:
        self.code, self.pipeline, self.found = code, pipeline, found
        self.module = pipeline.module
        self.locals = self._locals()

    def _locals(self) -> dict[str, list[ast.AST]]:
        bound: dict[str, list[ast.AST]] = {}
        for node in ast.walk(self.pipeline.function):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    for name in ([target.id] if isinstance(target, ast.Name) else
                                 [e.id for e in ast.walk(target) if isinstance(e, ast.Name)]):
                        bound.setdefault(name, []).append(node)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
                target = node.target
                for e in ast.walk(target):
                    if isinstance(e, ast.Name):
                        bound.setdefault(e.id, []).append(node)
        for arg in ast.walk(self.pipeline.function.args):
            if isinstance(arg, ast.arg):
                bound.setdefault(arg.arg, []).append(arg)
        return bound

    def callee(self, func: ast.expr) -> tuple[Symbol, list[Options]]:
        """What a call in the body calls, and the with_options of the call itself."""
        module = self.module
        extra: list[Options] = []
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute) and func.func.attr == "with_options":
            base, more = self.callee(func.func.value)
            if isinstance(base, ZenObject):
                return base, [*more, self.code.options(module, func, base.kind, "with_options")]
            return base, more
        if isinstance(func, ast.Name) and func.id in self.locals:
            bindings = self.locals[func.id]
            value = bindings[0].value if len(bindings) == 1 and isinstance(bindings[0], ast.Assign) else None
            if value is not None:
                symbol, more = self.callee(value)
                if isinstance(symbol, ZenObject):
                    return symbol, more
            return self._local_step(func, bindings), extra
        return self.code.expression(module, func), extra

    def _local_step(self, func: ast.Name, bindings: list[ast.AST]) -> Symbol:
        """A local name of the body: refused when it may stand for a step."""
        for binding in bindings:
            for node in ast.walk(binding):
                if isinstance(node, (ast.Name, ast.Attribute)) and node is not func:
                    try:
                        symbol = self.code.expression(self.module, node)
                    except Refused:
                        continue
                    if isinstance(symbol, ZenObject) and symbol.kind == "step":
                        raise _refuse(self.module, binding, d.C007, f"{func.id} is bound to a step inside the "
                                      "pipeline: poolc reads a step's settings where the step is made; bind it at "
                                      "module level or call the step by its name")
        return Other("value", self.module, func, func.id)

    def read(self) -> None:
        body = self.pipeline.function
        calls = _calls(body)
        steps: list[tuple[ast.Call, ZenObject, list[Options]]] = []
        for call, loop, branch in calls:
            symbol, extra = self.callee(call.func)
            if isinstance(symbol, ZenObject):
                if symbol.kind == "pipeline":
                    raise _refuse(self.module, call, d.C007, f"pipeline {symbol.name!r} called inside a pipeline: "
                                  "poolc reads one pipeline's own step calls")
                if loop is not None:
                    raise _refuse(self.module, loop, d.C007, f"step {symbol.name!r} is called in a loop: poolc "
                                  "cannot count its invocations without running the code; call it once per "
                                  "invocation")
                if branch is not None:
                    raise _refuse(self.module, branch, d.C007, f"step {symbol.name!r} is called under a condition: "
                                  "whether it runs is decided when the pipeline runs, and poolc does not guess; "
                                  "call it unconditionally (or split the pipeline)")
                steps.append((call, symbol, extra))
                continue
            self._not_a_step(call, symbol)
        for node in _early_returns(body):
            if any(call.lineno > node.lineno for call, _, _ in steps):
                raise _refuse(self.module, node, d.C007, "a return under a condition decides which of the later "
                              "steps run when the pipeline runs; poolc does not guess")
        for call, symbol, extra in steps:
            self._invocation(call, symbol, extra)

    def _not_a_step(self, call: ast.Call, symbol: Symbol) -> None:
        """A call that is no step call: refused when it might make or call steps."""
        if not isinstance(symbol, Other):
            return
        name = describe(call.func)
        if symbol.why == "made":
            where = symbol.node or call
            module = symbol.module or self.module
            raise _refuse(module, where, d.C007, f"{name} is made by {symbol.detail} when the code runs (a factory): "
                          "poolc cannot tell whether it is a step, nor its settings, without running the code; "
                          "decorate the function with @step at module level")
        if symbol.why == "rebound":
            raise _refuse(symbol.module or self.module, symbol.node or call, d.C007,
                          f"{symbol.detail} is bound more than once at module level: which object the pipeline "
                          "calls is decided when the code runs")
        if symbol.why == "missing":
            raise _refuse(symbol.module or self.module, symbol.node or call, d.C006,
                          f"{name} (called in pipeline {self.pipeline.name!r}) cannot be followed: {symbol.detail}")
        if symbol.why == "external" and (symbol.detail.split(".")[0] not in _NOT_STEPS or
                                         symbol.detail.startswith("zenml.integrations.")):
            raise _refuse(symbol.module or self.module, symbol.node or call, d.C006,
                          f"{name} (called in pipeline {self.pipeline.name!r}) comes from {symbol.detail}, outside "
                          "the repository: poolc reads only the repository's code and cannot tell whether it is "
                          "a step; define the step in the repository")
        if symbol.why == "function" and isinstance(symbol.node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                symbol.module is not None:
            for inner in ast.walk(symbol.node):
                if isinstance(inner, ast.Call):
                    try:
                        target = self.code.expression(symbol.module, inner.func)
                    except Refused:
                        continue
                    if isinstance(target, ZenObject):
                        raise _refuse(self.module, call, d.C007, f"{name} calls step {target.name!r}: poolc reads "
                                      "the step calls of the pipeline's own body, not of the functions it calls; "
                                      "call the steps in the pipeline")

    def _invocation(self, call: ast.Call, symbol: ZenObject, extra: list[Options]) -> None:
        found = self.found
        custom = next((k.value for k in call.keywords if k.arg == "id"), None)
        if custom is not None and not (isinstance(custom, ast.Constant) and isinstance(custom.value, str)):
            raise _refuse(self.module, custom, d.C003, f"id={describe(custom)} is not a literal string")
        name = custom.value if isinstance(custom, ast.Constant) and isinstance(custom.value, str) else symbol.name
        if custom is None and name in found.steps:
            index = 2
            while f"{name}_{index}" in found.steps:
                index += 1
            name = f"{name}_{index}"
        step = FoundStep(name, _place(self.module, call))
        found.steps[name] = step
        _apply(self.code, step, [*symbol.options, *extra])


# --- the entry -------------------------------------------------------------------------

def _choose(code: Code, entry: Module, wanted: str) -> ZenObject | None:
    """The pipeline the source names: by ZenML name among the entry's pipelines, or a
    module-level name of the entry that stands for a pipeline."""
    named = []
    for node in entry.source.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            symbol = code.name(entry, node.name) if not entry.rebound(node.name) else None
            if isinstance(symbol, ZenObject) and symbol.kind == "pipeline" and symbol.name == wanted:
                named.append(symbol)
    if not named and wanted not in entry.bindings:     # a run script: a pipeline imported, named by ZenML name
        for node in entry.source.tree.body:
            for alias in node.names if isinstance(node, ast.ImportFrom) else []:
                local = alias.asname or alias.name
                try:
                    symbol = code.name(entry, local) if local != "*" and not entry.rebound(local) else None
                except Refused:
                    continue      # reported if the pipeline calls it; not what is looked for here
                if isinstance(symbol, ZenObject) and symbol.kind == "pipeline" and symbol.name == wanted:
                    named.append(symbol)
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        raise Refused(Place(entry.source.file, (1, 1, 1, 1)).diagnostic(
            d.C004, f"more than one ZenML pipeline named {wanted!r} in this file"))
    if wanted.isidentifier() and wanted in entry.bindings:
        symbol = code.name(entry, wanted)
        if isinstance(symbol, ZenObject) and symbol.kind == "pipeline":
            return symbol
        if isinstance(symbol, Other) and symbol.why in ("made", "rebound", "missing"):
            where = symbol.node or entry.bindings[wanted][0]
            rule = d.C006 if symbol.why == "missing" else d.C007
            raise _refuse(symbol.module or entry, where, rule, f"{wanted} cannot be read as a ZenML pipeline: "
                          f"{symbol.detail if symbol.why == 'missing' else 'it is made when the code runs'}")
    return None


def _run_sites(entry: Module, wanted: str) -> list[ast.Call]:
    """Calls ``<wanted>.with_options(...)`` or ``.configure(...)`` of the entry other
    than module-level aliases and ``configure`` statements (read with the object): a
    ``main()`` or ``if __name__ == "__main__":`` block that runs the pipeline with them."""
    body = entry.source.tree.body
    aliases = {id(s.value) for s in body if isinstance(s, (ast.Assign, ast.AnnAssign))}
    statements = {id(s.value) for s in body if isinstance(s, ast.Expr)}
    sites = []
    for node in ast.walk(entry.source.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("with_options", "configure") and isinstance(node.func.value, ast.Name) and \
                node.func.value.id == wanted:
            if id(node) in (aliases if node.func.attr == "with_options" else statements):
                continue
            sites.append(node)
    return sorted(sites, key=lambda n: (n.lineno, n.col_offset))


def read(path: str, pipeline: str, root: str | None = None) -> Found:
    """The steps of pipeline ``pipeline`` (its ZenML name, its function's name, or a
    module-level name that stands for it) of the code at ``path``, following its
    imports inside the repository at ``root``."""
    found = Found()
    root = root or repository_root(os.path.dirname(os.path.abspath(path)))
    project = Project(root, path)
    code = Code(project)
    try:
        entry = code.project.module(path)
        if isinstance(entry, list):
            found.diagnostics.extend(entry)
            return found
        _read(code, entry, pipeline, found)
    except Refused as exc:
        found.diagnostics.append(exc.diagnostic)
        found.steps.clear()
    return found


def _read(code: Code, entry: Module, wanted: str, found: Found) -> None:
    chosen = _choose(code, entry, wanted)
    if chosen is None:
        known = sorted({s.name for n in entry.source.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                        for s in [code.name(entry, n.name)] if isinstance(s, ZenObject) and s.kind == "pipeline"})
        body = entry.source.tree.body
        raise Refused(entry.source.place(body[0] if body else entry.source.tree).diagnostic(
            d.C004, f"no ZenML pipeline named {wanted!r} in this file (pipelines here: {', '.join(known) or 'none'})"
            f"{did_you_mean(wanted, known, 'pipelines') if closest(wanted, known) else ''}"))
    sites = _run_sites(entry, wanted) if wanted in entry.bindings else []
    if len(sites) > 1:
        raise _refuse(entry, sites[1], d.C007, f"pipeline {wanted!r} is configured in more than one place when the "
                      "code runs: which configuration runs is decided at run time; bind each to its own "
                      "module-level name (x = pipeline.with_options(...)) and name that in spec.source")
    options = [*chosen.options, *(code.options(entry, s, "pipeline", "with_options" if
                                               isinstance(s.func, ast.Attribute) and s.func.attr == "with_options"
                                               else "configure") for s in sites)]
    config: Found | None = None
    step_updates: list[tuple[Options, ast.expr]] = []
    for option in options:
        settings = option.keywords.get("settings")
        if settings is not None:
            layer = resources_layer(code, option.module, settings)
            if layer is not None:
                found.pipeline_layers.append(layer)
            found.instance_type = instance_type(code, option.module, settings) or found.instance_type
        if "config_path" in option.keywords:
            config = _config_file(code, option.module, option.keywords["config_path"])
            found.config_path_at = _place(option.module, option.keywords["config_path"])
        for key in ("steps", "step_configurations"):
            if key in option.keywords:
                step_updates.append((option, option.keywords[key]))
    if config is not None:
        found.diagnostics.extend(config.diagnostics)
        found.pipeline_layers.extend(config.pipeline_layers)
        found.instance_type = config.instance_type or found.instance_type
    Pipeline(code, chosen, found).read()
    if config is not None:
        _lay_over(found, config.steps, "the run configuration of config_path")
    for option, node in step_updates:
        _lay_over(found, _steps_argument(code, option.module, node), "with_options(steps=...)")


def _lay_over(found: Found, configured: dict[str, FoundStep], what: str) -> None:
    for name, step in configured.items():
        target = found.steps.get(name)
        if target is None:
            raise Refused(step.at.diagnostic(d.C004, f"step {name!r} of {what} is no step of the pipeline "
                                             f"(its steps: {', '.join(found.steps) or 'none'})"
                                             f"{did_you_mean(name, found.steps, 'steps')}"))
        target.layers.extend(step.layers)
        if step.instance_type is not None:
            target.instance_type, target.instance_type_at = step.instance_type, step.instance_type_at
        if step.step_operator is not None:
            target.step_operator, target.step_operator_at = step.step_operator, step.step_operator_at


def _config_file(code: Code, module: Module, node: ast.expr) -> Found:
    """The run configuration ``with_options(config_path=...)`` names. ZenML opens it
    relative to the directory the pipeline runs in: poolc looks in the directories
    Python's imports are searched from (the entry's, the ZenML source root, the
    repository root), first found."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value):
        raise _refuse(module, node, d.C003, f"config_path={describe(node)} is not a literal path: poolc reads the "
                      "run configuration without running the code")
    written = node.value
    if os.path.isabs(written) or written.startswith("~"):
        raise _refuse(module, node, d.C006, f"config_path={written!r} is an absolute path: poolc reads only files "
                      "of the repository, named relative to it")
    if not written.endswith((".yaml", ".yml")):
        raise _refuse(module, node, d.C006, f"config_path={written!r}: a run configuration is a .yaml or .yml file")
    for base in code.project.search:
        candidate = os.path.normpath(os.path.join(base, written))
        problem = outside(code.project.root, candidate)
        if problem is not None:
            raise _refuse(module, node, d.C006, f"config_path={written!r}: {problem}")
        if os.path.exists(candidate):
            return zenml_config.read(code.project.shown(candidate))
    where = ", ".join(code.project.shown(b) for b in code.project.search)
    raise _refuse(module, node, d.C001, f"config_path={written!r} is not found (looked in {where}, as ZenML opens "
                  "it from the directory the pipeline runs in)")


def _steps_argument(code: Code, module: Module, node: ast.expr) -> dict[str, FoundStep]:
    """``with_options(steps={"train": {"settings": {...}, "step_operator": ...}})``."""
    if not isinstance(node, ast.Dict):
        raise _refuse(module, node, d.C003, f"steps={describe(node)} is not a literal dict of step names")
    result: dict[str, FoundStep] = {}
    for key, value in zip(node.keys, node.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            raise _refuse(module, key if key is not None else value, d.C003,
                          "steps= keys must be literal step names")
        step = FoundStep(key.value, _place(module, key))
        if not isinstance(value, ast.Dict):
            raise _refuse(module, value, d.C003, f"steps[{key.value!r}] is not a literal dict "
                          "(settings=..., step_operator=...)")
        for inner_key, inner in zip(value.keys, value.values, strict=True):
            if not (isinstance(inner_key, ast.Constant) and isinstance(inner_key.value, str)):
                raise _refuse(module, inner_key if inner_key is not None else inner, d.C003,
                              "step configuration keys must be literal strings")
            if inner_key.value == "settings":
                layer = resources_layer(code, module, inner)
                if layer is not None:
                    step.layers.append(layer)
                instance = instance_type(code, module, inner)
                if instance is not None:
                    step.instance_type, step.instance_type_at = instance
            elif inner_key.value == "step_operator":
                step.step_operator, step.step_operator_at = step_operator(code, module, inner)
            elif inner_key.value not in ARGUMENTS[("step", "configure")]:
                raise _refuse(module, inner_key, d.C005, f"{inner_key.value!r} is not a step configuration key "
                              "ZenML takes" + did_you_mean(inner_key.value, ARGUMENTS[("step", "configure")],
                                                           "keys"))
        result[key.value] = step
    return result

