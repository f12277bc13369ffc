"""What the real zenml 0.98.0 makes of ResourceSettings and of pipelines, as JSON.

Run by tests/test_zenml_oracle.py with an interpreter that has zenml[local]==0.98.0
installed (tests/oracles/make-env.sh builds one); poolc itself never imports zenml.
Reads a JSON request on standard input:

    {"settings": [{...ResourceSettings fields...}, ...],
     "pipelines": [{"module": "path/to/file.py", "pipeline": "name", "run_config": "path or null"}],
     "projects": [{"project": "dir", "module": "pkg.mod", "expression": "training", "sys_path": ["."]}]}

and prints, for each settings input, whether zenml accepts it and the demands and
reclaim tolerance it computes (for an isolated step, which is how a step runs in its
own pod), and for each pipeline the same for every compiled step, plus its step operator;
for each project (a corpus case laid out as a repository) whether zenml accepts it and
the same for every step it compiles.
This script imports the pipeline modules: they are test fixtures, run by ZenML here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile


def _demands(settings):
    from zenml.enums import StepRuntime

    return {
        "demands": [{"resource": x.resource, "kind": x.kind, "quantity": x.quantity, "unit": x.unit,
                     "class_name": x.class_name} for x in settings.merged_resource_demands()],
        "reclaim_tolerance": str(settings.effective_reclaim_tolerance(StepRuntime.ISOLATED).value),
    }


def _settings(fields):
    from pydantic import ValidationError
    from zenml.config import ResourceSettings

    try:
        settings = ResourceSettings.model_validate(fields)
    except (ValidationError, ValueError, TypeError) as exc:
        return {"accepted": False, "error": str(exc).splitlines()[0]}
    return {"accepted": True, **_demands(settings)}


def _pipeline(case, stack):
    from zenml.config.compiler import Compiler
    from zenml.config.pipeline_run_configuration import PipelineRunConfiguration

    name = f"oracle_case_{len(sys.modules)}"
    spec = importlib.util.spec_from_file_location(name, case["module"])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module     # ZenML resolves a step's source through sys.modules
    spec.loader.exec_module(module)
    pipeline = getattr(module, case["pipeline"])
    run_config = PipelineRunConfiguration.from_yaml(case["run_config"]) if case.get("run_config") else \
        PipelineRunConfiguration()
    pipeline.prepare()
    snapshot = Compiler().compile(pipeline=pipeline, stack=stack, run_configuration=run_config)
    return {name: {**_demands(step.config.resource_settings), "step_operator": step.config.step_operator}
            for name, step in snapshot.step_configurations.items()}


def _instance_type(settings):
    """The SageMaker step operator settings' instance_type a compiled step carries."""
    for key, value in settings.items():
        if key.split(":", 1)[0] in ("step_operator", "step_operator.sagemaker"):
            fields = value.model_dump() if hasattr(value, "model_dump") else dict(value)
            if fields.get("instance_type"):
                return fields["instance_type"]
    return None


def _project(case, stack):
    """A corpus project: its directory on sys.path and as the working directory (where
    ZenML opens config_path), the module imported by its dotted name, ``expression``
    evaluated in it (``training`` or ``training.with_options(...)``), compiled with the
    run arguments with_options recorded (config_path, steps), as ``pipeline.run()`` would."""
    import importlib

    from zenml.config.compiler import Compiler

    # the oracle's local stack has none of the corpus's step operators: whether a stack
    # has them is poolc's own check (K002), not part of reading the demand
    Compiler._ensure_required_stack_components_exist = staticmethod(lambda stack, steps: None)
    saved_path, saved_cwd = list(sys.path), os.getcwd()
    sys.path[:0] = [os.path.join(case["project"], p) for p in case.get("sys_path", ["."])]
    os.chdir(case["project"])
    try:
        corpus = os.path.dirname(os.path.abspath(case["project"]))
        for name, loaded in list(sys.modules.items()):   # the last case's steps/, pipelines/ ...
            try:
                places = [getattr(loaded, "__file__", None) or "", *(getattr(loaded, "__path__", None) or [])]
            except Exception:   # a namespace package whose parent was just removed
                places = [corpus]
            if any(str(p).startswith(corpus) for p in places):
                del sys.modules[name]
        try:
            module = importlib.import_module(case["module"])
            pipeline = eval(case["expression"], vars(module))   # a test fixture's own expression
            pipeline.prepare()
            run_args = pipeline._run_args
            snapshot, _, _ = pipeline._compile(config_path=run_args.get("config_path"),
                                               steps=run_args.get("step_configurations"))
        except Exception as exc:   # the library refuses the project: say so, as the test compares that
            return {"accepted": False, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
        return {"accepted": True, "steps": {
            name: {**_demands(step.config.resource_settings), "step_operator": step.config.step_operator,
                   # the compiler drops settings of a component the oracle's stack lacks (it has no
                   # SageMaker step operator): the step's own configuration still holds them
                   "instance_type": _instance_type(step.config.settings) or _instance_type(
                       pipeline.invocations[name].step.configuration.settings)}
            for name, step in snapshot.step_configurations.items()}}
    finally:
        sys.path[:] = saved_path
        os.chdir(saved_cwd)


def main() -> None:
    request = json.load(sys.stdin)
    result = {"settings": [_settings(fields) for fields in request.get("settings", [])], "pipelines": []}
    if request.get("pipelines"):
        os.environ.setdefault("ZENML_CONFIG_PATH", tempfile.mkdtemp(prefix="zenml-oracle-"))
        from zenml.client import Client

        stack = Client().active_stack
        result["pipelines"] = [_pipeline(case, stack) for case in request["pipelines"]]
    if request.get("projects"):
        os.environ.setdefault("ZENML_CONFIG_PATH", tempfile.mkdtemp(prefix="zenml-oracle-"))
        from zenml.client import Client

        stack = Client().active_stack
        result["projects"] = [_project(case, stack) for case in request["projects"]]
    import zenml

    result["zenml"] = zenml.__version__
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
