"""Issue #42: a cluster report entry counts for a step only from that step's namespace
and queues (SageMaker: the role and policy its body was written with). Anything else
labelled as a step is foreign work, a warning; no single stray entry halts an import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import cli
from test_observe_reports import kueue_with, running_job, running_workload, sagemaker_with
from test_state_commands import apply

pytestmark = pytest.mark.usefixtures("platform")
RESEARCH_QUEUE = "research-k8s-dc1-burst"


def _as_research(item: dict) -> dict:
    """prod's train_model Workload, copied into research's namespace and queue."""
    item["metadata"]["namespace"] = "ml-research"
    item["metadata"]["name"] = "forged-train-model"
    item["spec"]["queueName"] = RESEARCH_QUEUE
    if "admission" in item["status"]:
        item["status"]["admission"]["clusterQueue"] = RESEARCH_QUEUE
    return item


def _state() -> dict:
    return json.loads(Path("poolc.state.json").read_text(encoding="utf-8"))


def test_a_research_workload_labelled_as_prod_s_step_does_not_finish_it():
    apply()
    forged = _as_research(running_workload())
    forged["status"]["conditions"].append({"type": "Finished", "status": "True", "reason": "Succeeded",
                                           "message": "forged", "lastTransitionTime": "2026-11-23T03:06:00Z"})
    real = running_workload()
    result = cli("state", "import", "examples", "--kueue", kueue_with(real, forged), "--allow-empty")
    assert result.exit_code == 0, result.output
    assert "warning[O002]" in result.stdout and "namespace ml-research" in result.stdout, result.stdout
    assert "finished: prod-training/train_model" not in result.stdout
    assert not any("train" in k and "model" in k for k in _state().get("finished", {}))
    assert any(a["metadata"]["name"].startswith("prod-training--train-model") for a in _state()["allocations"])


def test_a_research_workload_labelled_as_prod_s_step_does_not_make_it_run():
    apply()
    forged = _as_research(running_workload())
    result = cli("state", "import", "examples", "--kueue", kueue_with(forged))
    assert result.exit_code == 0, result.output
    assert "labelled as step prod-training/train_model" in result.stdout
    names = [a["metadata"]["name"] for a in _state()["allocations"]]
    assert not any(n.startswith("prod-training--train-model") for n in names), names
    # what it holds is research's: an external allocation of research's queue
    external = [a for a in _state()["allocations"] if a["metadata"]["labels"].get("poolc.dev/external")]
    assert [a["spec"]["subject"] for a in external] == ["research-k8s"], external


def test_a_stray_workload_with_a_partial_label_halts_no_import_or_plan():
    apply()
    stray = _as_research(running_workload())
    labels = stray["spec"]["podSets"][0]["template"]["metadata"]["labels"]
    del labels["poolc.dev/step"]
    report = kueue_with(running_workload(), stray)
    result = cli("state", "import", "examples", "--kueue", report)
    assert result.exit_code == 0, result.output
    assert "warning[O002]" in result.stdout and "not both" in result.stdout
    planned = cli("plan", "examples", "--observed", report)
    assert planned.exit_code in (0, 2) and "not both" in planned.output, planned.output


def test_a_copy_of_a_running_job_s_labels_halts_no_import():
    apply()
    real, copy = running_workload(), running_workload()
    copy["metadata"]["name"] += "-copy"
    copy["status"]["conditions"][1]["lastTransitionTime"] = "2026-11-23T03:10:00Z"
    result = cli("state", "import", "examples", "--kueue", kueue_with(real, copy))
    assert result.exit_code == 0 and "runs twice" in result.stdout, result.output


def test_a_training_job_with_prod_s_environment_under_another_role_is_not_prod_s():
    apply()
    job = running_job()
    job["RoleArn"] = "arn:aws:iam::999999999999:role/Attacker"
    job["TrainingJobStatus"] = "Completed"
    result = cli("state", "import", "examples", "--sagemaker", sagemaker_with(job), "--allow-empty")
    assert result.exit_code == 0, result.output
    assert "runs as role arn:aws:iam::999999999999:role/Attacker" in result.stdout, result.stdout
    assert "finished: llm-finetune/finetune" not in result.stdout


def _foreign(name: str) -> dict:
    item = _as_research(running_workload())
    item["metadata"]["name"] = name
    labels = item["spec"]["podSets"][0]["template"]["metadata"]["labels"]
    for key in [k for k in labels if k.startswith("poolc.dev/") or k == "app.kubernetes.io/managed-by"]:
        del labels[key]
    return item


def test_foreign_workloads_whose_names_differ_only_in_a_rewritten_character_stay_two():
    apply()
    result = cli("state", "import", "examples", "--kueue", kueue_with(running_workload(), _foreign("x.y"),
                                                                      _foreign("x-y")))
    assert result.exit_code == 0, result.output
    external = sorted(a["metadata"]["name"] for a in _state()["allocations"]
                      if a["metadata"]["labels"].get("poolc.dev/external"))
    assert len(external) == 2 and len(set(external)) == 2, external
    assert {a["spec"]["workload"] for a in _state()["allocations"] if a["metadata"]["name"] in external} == \
        {"ml-research/x.y", "ml-research/x-y"}
