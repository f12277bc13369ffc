"""Placement the cluster can run (docs/planning.md#eligibility, docs/format.md#gpu-models):
GPU models, node groups and pool steering are part of the plan, in every strategy,
and the runtime check (the Kueue replay) sees node selection.

The platform is a company's ordinary one: an A100 pool (node groups of 8-GPU
nodes) whose policy has the higher priority, an H100 pool that says its model in
node_labels, and a CPU pool; a production and a research team on all three.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from poolc.commands.apply import apply_paths
from poolc.commands.planning import plan_paths
from poolc.commands.validate import validate_paths
from poolc.kueuesim import Workload, simulate
from poolc.targets import kueue
from poolc.targets.context import TargetContext

STRATEGIES = ("optimal", "zenml", "kueue")
A100, H100 = "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"

PLATFORM = f"""\
apiVersion: poolc/v1
kind: ResourcePool
metadata: {{name: a100, labels: {{tier: gpu, model: a100}}}}
spec:
  capacity: {{step_run: 32}}
  nodes:
    - {{name: a100-nodes, count: 2, gpu: 8, cpu: 96, memory: 1024GB, gpu_type: {A100}}}
---
apiVersion: poolc/v1
kind: ResourcePool
metadata: {{name: h100, labels: {{tier: gpu, model: h100}}}}
spec:
  capacity: {{gpu: 8, cpu: 192, memory: 2048GB}}
  node_labels: {{nvidia.com/gpu.product: {H100}}}
---
apiVersion: poolc/v1
kind: ResourcePool
metadata: {{name: cpu, labels: {{tier: cpu}}}}
spec:
  capacity: {{cpu: 64, memory: 256GB, step_run: 8}}
---
apiVersion: poolc/v1
kind: Stack
metadata: {{name: stack}}
spec:
  orchestrator: {{name: prod-k8s, flavor: kubernetes, namespace: prod, image: "registry.example.com/t:1"}}
  step_operators:
    - {{name: research-k8s, flavor: kubernetes, namespace: research, image: "registry.example.com/t:1"}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {{name: prod-a100}}
spec: {{subject: prod-k8s, pool: a100, priority: 100, reserved: {{gpu: 8, step_run: 4}}}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {{name: prod-h100}}
spec: {{subject: prod-k8s, pool: h100, priority: 50, reserved: {{gpu: 4}}}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {{name: prod-cpu}}
spec: {{subject: prod-k8s, pool: cpu, priority: 10}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {{name: research-a100}}
spec: {{subject: research-k8s, pool: a100, priority: 5}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {{name: research-h100}}
spec: {{subject: research-k8s, pool: h100, priority: 5}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {{name: research-cpu}}
spec: {{subject: research-k8s, pool: cpu, priority: 5}}
"""


def pipeline(name: str, steps: dict[str, str], operator: str | None = None) -> str:
    lines = [f"      {step}: {{{f'step_operator: {operator}, ' if operator else ''}settings: {{resources: {res}}}}}"
             for step, res in steps.items()]
    return ("---\napiVersion: poolc/v1\nkind: Pipeline\n"
            f"metadata: {{name: {name}}}\nspec:\n  stack: stack\n  steps:\n" + "\n".join(lines) + "\n")


def allocation(name: str, subject: str, pool: str, gpu: int, preemptible: bool = True) -> str:
    return ("---\napiVersion: poolc/v1\nkind: Allocation\n"
            f"metadata: {{name: {name}}}\nspec: {{subject: {subject}, pool: {pool}, preemptible: "
            f"{str(preemptible).lower()}, holds: {{gpu: {gpu}, step_run: 1}}, "
            "started_at: \"2026-01-01T00:00:00Z\"}\n")


def write(root: Path, *documents: str) -> Path:
    (root / "platform.yaml").write_text(PLATFORM + "".join(documents), encoding="utf-8")
    return root


def planned(root: Path, strategy: str, monkeypatch):
    monkeypatch.chdir(root)
    return plan_paths(["."], strategy=strategy).plan


def placement(plan) -> dict[str, tuple[str, str | None]]:
    return {r.id: (r.status, r.pool) for r in plan.requests}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_h100_steps_run_on_h100_nodes_or_wait(tmp_path, monkeypatch, strategy):
    """H100 steps are never allocated on the A100 pool, although its policy has the
    higher priority and room: five 2-GPU H100 steps fill the 8 H100 GPUs with four,
    and the fifth waits in the H100 pool's queue instead of taking an A100."""
    steps = {f"h{i}": f"{{gpu_count: 2, gpu_type: {H100}}}" for i in range(5)}
    plan = planned(write(tmp_path, pipeline("train", steps)), strategy, monkeypatch)
    got = placement(plan)
    assert [got[f"train/h{i}"] for i in range(4)] == [("allocated", "h100")] * 4
    waiting = next(r for r in plan.requests if r.id == "train/h4")
    assert (waiting.status, waiting.policy) == ("queued", "prod-h100")
    assert plan.runtime is not None and plan.runtime.agrees, plan.runtime


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_non_preemptible_a100_step_waits_instead_of_preempting_on_h100(tmp_path, monkeypatch, strategy):
    """A non-preemptible A100 training step whose pool is full waits: it is not put
    on the H100 pool, and research work there keeps running."""
    plan = planned(write(tmp_path, pipeline("train", {"long": "{gpu_count: 4, gpu_type: A100, preemptible: false}"}),
                         allocation("prod-a100-running", "prod-k8s", "a100", 8, preemptible=False),
                         allocation("research-on-h100", "research-k8s", "h100", 8)), strategy, monkeypatch)
    assert placement(plan)["train/long"] == ("queued", None)
    assert plan.preempted == ()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_cpu_steps_keep_off_gpu_nodes_and_pools_steers(tmp_path, monkeypatch, strategy):
    """A CPU-only step runs on the CPU pool although the A100 policy has the higher
    priority; naming a GPU pool in ``pools`` allows it there; ``pool_selector`` pins a
    GPU step to the H100 pool (a requirement, whatever the priorities say)."""
    plan = planned(write(tmp_path, pipeline("etl", {
        "load": "{cpu_count: 4, memory: 8GB}",
        "named": "{cpu_count: 4, memory: 8GB, pools: [a100]}",
        "pinned": "{gpu_count: 1, pool_selector: {model: h100}}",
        "free": "{gpu_count: 1}",
    })), strategy, monkeypatch)
    got = placement(plan)
    assert got["etl/load"] == ("allocated", "cpu")
    assert got["etl/named"] == ("allocated", "a100")
    assert got["etl/pinned"] == ("allocated", "h100")
    assert got["etl/free"] == ("allocated", "a100")     # no steering: the higher-priority policy
    assert plan.runtime is not None and plan.runtime.agrees, plan.runtime


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_pools_is_an_ordered_preference_among_equal_policies(tmp_path, monkeypatch, strategy):
    """Research has policies of one priority on both GPU pools: without ``pools`` its
    step takes the first by pool name (a100), with ``pools: [h100, a100]`` the H100
    pool; when that is full the preference yields (a preference, not a requirement)."""
    plan = planned(write(tmp_path, pipeline("sweep", {
        "plain": "{gpu_count: 1}",
        "prefers": "{gpu_count: 1, pools: [h100, a100]}",
    }, operator="research-k8s")), strategy, monkeypatch)
    assert placement(plan) == {"sweep/plain": ("allocated", "a100"), "sweep/prefers": ("allocated", "h100")}
    full = planned(write(tmp_path, allocation("h100-busy", "prod-k8s", "h100", 8, preemptible=False),
                         pipeline("sweep", {"prefers": "{gpu_count: 1, pools: [h100, a100]}"},
                                  operator="research-k8s")), strategy, monkeypatch)
    # a Job names one queue (its preferred pool's), so on the cluster itself it waits there
    expected = ("queued", None) if strategy == "kueue" else ("allocated", "a100")
    assert placement(full) == {"sweep/prefers": expected}


def test_validate_rejects_what_no_node_can_run(tmp_path):
    """A model no pool offers is an error that names the models on offer (R010); 16
    GPUs on 8-GPU nodes is an error that says multi-node steps are not supported
    (R011); a pool with GPUs that does not say its model is a warning (T002)."""
    unsaid = ("---\napiVersion: poolc/v1\nkind: ResourcePool\nmetadata: {name: legacy}\n"
              "spec: {capacity: {gpu: 4}}\n---\napiVersion: poolc/v1\nkind: Policy\nmetadata: {name: research-legacy}\n"
              "spec: {subject: research-k8s, pool: legacy}\n")
    write(tmp_path, unsaid, pipeline("train", {"b200": "{gpu_count: 1, gpu_type: B200}",
                                               "huge": "{gpu_count: 16, gpu_type: A100}"}),
          pipeline("sweep", {"any": "{gpu_count: 1, gpu_type: L4}"}, operator="research-k8s"))
    found = {(x.rule, x.severity): x.message for x in validate_paths([str(tmp_path)]).diagnostics}
    assert set(found) == {("R010", "error"), ("R011", "error"), ("T002", "warning")}
    assert f"pool 'a100' offers {A100}, not B200" in found["R010", "error"]
    assert f"pool 'h100' offers {H100}, not B200" in found["R010", "error"]
    assert "pool 'cpu' has no GPUs" in found["R010", "error"]
    assert "holds 16 GPU" in found["R011", "error"] and "multi-node steps are not supported" in found["R011", "error"]
    assert "pool 'legacy' does not say which GPU model" in found["T002", "warning"]


def test_capacity_comes_from_the_node_groups(tmp_path, monkeypatch):
    """The A100 pool writes no gpu, cpu or memory row: its capacity is its nodes' sum."""
    plan = planned(write(tmp_path, pipeline("train", {"one": "{gpu_count: 1, gpu_type: A100}"})), "optimal",
                   monkeypatch)
    pool = next(p for p in plan.pools if p.name == "a100")
    assert {k: v for k, v in pool.capacity.items()} == {
        "gpu": 16, "mcpu": 192000, "memory_mb": 2048000, "step_run": 32}


def test_kueue_never_admits_a_job_whose_selector_contradicts_the_flavor(tmp_path, monkeypatch):
    """The replay honours node selection as Kueue's flavor assigner does: a Job that
    selects H100 nodes, sent to the A100 pool's queue, stays pending with the reason;
    the same Job asking the A100 family is admitted."""
    monkeypatch.chdir(write(tmp_path, pipeline("train", {"one": "{gpu_count: 1, gpu_type: A100}"})))
    result = plan_paths(["."])
    objects = kueue.cluster_objects(TargetContext.of(result.validation.config, result.plan))
    product = "nvidia.com/gpu.product"
    wrong = Workload("wrong", "prod", "prod-a100-burst", 100, {"nvidia.com/gpu": 1, "pods": 1}, 0,
                     node_selector=((product, H100),))
    right = Workload("right", "prod", "prod-a100-burst", 100, {"nvidia.com/gpu": 1, "pods": 1}, 1,
                     affinity=(((product, "In", (A100, "NVIDIA-A100-SXM4-40GB")),),))
    outcomes = simulate(objects, [wrong, right]).outcomes
    assert outcomes["wrong"].status == "pending"
    assert "flavor 'a100' doesn't match node affinity" in outcomes["wrong"].reason
    assert H100 in outcomes["wrong"].reason
    assert outcomes["right"].status == "admitted"


def _yaml_objects(path: Path) -> list[dict]:
    return [doc for doc in YAML(typ="safe").load_all(path.read_text(encoding="utf-8")) if doc]


def test_generated_jobs_never_contradict_their_cluster_queue_flavors(tmp_path, monkeypatch):
    """Read back from the files apply writes: every Job's nodeSelector and required
    node affinity agree with the nodeLabels of the flavors of the ClusterQueue its
    LocalQueue points at (the check is written here again, from Kubernetes' rules)."""
    write(tmp_path, pipeline("train", {
        "a": "{gpu_count: 2, gpu_type: A100}", "b": f"{{gpu_count: 2, gpu_type: {A100}}}",
        "h": "{gpu_count: 2, gpu_type: H100}", "c": "{cpu_count: 2, memory: 4GB}",
        "wait": "{gpu_count: 8, gpu_type: H100}"}),
        pipeline("sweep", {"x": "{gpu_count: 1, gpu_type: A100-80GB}", "y": "{gpu_count: 1}"},
                 operator="research-k8s"))
    monkeypatch.chdir(tmp_path)
    apply_paths(["."], output_dir="out", now="2026-01-01T00:00:00Z")
    out = tmp_path / "out"
    objects = [o for f in sorted((out / "kueue").glob("*.yaml")) for o in _yaml_objects(f)]
    flavors = {o["metadata"]["name"]: o["spec"].get("nodeLabels", {}) for o in objects
               if o["kind"] == "ResourceFlavor"}
    assert flavors["a100"] == {"nvidia.com/gpu.product": A100}
    assert flavors["h100"] == {"nvidia.com/gpu.product": H100}
    queues = {f'{o["metadata"]["namespace"]}/{o["metadata"]["name"]}': o["spec"]["clusterQueue"]
              for o in objects if o["kind"] == "LocalQueue"}
    cq_flavors = {o["metadata"]["name"]: [f["name"] for g in o["spec"]["resourceGroups"] for f in g["flavors"]]
                  for o in objects if o["kind"] == "ClusterQueue"}
    jobs = [o for folder in (out / "kubernetes", out / "held" / "kubernetes")   # held-back Jobs too (gate mode)
            for f in sorted(folder.rglob("*.job.yaml")) for o in _yaml_objects(f)]
    assert len(jobs) == 7
    for job in jobs:
        pod = job["spec"]["template"]["spec"]
        queue = f'{job["metadata"]["namespace"]}/{job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]}'
        for flavor in cq_flavors[queues[queue]]:
            labels = flavors[flavor]
            for key, value in pod.get("nodeSelector", {}).items():
                assert labels.get(key, value) == value, (job["metadata"]["name"], flavor)
            terms = (pod.get("affinity", {}).get("nodeAffinity", {})
                     .get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", []))
            for term in terms:
                for expression in term["matchExpressions"]:
                    assert expression["operator"] == "In"
                    if expression["key"] in labels:
                        assert labels[expression["key"]] in expression["values"], (job["metadata"]["name"], flavor)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_worked_example_of_format_md_gives_the_documented_plan(strategy):
    """docs/format.md#worked-example-two-gpu-models-and-a-cpu-pool quotes this outcome."""
    repo = Path(__file__).resolve().parents[1]
    plan = plan_paths([str(repo / "docs" / "examples" / "gpu-models.yaml")], strategy=strategy,
                      state_file=str(repo / "docs" / "examples" / "no-state.json")).plan
    got = {r.id: (r.status, r.pool or r.policy) for r in plan.requests}
    assert got == {"llm/prepare": ("allocated", "cpu"), "llm/pretrain": ("allocated", "h100"),
                   "llm/finetune": ("queued", "ml-h100"), "llm/evaluate": ("allocated", "a100"),
                   "llm/benchmark": ("queued", "ml-h100"), "llm/export": ("allocated", "a100")}
    assert plan.runtime is not None and plan.runtime.agrees
    assert [x.rule for x in plan.diagnostics] == []


def test_a_running_step_whose_model_changed_is_planned_again(tmp_path, monkeypatch):
    """A step that apply started on the A100 pool and that now asks H100 no longer fits
    its allocation: the plan releases it and places the new request on the H100 pool."""
    write(tmp_path, pipeline("train", {"one": "{gpu_count: 1, gpu_type: A100}"}))
    monkeypatch.chdir(tmp_path)
    apply_paths(["."], output_dir="out", now="2026-01-01T00:00:00Z")
    assert placement(plan_paths(["."]).plan)["train/one"] == ("allocated", "a100")   # still running there
    write(tmp_path, pipeline("train", {"one": f"{{gpu_count: 1, gpu_type: {H100}}}"}))
    plan = plan_paths(["."]).plan
    assert placement(plan)["train/one"] == ("allocated", "h100")


def test_a_plan_that_sends_a_step_to_another_model_is_a_runtime_difference(tmp_path, monkeypatch):
    """The plan the old eligibility made (an H100 step allocated through the A100
    policy) is no longer reported as agreeing: the replay of its Job leaves it
    pending, and the difference says why."""
    import dataclasses

    from poolc.commands.planning import _running_steps
    from poolc.commands.runtime_check import replay, runtime_of

    monkeypatch.chdir(write(tmp_path, pipeline("train", {"h": f"{{gpu_count: 2, gpu_type: {H100}}}"})))
    result = plan_paths(["."])
    assert placement(result.plan)["train/h"] == ("allocated", "h100") and result.plan.runtime.agrees
    wrong = dataclasses.replace(result.plan, requests=tuple(
        dataclasses.replace(r, policy="prod-a100", pool="a100") for r in result.plan.requests))
    config, requests, problem = result.validation.config, result.validation.requests, result.problem
    steps, _ = _running_steps(requests, problem.running, problem, {})
    differences = runtime_of(wrong, replay(config, wrong, requests, problem, steps)).differences
    assert [(x.id, x.plan, x.cluster) for x in differences] == [("train/h", "allocated", "pending")]
    assert "flavor 'a100' doesn't match node affinity" in differences[0].message.text
