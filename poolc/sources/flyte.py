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
import re
from typing import Any

from .. import diagnostics as d
from .found import Found, FoundStep, Layer, Place, SubPath
from .literals import Imports, LiteralReader, NotLiteral, describe
from .pysource import PySource, parse

TASK = ("flytekit.task", "flytekit.core.task.task")
RESOURCES = ("flytekit.Resources", "flytekit.core.resources.Resources", "flyte.Resources", "flyte._resources.Resources")
TASK_ENVIRONMENT = ("flyte.TaskEnvironment", "flyte._task_environment.TaskEnvironment")
GPU = ("flyte.GPU", "flyte._resources.GPU")
ACCELERATORS = "flytekit.extras.accelerators."
_CPU = re.compile(r"^([0-9]+(?:\.[0-9]+)?|\.[0-9]+)(m?)$")
_PLAIN_BYTES = re.compile(r"^[0-9]+$")


def _resources_call(reader: LiteralReader, call: ast.Call, path: SubPath) -> dict[str, Any]:
    return {"__resources__": reader.keywords(call, path)}


def _gpu_call(reader: LiteralReader, call: ast.Call, path: SubPath) -> dict[str, Any]:
    return {"__gpu__": reader.keywords(call, path, positional=("device", "quantity", "partition"))}


CALLS = {**{n: _resources_call for n in RESOURCES}, **{n: _gpu_call for n in GPU}}


def _resources_of(reader: LiteralReader, node: ast.expr, path: SubPath) -> dict[str, Any]:
    value = reader.value(node, path)
    if not (isinstance(value, dict) and "__resources__" in value):
        raise NotLiteral(node, f"{describe(node)} is not Resources(...) with literal arguments")
    return value["__resources__"]


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


def _bytes(value: Any, name: str, where: Place) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value}B"
    if isinstance(value, str):
        return f"{value}B" if _PLAIN_BYTES.match(value) else value
    raise _Bad(where, f"{name}={value!r} is not a quantity such as '4Gi'")


def _gpu(value: Any, where: Place) -> tuple[int, str | None]:
    if isinstance(value, dict) and "__gpu__" in value:
        gpu = value["__gpu__"]
        return gpu.get("quantity", 1), gpu.get("device")
    if isinstance(value, int) and not isinstance(value, bool):
        return value, None
    if isinstance(value, str):
        device, _, count = value.partition(":")
        if device.isdigit() and not count:
            return int(device), None
        if count and not count.isdigit():
            raise _Bad(where, f"gpu={value!r}: the count after ':' must be a whole number")
        return int(count or 1), device
    raise _Bad(where, f"gpu={value!r} is not a count, 'A100:2' or GPU(device=..., quantity=...)")


class _Bad(Exception):
    def __init__(self, where: Place, message: str) -> None:
        super().__init__(message)
        self.where, self.message = where, message


def _layer(requests: dict[str, Any], limits: dict[str, Any], places: dict[str, Place],
           interruptible: bool | None, interruptible_at: Place | None, accelerator: tuple[str, Place] | None,
           at: Place) -> Layer:
    """Flyte resources as ResourceSettings fields; ``places`` maps a Flyte field name to
    where its value was written."""
    fields: dict[str, Any] = {}
    where: dict[SubPath, Place] = {}
    for flyte_names, convert in ((("cpu",), "cpu_count"), (("mem", "memory"), "memory"), (("gpu",), "gpu"),
                                 (("ephemeral_storage", "disk"), "disk"), (("shm",), "shm")):
        for name in flyte_names:
            source = requests if name in requests else limits if name in limits else None
            if source is None:
                continue
            value, place = _first(source[name]), places[f"{'requests' if source is requests else 'limits'}.{name}"]
            if convert == "cpu_count":
                fields["cpu_count"] = _cpu(value, place)
                where[("cpu_count",)] = place
            elif convert == "gpu":
                count, model = _gpu(value, place)
                fields["gpu_count"] = count
                where[("gpu_count",)] = place
                if model:
                    fields["gpu_type"] = model
                    where[("gpu_type",)] = place
            elif convert == "shm" and value == "auto":
                fields["shm"] = "auto"
                where[("shm",)] = place
            else:
                fields[convert] = _bytes(value, name, place)
                where[(convert,)] = place
    if accelerator is not None and "gpu_type" not in fields:
        fields["gpu_type"], where[("gpu_type",)] = accelerator
    fields["preemptible"] = bool(interruptible)
    where[("preemptible",)] = interruptible_at or at
    return Layer(fields, where, at, zenml=False)


def _read_keywords(reader: LiteralReader, keywords: list[ast.keyword], source: PySource
                   ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Place], bool | None, Place | None,
                              tuple[str, Place] | None]:
    """requests, limits, places, interruptible (+ place), accelerator of task keywords."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    places: dict[str, Place] = {}
    interruptible: bool | None = None
    interruptible_at: Place | None = None
    accelerator = None
    for keyword in keywords:
        if keyword.arg in ("requests", "limits", "resources"):
            values = _resources_of(reader, keyword.value, (keyword.arg,))
            for name, value in values.items():
                place = reader.places[(keyword.arg, name)]
                if keyword.arg == "resources" and isinstance(value, list) and len(value) == 2:
                    requests[name], limits[name] = value[0], value[1]
                    places[f"requests.{name}"] = places[f"limits.{name}"] = place
                else:
                    (limits if keyword.arg == "limits" else requests)[name] = value
                    places[f"{'limits' if keyword.arg == 'limits' else 'requests'}.{name}"] = place
        elif keyword.arg == "interruptible":
            node = keyword.value
            if not (isinstance(node, ast.Constant) and isinstance(node.value, bool)):
                raise NotLiteral(node, f"interruptible={describe(node)}: write True or False")
            interruptible, interruptible_at = node.value, source.place(node)
        elif keyword.arg == "accelerator":
            name = reader.imports.qualified(keyword.value) or ""
            if not name.startswith(ACCELERATORS):
                raise NotLiteral(keyword.value, f"accelerator={describe(keyword.value)}: poolc reads the "
                                 "constants of flytekit.extras.accelerators (A100, T4, ...) only")
            accelerator = (name.rsplit(".", 1)[1], source.place(keyword.value))
        elif keyword.arg is None:
            raise NotLiteral(keyword.value, f"**{describe(keyword.value)}: write the task's arguments out")
    return requests, limits, places, interruptible, interruptible_at, accelerator


def read(path: str) -> Found:
    """Every task of the file, as a step."""
    found = Found()
    source, problems = parse(path)
    if source is None:
        found.diagnostics.extend(problems)
        return found
    imports = Imports(source.tree)
    try:
        _read(source, imports, found)
    except NotLiteral as exc:
        found.diagnostics.append(source.place(exc.node).diagnostic(d.C003, exc.message))
    except _Bad as exc:
        found.diagnostics.append(exc.where.diagnostic(d.C005, exc.message))
    if not found.steps and not found.diagnostics:
        found.diagnostics.append(Place(path, (1, 1, 1, 1)).diagnostic(
            d.C004, "no Flyte task in this file (a function decorated with flytekit's @task or a flyte "
            "TaskEnvironment's @env.task)"))
    return found


def _read(source: PySource, imports: Imports, found: Found) -> None:
    environments: dict[str, list[ast.keyword]] = {}
    for node in source.tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and \
                isinstance(node.value, ast.Call) and imports.qualified(node.value.func) in TASK_ENVIRONMENT:
            environments[node.targets[0].id] = node.value.keywords
            continue
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            own = decorator.keywords if isinstance(decorator, ast.Call) else []
            if imports.qualified(target) in TASK:
                keywords = own
            elif isinstance(target, ast.Attribute) and target.attr == "task" and \
                    isinstance(target.value, ast.Name) and target.value.id in environments:
                keywords = [*environments[target.value.id], *own]   # the task's own win
            else:
                continue
            reader = LiteralReader(source, imports, CALLS)
            requests, limits, places, interruptible, at, accelerator = _read_keywords(reader, keywords, source)
            step_at = source.place(node)
            step = FoundStep(node.name, Place(step_at.file, (node.lineno, step_at.span[1], node.lineno,
                                                             step_at.span[1] + len("def ") + len(node.name))))
            step.layers.append(_layer(requests, limits, places, interruptible, at, accelerator,
                                      source.place(decorator)))
            found.steps[node.name] = step
            break
