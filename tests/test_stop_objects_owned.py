"""Issue #42: `Allocation.spec.workload` belongs to the allocation's own subject's
namespace; a stop object is never written for another team's Workload."""

from __future__ import annotations

from pathlib import Path

from support import cli

from poolc.commands.planning import load
from poolc.inputs import problem_from_config
from poolc.model import Allocation

PROD_WORKLOAD = "ml-prod/job-prod-training--train-model-953187-1a2b3"


def _name_prod_s_workload() -> None:
    path = Path("examples/state/running.yaml")
    text = path.read_text(encoding="utf-8")
    marker = "  name: research-sweep-lr-02\n"
    head, tail = text.split(marker, 1)
    spec = tail.index("  preemptible: true\n")
    tail = tail[:spec] + f"  workload: {PROD_WORKLOAD}\n" + tail[spec:]
    path.write_text(head + marker + tail, encoding="utf-8")


def test_an_allocation_naming_another_team_s_workload_is_an_error_at_its_place(platform):
    _name_prod_s_workload()
    result = cli("validate", "examples")
    assert result.exit_code == 1, result.output
    line = next(i for i, x in enumerate(Path("examples/state/running.yaml").read_text().splitlines(), 1)
                if "workload:" in x)
    assert f"examples/state/running.yaml:{line}:" in result.output and "error[A004]" in result.output, result.output
    assert "namespace 'ml-prod'" in result.output and "'ml-research'" in result.output


def test_apply_never_writes_a_stop_object_for_another_team_s_workload(platform):
    _name_prod_s_workload()
    result = cli("apply", "examples", "--output-dir", "deploy", "--strategy", "zenml")
    assert result.exit_code != 0 or not list(Path("deploy").rglob("*.workload.yaml")), result.output
    assert not Path("deploy/kubernetes/ml-prod/stop").exists()


def test_a_state_allocation_naming_another_team_s_workload_is_not_stopped(platform):
    """The state file is read without the checks: the plan drops such a Workload."""
    validation = load(["examples"])
    forged = Allocation.model_validate({
        "apiVersion": "poolc/v1", "kind": "Allocation", "metadata": {"name": "research-extra"},
        "spec": {"subject": "research-k8s", "pool": "datacenter-one", "holds": {"gpu": 1},
                 "workload": PROD_WORKLOAD}})
    own = forged.model_copy(update={"metadata": forged.metadata.model_copy(update={"name": "research-own"}),
                                    "spec": forged.spec.model_copy(update={"workload": "ml-research/mine"})})
    problem = problem_from_config(validation.config, [], [forged, own])
    workloads = {a.name: a.workload for a in problem.running if a.name in ("research-extra", "research-own")}
    assert workloads == {"research-extra": None, "research-own": "ml-research/mine"}
