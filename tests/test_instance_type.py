"""A step's own SageMaker instance_type (a Pipeline step field, or ZenML's
step_operator.sagemaker settings through spec.source): the training job runs it and the
step's demand is the whole instance; an instance the catalog, the component or the
step's GPU model rule out, or a step that is not on SageMaker, is R006 at the value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from poolc.commands.planning import plan_paths
from poolc.commands.validate import validate_paths
from poolc.targets import render_target
from poolc.targets.context import TargetContext

CONTEXT = Path(__file__).resolve().parent / "fixtures" / "context" / "platform.yaml"


def pipeline(tmp_path: Path, step: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text("apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {name: p}\nspec:\n  stack: team-stack\n"
                    f"  steps:\n    train: {{{step}}}\n", encoding="utf-8")
    return path


def test_the_named_instance_is_the_job_and_the_demand(tmp_path: Path):
    path = pipeline(tmp_path, "step_operator: team-sm, instance_type: ml.g5.2xlarge, "
                              "settings: {resources: {cpu_count: 1}}")
    result = plan_paths([str(CONTEXT), str(path)], state_file=str(tmp_path / "state.json"), runtime_check=False)
    assert result.validation.ok, [x.as_text() for x in result.validation.diagnostics]
    request = result.plan.requests[0]
    # ml.g5.2xlarge: 8 vCPUs, 32 GiB, one A10G, whatever the settings ask
    assert dict(request.demand) == {"gpu": 1, "mcpu": 8000, "memory_mb": 34359, "step_run": 1}
    files = render_target("sagemaker", TargetContext.of(result.validation.config, result.plan,
                                                         result.validation.requests))
    assert json.loads(files["sagemaker/p--train.json"])["ResourceConfig"]["InstanceType"] == "ml.g5.2xlarge"


@pytest.mark.parametrize(("step", "message"), [
    ("step_operator: team-sm, instance_type: ml.p4d.24xlarge", "is not one of 'team-sm''s instance_types"),
    ("step_operator: team-sm, instance_type: ml.zz.huge", "is not in poolc's SageMaker catalog"),
    ("instance_type: ml.g5.2xlarge", "is for a SageMaker step operator, and the step runs on 'team-k8s'"),
    ("step_operator: team-sm, instance_type: ml.g5.2xlarge, settings: {resources: {gpu_count: 1, gpu_type: T4}}",
     "has no T4 GPUs"),
])
def test_an_instance_that_cannot_be_used_is_r006_at_the_value(tmp_path: Path, step: str, message: str):
    path = pipeline(tmp_path, step)
    found = [x for x in validate_paths([str(CONTEXT), str(path)]).diagnostics if x.severity == "error"]
    assert [x.rule for x in found] == ["R006"] and message in found[0].message, [x.as_text() for x in found]
    line = path.read_text(encoding="utf-8").splitlines()[found[0].line - 1]
    written = step.split("instance_type: ")[1].split(",")[0]
    assert line[found[0].column - 1:].startswith(written), line     # at the value
