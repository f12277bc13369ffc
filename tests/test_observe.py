"""The state follows the cluster: finished work stays finished, evicted work waits
again, foreign work counts, and `plan --observed` plans on the cluster's reports.

Every report here is built from what `apply examples/` writes, the way Kueue and
SageMaker report it, and checked before use against the Workload CRD (v1beta2, when
the oracle CRDs are beside the repository) and botocore's DescribeTrainingJob
output shape (test_state_commands' helpers).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import cli
from test_state_commands import CRDS, STARTED, apply, described, jobs, report, sagemaker_report, workload

ENDED = "2026-11-24T09:00:00Z"
NOTEBOOK = "wl-ml-research--pod-notebook-alice-5f6d7"


@pytest.fixture(scope="module")
def workload_schema():
    """The Workload CRD's v1beta2 schema, when the oracle CRDs are beside the repository."""
    if not CRDS.is_dir():
        return None
    import jsonschema
    import yaml

    crd = yaml.safe_load((CRDS / "kueue.x-k8s.io_workloads.yaml").read_text(encoding="utf-8"))
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")
    return jsonschema.Draft7Validator(version["schema"]["openAPIV3Schema"])


def state() -> dict:
    return json.loads(Path("poolc.state.json").read_text(encoding="utf-8"))


def names() -> set[str]:
    return {a["metadata"]["name"] for a in state()["allocations"]}


def plan_json(*extra: str) -> dict:
    result = cli("plan", "examples", "--format", "json", *extra)
    assert result.exit_code in (0, 2), result.output
    return json.loads(result.stdout)


def body(step: str) -> dict:
    return json.loads(Path(f"deploy/sagemaker/{step}.json").read_text(encoding="utf-8"))


def finished_job(step: str, status: str) -> dict:
    item = described(body(step), status)
    item["TrainingEndTime"] = ENDED
    item["SecondaryStatus"] = {"Completed": "Completed", "Failed": "Failed", "Stopped": "Stopped"}[status]
    if status == "Failed":
        item["FailureReason"] = "AlgorithmError: the test failed it"
    return item


def job_of(step: str) -> dict:
    return next(j for j in jobs() if j["metadata"]["labels"]["poolc.dev/step"] == step)


@pytest.mark.parametrize("status", ["Completed", "Failed", "Stopped"])
def test_a_finished_training_job_is_recorded_finished_until_its_inputs_change(platform, status):
    apply()
    assert "llm-finetune--finetune" in names()
    report_file = sagemaker_report([finished_job("llm-finetune--finetune", status),
                                    described(body("llm-finetune--distill"), "InProgress")])
    result = cli("state", "import", "examples", "--sagemaker", report_file)
    assert result.exit_code == 0, result.output
    assert "finished: llm-finetune/finetune" in result.stdout
    assert "llm-finetune--finetune" not in names() and "llm-finetune--distill" in names()
    assert state()["finished"]["llm-finetune.finetune"]
    plan = plan_json()
    assert "llm-finetune/finetune" in plan["finished"]
    assert "llm-finetune/finetune" not in {r["id"] for r in plan["requests"]}
    # the next apply writes no body for it: a CI loop over sagemaker/*.json cannot rerun it
    assert cli("apply", "examples", "--output-dir", "deploy").exit_code == 0
    assert not Path("deploy/sagemaker/llm-finetune--finetune.json").exists()
    # new inputs (another config file): it is requested again
    pipeline = Path("examples/pipelines/llm-finetune.yaml")
    pipeline.write_text(pipeline.read_text(encoding="utf-8").replace("llama-8b-full.yaml", "llama-8b-v2.yaml"),
                        encoding="utf-8")
    plan = plan_json()
    assert "llm-finetune/finetune" in {r["id"] for r in plan["requests"]}


def test_a_finished_workload_is_finished_and_an_evicted_one_waits_again(platform, workload_schema):
    apply()
    train, evaluate = job_of("train_model"), job_of("evaluate")
    evicted = workload(train, "Evicted")
    evicted["status"]["conditions"] += [
        {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "evicted",
         "lastTransitionTime": STARTED},
        {"type": "Admitted", "status": "False", "reason": "Pending", "message": "evicted",
         "lastTransitionTime": STARTED}]
    done = workload(evaluate, "QuotaReserved", "Admitted", "Finished")
    result = cli("state", "import", "examples", "--kueue", report([evicted, done], workload_schema))
    assert result.exit_code == 0, result.output
    assert "finished: prod-training/evaluate" in result.stdout
    after = state()
    assert "prod-training.evaluate" in after["finished"]
    assert "prod-training.train_model" not in after.get("finished", {})
    # the finished one is recorded with the inputs its Job carried
    assert after["finished"]["prod-training.evaluate"] == evaluate["spec"]["template"]["metadata"]["labels"][
        "poolc.dev/inputs"]
    plan = plan_json()
    ids = {r["id"]: r for r in plan["requests"]}
    assert "prod-training/evaluate" in plan["finished"] and "prod-training/evaluate" not in ids
    assert ids["prod-training/train_model"]["status"] in ("allocated", "queued")   # planned again
    assert "prod-training/train_model" not in plan.get("finished", [])


def notebook(queue: str, gpus: int = 2) -> dict:
    """A Workload poolc did not write (a notebook's pod), admitted through one of its queues."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "pod-notebook-alice-5f6d7", "namespace": "ml-research"},
        "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {
            "metadata": {"labels": {"app": "jupyter"}},
            "spec": {"containers": [{"name": "notebook", "image": "jupyter/scipy-notebook",
                                     "resources": {"requests": {"cpu": "4", "memory": "32Gi",
                                                                "nvidia.com/gpu": str(gpus)}}}]}}}]},
        "status": {
            "conditions": [{"type": kind, "status": "True", "reason": kind, "message": "by the test",
                            "lastTransitionTime": STARTED} for kind in ("QuotaReserved", "Admitted")],
            "admission": {"clusterQueue": queue, "podSetAssignments": [
                {"name": "main", "count": 1, "flavors": {"nvidia.com/gpu": "datacenter-one"},
                 "resourceUsage": {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": str(gpus)}}]}}}


def test_a_foreign_workload_counts_against_its_queues_policy_and_the_plan_lists_it(platform, workload_schema):
    apply()
    before = plan_json()
    pool_before = next(p for p in before["pools"] if p["name"] == "datacenter-one")
    running = [workload(j, "QuotaReserved", "Admitted") for j in jobs()
               if j["metadata"]["name"].startswith(("prod-training--train-model", "prod-training--evaluate"))]
    kueue_file = report([*running, notebook("research-k8s-dc1-burst")], workload_schema)
    result = cli("state", "import", "examples", "--kueue", kueue_file)
    assert result.exit_code == 0, result.output
    assert "appeared: wl-ml-research--pod-notebook-alice-5f6d7" in result.stdout
    assert "S003" not in result.output
    held = next(a for a in state()["allocations"] if a["metadata"]["name"] == NOTEBOOK)
    assert held["spec"] == {"subject": "research-k8s", "pool": "datacenter-one", "preemptible": True,
                            "holds": {"gpu": 2, "mcpu": 4000, "memory_mb": 34360, "step_run": 1},
                            "started_at": STARTED, "workload": "ml-research/pod-notebook-alice-5f6d7"}
    assert held["metadata"]["labels"]["poolc.dev/policy"] == "research-k8s-dc1"
    plan = plan_json()
    assert plan["external"] == [{"name": "wl-ml-research--pod-notebook-alice-5f6d7", "policy": "research-k8s-dc1",
                                 "pool": "datacenter-one",
                                 "holds": {"gpu": 2, "mcpu": 4000, "memory_mb": 34360, "step_run": 1}}]
    pool_after = next(p for p in plan["pools"] if p["name"] == "datacenter-one")
    assert pool_after["used"]["gpu"] >= pool_before["used"]["gpu"] - 16 + 2 or pool_after["free"]["gpu"] <= \
        pool_before["free"]["gpu"]
    text = cli("plan", "examples").stdout
    assert "Running outside poolc" in text and "wl-ml-research--pod-notebook-alice-5f6d7" in text
    markdown = cli("plan", "examples", "--format", "markdown").stdout
    assert "Running outside poolc (1)" in markdown
    # the notebook ends: the next import drops it
    result = cli("state", "import", "examples", "--kueue", report(running, workload_schema))
    assert result.exit_code == 0, result.output
    assert "left: wl-ml-research--pod-notebook-alice-5f6d7" in result.stdout
    assert "wl-ml-research--pod-notebook-alice-5f6d7" not in names()


def test_a_foreign_workload_outside_poolcs_queues_is_not_poolcs_business(platform, workload_schema):
    apply()
    before = Path("poolc.state.json").read_bytes()
    running = [workload(j, "QuotaReserved", "Admitted") for j in jobs()
               if any(a["metadata"]["labels"].get("poolc.dev/step", "").endswith("." + j["metadata"]["labels"][
                   "poolc.dev/step"]) for a in state()["allocations"])]
    result = cli("state", "import", "examples", "--kueue",
                 report([*running, notebook("team-x-queue")], workload_schema))
    assert result.exit_code == 0, result.output
    assert "wl-" not in result.stdout and not result.stderr.strip()
    assert not any(a["metadata"]["name"].startswith("wl-") for a in state()["allocations"])
    assert len(state()["allocations"]) == len(json.loads(before)["allocations"])


def test_plan_observed_plans_on_the_reports_and_writes_nothing(platform, workload_schema):
    apply()
    before = Path("poolc.state.json").read_bytes()
    running = [workload(j, "QuotaReserved", "Admitted") for j in jobs()
               if j["metadata"]["labels"]["poolc.dev/step"] in ("train_model", "load_data")]
    running.append(workload(job_of("evaluate"), "QuotaReserved", "Admitted", "Finished"))
    running.append(notebook("research-k8s-dc1-burst"))
    kueue_file = report(running, workload_schema)
    sagemaker_file = sagemaker_report([finished_job("llm-finetune--finetune", "Completed"),
                                       described(body("llm-finetune--distill"), "InProgress")])
    plan = plan_json("--observed", kueue_file, "--observed", sagemaker_file)
    assert set(plan["finished"]) == {"prod-training/evaluate", "llm-finetune/finetune"}
    assert [x["name"] for x in plan["external"]] == ["wl-ml-research--pod-notebook-alice-5f6d7"]
    assert plan["changes"]["state"] == "update"
    assert Path("poolc.state.json").read_bytes() == before
    assert sorted(p.name for p in Path(".").iterdir() if p.name.startswith("poolc.state")) == ["poolc.state.json"]
    # the same plan as after importing the same reports
    assert cli("state", "import", "examples", "--kueue", kueue_file, "--sagemaker", sagemaker_file).exit_code == 0
    imported = plan_json()
    assert [r for r in imported["requests"]] == [r for r in plan["requests"]]
    assert imported["finished"] == plan["finished"] and imported["external"] == plan["external"]
    # a broken report: no plan, exit 1, nothing written
    Path("broken.json").write_text('{"kind": "List", "items": [{"kind": "Workload", "apiVersion": '
                                   '"kueue.x-k8s.io/v1beta2", "metadata": {"name": "w"}, "spec": null}]}',
                                   encoding="utf-8")
    after_import = Path("poolc.state.json").read_bytes()
    result = cli("plan", "examples", "--observed", "broken.json")
    assert result.exit_code == 1 and result.stdout == ""
    assert "broken.json:1:" in result.stderr and "items[0] (w)" in result.stderr and "spec" in result.stderr
    assert Path("poolc.state.json").read_bytes() == after_import


def test_an_empty_report_is_refused_while_the_state_holds_running_work(platform):
    apply()
    before = Path("poolc.state.json").read_bytes()
    Path("kueue.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": []}), encoding="utf-8")
    result = cli("state", "import", "examples", "--kueue", "kueue.json")
    assert result.exit_code == 1 and "error[O003]" in result.stdout and "--allow-empty" in result.stdout
    assert Path("poolc.state.json").read_bytes() == before
    result = cli("state", "import", "examples", "--kueue", "kueue.json", "--allow-empty")
    assert result.exit_code == 0, result.output
    kinds = {a["metadata"]["labels"]["poolc.dev/step"].split(".")[0] for a in state()["allocations"]
             if "poolc.dev/step" in a["metadata"]["labels"]}
    assert kinds == {"llm-finetune"}   # of the steps' allocations, only the SageMaker ones stay


def test_a_state_with_a_byte_order_mark_is_read(platform):
    apply()
    raw = Path("poolc.state.json").read_bytes()
    Path("poolc.state.json").write_bytes(b"\xef\xbb\xbf" + raw)
    assert cli("state", "list").exit_code == 0
    result = cli("state", "rm", "prod-training/evaluate")
    assert result.exit_code == 0, result.output
    assert "prod-training--evaluate" not in names()
    sagemaker_file = sagemaker_report([described(body("llm-finetune--finetune"), "InProgress"),
                                       described(body("llm-finetune--distill"), "InProgress")])
    Path("poolc.state.json").write_bytes(b"\xef\xbb\xbf" + Path("poolc.state.json").read_bytes())
    result = cli("state", "import", "examples", "--sagemaker", sagemaker_file)
    assert result.exit_code == 0, result.output


def test_a_held_lock_is_a_clean_refusal_naming_the_state_commands(platform):
    from poolc.state.lock import state_lock

    apply()
    before = Path("poolc.state.json").read_bytes()
    sagemaker_file = sagemaker_report([described(body("llm-finetune--finetune"), "InProgress")])
    with state_lock("poolc.state.json"):
        for args in (("state", "rm", "prod-training/evaluate"),
                     ("state", "import", "examples", "--sagemaker", sagemaker_file)):
            result = cli(*args)
            assert result.exit_code == 1, (args, result.output)
            assert "internal error" not in result.stderr
            assert "poolc: nothing changed: the state is locked" in result.stderr
            assert "state rm" in result.stderr and "state import" in result.stderr
    assert Path("poolc.state.json").read_bytes() == before


# --- Allocation documents and the step field --------------------------------------

def allocation_document(name: str, step: str | None, gpu: int = 4) -> str:
    lines = ["apiVersion: poolc/v1", "kind: Allocation", f"metadata: {{name: {name}}}", "spec:",
             "  subject: prod-k8s", "  pool: datacenter-one", "  preemptible: false",
             f"  holds: {{gpu: {gpu}, mcpu: 32000, memory_mb: 274878, step_run: 1}}"]
    if step:
        lines.append(f"  step: {step}")
    return "\n".join(lines) + "\n"


def test_an_allocation_document_runs_a_step_by_its_step_field(platform):
    """The natural name plus `step:` is the step's allocation: not requested again, counted once."""
    Path("examples/running.yaml").write_text(allocation_document("train-model-run", "prod-training/train_model"),
                                             encoding="utf-8")
    plan = plan_json("--state", "none.json")
    train = next(r for r in plan["requests"] if r["id"] == "prod-training/train_model")
    assert train["status"] == "allocated" and train["message"].startswith("already running")
    # without the step field the same document is another holder of 4 GPUs, and the step is requested anew
    Path("examples/running.yaml").write_text(allocation_document("train-model-run", None), encoding="utf-8")
    doubled = plan_json("--state", "none.json")
    train = next(r for r in doubled["requests"] if r["id"] == "prod-training/train_model")
    assert not train["message"].startswith("already running")


def test_a_document_never_silently_wins_over_state_rm_or_import(platform):
    apply()
    assert cli("state", "rm", "prod-training/train_model").exit_code == 0
    Path("examples/running.yaml").write_text(allocation_document("train-model-run", "prod-training/train_model"),
                                             encoding="utf-8")
    result = cli("plan", "examples", "--format", "json")
    plan = json.loads(result.stdout)
    warnings = [x for x in plan["diagnostics"] if x["rule"] == "A003"]
    assert len(warnings) == 1 and "records it finished" in warnings[0]["message"]
    assert warnings[0]["file"].endswith("running.yaml") and warnings[0]["line"] == 9
    assert "prod-training/train_model" in plan["finished"]
    # the document's 4 GPUs are not counted
    Path("examples/running.yaml").unlink()
    without = plan_json()
    assert [p for p in without["pools"]] == [p for p in plan["pools"]]


def test_a_document_that_disagrees_with_the_imported_state_gives_way_with_a_warning(platform, workload_schema):
    apply()
    train = job_of("train_model")
    result = cli("state", "import", "examples", "--kueue",
                 report([workload(train, "QuotaReserved", "Admitted")], workload_schema), "--allow-empty")
    assert result.exit_code == 0, result.output
    Path("examples/running.yaml").write_text(
        allocation_document("train-model-run", "prod-training/train_model", gpu=2), encoding="utf-8")
    plan = plan_json()
    warnings = [x for x in plan["diagnostics"] if x["rule"] == "A003"]
    assert len(warnings) == 1 and "disagree" in warnings[0]["message"] and "the state wins" in warnings[0]["message"]
    pool = next(p for p in plan["pools"] if p["name"] == "datacenter-one")
    Path("examples/running.yaml").unlink()
    assert next(p for p in plan_json()["pools"] if p["name"] == "datacenter-one") == pool


def test_the_step_of_an_allocation_document_must_exist(platform):
    Path("examples/running.yaml").write_text(allocation_document("train-model-run", "prod-training/train_modle"),
                                             encoding="utf-8")
    result = cli("validate", "examples")
    assert result.exit_code == 1
    assert "running.yaml:9:9: error[N002] allocation 'train-model-run' runs step 'prod-training/train_modle', but " \
           "pipeline 'prod-training' has no step 'train_modle'; did you mean 'train_model'?" in result.stdout
    Path("examples/running.yaml").write_text(allocation_document("train-model-run", "no-such/train"),
                                             encoding="utf-8")
    result = cli("validate", "examples")
    assert result.exit_code == 1 and "pipeline 'no-such', which is not defined" in result.stdout


def test_a_training_job_a_plan_preempted_waits_again_and_its_rerun_speaks_last(platform):
    """`poolc cycle` tags a victim `poolc:stopped=preempted` before it stops it: that job is
    pending (the step is planned again), not finished; once its rerun finishes, the
    rerun, the later job, is what the step's state says."""
    apply()
    stopped = finished_job("llm-finetune--finetune", "Stopped")
    stopped["Tags"] = [{"Key": "poolc:stopped", "Value": "preempted"}]
    result = cli("state", "import", "examples", "--sagemaker", sagemaker_report([stopped]), "--allow-empty")
    assert result.exit_code == 0, result.output
    assert "finished: llm-finetune/finetune" not in result.stdout
    assert "llm-finetune.finetune" not in state().get("finished", {})
    assert "llm-finetune/finetune" in {r["id"] for r in plan_json()["requests"]}
    rerun = finished_job("llm-finetune--finetune", "Completed")
    rerun["TrainingJobName"] = "llm-finetune--finetune-c2"
    rerun["CreationTime"] = rerun["TrainingStartTime"] = "2026-11-25T09:00:00Z"
    rerun["TrainingEndTime"] = "2026-11-26T09:00:00Z"
    result = cli("state", "import", "examples", "--sagemaker", sagemaker_report([stopped, rerun]), "--allow-empty")
    assert result.exit_code == 0, result.output
    assert "finished: llm-finetune/finetune" in result.stdout
