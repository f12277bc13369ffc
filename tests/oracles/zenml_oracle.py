"""What the real zenml 0.98.0 makes of ResourceSettings and of pipelines, as JSON.

Run by tests/test_zenml_oracle.py with an interpreter that has zenml[local]==0.98.0
installed (tests/oracles/make-env.sh builds one); poolc itself never imports zenml.
Reads a JSON request on standard input:

    {"settings": [{...ResourceSettings fields...}, ...],
     "pipelines": [{"module": "path/to/file.py", "pipeline": "name", "run_config": "path or null"}]}

and prints, for each settings input, whether zenml accepts it and the demands and
reclaim tolerance it computes (for an isolated step, which is how a step runs in its
own pod), and for each pipeline the same for every compiled step, plus its step operator.
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


def main() -> None:
    request = json.load(sys.stdin)
    result = {"settings": [_settings(fields) for fields in request.get("settings", [])], "pipelines": []}
    if request.get("pipelines"):
        os.environ.setdefault("ZENML_CONFIG_PATH", tempfile.mkdtemp(prefix="zenml-oracle-"))
        from zenml.client import Client

        stack = Client().active_stack
        result["pipelines"] = [_pipeline(case, stack) for case in request["pipelines"]]
    import zenml

    result["zenml"] = zenml.__version__
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
