"""Odd cluster reports: every malformed or contradictory entry is a diagnostic naming
the report file and the entry, a failed import changes nothing, and no report
makes `state import` or `plan --observed` exit 3."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import cli
from test_state_commands import apply, described, jobs, workload

from poolc.cluster.reports import load_report

pytestmark = pytest.mark.usefixtures("platform")


def running_workload() -> dict:
    job = next(j for j in jobs() if j["metadata"]["labels"]["poolc.dev/step"] == "train_model")
    return workload(job, "QuotaReserved", "Admitted")


def running_job() -> dict:
    body = json.loads(Path("deploy/sagemaker/llm-finetune--finetune.json").read_text(encoding="utf-8"))
    return described(body, "InProgress")


def kueue_with(*items: dict) -> str:
    Path("kueue.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}),
                                  encoding="utf-8")
    return "kueue.json"


def sagemaker_with(*items: object) -> str:
    Path("sagemaker.json").write_text(json.dumps(list(items)), encoding="utf-8")
    return "sagemaker.json"


def broken(change) -> dict:
    item = running_workload()
    change(item)
    return item


def set_path(item: dict, path: tuple, value: object) -> None:
    for key in path[:-1]:
        item = item[key]
    item[path[-1]] = value


KUEUE_CASES = {
    "spec null": ((("spec",), None), "(ml-prod/job-prod-training--train-model-"),
    "podSets a number": ((("spec", "podSets"), 5), "spec.podSets"),
    "podSets empty": ((("spec", "podSets"), []), "spec.podSets"),
    "conditions an object": ((("status", "conditions"), {"type": "Admitted", "status": "True"}), "status.conditions"),
    "conditions a string": ((("status", "conditions"), "Admitted"), "status.conditions"),
    "a condition without status": ((("status", "conditions"), [{"type": "Admitted"}]), "status.conditions.0.status"),
    "a year before 1000": ((("status", "conditions", 1, "lastTransitionTime"), "0001-01-01T00:00:00Z"), "1970-9999"),
    "a year before 1970": ((("status", "conditions", 1, "lastTransitionTime"), "1969-12-31T23:59:59Z"), "1970-9999"),
    "a naive timestamp": ((("status", "conditions", 1, "lastTransitionTime"), "2026-11-23T03:05:00"),
                          "has no time zone"),
    "not a timestamp": ((("status", "conditions", 1, "lastTransitionTime"), "yesterday"), "not an RFC 3339"),
    "count negative": ((("spec", "podSets", 0, "count"), -1), "spec.podSets.0.count"),
    "labels not strings": ((("spec", "podSets", 0, "template", "metadata", "labels"), {"poolc.dev/step": 5}),
                           "labels"),
    "metadata null": ((("metadata",), None), "metadata"),
    "status a list": ((("status",), []), "status"),
}


@pytest.mark.parametrize("case", sorted(KUEUE_CASES))
def test_a_malformed_workload_is_an_error_at_its_entry_and_changes_nothing(case):
    apply()
    before = Path("poolc.state.json").read_bytes()
    (path, value), expected = KUEUE_CASES[case]
    good = running_workload()
    result = cli("state", "import", "examples", "--kueue", kueue_with(good, broken(lambda w: set_path(w, path, value))))
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stdout.splitlines() if "error[O001]" in line]
    assert len(errors) == 1, result.stdout
    assert errors[0].startswith("kueue.json:") and "items[1]" in errors[0] and expected in errors[0], errors[0]
    assert "nothing imported" in result.stderr
    assert Path("poolc.state.json").read_bytes() == before


SAGEMAKER_CASES = {
    "TrainingJobStatus null": (("TrainingJobStatus", None), "TrainingJobStatus"),
    "TrainingJobStatus unknown": (("TrainingJobStatus", "Exploded"), "TrainingJobStatus"),
    "Environment a list": (("Environment", ["POOLC_STEP=finetune"]), "Environment"),
    "Environment values not strings": (("Environment", {"POOLC_STEP": 1}), "Environment"),
    "CreationTime missing year": (("CreationTime", "0999-01-01T00:00:00Z"), "1970-9999"),
    "CreationTime naive": (("CreationTime", "2026-11-23T03:05:00"), "has no time zone"),
    "TrainingStartTime epoch out of range": (("TrainingStartTime", -5), "1970-9999"),
    "TrainingStartTime a boolean": (("TrainingStartTime", True), "timestamp"),
}


@pytest.mark.parametrize("case", sorted(SAGEMAKER_CASES))
def test_a_malformed_training_job_is_an_error_at_its_entry_and_changes_nothing(case):
    apply()
    before = Path("poolc.state.json").read_bytes()
    (key, value), expected = SAGEMAKER_CASES[case]
    item = running_job()
    item[key] = value
    result = cli("state", "import", "examples", "--sagemaker", sagemaker_with(item))
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stdout.splitlines() if "error[O001]" in line]
    assert len(errors) == 1 and errors[0].startswith("sagemaker.json:"), result.stdout
    assert "[0] (llm-finetune--finetune)" in errors[0] and expected in errors[0], errors[0]
    assert Path("poolc.state.json").read_bytes() == before


def test_duplicates_are_errors_and_contradictions_warnings_naming_both_entries():
    """An entry listed twice is an error (kubectl never lists one twice); a contradiction
    (a step running twice, reported by the other target, a condition listed twice) is a
    warning that halts nobody's import (#42)."""
    apply()
    before = Path("poolc.state.json").read_bytes()
    good = running_workload()
    result = cli("state", "import", "examples", "--kueue", kueue_with(good, copy.deepcopy(good)))
    assert result.exit_code == 1 and "listed twice (also items[0]" in result.stdout, result.output
    job = running_job()
    result = cli("state", "import", "examples", "--sagemaker", sagemaker_with(job, job))
    assert result.exit_code == 1 and "is listed twice" in result.stdout
    assert Path("poolc.state.json").read_bytes() == before
    twice = copy.deepcopy(good)
    twice["metadata"]["name"] += "-again"
    twice["status"]["conditions"][1]["lastTransitionTime"] = "2026-11-23T03:10:00Z"   # started later
    result = cli("state", "import", "examples", "--kueue", kueue_with(good, twice))
    assert result.exit_code == 0 and "warning[O002]" in result.stdout and "runs twice" in result.stdout, result.output
    assert "items[0] (ml-prod/job-prod-training--train-model-953187-1a2b3) (started first) counts" in result.stdout
    # a Workload labelled as a SageMaker step is no Kubernetes step's
    Path("poolc.state.json").write_bytes(before)
    elsewhere = running_workload()
    for labels in (elsewhere["spec"]["podSets"][0]["template"]["metadata"]["labels"],):
        labels.update({"poolc.dev/pipeline": "llm-finetune", "poolc.dev/step": "finetune"})
    result = cli("state", "import", "examples", "--kueue", kueue_with(elsewhere), "--sagemaker", sagemaker_with(job))
    assert result.exit_code == 0 and "does not run on Kubernetes" in result.stdout, result.output
    Path("poolc.state.json").write_bytes(before)
    condition_twice = running_workload()
    condition_twice["status"]["conditions"].append(dict(condition_twice["status"]["conditions"][1], status="False"))
    result = cli("state", "import", "examples", "--kueue", kueue_with(condition_twice))
    assert result.exit_code == 0 and "condition Admitted is listed twice; ignored" in result.stdout, result.output


def test_report_entries_have_positions():
    apply()
    good = running_workload()
    Path("kueue.json").write_text(json.dumps({"kind": "List", "items": [good, {"kind": "Pod"}]}, indent=2),
                                  encoding="utf-8")
    report = load_report("kueue.json", "kueue")
    (diagnostic,) = report.diagnostics
    text = Path("kueue.json").read_text(encoding="utf-8").splitlines()
    assert text[diagnostic.line - 1][diagnostic.column - 1:].startswith("{")
    assert diagnostic.line > 10 and "items[1] is not a kueue.x-k8s.io Workload" in diagnostic.message


# --- fuzz --------------------------------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False)
                    | st.text(max_size=12) | st.sampled_from(["True", "Admitted", "Finished", "Evicted",
                                                               "0001-01-01T00:00:00Z", "2026-11-23T03:05:00",
                                                               "2026-11-23T03:05:00Z", "InProgress", "Completed"]),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                 max_size=3),
                    max_leaves=8)


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, prefix + (key,))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _paths(inner, prefix + (index,))
    return found


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_state_import_never_exits_3_and_never_changes_the_state_on_failure(data):
    """Mutate one value anywhere in valid reports (or replace a report outright) and import."""
    if not Path("poolc.state.json").exists():
        apply()
    before = Path("poolc.state.json").read_bytes()
    workload_item, job = running_workload(), running_job()
    kind = data.draw(st.sampled_from(["kueue", "sagemaker", "whole"]))
    if kind == "whole":
        Path("kueue.json").write_text(json.dumps(data.draw(JSON)), encoding="utf-8")
        args = ["--kueue", "kueue.json"]
    else:
        target: dict = workload_item if kind == "kueue" else job
        path = data.draw(st.sampled_from(_paths(target)))
        set_path(target, path, data.draw(JSON))
        args = ["--kueue", kueue_with(workload_item)] if kind == "kueue" else ["--sagemaker", sagemaker_with(job)]
    result = cli("state", "import", "examples", *args, "--allow-empty")
    assert result.exit_code in (0, 1), result.output
    assert "internal error" not in result.stderr
    if result.exit_code == 1:
        assert Path("poolc.state.json").read_bytes() == before
        assert "nothing imported" in result.stderr
    else:
        Path("poolc.state.json").write_bytes(before)
    observed = cli("plan", "examples", "--observed", args[1], "--format", "json")
    assert observed.exit_code in (0, 1), observed.output
    assert "internal error" not in observed.stderr
    assert Path("poolc.state.json").read_bytes() == before


def test_an_entry_poolc_cannot_place_is_a_warning_and_the_rest_is_imported():
    apply()
    stranger = running_workload()
    stranger["metadata"]["name"] = "job-gone-pipeline-1"
    stranger["spec"]["podSets"][0]["template"]["metadata"]["labels"]["poolc.dev/pipeline"] = "gone-pipeline"
    job = running_job()
    job["Environment"] = dict(job["Environment"], POOLC_POLICY="no-such-policy")
    state = json.loads(Path("poolc.state.json").read_text(encoding="utf-8"))
    state["allocations"] = [a for a in state["allocations"] if a["metadata"]["name"] != "llm-finetune--finetune"]
    Path("poolc.state.json").write_text(json.dumps(state), encoding="utf-8")
    result = cli("state", "import", "examples", "--kueue", kueue_with(running_workload(), stranger),
                 "--sagemaker", sagemaker_with(job))
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stdout.splitlines() if "warning[O002]" in line]
    assert len(warnings) == 2, result.stdout
    assert any("kueue.json:" in w and "items[1]" in w and "gone-pipeline/train_model is not in the inputs" in w
               for w in warnings)
    assert any("sagemaker.json:" in w and "no-such-policy" in w for w in warnings)
    assert "running: prod-training--train-model" in result.stdout


def test_an_older_job_still_running_beside_the_current_one_is_a_warning():
    """After a change, the old Job can still run for a moment beside the new one (until
    `kubectl apply --prune` deletes it): the one with the current inputs counts."""
    apply()
    current = running_workload()
    old = copy.deepcopy(current)
    old["metadata"]["name"] = "job-prod-training--train-model-0a0a0a-1a2b3"
    old["spec"]["podSets"][0]["template"]["metadata"]["labels"]["poolc.dev/inputs"] = "0" * 16
    old["status"]["conditions"][1]["lastTransitionTime"] = "2026-11-20T00:00:00Z"
    result = cli("state", "import", "examples", "--kueue", kueue_with(old, current), "--allow-empty")
    assert result.exit_code == 0, result.output
    (warning,) = [line for line in result.stdout.splitlines() if "warning[O002]" in line]
    assert "items[0]" in warning and "an older Job of step prod-training/train_model still runs" in warning
    state = json.loads(Path("poolc.state.json").read_text(encoding="utf-8"))
    train = next(a for a in state["allocations"] if a["metadata"]["labels"].get("poolc.dev/step") ==
                 "prod-training.train_model")
    assert train["spec"]["started_at"] == current["status"]["conditions"][1]["lastTransitionTime"]


def test_what_a_foreign_workload_holds():
    """Kueue's own account when it gives one; else the pod sets' requests (limits where a
    request is missing) times their counts; a quantity no Allocation can hold is an error."""
    from test_observe import notebook

    item = notebook("research-k8s-dc1-burst", gpus=1)
    del item["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]
    podset = item["spec"]["podSets"][0]
    podset["count"] = 3
    podset["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m", "memory": "1G"},
                                                                "limits": {"nvidia.com/gpu": "1", "memory": "2G"}}
    report = load_report(kueue_with(item), "kueue")
    (seen,) = report.observations
    assert seen.step is None and seen.queue == "research-k8s-dc1-burst"
    assert seen.holds == {"gpu": 3, "mcpu": 1500, "memory_mb": 3000, "step_run": 3}
    huge = notebook("research-k8s-dc1-burst")
    huge["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]["nvidia.com/gpu"] = "2e12"
    report = load_report(kueue_with(huge), "kueue")
    assert not report.observations and "nvidia.com/gpu '2e12' is too large" in report.diagnostics[0].message
