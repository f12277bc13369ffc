"""What flytekit 1.x and flyte 2 ask Kubernetes for, for every task of a file, as JSON.

Run by tests/test_flyte_oracle.py with an interpreter that has flytekit, flyte and
kubernetes installed (tests/oracles/make-env.sh); poolc itself never imports them.
Reads {"files": [path, ...]} on standard input and prints, per file and task, the
container's requests as Flyte serialises them (flytekit:
convert_resources_to_resource_model; flyte 2: get_proto_resources), with Kubernetes' own defaulting of a request to its
limit, parsed by the kubernetes client: cores, bytes, GPUs, the GPU model, and
whether the task is interruptible. With {"projects": [{"project": dir, "module":
"pkg.mod"}]} it imports each corpus project by its module name and adds, for every node
of its flytekit workflows, what the node asks for with its with_overrides. This script
imports the files: they are fixtures.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys


def _number(value):
    from kubernetes.utils import parse_quantity

    return str(parse_quantity(str(value)))


def _flytekit(task):
    from flytekit.core.resources import convert_resources_to_resource_model

    spec = task.resources
    model = convert_resources_to_resource_model(requests=spec.requests, limits=spec.limits)
    names = {1: "cpu", 2: "gpu", 3: "memory", 5: "disk"}
    wanted: dict = {}
    for entries in (model.limits, model.requests):   # Kubernetes: a missing request is its limit
        for entry in entries:
            wanted[names.get(entry.name, str(entry.name))] = entry.value
    device = getattr(task, "accelerator", None)
    return {"cpu": wanted.get("cpu"), "memory": wanted.get("memory"), "gpu": wanted.get("gpu"),
            "disk": wanted.get("disk"), "gpu_model": device.to_flyte_idl().device if device is not None else None,
            "interruptible": bool(task.metadata.interruptible)}


def _flyte2(task):
    from flyte._internal.runtime.resources_serde import get_proto_resources

    names = {1: "cpu", 2: "gpu", 3: "memory", 5: "disk"}
    proto = get_proto_resources(task.resources)
    wanted: dict = {}
    for entries in ((proto.limits, proto.requests) if proto else ()):
        for entry in entries:
            wanted[names.get(entry.name, str(entry.name))] = entry.value
    device = task.resources.get_device() if task.resources else None
    return {"cpu": wanted.get("cpu"), "memory": wanted.get("memory"), "gpu": wanted.get("gpu"),
            "disk": wanted.get("disk"), "gpu_model": device.device if device else None,
            "interruptible": bool(task.interruptible)}


def _numbers(found):
    return {k: (_number(v) if k in ("cpu", "memory", "gpu", "disk") and v is not None else v)
            for k, v in found.items()}


def _tasks(module):
    from flyte._task import TaskTemplate
    from flytekit.core.python_function_task import PythonFunctionTask

    tasks = {}
    for attribute, value in vars(module).items():
        if isinstance(value, PythonFunctionTask):
            tasks[attribute] = _numbers(_flytekit(value))
        elif isinstance(value, TaskTemplate):
            tasks[attribute] = _numbers(_flyte2(value))
    return tasks


def _nodes(module):
    """Every node of the module's flytekit workflows that runs one of its tasks: the
    task's module-level name and what the node asks for, its with_overrides laid over
    the task's resources resource by resource (as Flyte's propeller applies a node's
    overrides to the task's container)."""
    from flytekit.core.python_function_task import PythonFunctionTask
    from flytekit.core.workflow import WorkflowBase

    names = {id(v): k for k, v in vars(module).items() if isinstance(v, PythonFunctionTask)}
    result = []
    for workflow in [v for v in vars(module).values() if isinstance(v, WorkflowBase)]:
        for node in workflow.nodes:
            task = node.flyte_entity
            if id(task) not in names:
                continue
            found = _flytekit(task)
            override = getattr(node, "_resources", None)
            if override is not None:
                keys = {1: "cpu", 2: "gpu", 3: "memory", 5: "disk"}
                for entries in (override.limits, override.requests):
                    for entry in entries:
                        found[keys.get(entry.name, str(entry.name))] = entry.value
            extended = getattr(node, "_extended_resources", None)
            if extended is not None and extended.gpu_accelerator is not None and extended.gpu_accelerator.device:
                found["gpu_model"] = extended.gpu_accelerator.device
            interruptible = getattr(node.metadata, "interruptible", None)
            if interruptible is not None:
                found["interruptible"] = bool(interruptible)
            result.append({"task": names[id(task)], **_numbers(found)})
    return result


def _project(case):
    """A corpus project imported by its dotted module name from its own directory."""
    import importlib
    import os

    saved = list(sys.path)
    sys.path[:0] = [os.path.join(case["project"], p) for p in case.get("sys_path", ["."])]
    corpus = os.path.dirname(os.path.abspath(case["project"]))
    for name, loaded in list(sys.modules.items()):
        try:
            places = [getattr(loaded, "__file__", None) or "", *(getattr(loaded, "__path__", None) or [])]
        except Exception:
            places = [corpus]
        if any(str(p).startswith(corpus) for p in places):
            del sys.modules[name]
    try:
        with contextlib.redirect_stdout(sys.stderr):   # what the project prints is not the answer
            module = importlib.import_module(case["module"])
            return {"accepted": True, "tasks": _tasks(module), "nodes": _nodes(module)}
    except Exception as exc:   # the library (or Kubernetes' quantity parser) refuses the project
        return {"accepted": False, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    finally:
        sys.path[:] = saved


def main() -> None:
    request = json.load(sys.stdin)
    result = {}
    for index, path in enumerate(request.get("files", [])):
        name = f"flyte_oracle_case_{index}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        result[path] = _tasks(module)
    if request.get("projects"):
        result["projects"] = [_project(case) for case in request["projects"]]
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
