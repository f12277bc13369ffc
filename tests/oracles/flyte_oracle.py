"""What flytekit 1.x and flyte 2 ask Kubernetes for, for every task of a file, as JSON.

Run by tests/test_flyte_oracle.py with an interpreter that has flytekit, flyte and
kubernetes installed (tests/oracles/make-env.sh); poolc itself never imports them.
Reads {"files": [path, ...]} on standard input and prints, per file and task, the
container's requests as Flyte serialises them (flytekit:
convert_resources_to_resource_model; flyte 2: get_proto_resources), with Kubernetes' own defaulting of a request to its
limit, parsed by the kubernetes client: cores, bytes, GPUs, the GPU model, and
whether the task is interruptible. This script imports the files: they are fixtures.
"""

from __future__ import annotations

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
            "disk": wanted.get("disk"), "gpu_model": getattr(device, "_device", None),
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


def main() -> None:
    from flyte._task import TaskTemplate
    from flytekit.core.python_function_task import PythonFunctionTask

    result = {}
    for index, path in enumerate(json.load(sys.stdin)["files"]):
        name = f"flyte_oracle_case_{index}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        tasks = {}
        for attribute, value in vars(module).items():
            if isinstance(value, PythonFunctionTask):
                found = _flytekit(value)
            elif isinstance(value, TaskTemplate):
                found = _flyte2(value)
            else:
                continue
            tasks[attribute] = {k: (_number(v) if k in ("cpu", "memory", "gpu", "disk") and v is not None else v)
                                for k, v in found.items()}
        result[path] = tasks
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
