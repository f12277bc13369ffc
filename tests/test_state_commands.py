"""`poolc state list | rm | import`: the state follows what really runs.

The cluster reports used here are built from the Jobs and training-job bodies that
`apply examples/` writes, the way Kueue and SageMaker would report them, and are
checked against the Workload CRD (v1beta2, when the oracle CRDs are beside the
repository) and botocore's DescribeTrainingJob output shape before use.
"""

from __future__ import annotations

import json
from pathlib import Path

import botocore.session
import jsonschema
import pytest
import yaml
from botocore.validate import ParamValidator
from support import cli

from poolc.domain.naming import allocation_name

REPO = Path(__file__).resolve().parent.parent
CRDS = REPO.parent / "shared" / "oracles" / "kueue-crds"
APPLIED = "2026-11-23T03:00:00Z"
STARTED = "2026-11-23T03:05:00Z"


def apply():
    result = cli("apply", "examples", "--output-dir", "deploy", "--now", APPLIED)
    assert result.exit_code == 0, result.output
    return json.loads(Path("poolc.state.json").read_text(encoding="utf-8"))


def jobs() -> list[dict]:
    """Every Job apply wrote, held-back ones (gate mode's held/kubernetes/) included."""
    return [yaml.safe_load(p.read_text(encoding="utf-8"))
            for folder in ("deploy/kubernetes", "deploy/held/kubernetes")
            for p in sorted(Path(folder).rglob("*.job.yaml"))]


def workload(job: dict, *conditions: str) -> dict:
    """What Kueue reports for a Job it manages (kubectl get workloads -o json)."""
    labels = job["metadata"]["labels"]
    cq = labels["kueue.x-k8s.io/queue-name"]
    status = {"conditions": [{"type": kind, "status": "True", "reason": kind, "message": f"{kind} by the test",
                              "lastTransitionTime": STARTED} for kind in conditions]}
    if "Admitted" in conditions:
        status["admission"] = {"clusterQueue": cq, "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {"nvidia.com/gpu": labels["poolc.dev/pool"]}}]}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": f"job-{job['metadata']['name']}-1a2b3", "namespace": job["metadata"]["namespace"]},
            "spec": {"queueName": cq, "podSets": [{"name": "main", "count": 1,
                                                   "template": job["spec"]["template"]}]},
            "status": status}


def described(body: dict, status: str) -> dict:
    """What `aws sagemaker describe-training-job` reports for a body poolc wrote."""
    return {"TrainingJobName": body["TrainingJobName"],
            "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{body['TrainingJobName']}",
            "ModelArtifacts": {"S3ModelArtifacts": body["OutputDataConfig"]["S3OutputPath"] + "/model.tar.gz"},
            "TrainingJobStatus": status, "SecondaryStatus": "Training" if status == "InProgress" else status,
            "AlgorithmSpecification": body["AlgorithmSpecification"], "RoleArn": body["RoleArn"],
            "ResourceConfig": body["ResourceConfig"], "StoppingCondition": body["StoppingCondition"],
            "CreationTime": STARTED, "TrainingStartTime": STARTED, "Environment": body["Environment"]}


@pytest.fixture(scope="module")
def workload_schema():
    if not CRDS.is_dir():
        return None
    crd = yaml.safe_load((CRDS / "kueue.x-k8s.io_workloads.yaml").read_text(encoding="utf-8"))
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")
    return jsonschema.Draft7Validator(version["schema"]["openAPIV3Schema"])


def report(items: list[dict], schema) -> str:
    if schema is not None:
        for item in items:
            errors = sorted(schema.iter_errors(item), key=str)
            assert not errors, errors[0].message
    Path("kueue.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), encoding="utf-8")
    return "kueue.json"


def sagemaker_report(items: list[dict]) -> str:
    model = botocore.session.get_session().get_service_model("sagemaker")
    shape = model.operation_model("DescribeTrainingJob").output_shape
    for item in items:
        ParamValidator().validate(item, shape)   # raises on a field botocore would not return
    Path("sagemaker.json").write_text(json.dumps(items), encoding="utf-8")
    return "sagemaker.json"


def test_import_round_trip_changes_nothing(platform, workload_schema):
    """apply, import the cluster's view of the same jobs, plan: no changes, and the
    allocations now carry the cluster's start times."""
    state = apply()
    allocated = {a["metadata"]["labels"]["poolc.dev/step"] for a in state["allocations"]
                 if "poolc.dev/step" in a["metadata"]["labels"]}
    running = [workload(j, "QuotaReserved", "Admitted") for j in jobs()
               if j["metadata"]["labels"]["poolc.dev/pipeline"] + "." + j["metadata"]["labels"]["poolc.dev/step"]
               in allocated]
    bodies = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(Path("deploy/sagemaker").glob("*.json"))]
    result = cli("state", "import", "examples", "--kueue", report(running, workload_schema),
                 "--sagemaker", sagemaker_report([described(b, "InProgress") for b in bodies]))
    assert result.exit_code == 0, result.output
    assert "appeared:" not in result.stdout and "left:" not in result.stdout
    after = json.loads(Path("poolc.state.json").read_text(encoding="utf-8"))
    starts = {a["spec"].get("started_at") for a in after["allocations"] if "poolc.dev/step" in a["metadata"]["labels"]}
    assert starts == {STARTED}
    # each carries the Workload Kueue runs it as: what gate mode stops when a plan preempts it
    expected = {}
    for w in running:
        labels = w["spec"]["podSets"][0]["template"]["metadata"]["labels"]
        step = allocation_name(f"{labels['poolc.dev/pipeline']}/{labels['poolc.dev/step']}")
        expected[step] = f"{w['metadata']['namespace']}/{w['metadata']['name']}"
    workloads = {a["metadata"]["name"]: a["spec"].get("workload") for a in after["allocations"]
                 if a["metadata"]["name"] in expected}
    assert expected and workloads == expected
    plan = cli("plan", "examples", "--detailed-exitcode", "--format", "json")
    assert plan.exit_code == 0, plan.output


def test_finished_and_evicted_jobs_leave_and_running_ones_appear(platform, workload_schema):
    state = apply()
    train = next(j for j in jobs() if j["metadata"]["labels"]["poolc.dev/step"] == "train_model")
    evaluate = next(j for j in jobs() if j["metadata"]["labels"]["poolc.dev/step"] == "evaluate")
    names = {a["metadata"]["name"] for a in state["allocations"]}
    assert "prod-training--evaluate" in names
    result = cli("state", "import", "examples", "--kueue",
                 report([workload(train, "QuotaReserved", "Admitted"),
                         workload(evaluate, "QuotaReserved", "Admitted", "Finished")], workload_schema))
    assert result.exit_code == 0, result.output
    assert "left: prod-training--evaluate" in result.stdout
    after = {a["metadata"]["name"] for a in json.loads(Path("poolc.state.json").read_text())["allocations"]}
    assert "prod-training--evaluate" not in after and "prod-training--train-model-038c490b" in after
    # the other Kubernetes steps apply recorded are not reported running: they left too
    assert "prod-training--load-data-603d670a" not in after
    # SageMaker's were not reported at all (no --sagemaker): they stay
    assert "llm-finetune--finetune" in after


def test_a_step_the_plan_queued_but_the_cluster_runs_appears_through_its_queue(platform, workload_schema):
    """The plan queues research-sweep/export_trt, yet Kueue reports its Job admitted
    (say a team's steps finished in between): the import records it, held through the
    policy of the queue Kueue admitted it from, so the next plan counts its GPUs."""
    state = apply()
    assert not any(a["metadata"]["labels"].get("poolc.dev/step") == "research-sweep.export_trt"
                   for a in state["allocations"])
    export = next(j for j in jobs() if j["metadata"]["labels"]["poolc.dev/step"] == "export_trt")
    result = cli("state", "import", "examples", "--kueue",
                 report([workload(export, "QuotaReserved", "Admitted")], workload_schema))
    assert result.exit_code == 0, result.output
    after = json.loads(Path("poolc.state.json").read_text(encoding="utf-8"))
    held = next(a for a in after["allocations"]
                if a["metadata"]["labels"].get("poolc.dev/step") == "research-sweep.export_trt")
    assert held["spec"]["pool"] == export["metadata"]["labels"]["poolc.dev/pool"]
    assert held["spec"]["started_at"] == STARTED
    assert export["metadata"]["labels"]["poolc.dev/policy"] in held["metadata"]["description"]


def test_a_bad_report_changes_nothing(platform):
    apply()
    before = Path("poolc.state.json").read_bytes()
    Path("kueue.json").write_text(json.dumps({"kind": "List", "items": [{"kind": "Pod"}]}), encoding="utf-8")
    result = cli("state", "import", "examples", "--kueue", "kueue.json")
    assert result.exit_code == 1 and "is not a kueue.x-k8s.io Workload" in result.stdout
    Path("kueue.json").write_text("{ nope", encoding="utf-8")
    result = cli("state", "import", "examples", "--kueue", "kueue.json")
    assert result.exit_code == 1 and "kueue.json:1:3: error[Y002]" in result.stdout
    assert Path("poolc.state.json").read_bytes() == before


def test_state_rm_releases_a_finished_step_until_its_inputs_change(platform):
    apply()
    listed = cli("state", "list", "--format", "json")
    assert "prod-training--evaluate" in {row["name"] for row in json.loads(listed.stdout)}
    assert cli("state", "rm", "prod-training/evaluate").exit_code == 0
    plan = json.loads(cli("plan", "examples", "--format", "json").stdout)
    assert "prod-training/evaluate" in plan["finished"]
    assert "prod-training/evaluate" not in {r["id"] for r in plan["requests"]}
    # its inputs change: requested again
    pipeline = Path("examples/pipelines/prod-training.yaml")
    pipeline.write_text(pipeline.read_text().replace("evaluate:\n", "evaluate:\n      image: eval:2\n", 1))
    plan = json.loads(cli("plan", "examples", "--format", "json").stdout)
    assert "finished" not in plan and "prod-training/evaluate" in {r["id"] for r in plan["requests"]}
    missing = cli("state", "rm", "no-such-allocation")
    assert missing.exit_code == 1 and "no allocation 'no-such-allocation'" in missing.stderr
