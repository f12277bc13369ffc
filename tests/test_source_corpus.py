"""A corpus of projects laid out as ML teams lay them out (packages with relative
imports, steps in their own modules, run configurations, factories, Flyte workflows
with overrides), each under tests/fixtures/sources/corpus/<case>/ with its case.yaml:
the demand of every step, written by hand from the library's semantics, or the place
where poolc must refuse the project.

Each case is copied into a repository of its own (a directory with .git) with a
Pipeline document at its root naming the case's source, and validated with the
corpus platform. tests/test_source_corpus_oracle.py compares the same cases with what
the real zenml / flytekit / flyte compile.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from poolc.commands.validate import validate_paths
from poolc.requests import build_requests

CORPUS = Path(__file__).resolve().parent / "fixtures" / "sources" / "corpus"
PLATFORM = CORPUS / "platform.yaml"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "case.yaml").is_file())


def case_data(name: str) -> dict[str, Any]:
    return YAML(typ="safe").load((CORPUS / name / "case.yaml").read_text(encoding="utf-8"))


def project(name: str, tmp: Path) -> Path:
    """The case as a repository of its own, with its Pipeline document at the root."""
    root = tmp / name
    shutil.copytree(CORPUS / name, root, symlinks=True)
    (root / ".git").mkdir()
    source = case_data(name)["source"]
    written = ", ".join(f"{key}: {value}" for key, value in source.items())
    (root / "poolc.yaml").write_text(f"apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {{name: {name}}}\n"
                                     f"spec:\n  stack: corpus-stack\n  source: {{{written}}}\n", encoding="utf-8")
    return root


def poolc_reading(name: str, tmp: Path) -> tuple[dict[str, dict[str, Any]] | None, list[Any], Path]:
    """Every step's demand, preemptibility and requester as poolc reads the case, or
    None when it refuses it; the diagnostics; the project's root."""
    root = project(name, tmp)
    result = validate_paths([str(PLATFORM), str(root / "poolc.yaml")])
    errors = [x for x in result.diagnostics if x.severity == "error"]
    if errors:
        return None, result.diagnostics, root
    steps = {r.step: {"demand": r.demand, "preemptible": r.preemptible, "requester": r.requester,
                      "gpu_type": r.settings.gpu_type, "instance_type": r.instance_type}
             for r in build_requests(result.config) if r.pipeline == name}
    return steps, result.diagnostics, root


def expected_steps(case: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step: {"demand": dict(sorted({"step_run": 1, **value["demand"]}.items())),
                   "preemptible": value["preemptible"],
                   "requester": value.get("step_operator", "corpus-k8s"),
                   "gpu_type": value.get("gpu_type"), "instance_type": value.get("instance_type")}
            for step, value in case["steps"].items()}


def test_the_corpus_is_large_and_varied():
    libraries = [case_data(name)["library"] for name in CASES]
    assert len(CASES) >= 30
    assert {"zenml", "flytekit", "flyte"} <= set(libraries)
    assert sum("refused" in case_data(name) for name in CASES) >= 10


@pytest.mark.parametrize("name", CASES)
def test_poolc_reads_each_case_as_written_by_hand(name: str, tmp_path: Path):
    case = case_data(name)
    steps, diagnostics, root = poolc_reading(name, tmp_path)
    if "refused" in case:
        where = case["refused"]
        assert steps is None, f"{name}: read {steps}, expected refused at {where}"
        errors = [x for x in diagnostics if x.severity == "error"]
        first = errors[0]
        assert (Path(first.file).resolve() == (root / where["file"]).resolve() and first.line == where["line"]
                and first.rule == where["rule"]), [x.as_text() for x in errors]
        return
    assert steps is not None, [x.as_text() for x in diagnostics]
    assert list(steps) == list(case["steps"])
    assert steps == expected_steps(case)


def test_a_sagemaker_instance_named_in_code_is_the_training_job_and_the_placement(tmp_path: Path):
    """ZenML runs the step operator settings' instance_type: the training job names it
    and the step takes all of its 8 GPUs on the SageMaker pool (issue #38: apply wrote
    the smallest fit, ml.p3.16xlarge, 8 V100, for code that runs ml.p4d.24xlarge)."""
    import json

    from poolc.commands.planning import plan_paths
    from poolc.targets import render_target
    from poolc.targets.context import TargetContext

    root = project("zenml-sagemaker-instance", tmp_path)
    result = plan_paths([str(PLATFORM), str(root / "poolc.yaml")], state_file=str(tmp_path / "state.json"),
                        runtime_check=False)
    assert result.validation.ok, [x.as_text() for x in result.validation.diagnostics]
    train = next(r for r in result.plan.requests if r.id.endswith("/train"))
    assert (train.pool, dict(train.demand)["gpu"]) == ("corpus-sagemaker", 8)
    files = render_target("sagemaker", TargetContext.of(result.validation.config, result.plan,
                                                         result.validation.requests))
    body = json.loads(files["sagemaker/zenml-sagemaker-instance--train.json"])
    assert body["ResourceConfig"]["InstanceType"] == "ml.p4d.24xlarge"


@pytest.mark.parametrize(("written", "message"), [
    ("ml.p4d.48xlarge", "is not in poolc's SageMaker catalog"),
    ("ml.g5.2xlarge", "has no A100 GPUs"),
])
def test_a_sagemaker_instance_named_in_code_is_checked_at_its_line(tmp_path: Path, written: str, message: str):
    root = project("zenml-sagemaker-instance", tmp_path)
    code = root / "pipelines" / "training.py"
    text = code.read_text(encoding="utf-8").replace("ml.p4d.24xlarge", written)
    if written == "ml.g5.2xlarge":
        text = text.replace("gpu_count=8)", 'gpu_count=8, gpu_type="A100")')
    code.write_text(text, encoding="utf-8")
    result = validate_paths([str(PLATFORM), str(root / "poolc.yaml")])
    found = [x for x in result.diagnostics if x.severity == "error"]
    assert len(found) == 1 and found[0].rule == "R006" and message in found[0].message, found
    assert Path(found[0].file).resolve() == code.resolve() and found[0].line == 12
