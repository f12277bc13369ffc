"""Flyte tasks read statically with ``ast``: flytekit 1.x ``@task(requests=Resources(...),
limits=..., resources=..., interruptible=...)`` and flyte 2 ``TaskEnvironment(resources=
Resources(...), interruptible=...)`` with its ``@env.task`` functions. Each task of the
file is a step, in the order of the file.

Flyte's resources are Kubernetes requests and limits; poolc plans the request, so a
resource given only as a limit counts as its request (as Kubernetes does). ``cpu`` is
cores or a quantity (``"500m"``), memory (``mem`` / ``memory``) a Kubernetes quantity or
plain bytes, ``gpu`` a count, ``"A100:2"`` or ``GPU(device=..., quantity=...)`` (the model
becomes gpu_type), ``ephemeral_storage`` / ``disk`` becomes disk, ``shm`` shm.
``interruptible`` is preemptible; Flyte's default is not interruptible, so a task that
does not say is not preemptible."""

from __future__ import annotations

import ast
import difflib
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from .. import diagnostics as d
from . import flyte_devices
from .found import Found, FoundStep, Layer, Place, Refused, SubPath
from .literals import LiteralReader, NotLiteral, describe
from .modules import Module, Project
from .paths import repository_root
from .pysource import PySource
from .suggest import did_you_mean

TASK = ("flytekit.task", "flytekit.core.task.task")
RESOURCES = ("flytekit.Resources", "flytekit.core.resources.Resources", "flyte.Resources", "flyte._resources.Resources")
TASK_ENVIRONMENT = ("flyte.TaskEnvironment", "flyte._task_environment.TaskEnvironment")
GPU = ("flyte.GPU", "flyte._resources.GPU")
ACCELERATORS = "flytekit.extras.accelerators."
DYNAMIC = ("flytekit.dynamic", "flytekit.core.dynamic_workflow_task.dynamic")
WORKFLOW = ("flytekit.workflow", "flytekit.core.workflow.workflow")
MAP_TASK = ("flytekit.map_task", "flytekit.core.array_node_map_task.map_task", "flytekit.core.map_task.map_task",
            "flyte.map")
_CPU = re.compile(r"^([0-9]+(?:\.[0-9]+)?|\.[0-9]+)(m?)$")
_PLAIN_BYTES = re.compile(r"^[0-9]+$")
# a Kubernetes quantity as the API server parses it (what a pod's resources must be)
_QUANTITY = re.compile(r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][0-9]+)?$")
# what each Resources takes (anything else is a TypeError when the module is imported)
FIELDS = {"flytekit": ("cpu", "mem", "gpu", "ephemeral_storage"),
          "flyte": ("cpu", "memory", "gpu", "disk", "shm")}
TASK_KEYWORDS = ("requests", "limits", "resources", "interruptible", "accelerator")
# the arguments each call takes (flytekit 1.16, flyte 2.12); a call marked strict has no
# **kwargs, so anything else is a TypeError when the module is imported
ARGUMENTS = {
    "task": ("accelerator", "annotations", "cache", "container_image", "deck_fields", "deprecated", "disable_deck",
             "docs", "enable_deck", "environment", "execution_mode", "interruptible", "labels", "limits",
             "node_dependency_hints", "pickle_untyped", "pod_template", "pod_template_name", "requests", "resources",
             "retries", "secret_requests", "shared_memory", "task_config", "task_resolver", "timeout"),
    "with_overrides": ("accelerator", "aliases", "cache", "container_image", "interruptible", "limits", "name",
                       "node_name", "pod_template", "requests", "resources", "retries", "shared_memory",
                       "task_config", "timeout"),
    "environment": ("cache", "depends_on", "description", "env_vars", "image", "include", "interruptible", "name",
                    "plugin_config", "pod_template", "queue", "resources", "reusable", "secrets", "service_account"),
    "envtask": ("cache", "docs", "entrypoint", "interruptible", "links", "max_inline_io_bytes", "pod_template",
                "produces_artifacts", "queue", "report", "retries", "service_account", "short_name",
                "task_resolver", "timeout", "triggers"),
    "clone": ("name", "image", "resources", "env_vars", "secrets", "depends_on", "description", "interruptible",
              "include", "service_account", "cache", "reusable"),
    "override": ("cache", "entrypoint", "env_vars", "interruptible", "links", "max_inline_io_bytes",
                 "plugin_config", "pod_template", "produces_artifacts", "queue", "resources", "retries", "reusable",
                 "secrets", "service_account", "short_name", "timeout"),
}
STRICT = ("task", "environment", "envtask", "clone")


def _resources_call(library: str) -> Any:
    def read(reader: LiteralReader, call: ast.Call, path: SubPath) -> dict[str, Any]:
        for keyword in call.keywords:
            if keyword.arg is not None and keyword.arg not in FIELDS[library]:
                raise _Bad(reader.source.place(keyword), f"{keyword.arg}= is not a field of {library}'s Resources "
                           f"({library} refuses it){did_you_mean(keyword.arg, FIELDS[library], 'fields')}")
        return {"__resources__": reader.keywords(call, path), "__library__": library}
    return read


def _gpu_call(reader: LiteralReader, call: ast.Call, path: SubPath) -> dict[str, Any]:
    return {"__gpu__": reader.keywords(call, path, positional=("device", "quantity", "partition"))}


CALLS = {**{n: _resources_call("flytekit" if n.startswith("flytekit") else "flyte") for n in RESOURCES},
         **{n: _gpu_call for n in GPU}}


def _resources_of(reader: LiteralReader, node: ast.expr, path: SubPath) -> tuple[dict[str, Any], str]:
    value = reader.value(node, path)
    if not (isinstance(value, dict) and "__resources__" in value):
        raise NotLiteral(node, f"{describe(node)} is not Resources(...) with literal arguments")
    return value["__resources__"], value["__library__"]


# a GPU count written as a string: ASCII digits, at most 9 ("²".isdigit() is true and int()
# refuses it; 5,000 digits exceed Python's int conversion limit: both exited 3, #42)
_COUNT = re.compile(r"[0-9]{1,9}")


def _first(value: Any) -> Any:
    """The request of a (request, limit) pair; a single value is both."""
    return value[0] if isinstance(value, list) and len(value) == 2 else value


def _cpu(value: Any, where: Place) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    match = _CPU.match(value) if isinstance(value, str) else None
    if match is None:
        raise _Bad(where, f"cpu={value!r} is not a core count or a quantity such as '500m'")
    return float(match[1]) / (1000 if match[2] else 1)


def _bytes(value: Any, name: str, where: Place, library: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and library == "flytekit":
        return f"{value}B"
    if isinstance(value, str) and _QUANTITY.match(value):
        return f"{value}B" if _PLAIN_BYTES.match(value) else value
    if isinstance(value, str):
        fix = re.sub(r"([KMGTPE])B$", r"\1", value) if re.search(r"[KMGTPE]B$", value) else None
        raise _Bad(where, f"{name}={value!r} is not a Kubernetes quantity: Kubernetes refuses the task's pod"
                   + (f" (write {fix!r} or {fix + 'i'!r})" if fix else " (write one such as '4Gi' or '4G')"))
    if library == "flyte" and isinstance(value, int):
        raise _Bad(where, f"{name}={value!r}: flyte refuses a number here (it would be {value} bytes); write a "
                   "quantity string such as '4Gi'")
    raise _Bad(where, f"{name}={value!r} is not a quantity such as '4Gi'")


def _flyte_device(device: Any, count: Any, partition: Any, where: Place) -> tuple[int, str | None]:
    if partition is not None:
        raise _Bad(where, f"GPU partition {partition!r}: " + (flyte_devices.model(f"{device}.{partition}", {},
                                                                                  "flyte")[1] or ""))
    if not isinstance(device, str):
        raise _Bad(where, f"GPU device {device!r} is not a device name")
    model, why = flyte_devices.model(device, flyte_devices.FLYTE, "flyte")
    if model is None:
        raise _Bad(where, why or "")
    return count, model


def _gpu(value: Any, where: Place, library: str) -> tuple[int, str | None]:
    if isinstance(value, dict) and "__gpu__" in value:
        gpu = value["__gpu__"]
        return _flyte_device(gpu.get("device"), gpu.get("quantity", 1), gpu.get("partition"), where)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value, None
    if isinstance(value, str) and _COUNT.fullmatch(value) and library == "flytekit":
        return int(value), None
    if isinstance(value, str) and library == "flyte":
        device, _, count = value.partition(":")
        known = device in flyte_devices.FLYTE or device in flyte_devices.FLYTE_UNMAPPED
        if known and _COUNT.fullmatch(count) and 1 <= int(count) <= flyte_devices.FLYTE_MAX_GPUS:
            return _flyte_device(device, int(count), None, where)
        raise _Bad(where, f"gpu={value!r}: flyte refuses it (an accelerator string is '<device>:<1 to 8>', such as "
                   "'A100:2', or give a count or GPU(device=..., quantity=...))")
    if library == "flytekit":
        raise _Bad(where, f"gpu={value!r}: flytekit's gpu is a count of GPUs (the model is accelerator=, a constant "
                   "of flytekit.extras.accelerators)")
    raise _Bad(where, f"gpu={value!r} is not a count, 'A100:2' or GPU(device=..., quantity=...)")


class _Bad(Exception):
    def __init__(self, where: Place, message: str) -> None:
        super().__init__(message)
        self.where, self.message = where, message


@dataclass
class _Settings:
    """A task's resources as its calls set them, each with its place and library."""

    requests: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    places: dict[str, Place] = field(default_factory=dict)
    library: dict[str, str] = field(default_factory=dict)
    interruptible: bool | None = None
    interruptible_at: Place | None = None
    accelerator: tuple[str, Place] | None = None


def _layer(settings: _Settings, at: Place) -> Layer:
    """Flyte resources as ResourceSettings fields."""
    requests, limits, places = settings.requests, settings.limits, settings.places
    fields: dict[str, Any] = {}
    where: dict[SubPath, Place] = {}
    for flyte_names, convert in ((("cpu",), "cpu_count"), (("mem", "memory"), "memory"), (("gpu",), "gpu"),
                                 (("ephemeral_storage", "disk"), "disk"), (("shm",), "shm")):
        for name in flyte_names:
            source = requests if name in requests else limits if name in limits else None
            if source is None:
                continue
            key = f"{'requests' if source is requests else 'limits'}.{name}"
            value, place, library = _first(source[name]), places[key], settings.library[key]
            if convert == "cpu_count":
                fields["cpu_count"] = _cpu(value, place)
                where[("cpu_count",)] = place
            elif convert == "gpu":
                count, model = _gpu(value, place, library)
                fields["gpu_count"] = count
                where[("gpu_count",)] = place
                if model:
                    fields["gpu_type"] = model
                    where[("gpu_type",)] = place
            elif convert == "shm" and value == "auto":
                fields["shm"] = "auto"
                where[("shm",)] = place
            else:
                fields[convert] = _bytes(value, name, place, library)
                where[(convert,)] = place
    if settings.accelerator is not None and "gpu_type" not in fields:
        fields["gpu_type"], where[("gpu_type",)] = settings.accelerator
    fields["preemptible"] = bool(settings.interruptible)
    where[("preemptible",)] = settings.interruptible_at or at
    return Layer(fields, where, at, zenml=False)


def _read_keywords(reader: LiteralReader, keywords: list[ast.keyword], settings: _Settings, *,
                   replace: bool = False, clamp: bool = False) -> None:
    """Task keywords into ``settings``. ``replace``: a flyte 2 override, whose resources
    replace the task's; ``clamp``: a flytekit node override, whose requests Flyte clamps
    to the task's limits when it gives no limits of its own."""
    source = reader.source
    for keyword in keywords:
        if keyword.arg in ("requests", "limits", "resources"):
            values, library = _resources_of(reader, keyword.value, (keyword.arg,))
            if replace:
                settings.requests.clear()
                settings.limits.clear()
            if clamp and keyword.arg == "requests" and not any(k.arg in ("limits", "resources") for k in keywords):
                for name in values:
                    if name in settings.limits:
                        raise _Bad(reader.places[(keyword.arg, name)], f"with_overrides(requests=...) of {name} "
                                   "without limits=: Flyte clamps the request to the task's limit, so give the "
                                   "limits too")
            for name, value in values.items():
                place = reader.places[(keyword.arg, name)]
                if keyword.arg == "resources" and isinstance(value, list) and len(value) == 2:
                    settings.requests[name], settings.limits[name] = value[0], value[1]
                    keys = [f"requests.{name}", f"limits.{name}"]
                else:
                    kind = "limits" if keyword.arg == "limits" else "requests"
                    (settings.limits if kind == "limits" else settings.requests)[name] = value
                    keys = [f"{kind}.{name}"]
                for key in keys:
                    settings.places[key], settings.library[key] = place, library
        elif keyword.arg == "interruptible":
            node = keyword.value
            value = reader.value(node, ("interruptible",))
            if not isinstance(value, bool):
                raise NotLiteral(node, f"interruptible={describe(node)}: write True or False")
            settings.interruptible, settings.interruptible_at = value, reader.places[("interruptible",)]
        elif keyword.arg == "accelerator":
            name = reader.imports.qualified(keyword.value) or ""
            if not name.startswith(ACCELERATORS):
                raise NotLiteral(keyword.value, f"accelerator={describe(keyword.value)}: poolc reads the "
                                 "constants of flytekit.extras.accelerators (A100, T4, ...) only")
            model, why = flyte_devices.model(name[len(ACCELERATORS):], flyte_devices.FLYTEKIT, "flytekit")
            if model is None:
                raise _Bad(source.place(keyword.value), why or "")
            settings.accelerator = (model, source.place(keyword.value))
        elif keyword.arg is None:
            raise NotLiteral(keyword.value, f"**{describe(keyword.value)}: write the task's arguments out")


@dataclass
class _Task:
    """A task object: its function and the calls that set its resources (module, keywords, how)."""

    function: ast.FunctionDef | ast.AsyncFunctionDef
    module: Module
    at: ast.AST
    calls: list[tuple[Module, list[ast.keyword], str]]

    def more(self, module: Module, keywords: list[ast.keyword], how: str) -> _Task:
        return _Task(self.function, self.module, self.at, [*self.calls, (module, keywords, how)])


class _Tasks:
    """The tasks of a file, and of what it imports from the repository, by module-level name."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._depth = 0

    def module(self, path: str, importer: Module | None = None, at: ast.AST | None = None) -> Module | None:
        """A module of the repository (None for a namespace package); beyond the budget
        of modules, C006 at the import that leads there."""
        found = self.project.package_module(path)
        if isinstance(found, list):
            if found:
                raise Refused(found[0])
            if importer is not None and at is not None:
                raise Refused(importer.source.place(at).diagnostic(
                    d.C006, "the modules this source leads to are more than poolc reads (500 modules, 16 MiB): "
                    "the import stops here"))
            return None
        return found

    def environment(self, module: Module, node: ast.expr, hops: int = 0
                    ) -> list[tuple[Module, list[ast.keyword], str]] | None:
        """The calls that make the TaskEnvironment an expression names (``TaskEnvironment(...)``,
        then each ``clone_with(...)``), through imports of the repository."""
        if not isinstance(node, ast.Name) or hops > 32:     # a circle of clones or imports
            return None
        binding = module.binding(node.id)
        if isinstance(binding, ast.Assign) and isinstance(binding.value, ast.Call) and \
                module.imports.qualified(binding.value.func) in TASK_ENVIRONMENT:
            return [(module, binding.value.keywords, "environment")]
        if isinstance(binding, ast.Assign) and isinstance(binding.value, ast.Call) and \
                isinstance(binding.value.func, ast.Attribute) and binding.value.func.attr == "clone_with":
            base = self.environment(module, binding.value.func.value, hops + 1)
            return [*base, (module, binding.value.keywords, "clone")] if base is not None else None
        if isinstance(binding, ast.ImportFrom):
            alias = next(a for a in binding.names if (a.asname or a.name) == node.id)
            found = self.project.find(module, binding.module, binding.level)
            target = self.module(found.path, module, binding) if found.path else None
            if target is not None:
                return self.environment(target, ast.Name(id=alias.name), hops + 1)
        return None

    def decorated(self, module: Module, node: ast.FunctionDef | ast.AsyncFunctionDef) -> _Task | None:
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            own = decorator.keywords if isinstance(decorator, ast.Call) else []
            name = module.imports.qualified(target)
            if name in DYNAMIC:
                raise Refused(module.source.place(decorator).diagnostic(
                    d.C007, f"@dynamic {node.name}: a dynamic workflow decides at run time which tasks it runs and "
                    "how often; poolc cannot plan them without running the code (use a static @workflow)"))
            if name in TASK:
                return _Task(node, module, node, [(module, own, "task")])
            if isinstance(target, ast.Attribute) and target.attr == "task":
                environment = self.environment(module, target.value)
                if environment is not None:
                    return _Task(node, module, node, [*environment, (module, own, "envtask")])
                if any(q == "flyte" or q.startswith("flyte.") for q in module.imports.names.values()):
                    raise Refused(module.source.place(decorator).diagnostic(
                        d.C007, f"@{describe(target)}: poolc cannot tell which TaskEnvironment "
                        f"{describe(target.value)} is without running the code (bind it at module level to "
                        "flyte.TaskEnvironment(...) or its clone_with(...), here or in a module of the repository)"))
        return None

    def named(self, module: Module, name: str) -> _Task | None:
        """The task a module-level name stands for, or None."""
        binding = module.binding(name)
        self._depth += 1
        try:
            if self._depth > 64 or binding is None:
                return None
            if isinstance(binding, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return self.decorated(module, binding)
            if isinstance(binding, ast.ImportFrom):
                alias = next(a for a in binding.names if (a.asname or a.name) == name)
                found = self.project.find(module, binding.module, binding.level)
                target = self.module(found.path, module, binding) if found.path else None
                return self.named(target, alias.name) if target is not None else None
            if isinstance(binding, ast.Assign) and isinstance(binding.value, ast.Call):
                return self.made(module, binding.value)
            return None
        finally:
            self._depth -= 1

    def made(self, module: Module, call: ast.Call) -> _Task | None:
        """A task a module-level call makes: ``t.override(...)`` (flyte 2), ``task(fn)``,
        ``task(...)(fn)`` or ``env.task(fn)`` of a function of the module."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "override" and isinstance(func.value, ast.Name):
            base = self.named(module, func.value.id)
            if base is not None:
                return base.more(module, call.keywords, "override")
        if len(call.args) == 1 and isinstance(call.args[0], ast.Name):
            function = module.binding(call.args[0].id)
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    self.decorated(module, function) is None:
                # the call is the decorator: task(fn) / env.task(fn) take the call's keywords,
                # task(...)(fn) the inner call's
                decorator = func if isinstance(func, ast.Call) else \
                    ast.copy_location(ast.Call(func=func, args=[], keywords=call.keywords), call)
                made = self.decorated(module, _as_decorated(function, decorator))
                if made is not None:
                    return _Task(function, module, call, made.calls)
        if module.imports.qualified(func) in MAP_TASK:
            raise Refused(module.source.place(call).diagnostic(
                d.C007, f"{describe(call)}: a map task runs as many copies as its inputs have items, decided at "
                "run time; poolc cannot count them"))
        return None


def _as_decorated(function: ast.FunctionDef | ast.AsyncFunctionDef, decorator: ast.expr
                  ) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """``function`` as if ``decorator`` were its only decorator (for ``task(...)(fn)``)."""
    copy = type(function)(name=function.name, args=function.args, body=function.body, decorator_list=[decorator],
                          returns=function.returns, type_comment=None)
    return ast.copy_location(copy, function)


def _check_arguments(module: Module, keywords: list[ast.keyword], how: str) -> None:
    """An argument the call does not take: refused when the call takes no other
    (flyte 2), or when it looks like a misspelt resource argument (flytekit would pass
    it on to its plugins and the resources would be silently missing)."""
    known = ARGUMENTS[how]
    for keyword in keywords:
        if keyword.arg is None or keyword.arg in known:
            continue
        close = difflib.get_close_matches(keyword.arg, TASK_KEYWORDS, n=1, cutoff=0.75)
        if close or how in STRICT:
            raise _Bad(module.source.place(keyword), f"{keyword.arg}= is not an argument of {_CALLS[how]}"
                       f"{did_you_mean(keyword.arg, known, 'arguments')}")


_CALLS = {"task": "flytekit's @task (flytekit refuses it)", "with_overrides": "flytekit's with_overrides",
          "environment": "flyte's TaskEnvironment (flyte refuses it)", "envtask": "flyte's @env.task (flyte "
          "refuses it)", "override": "flyte's override", "clone": "flyte's clone_with (flyte refuses it)"}


def _settings(task: _Task, tasks: _Tasks, extra: list[tuple[Module, list[ast.keyword], str]] | None = None
              ) -> _Settings:
    settings = _Settings()
    for module, keywords, how in [*task.calls, *(extra or [])]:
        _check_arguments(module, keywords, how)
        reader = LiteralReader(module.source, module.imports, CALLS, _names(tasks))
        try:
            _read_keywords(reader, keywords, settings, replace=how in ("override", "clone"),
                           clamp=how == "with_overrides")
        except NotLiteral as exc:
            raise Refused(reader.source.place(exc.node).diagnostic(d.C003, exc.message)) from None
    return settings


def _names(tasks: _Tasks) -> Any:
    def bound(source: PySource, node: ast.Name, hops: int = 0) -> tuple[PySource, ast.expr] | None:
        module = tasks.project.by_source(source)
        if module is None or hops > 32:     # a circle of imports
            return None
        binding = module.binding(node.id)
        if isinstance(binding, ast.Assign) and len(binding.targets) == 1 and isinstance(binding.targets[0], ast.Name):
            return module.source, binding.value
        if isinstance(binding, ast.ImportFrom):
            alias = next(a for a in binding.names if (a.asname or a.name) == node.id)
            found = tasks.project.find(module, binding.module, binding.level)
            target = tasks.module(found.path) if found.path else None
            return bound(target.source, ast.Name(id=alias.name), hops + 1) if target is not None else None
        return None
    return bound


def read(path: str, root: str | None = None) -> Found:
    """Every task of the file (and every task it imports from the repository), as a step."""
    found = Found()
    root = root or repository_root(os.path.dirname(os.path.abspath(path)))
    project = Project(root, path)
    entry = project.module(path)
    if isinstance(entry, list):
        found.diagnostics.extend(entry)
        return found
    try:
        _read(_Tasks(project), entry, found)
    except Refused as exc:
        found.steps.clear()
        found.diagnostics.append(exc.diagnostic)
    except _Bad as exc:
        found.steps.clear()
        found.diagnostics.append(exc.where.diagnostic(d.C005, exc.message))
    if not found.steps and not found.diagnostics:
        found.diagnostics.append(Place(path, (1, 1, 1, 1)).diagnostic(
            d.C004, "no Flyte task in this file (a function decorated with flytekit's @task or a flyte "
            "TaskEnvironment's @env.task)"))
    return found


def _overrides(tasks: _Tasks, entry: Module, names: dict[str, _Task]) -> dict[str, list[tuple[ast.Call | None,
                                                                                                  ast.Call]]]:
    """Each task's call sites in the file's @workflow bodies: (its with_overrides call or None, the call)."""
    sites: dict[str, list[tuple[ast.Call | None, ast.Call]]] = {}
    by_function = {id(task.function): name for name, task in names.items()}
    for node in ast.walk(entry.source.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            is_workflow = any(entry.imports.qualified(x.func if isinstance(x, ast.Call) else x) in WORKFLOW
                              for x in node.decorator_list)
            wrapped = {id(c.func.value) for c in ast.walk(node) if isinstance(c, ast.Call) and
                       isinstance(c.func, ast.Attribute) and c.func.attr == "with_overrides"}
            for inner in ast.walk(node):
                if not isinstance(inner, ast.Call) or id(inner) in wrapped:
                    continue
                func = inner.func
                if isinstance(func, ast.Attribute) and func.attr == "override" and isinstance(func.value, ast.Name) \
                        and func.value.id in names:
                    raise Refused(entry.source.place(inner).diagnostic(
                        d.C007, f"{func.value.id}.override(...) inside {node.name}: an override made when the code "
                        "runs; bind it at module level (big = task.override(...)) so poolc plans it as a task"))
                if not is_workflow:
                    continue
                if isinstance(func, ast.Attribute) and func.attr == "with_overrides" and \
                        isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Name):
                    target = func.value.func.id
                    task = tasks.named(entry, target) if target not in names else names[target]
                    if task is not None and id(task.function) in by_function:
                        sites.setdefault(by_function[id(task.function)], []).append((inner, func.value))
                elif isinstance(func, ast.Name) and func.id in names:
                    sites.setdefault(func.id, []).append((None, inner))
                elif isinstance(func, ast.Name):
                    _outside_task(tasks, entry, func.id, node.name)
    return {name: sorted(calls, key=lambda c: (c[1].lineno, c[1].col_offset)) for name, calls in sites.items()}


_NOT_TASKS = frozenset(sys.stdlib_module_names) | {"flytekit", "flyte", "typing_extensions", "pydantic"}


def _outside_task(tasks: _Tasks, entry: Module, name: str, workflow: str) -> None:
    """A workflow's call of a name imported from outside the repository: poolc cannot
    see whether it is a task (the library would run it as one), so it says so."""
    binding = entry.binding(name)
    if not isinstance(binding, ast.ImportFrom) or binding.level or not binding.module or \
            binding.module.split(".")[0] in _NOT_TASKS:
        return
    if tasks.project.find(entry, binding.module, 0).path is None:
        raise Refused(entry.source.place(binding).diagnostic(
            d.C006, f"{name} (called in workflow {workflow!r}) comes from {binding.module}, outside the "
            "repository: poolc reads only the repository's code and cannot tell whether it is a task"))


def _star_tasks(tasks: _Tasks, entry: Module, statement: ast.ImportFrom) -> dict[str, _Task]:
    """The tasks ``from x import *`` brings: those x exports (its literal ``__all__``, else
    its public names), when x is in the repository; from outside it poolc cannot tell."""
    found = tasks.project.find(entry, statement.module, statement.level)
    if found.path is None:
        if statement.level or (statement.module or "").split(".")[0] not in _NOT_TASKS:
            raise Refused(entry.source.place(statement).diagnostic(
                d.C006, f"from {'.' * statement.level}{statement.module or ''} import *: "
                f"{found.problem or 'outside the repository'}; poolc cannot tell which tasks it brings"))
        return {}
    target = tasks.module(found.path, entry, statement)
    if target is None:
        return {}
    declared = target.binding("__all__")
    exported = [e.value for e in declared.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)] \
        if isinstance(declared, ast.Assign) and isinstance(declared.value, (ast.List, ast.Tuple)) else \
        [n for statement_ in target.source.tree.body for n in _bound_names(statement_) if not n.startswith("_")]
    result = {}
    for name in exported:
        if entry.binding(name) is None:
            task = tasks.named(target, name)
            if task is not None:
                result[name] = task
    return result


def _read(tasks: _Tasks, entry: Module, found: Found) -> None:
    names: dict[str, _Task] = {}
    for statement in entry.source.tree.body:
        if isinstance(statement, (ast.If, ast.Try, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith,
                                  ast.Match)):
            for node in ast.walk(statement):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        tasks.decorated(entry, node) is not None:
                    raise Refused(entry.source.place(node).diagnostic(
                        d.C007, f"task {node.name!r} is defined under a condition, a loop or a with block: whether "
                        "(and how often) it exists is decided when the code runs; define it at module level"))
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            tasks.made(entry, statement.value)     # a map task made and dropped is still refused
        if isinstance(statement, ast.ImportFrom) and any(a.name == "*" for a in statement.names):
            names.update(_star_tasks(tasks, entry, statement))
            continue
        bound = [n for n in _bound_names(statement) if entry.binding(n) is statement]
        for name in bound:
            task = tasks.named(entry, name)
            if task is not None:
                names[name] = task
    for node in ast.walk(entry.source.tree):
        if isinstance(node, ast.Call) and entry.imports.qualified(node.func) in MAP_TASK:
            tasks.made(entry, node)
    sites = _overrides(tasks, entry, names)
    for name, task in names.items():
        extra: list[tuple[Module, list[ast.keyword], str]] = []
        calls = sites.get(name, [])
        overridden = [c for c in calls if c[0] is not None]
        if overridden:
            texts = {ast.dump(c[0]) if c[0] is not None else "" for c in calls}
            if len(texts) > 1:
                differing = next(c for c in calls if (ast.dump(c[0]) if c[0] is not None else "") !=
                                 (ast.dump(calls[0][0]) if calls[0][0] is not None else ""))
                raise Refused(entry.source.place(differing[0] or differing[1]).diagnostic(
                    d.C007, f"task {name!r} runs with different resources at different calls of the workflow: "
                    "poolc plans one step per task; make a task of each variant"))
            override = overridden[0][0]
            assert override is not None
            extra.append((entry, override.keywords, "with_overrides"))
        settings = _settings(task, tasks, extra)
        module = task.module
        step_at = module.source.place(task.function)
        at = Place(step_at.file, (task.function.lineno, step_at.span[1], task.function.lineno,
                                  step_at.span[1] + len("def ") + len(task.function.name)))
        step = FoundStep(name, at)
        decorator = task.function.decorator_list[0] if task.function.decorator_list else task.function
        step.layers.append(_layer(settings, module.source.place(decorator)))
        found.steps[name] = step


def _bound_names(statement: ast.stmt) -> list[str]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [statement.name]
    if isinstance(statement, ast.ImportFrom):
        return [a.asname or a.name for a in statement.names]
    if isinstance(statement, ast.Assign):
        return [t.id for t in statement.targets if isinstance(t, ast.Name)]
    return []
