"""The Plan: assembly, explanations, exact JSON, determinism and the text rendering."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from poolc.commands.planning import plan_paths
from poolc.commands.validate import validate_paths
from poolc.domain.eligibility import eligible_policies
from poolc.domain.plan import AllocationChanges, to_json
from poolc.domain.problem import PolicyRule, Pool, Problem, Request, Running
from poolc.planner.assemble import inputs_digest
from poolc.planner.explain import FinalState, binding_rule, preempted_message, queued_message, queued_reasons
from poolc.planner.solution import Solution
from poolc.report.plan_text import render_plan

REPO = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent

# A small platform: one pool of 8 GPUs, prod (reserves 4, limit 6) and research
# (reserves nothing), a running research sweep that borrows 4 GPUs, and an
# unmanaged stack. Line numbers below are asserted, so keep the layout.
FILES = {
    "pools.yaml": """\
apiVersion: poolc/v1
kind: ResourcePool
metadata: {name: dc}
spec:
  capacity: {gpu: 8, step_run: 10}
""",
    "policies.yaml": """\
apiVersion: poolc/v1
kind: Policy
metadata: {name: prod}
spec:
  subject: prod-k8s
  pool: dc
  priority: 100
  reserved: {gpu: 4, step_run: 4}
  limit: {gpu: 6}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: research}
spec: {subject: research-k8s, pool: dc, priority: 10}
""",
    "stacks.yaml": """\
apiVersion: poolc/v1
kind: Stack
metadata: {name: prod-stack}
spec:
  orchestrator: {name: prod-k8s, flavor: kubernetes, namespace: prod, image: "train:1"}
---
apiVersion: poolc/v1
kind: Stack
metadata: {name: research-stack}
spec:
  orchestrator: {name: research-k8s, flavor: kubernetes, namespace: research, image: "train:1"}
---
apiVersion: poolc/v1
kind: Stack
metadata: {name: adhoc-stack}
spec:
  orchestrator: {name: adhoc-k8s, flavor: kubernetes, image: "train:1"}
""",
    "running.yaml": """\
apiVersion: poolc/v1
kind: Allocation
metadata: {name: sweep-old}
spec:
  subject: research-k8s
  pool: dc
  holds: {gpu: 4, step_run: 1}
  started_at: 2026-01-01T00:00:00Z
""",
    "pipelines/adhoc.yaml": """\
apiVersion: poolc/v1
kind: Pipeline
metadata: {name: adhoc}
spec:
  stack: adhoc-stack
  steps:
    notebook: {settings: {resources: {cpu_count: 1}}}
""",
    "pipelines/research.yaml": """\
apiVersion: poolc/v1
kind: Pipeline
metadata: {name: research}
spec:
  stack: research-stack
  steps:
    probe: {settings: {resources: {gpu_count: 2}}}
""",
    "pipelines/train.yaml": """\
apiVersion: poolc/v1
kind: Pipeline
metadata: {name: train}
spec:
  stack: prod-stack
  steps:
    train: {settings: {resources: {gpu_count: 4, preemptible: false}}}
    eval: {settings: {resources: {gpu_count: 1}}}
    huge: {settings: {resources: {gpu_count: 16}}}
    fixed: {settings: {resources: {gpu_count: 6, preemptible: false}}}
""",
}


def write_platform(root: Path, files: dict[str, str] = FILES) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def decided(problem: Problem) -> Solution:
    """A fixed strategy for FILES: prod's two steps and the probe are admitted, the
    borrowing sweep is preempted for the prod steps."""
    assert [r.id for r in problem.requests] == ["adhoc/notebook", "research/probe", "train/train",
                                               "train/eval", "train/huge", "train/fixed"]
    return Solution("optimal", {"research/probe": "research", "train/eval": "prod", "train/train": "prod"},
                    {"sweep-old": ["train/eval", "train/train"]}, "OPTIMAL", [1, 2, 1, 1, 15, 0, 0], 0.0)


def greedy(problem: Problem) -> Solution:
    """A tiny stand-in strategy: arrival order, first eligible policy with room for
    capacity and limit, never preempts."""
    used: dict[tuple[str, str], int] = {}
    held: dict[tuple[str, str], int] = {}
    for alloc in problem.running:
        for key, units in alloc.holds.items():
            used[alloc.pool, key] = used.get((alloc.pool, key), 0) + units
            held[alloc.subject + "@" + alloc.pool, key] = held.get((alloc.subject + "@" + alloc.pool, key), 0) + units
    admitted = {}
    for request in sorted(problem.requests, key=lambda r: r.rank):
        for q in eligible_policies(problem, request)[0]:
            pool = problem.pool(q.pool)
            who = q.subject + "@" + q.pool
            need = {k: v for k, v in request.demand.items() if k in pool.capacity}
            if all(used.get((pool.name, k), 0) + v <= pool.capacity[k]
                   and held.get((who, k), 0) + v <= q.limit[k] for k, v in need.items()):
                for k, v in need.items():
                    used[pool.name, k] = used.get((pool.name, k), 0) + v
                    held[who, k] = held.get((who, k), 0) + v
                admitted[request.id] = q.name
                break
    return Solution("greedy", dict(sorted(admitted.items())), {}, "OPTIMAL", [len(admitted)], 0.0)


def diagnostic_json(root: Path) -> list[dict]:
    """The validation diagnostics as the plan lists them (wording belongs to the checks)."""
    return [{"file": x.file, "line": x.line, "column": x.column, "rule": x.rule, "severity": x.severity,
             "message": x.message} for x in validate_paths(["."]).diagnostics]


def request(id, requester, demand, status, pool=None, policy=None, borrowed=None, reason=None, message="",
            preemptible=True):
    return {"id": id, "requester": requester, "preemptible": preemptible, "demand": demand, "status": status,
            "pool": pool, "policy": policy, "borrowed": borrowed or {}, "reason": reason, "message": message,
            "team": requester}     # no pipeline here has labels.team: the team is the component


def test_plan_json_is_exact(tmp_path, monkeypatch):
    monkeypatch.chdir(write_platform(tmp_path))
    result = plan_paths(["."], strategy=decided)
    diagnostics = diagnostic_json(tmp_path)
    assert [(x["file"], x["line"], x["column"], x["rule"], x["severity"]) for x in diagnostics] == [
        ("pipelines/adhoc.yaml", 7, 5, "R005", "warning"),
        ("pipelines/train.yaml", 9, 46, "R003", "error"),
        ("pipelines/train.yaml", 10, 47, "R004", "error"),
    ]
    expected = {
        "format_version": 1,
        "inputs_digest": result.plan.inputs_digest,
        "requests": [
            request("adhoc/notebook", "adhoc-k8s", {"mcpu": 1000, "step_run": 1}, "allocated", reason="UNMANAGED",
                    message="unmanaged: component adhoc-k8s has no policy on any pool, so the step runs "
                            "outside every pool; add a Policy for it to manage it"),
            request("research/probe", "research-k8s", {"gpu": 2, "step_run": 1}, "allocated", "dc", "research",
                    {"gpu": 2, "step_run": 1},
                    message="allocated, borrowing gpu=2, step_run=1 above the reserved share"),
            request("train/eval", "prod-k8s", {"gpu": 1, "step_run": 1}, "allocated", "dc", "prod", {"gpu": 1},
                    message="allocated, borrowing gpu=1 above the reserved share"),
            request("train/fixed", "prod-k8s", {"gpu": 6, "step_run": 1}, "rejected", reason="R004",
                    preemptible=False,
                    message="step 'fixed' is non-preemptible and asks gpu=6, but policy 'prod' reserves only gpu=4; it "
                            "can never be admitted: reserve more (gpu=6 in policy 'prod'), or make the step "
                            "preemptible"),
            request("train/huge", "prod-k8s", {"gpu": 16, "step_run": 1}, "rejected", reason="R003",
                    message="step 'huge' is eligible on no pool: pool 'dc' has gpu=8 in all (needs 16); it can never "
                            "be admitted: ask for less, or raise the capacity or limit"),
            request("train/train", "prod-k8s", {"gpu": 4, "step_run": 1}, "allocated", "dc", "prod",
                    preemptible=False, message="allocated within reserved share"),
        ],
        "preempted": [{"id": "sweep-old", "pool": "dc", "for": ["train/eval", "train/train"],
                       "message": "preempted for train/eval, train/train (priority 100) on gpu; it borrowed "
                                  "gpu=4 above policy research's reserved share", "subject": "research-k8s"}],
        "pools": [{"name": "dc", "capacity": {"gpu": 8, "step_run": 10}, "used": {"gpu": 7, "step_run": 3},
                   "free": {"gpu": 1, "step_run": 7}}],
        "policies": [
            {"name": "prod", "pool": "dc", "priority": 100, "reserved": {"gpu": 4, "step_run": 4},
             "limit": {"gpu": 6, "step_run": 10}, "used": {"gpu": 5, "step_run": 2},
             "borrowed": {"gpu": 1, "step_run": 0}},
            {"name": "research", "pool": "dc", "priority": 10, "reserved": {"gpu": 0, "step_run": 0},
             "limit": {"gpu": 8, "step_run": 10}, "used": {"gpu": 2, "step_run": 1},
             "borrowed": {"gpu": 2, "step_run": 1}},
        ],
        "diagnostics": diagnostics,
        "solver": {"strategy": "optimal", "status": "OPTIMAL", "objective": [1, 2, 1, 1, 15, 0, 0], "gap": 0.0,
                   "tiers": [{"kind": "in-share", "priority": None}, {"kind": "admitted", "priority": 100},
                             {"kind": "preempted", "priority": 10}, {"kind": "admitted", "priority": 10},
                             {"kind": "arrival", "priority": None}, {"kind": "start-rank", "priority": None},
                             {"kind": "preference", "priority": None}]},
        "changes": {"allocations": {"added": ["research--probe", "train--eval", "train--train"],
                                    "removed": ["sweep-old"], "resized": [], "unchanged": []},
                    "files": [{"path": path, "action": "create"} for path in sorted(result.files)],
                    "state": "create"},
        "inputs": {"Allocation/sweep-old": result.plan.inputs["Allocation/sweep-old"],
                   **{key: value for key, value in result.plan.inputs.items() if key != "Allocation/sweep-old"}},
        # Kueue, replaying what apply writes for this plan, does the same
        "runtime": {"engine": "kueue", "submit": "gate", "agrees": True, "differences": []},
    }
    text = to_json(result.plan)
    assert json.loads(text) == expected
    assert text == json.dumps(expected, indent=2, sort_keys=True) + "\n"
    assert result.plan.inputs_digest.startswith("sha256:") and len(result.plan.inputs_digest) == 71
    assert result.changes.allocations == AllocationChanges(added=("research--probe", "train--eval", "train--train"),
                                                           removed=("sweep-old",))
    assert result.changed and not result.ok


def test_same_inputs_give_the_same_bytes(tmp_path, monkeypatch):
    monkeypatch.chdir(write_platform(tmp_path))
    first = to_json(plan_paths(["."], strategy=greedy).plan)
    assert to_json(plan_paths(["."], strategy=greedy).plan) == first
    assert first.endswith("}\n") and not re.search(r'"(seconds|elapsed|wall|timestamp)"', first)


def _subprocess_plan(root: Path, seed: str, strategy: str) -> str:
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from test_plan_output import greedy; "
            "from poolc.commands.planning import plan_paths; from poolc.domain.plan import to_json; "
            "s = sys.argv[2]; "
            "sys.stdout.write(to_json(plan_paths(['.'], strategy=greedy if s == 'greedy' else s).plan))")
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code, str(TESTS), strategy], cwd=root, env=env,
                          capture_output=True, text=True, check=True)
    return done.stdout


@pytest.mark.parametrize("strategy", ["greedy", "zenml", "optimal"])
def test_byte_identical_across_hash_seeds(tmp_path, strategy):
    write_platform(tmp_path)
    outputs = {_subprocess_plan(tmp_path, seed, strategy) for seed in ("0", "1", "4242")}
    assert len(outputs) == 1
    assert json.loads(outputs.pop())["format_version"] == 1


def test_digest_ignores_formatting_and_file_names(tmp_path):
    a = write_platform(tmp_path / "a")
    reformatted = dict(FILES)
    del reformatted["pools.yaml"]
    reformatted["somewhere/else/pool.yml"] = """\
# the same pool, block style, keys reordered, default written out
kind: ResourcePool
apiVersion: poolc/v1
spec:
  capacity:
    step_run: 10
    gpu: 8
metadata:
  name: dc
  labels: {}
"""
    b = write_platform(tmp_path / "b", reformatted)
    changed = dict(FILES, **{"pools.yaml": FILES["pools.yaml"].replace("gpu: 8", "gpu: 9")})
    c = write_platform(tmp_path / "c", changed)
    digest = {name: inputs_digest(validate_paths([str(root)]).config) for name, root in
              (("a", a), ("b", b), ("c", c))}
    assert digest["a"] == digest["b"] != digest["c"]
    assert plan_paths([str(a)], strategy=greedy).plan.inputs_digest == digest["a"]


# --- explanations, on hand-built problems --------------------------------------------

POOL = Pool("dc", {"gpu": 8, "step_run": 10})
PROD = PolicyRule("prod", "prod-k8s", "dc", 100, {"gpu": 2}, {"gpu": 6, "step_run": 10})
RESEARCH = PolicyRule("research", "research-k8s", "dc", 10, {}, {"gpu": 8, "step_run": 10})
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _state(requests, running=(), admitted=None, preempted=None, strategy="optimal"):
    problem = Problem((POOL,), (PROD, RESEARCH), tuple(requests), tuple(running))
    solution = Solution(strategy, admitted or {}, preempted or {})
    return problem, FinalState.of(problem, solution)


def test_queued_on_capacity():
    big = Request("r/big", "research-k8s", {"gpu": 4, "step_run": 1}, True, 1)
    problem, state = _state([Request("p/a", "prod-k8s", {"gpu": 6, "step_run": 1}, True, 0), big],
                            admitted={"p/a": "prod"})
    assert queued_message(state, big, [RESEARCH]).text == \
        "gpu: needs 4, free 2 in pool dc (borrowers at priority 10 or above hold 6 it may not)"


def test_queued_on_an_over_full_pool():
    running = [Running("old", "research-k8s", "dc", False, {"gpu": 10}, T0)]
    wants = Request("r/x", "research-k8s", {"gpu": 1}, True, 0)
    _, state = _state([wants], running)
    assert binding_rule(state, RESEARCH, wants).text == "limit: policy research holds 10 of 8 gpu, needs 1"
    assert [x.text for x in queued_reasons(state, wants, [RESEARCH])] == [
        "limit: policy research holds 10 of 8 gpu, needs 1", "gpu: needs 1, free 0 in pool dc (over capacity by 2)"]


def test_queued_on_limit():
    more = Request("p/more", "prod-k8s", {"gpu": 2, "step_run": 1}, True, 1)
    _, state = _state([Request("p/a", "prod-k8s", {"gpu": 5, "step_run": 1}, True, 0), more],
                      admitted={"p/a": "prod"})
    assert queued_message(state, more, [PROD]).text == "limit: policy prod holds 5 of 6 gpu, needs 2"


def test_queued_on_non_preemptible_share():
    fixed = Request("p/fixed", "prod-k8s", {"gpu": 1}, False, 1)
    _, state = _state([Request("p/a", "prod-k8s", {"gpu": 2}, False, 0), fixed], admitted={"p/a": "prod"})
    assert queued_message(state, fixed, [PROD]).text == \
        "non-preemptible share: policy prod holds 2 of reserved gpu=2, needs 1"


def test_queued_head_of_line_only_when_it_fits_now():
    small = Request("r/small", "research-k8s", {"gpu": 1}, True, 1)
    _, state = _state([small], strategy="zenml")
    assert queued_message(state, small, [RESEARCH]).text == "waits behind earlier requests (head-of-line)"
    _, state = _state([small])
    assert queued_message(state, small, [RESEARCH]).text == \
        "would fit in pool dc now, but the solver stopped before admitting it (status OPTIMAL)"


def test_queued_reports_the_best_pool_first():
    other = Pool("aa-small", {"gpu": 1})
    low = PolicyRule("prod-aa", "prod-k8s", "aa-small", 1, {}, {"gpu": 1})
    wants = Request("p/x", "prod-k8s", {"gpu": 1}, True, 1)
    problem = Problem((other, POOL), (PROD, low), (Request("p/a", "prod-k8s", {"gpu": 8}, True, 0), wants), (
        Running("held", "prod-k8s", "aa-small", True, {"gpu": 1}, T0),))
    state = FinalState.of(problem, Solution("optimal", {"p/a": "prod"}))
    eligible = eligible_policies(problem, wants)[0]
    assert [q.name for q in eligible] == ["prod", "prod-aa"]   # priority first, not pool name
    assert [x.text for x in queued_reasons(state, wants, eligible)] == [
        "limit: policy prod holds 8 of 6 gpu, needs 1",
        "gpu: needs 1, free 0 in pool dc (borrowers at priority 100 or above hold 8 it may not)",
        "in pool aa-small: limit: policy prod-aa holds 1 of 1 gpu, needs 1"]


def test_preemption_names_the_displacing_requests_and_key():
    victim = Running("sweep", "research-k8s", "dc", True, {"gpu": 4, "step_run": 1}, T0)
    train = Request("t/train", "prod-k8s", {"gpu": 6, "step_run": 1}, True, 0)
    cpu = Request("t/cpu", "prod-k8s", {"step_run": 1}, True, 1)
    _, state = _state([train, cpu], [victim], admitted={"t/train": "prod", "t/cpu": "prod"},
                      preempted={"sweep": ["t/cpu", "t/train"]})
    assert preempted_message(state, victim, ["t/cpu", "t/train"], {"gpu": 4, "step_run": 1}).text == \
        "preempted for t/train (priority 100) on gpu; it borrowed gpu=4 above policy research's reserved share"


def test_borrowed_walks_non_preemptible_first_then_running_then_arrival():
    running = [Running("old", "prod-k8s", "dc", True, {"gpu": 1}, T0)]
    first = Request("p/first", "prod-k8s", {"gpu": 1}, True, 0)
    fixed = Request("p/fixed", "prod-k8s", {"gpu": 1}, False, 1)
    _, state = _state([first, fixed], running, admitted={"p/first": "prod", "p/fixed": "prod"})
    assert state.borrowed() == {"old": {}, "p/fixed": {}, "p/first": {"gpu": 1}}


# --- the real strategies (skipped until they are importable) ---------------------------

@pytest.mark.parametrize("strategy", ["optimal", "zenml"])
def test_real_strategies_on_the_examples(strategy):
    result = plan_paths([str(REPO / "examples")], strategy=strategy)
    plan = result.plan
    status = {r.id: r.status for r in plan.requests}
    assert sorted(s for s in status.values()) == ["allocated"] * 9 + ["queued"] * 5
    assert [p.id for p in plan.preempted] == ["research-sweep-lr-02"]
    assert "prod-training/train_model (priority 1000) on gpu" in plan.preempted[0].message.text
    by_id = {r.id: r for r in plan.requests}
    quantize = by_id["llm-finetune/quantize_adapter"]
    assert quantize.reason == "limit: policy prod-sagemaker holds 16 of 16 gpu, needs 1"
    assert quantize.message.text == (f"{quantize.reason}; also gpu: needs 1, free 0 in pool aws-sagemaker "
                                "(borrowers at priority 900 or above hold 8 it may not)")
    assert by_id["research-sweep/sweep_lr_03"].reason.startswith("gpu: needs 2, free 0 in pool datacenter-one")
    assert by_id["llm-finetune/distill"].borrowed == {"gpu": 4}
    dc1 = next(p for p in plan.pools if p.name == "datacenter-one")
    assert dc1.used["gpu"] == 16 and dc1.free["gpu"] == 0
    assert plan.solver.strategy == strategy
    assert to_json(plan) == to_json(plan_paths([str(REPO / "examples")], strategy=strategy).plan)


def test_real_optimal_on_the_small_platform(tmp_path, monkeypatch):
    monkeypatch.chdir(write_platform(tmp_path))
    plan = plan_paths(["."]).plan
    real = json.loads(to_json(plan))
    fixed = json.loads(to_json(plan_paths(["."], strategy=decided).plan))
    assert real["requests"] == fixed["requests"] and real["preempted"] == fixed["preempted"]
    assert real["solver"]["status"] == "OPTIMAL" and real["solver"]["gap"] == 0.0


# --- text ------------------------------------------------------------------------------

def test_text_plan(tmp_path, monkeypatch):
    monkeypatch.chdir(write_platform(tmp_path))
    result = plan_paths(["."], strategy=decided)
    text = render_plan(result.plan, color=False)
    assert text == render_plan(plan_paths(["."], strategy=decided).plan, color=False)
    assert "\x1b[" not in text and all(len(line) <= 100 for line in text.splitlines())
    assert text.splitlines()[:4] == [
        "Plan: strategy optimal, status OPTIMAL, gap 0",
        f"inputs {result.plan.inputs_digest}",
        "6 steps: 4 allocated, 0 queued, 2 rejected, 1 preempted",
        "WARNING: running work ends when this plan is applied: is preempted: sweep-old (research-k8s)",
    ]
    for block in (
        "Objective, in order (each tier optimised with the ones above held)\n"
        "             what                                                              value\n"
        "  maximised  steps admitted inside their policy's free reserved share              1\n"
        "  maximised  steps admitted at priority 100                                        2\n"
        "  minimised  running allocations preempted at priority 10                          1\n"
        "  maximised  steps admitted at priority 10                                         1\n"
        "  maximised  arrival order: sum over admitted steps of (steps - arrival rank)     15\n"
        "  maximised  most recently started preempted first: sum of their start ranks       0\n"
        "  maximised  pool preference: higher-priority policy, then pool name               0\n",
        "Policies\n  policy    pool  priority  resource   reserved  used  borrowed  limit\n"
        "  prod      dc         100  GPU               4     5         1      6\n"
        "                            step runs         4     2         0     10\n"
        "  research  dc          10  GPU               0     2         2      8\n"
        "                            step runs         0     1         1     10\n",
        "  dc\n    resource   capacity  used  free\n    GPU               8     7     1\n"
        "    step runs        10     3     7\n",
        "Rejected (2)\n  train/fixed  prod-k8s, non-preemptible  -\n      demand  6 GPU\n"
        "      [R004] step 'fixed' is non-preemptible and asks 6 GPU, but policy 'prod' reserves only 4 GPU;\n"
        "      it can never be admitted: reserve more (6 GPU in policy 'prod'), or make the step preemptible\n",
        # the reason's tag once: the JSON message's own "unmanaged:" lead-in is not repeated after it
        "  adhoc/notebook  adhoc-k8s  outside every pool\n      demand  1 core\n"
        "      [UNMANAGED] component adhoc-k8s has no policy on any pool, so the step runs outside every\n"
        "      pool; add a Policy for it to manage it\n",
        "Running work preempted (1)\n  sweep-old (research-k8s)  in pool dc\n"
        "      preempted for train/eval, train/train (priority "
        "100) on GPU; it borrowed 4 GPU above policy\n      research's reserved share\n",
        "Changes\n  running steps: 3 start, 1 stop, 0 keep running\n"
        "  + research/probe (research-k8s) starts\n"          # no labels.team: the team is the component
        "  + train/eval (prod-k8s) starts\n  + train/train (prod-k8s) starts\n  - sweep-old (research-k8s) stops\n"
        "  generated files: 7 to create, 0 to update, 0 to delete\n",
    ):
        assert block in text
    assert "unmanaged:" not in text
    coloured = render_plan(result.plan, color=True)
    assert "\x1b[" in coloured


def test_importing_the_planner_does_not_import_ortools():
    code = ("import sys, poolc.commands.planning, poolc.planner.assemble, poolc.state.records; "
            "sys.exit('ortools' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)}).returncode == 0


def test_unknown_strategy_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown strategy 'best'; choose one of optimal, zenml"):
        plan_paths([str(tmp_path)], strategy="best")


def test_missing_stack_rejects_its_steps(tmp_path, monkeypatch):
    files = dict(FILES)
    files["pipelines/research.yaml"] = files["pipelines/research.yaml"].replace("research-stack", "gone-stack")
    monkeypatch.chdir(write_platform(tmp_path, files))
    probe = next(r for r in plan_paths(["."], strategy=greedy).plan.requests if r.id == "research/probe")
    assert (probe.status, probe.reason, probe.requester) == ("rejected", "N002", None)
    assert probe.message.text == ("pipeline research uses stack gone-stack, which is not defined in the files given; "
                             "define the stack or fix its name")


def test_a_step_with_an_error_is_rejected_with_that_rule(tmp_path, monkeypatch):
    files = dict(FILES)
    files["pipelines/research.yaml"] = files["pipelines/research.yaml"].replace(
        "{gpu_count: 2}", "{gpu_count: 2, memory: 0GB}")
    monkeypatch.chdir(write_platform(tmp_path, files))
    result = plan_paths(["."], strategy=greedy)
    probe = next(r for r in result.plan.requests if r.id == "research/probe")
    assert (probe.status, probe.reason) == ("rejected", "R001")
    assert probe.message.text.startswith("step 'probe' sets memory='0GB', which is zero bytes")
    assert "research/probe" not in [r.id for r in result.problem.requests]


def test_preempted_for_names_only_requests_that_needed_its_keys():
    """A preemption "on gpu" lists only steps that ask for GPUs: CPU-only steps
    admitted in the same plan did not need the victim's units."""
    plan = plan_paths([str(REPO / "examples")]).plan
    (victim,) = plan.preempted
    assert " on gpu;" in victim.message.text
    demand = {r.id: r.demand for r in plan.requests}
    assert victim.for_ and all(demand[rid].get("gpu", 0) > 0 for rid in victim.for_)
    assert victim.for_ == ("llm-finetune/package_model", "prod-training/evaluate", "prod-training/train_model")
