"""The cluster does what the plan says: the Kueue objects and Jobs `apply` writes,
replayed through Kueue's scheduler (poolc.kueuesim), end where the plan says.

These scenarios submit every Job (`--submit all`), so Kueue itself decides which
wait and which running work it preempts: they check the Kueue mapping. Gate mode,
the default, is replayed on the same scenarios in tests/test_gate_replay.py.

Each scenario is a small platform written out in full, with the text of what a
user would do and what both the plan and the cluster must then show. The replay
reads exactly what apply renders (poolc.commands.runtime_check), not a second model of it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from poolc.commands.planning import _running_steps, plan_paths
from poolc.commands.runtime_check import replay, runtime_of

REPO = Path(__file__).resolve().parent.parent

STACKS = "".join(f"""\
---
apiVersion: poolc/v1
kind: Stack
metadata: {{name: {team}-stack}}
spec:
  orchestrator: {{name: {team}-k8s, flavor: kubernetes, namespace: ml-{team}, image: "train:1"}}
""" for team in ("hi", "mid", "lo", "own", "big", "a", "b", "c"))


def policy(name: str, priority: int, reserved: str = "{}", pool: str = "dc") -> str:
    return f"""\
---
apiVersion: poolc/v1
kind: Policy
metadata: {{name: {name}}}
spec: {{subject: {name}-k8s, pool: {pool}, priority: {priority}, reserved: {reserved}}}
"""


def running(name: str, team: str, gpu: int, started: str, preemptible: bool = True, workload: bool = False) -> str:
    """An Allocation; ``workload``: the state knows its Kueue Workload (as `state import` records it)."""
    known = f"\n  workload: ml-{team}/job-{name}-a1b2c" if workload else ""
    return f"""\
---
apiVersion: poolc/v1
kind: Allocation
metadata: {{name: {name}}}
spec:
  subject: {team}-k8s
  pool: dc
  preemptible: {str(preemptible).lower()}
  holds: {{gpu: {gpu}, step_run: 1}}
  started_at: {started}{known}
"""


def pipeline(team: str, steps: dict[str, str]) -> str:
    body = "".join(f"    {step}: {{settings: {{resources: {settings}}}}}\n" for step, settings in steps.items())
    return f"""\
---
apiVersion: poolc/v1
kind: Pipeline
metadata: {{name: {team}}}
spec:
  stack: {team}-stack
  steps:
{body}"""


def pool(gpu: int) -> str:
    return f"""\
apiVersion: poolc/v1
kind: ResourcePool
metadata: {{name: dc}}
spec: {{capacity: {{gpu: {gpu}}}}}
"""


def write(root: Path, *documents: str) -> Path:
    (root / "platform.yaml").write_text(pool_text(documents) + STACKS, encoding="utf-8")
    return root


def pool_text(documents: tuple[str, ...]) -> str:
    return "".join(documents)


def replayed(root: Path, batch_of=None, submit: str = "all"):
    """(plan, Kueue's outcome, differences) for the platform in ``root``."""
    before = os.getcwd()
    os.chdir(root)
    try:
        result = plan_paths(["."], runtime_check=False, submit=submit)
        config, requests, problem = result.validation.config, result.validation.requests, result.problem
        steps, _ = _running_steps(requests, problem.running, problem, {})
        again = replay(config, result.plan, requests, problem, steps,
                       batch_of({r.id for r in requests}) if batch_of else None, submit=submit)
    finally:
        os.chdir(before)
    return result.plan, again.simulation, runtime_of(result.plan, again).differences


def statuses(plan) -> dict[str, str]:
    return {r.id: r.status for r in plan.requests}


def test_policy_over_its_reserve_displaces_a_lower_priority_borrower(tmp_path):
    """Team hi (priority 100, reserves 2 GPUs) already uses its reserve; team lo
    (priority 10, no reserve) borrows the other 6 GPUs. hi submits a 4-GPU
    preemptible step: the plan admits it past hi's reserve by preempting lo's
    borrower, and Kueue must do the same (a burst queue that may preempt
    lower-priority borrowers while it borrows)."""
    write(tmp_path, pool(8), policy("hi", 100, "{gpu: 2}"), policy("lo", 10),
          running("hi-in-share", "hi", 2, "2026-01-01T00:00:00Z"),
          running("lo-borrower", "lo", 6, "2026-01-01T01:00:00Z"),
          pipeline("hi", {"burst": "{gpu_count: 4}"}))
    plan, simulation, differences = replayed(tmp_path)
    assert statuses(plan)["hi/burst"] == "allocated"
    assert [p.id for p in plan.preempted] == ["lo-borrower"]
    assert simulation.outcomes["hi/burst"].status == "admitted"
    assert simulation.outcomes["lo-borrower"].status == "preempted"
    assert differences == ()


def test_preemptible_step_reclaims_its_own_empty_reserve(tmp_path):
    """Team own (priority 10) reserves 4 of 8 GPUs but runs nothing; team big
    (priority 100) borrows all 8 in two jobs. own submits a preemptible 4-GPU step:
    it fits in own's free reserve, so the plan reclaims it from big's most recently
    started borrower, whatever its priority; Kueue must reclaim it too."""
    write(tmp_path, pool(8), policy("own", 10, "{gpu: 4}"), policy("big", 100),
          running("big-early", "big", 4, "2026-01-01T00:00:00Z"),
          running("big-late", "big", 4, "2026-01-01T02:00:00Z"),
          pipeline("own", {"job": "{gpu_count: 4}"}))
    plan, simulation, differences = replayed(tmp_path)
    assert statuses(plan)["own/job"] == "allocated"
    assert [p.id for p in plan.preempted] == ["big-late"]
    assert simulation.outcomes["big-late"].status == "preempted"
    assert simulation.outcomes["big-early"].status == "admitted"
    assert differences == ()


def test_several_policies_bursting_into_an_empty_pool(tmp_path):
    """Three teams with no reserve submit at once into an empty 16-GPU pool: a
    (priority 100) ten 1-GPU steps, b (50) four, c (10) ten. The plan gives 10/4/2
    by priority; Kueue first hands out one head per queue and cycle, and must end
    at the same split by preempting the lower-priority borrowers."""
    write(tmp_path, pool(16), policy("a", 100), policy("b", 50), policy("c", 10),
          pipeline("a", {f"s{i:02d}": "{gpu_count: 1}" for i in range(10)}),
          pipeline("b", {f"s{i:02d}": "{gpu_count: 1}" for i in range(4)}),
          pipeline("c", {f"s{i:02d}": "{gpu_count: 1}" for i in range(10)}))
    plan, simulation, differences = replayed(tmp_path)
    admitted = {team: sum(1 for r in plan.requests if r.id.startswith(team + "/") and r.status == "allocated")
                for team in "abc"}
    assert admitted == {"a": 10, "b": 4, "c": 2}
    cluster = {team: sum(1 for name, o in simulation.outcomes.items()
                         if name.startswith(team + "/") and o.status == "admitted") for team in "abc"}
    assert cluster == admitted
    assert differences == ()


def test_non_preemptible_step_does_not_evict_its_own_reserve_or_a_higher_priority_borrower(tmp_path):
    """Team mid (priority 50) reserves 4 of 8 GPUs and fills the reserve with a
    preemptible job; team hi (priority 100) borrows the other 4. mid submits a
    non-preemptible 2-GPU step: its reserve is taken by its own (in-share, so not
    preemptible) job and hi outranks it, so the plan queues it; Kueue must not
    reclaim for it either (neither mid's own job nor hi's borrower)."""
    write(tmp_path, pool(8), policy("mid", 50, "{gpu: 4}"), policy("hi", 100),
          running("mid-preemptible", "mid", 4, "2026-01-01T00:00:00Z"),
          running("hi-borrower", "hi", 4, "2026-01-01T01:00:00Z"),
          pipeline("mid", {"fixed": "{gpu_count: 2, preemptible: false}"}))
    plan, simulation, differences = replayed(tmp_path)
    assert statuses(plan)["mid/fixed"] == "queued" and plan.preempted == ()
    assert simulation.outcomes["mid/fixed"].status == "pending"
    assert {simulation.outcomes[n].status for n in ("mid-preemptible", "hi-borrower")} == {"admitted"}
    assert differences == ()


def test_non_preemptible_step_displaces_a_lower_priority_borrower(tmp_path):
    """As above, but the other 4 GPUs are borrowed by team lo (priority 10): the
    plan admits mid's non-preemptible step by preempting lo's borrower (never
    mid's own job), and Kueue does the same."""
    write(tmp_path, pool(8), policy("mid", 50, "{gpu: 4}"), policy("lo", 10),
          running("mid-preemptible", "mid", 4, "2026-01-01T00:00:00Z"),
          running("lo-borrower", "lo", 4, "2026-01-01T01:00:00Z"),
          pipeline("mid", {"fixed": "{gpu_count: 2, preemptible: false}"}))
    plan, simulation, differences = replayed(tmp_path)
    assert statuses(plan)["mid/fixed"] == "allocated"
    assert [p.id for p in plan.preempted] == ["lo-borrower"]
    assert simulation.outcomes["mid-preemptible"].status == "admitted"
    assert simulation.outcomes["lo-borrower"].status == "preempted"
    assert differences == ()


def _teams(first: str):
    def batch_of(ids: set[str]) -> dict[str, int]:
        return {rid: 0 if rid.startswith(first) else 1 for rid in ids}
    return batch_of


@pytest.mark.parametrize("order", [None, "prod", "research"], ids=["all-at-once", "prod-first", "research-first"])
def test_the_examples_in_any_order(tmp_path, order):
    """The example platform, its Jobs created all at once, or prod's pipelines
    first and research's after (and the other way round): Kueue ends where the
    plan says, on every Kubernetes request and every running allocation."""
    import shutil

    shutil.copytree(REPO / "examples", tmp_path / "examples")
    batch_of = None
    if order == "prod":
        batch_of = _teams("prod-training")
    elif order == "research":
        batch_of = _teams("research-sweep")
    plan, simulation, differences = replayed(tmp_path / "examples", batch_of)
    assert [d.as_dict() for d in differences] == []
    for request in plan.requests:
        outcome = simulation.outcomes.get(request.id)
        if outcome is not None:
            assert (outcome.status == "admitted") == (request.status == "allocated"), request.id


def test_runtime_section_in_the_plan_json(tmp_path):
    """Every plan carries the runtime check: engine, agreement and differences."""
    from poolc.domain.plan import to_json

    plan = plan_paths([str(REPO / "examples")]).plan
    runtime = json.loads(to_json(plan))["runtime"]
    assert runtime == {"engine": "kueue", "submit": "gate", "agrees": True, "differences": []}


def test_kueue_strategy_agrees_with_optimal_on_the_examples():
    """`poolc plan --strategy kueue` and `--strategy optimal` allocate the same
    Kubernetes requests on the examples."""
    optimal = plan_paths([str(REPO / "examples")]).plan
    kueue = plan_paths([str(REPO / "examples")], strategy="kueue").plan
    assert kueue.solver.strategy == "kueue" and kueue.solver.status == "SIMULATED"
    assert statuses(kueue) == statuses(optimal)
    assert [p.id for p in kueue.preempted] == [p.id for p in optimal.preempted]
    assert kueue.runtime is not None and kueue.runtime.agrees


def test_a_disagreement_is_a_warning_on_the_step(tmp_path, monkeypatch):
    """Where Kueue cannot follow the plan, the plan says so: a runtime difference
    and a T001 warning at the step, in words."""
    # A non-preemptible step inside its free reserve while a higher-priority team
    # borrows the pool: the plan reclaims the reserve for it (reserved shares come
    # first), but a guaranteed queue only reclaims from lower priorities.
    write(tmp_path, pool(8), policy("mid", 50, "{gpu: 4}"), policy("hi", 100),
          running("hi-borrower", "hi", 8, "2026-01-01T01:00:00Z"),
          pipeline("mid", {"fixed": "{gpu_count: 2, preemptible: false}"}))
    monkeypatch.chdir(tmp_path)
    plan = plan_paths(["."]).plan
    assert statuses(plan)["mid/fixed"] == "allocated" and [p.id for p in plan.preempted] == ["hi-borrower"]
    assert plan.runtime is not None and not plan.runtime.agrees
    assert [(x.id, x.plan, x.cluster) for x in plan.runtime.differences] == [
        ("hi-borrower", "preempted", "running"), ("mid/fixed", "allocated", "pending")]
    warnings = {x.message.split(":")[0]: x for x in plan.diagnostics if x.rule == "T001"}
    assert set(warnings) == {"step 'fixed'", "allocation 'hi-borrower'"}
    step = warnings["step 'fixed'"]
    assert "Kueue will leave it pending" in step.message and step.severity == "warning"
    lines = (tmp_path / "platform.yaml").read_text(encoding="utf-8").splitlines()
    assert (step.file, step.line) == ("platform.yaml", next(i for i, line in enumerate(lines, 1)
                                                            if line.startswith("    fixed:")))
