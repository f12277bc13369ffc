"""Gate mode (the default): the cluster runs the plan.

`apply` writes Jobs only for the steps the plan allocates (queued steps' Jobs under
held/kubernetes/), and a stop object for every running allocation the plan
preempts. Replaying exactly those files through Kueue's scheduler
(poolc.kueuesim) must end where the plan says, on the example platform, on the
scenarios of the Kueue mapping (tests/test_kueue_replay.py) and on a few hundred
random contended platforms with running work.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import pytest
from ruamel.yaml import YAML
from support import cli
from sweep import blocks
from test_kueue_replay import REPO, pipeline, policy, pool, running, statuses, write

from poolc.commands.apply import apply_paths
from poolc.commands.planning import _running_steps, plan_paths
from poolc.commands.runtime_check import replay, runtime_of

BASE = "2026-01-01T00:00:00Z"


def gate_replay(root: Path, submit: str = "gate"):
    """(the PlanResult, the replay of what that submit mode writes) for ``root``."""
    result = plan_paths([str(root)], state_file=str(root / "absent.state.json"), runtime_check=False, submit=submit)
    config, requests, problem = result.validation.config, result.validation.requests, result.problem
    steps, _ = _running_steps(requests, problem.running, problem, {})
    return result, replay(config, result.plan, requests, problem, steps, submit=submit)


def assert_cluster_runs_the_plan(result, again) -> None:
    """Every step the plan allocates is admitted, every step it queues never reaches
    Kueue, every victim is gone (stopped), everything else keeps running."""
    plan, outcomes = result.plan, again.simulation.outcomes
    for request in plan.requests:
        if request.running:
            continue   # judged by its allocation below
        outcome = outcomes.get(request.id)
        if request.status == "allocated" and outcome is not None:   # None: not a Kueue workload
            assert outcome.status == "admitted", (request.id, outcome.reason)
        elif request.status == "queued":
            assert outcome is None, f"{request.id}: a queued step's Job reached Kueue"
    victims = {p.id for p in plan.preempted}
    for alloc in result.problem.running:
        outcome = outcomes.get(alloc.name)
        if alloc.name in victims:
            assert outcome is None or outcome.status == "preempted", alloc.name
        elif outcome is not None:
            assert outcome.status == "admitted", (alloc.name, outcome.reason)
    assert [x.as_dict() for x in runtime_of(plan, again).differences] == []


# ------------------------------------------------------------------ the examples

def test_the_examples_in_gate_mode(tmp_path):
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    result, again = gate_replay(tmp_path / "examples")
    assert_cluster_runs_the_plan(result, again)
    admitted = {n for n, o in again.simulation.outcomes.items() if o.status == "admitted"}
    allocated = {r.id for r in result.plan.requests if r.status == "allocated" and r.id in again.simulation.outcomes}
    assert allocated and allocated <= admitted


def test_gate_mode_holds_queued_jobs_back(tmp_path):
    """A queued step's Job goes to held/kubernetes/<namespace>/, outside what any
    `kubectl apply -R -f kubernetes/` reads, under a name no admitted Job can have;
    an allocated one stays."""
    write(tmp_path, pool(4), policy("a", 10), pipeline("a", {"one": "{gpu_count: 3}", "two": "{gpu_count: 3}"}))
    result = plan_paths([str(tmp_path)], state_file=str(tmp_path / "s.json"))
    assert statuses(result.plan) == {"a/one": "allocated", "a/two": "queued"}
    jobs = sorted(p for p in result.files if p.endswith(".job.yaml"))
    assert jobs == ["held/kubernetes/ml-a/a--two.job.yaml", "kubernetes/ml-a/a--one.job.yaml"]
    every = plan_paths([str(tmp_path)], state_file=str(tmp_path / "s.json"), submit="all")
    assert sorted(p for p in every.files if p.endswith(".job.yaml")) == [
        "kubernetes/ml-a/a--one.job.yaml", "kubernetes/ml-a/a--two.job.yaml"]
    held = YAML(typ="safe").load(result.files["held/kubernetes/ml-a/a--two.job.yaml"])["metadata"]["name"]
    admitted = YAML(typ="safe").load(every.files["kubernetes/ml-a/a--two.job.yaml"])["metadata"]["name"]
    assert re.fullmatch(r"a--two-[0-9a-f]{6}", admitted) and held == f"{admitted}-held"


# ------------------------------------------------------------------ the mapping's scenarios

SCENARIOS = {
    "over-reserve-displaces-lower-borrower": lambda w: (
        pool(8), policy("hi", 100, "{gpu: 2}"), policy("lo", 10),
        running("hi-in-share", "hi", 2, BASE, workload=w),
        running("lo-borrower", "lo", 6, "2026-01-01T01:00:00Z", workload=w),
        pipeline("hi", {"burst": "{gpu_count: 4}"})),
    "reclaims-own-empty-reserve": lambda w: (
        pool(8), policy("own", 10, "{gpu: 4}"), policy("big", 100),
        running("big-early", "big", 4, BASE, workload=w),
        running("big-late", "big", 4, "2026-01-01T02:00:00Z", workload=w),
        pipeline("own", {"job": "{gpu_count: 4}"})),
    "several-policies-burst": lambda w: (
        pool(16), policy("a", 100), policy("b", 50), policy("c", 10),
        pipeline("a", {f"s{i:02d}": "{gpu_count: 1}" for i in range(10)}),
        pipeline("b", {f"s{i:02d}": "{gpu_count: 1}" for i in range(4)}),
        pipeline("c", {f"s{i:02d}": "{gpu_count: 1}" for i in range(10)})),
    "non-preemptible-keeps-own-reserve": lambda w: (
        pool(8), policy("mid", 50, "{gpu: 4}"), policy("hi", 100),
        running("mid-preemptible", "mid", 4, BASE, workload=w),
        running("hi-borrower", "hi", 4, "2026-01-01T01:00:00Z", workload=w),
        pipeline("mid", {"fixed": "{gpu_count: 2, preemptible: false}"})),
    "non-preemptible-displaces-lower-borrower": lambda w: (
        pool(8), policy("mid", 50, "{gpu: 4}"), policy("lo", 10),
        running("mid-preemptible", "mid", 4, BASE, workload=w),
        running("lo-borrower", "lo", 4, "2026-01-01T01:00:00Z", workload=w),
        pipeline("mid", {"fixed": "{gpu_count: 2, preemptible: false}"})),
    # Kueue alone cannot do this one (a guaranteed queue reclaims from lower
    # priorities only); gate mode stops the borrower itself.
    "non-preemptible-reclaims-from-higher-borrower": lambda w: (
        pool(8), policy("mid", 50, "{gpu: 4}"), policy("hi", 100),
        running("hi-borrower", "hi", 8, "2026-01-01T01:00:00Z", workload=w),
        pipeline("mid", {"fixed": "{gpu_count: 2, preemptible: false}"})),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_mapping_scenarios_in_gate_mode(tmp_path, name):
    write(tmp_path, *SCENARIOS[name](True))
    result, again = gate_replay(tmp_path)
    assert_cluster_runs_the_plan(result, again)
    stops = sorted(p for p in result.files if "/stop/" in p)
    assert stops == sorted(f"kubernetes/ml-{v.id.split('-')[0]}/stop/{v.id}.workload.yaml"
                           for v in result.plan.preempted)


def test_a_victim_without_a_known_workload_is_named_not_hidden(tmp_path):
    """Without its Workload, gate mode cannot stop a victim: no stop object, and the
    runtime check says so (Kueue will not reclaim for a guaranteed queue from a
    higher priority)."""
    write(tmp_path, *SCENARIOS["non-preemptible-reclaims-from-higher-borrower"](False))
    result, again = gate_replay(tmp_path)
    assert not [p for p in result.files if "/stop/" in p]
    differences = {x.id: x for x in runtime_of(result.plan, again).differences}
    assert set(differences) == {"hi-borrower", "mid/fixed"}
    assert "poolc cannot stop it" in differences["hi-borrower"].message.text


def test_stop_object_is_a_deactivated_workload(tmp_path):
    write(tmp_path, *SCENARIOS["over-reserve-displaces-lower-borrower"](True))
    result, _ = gate_replay(tmp_path)
    from ruamel.yaml import YAML

    text = result.files["kubernetes/ml-lo/stop/lo-borrower.workload.yaml"]
    assert text.startswith("# Generated by poolc")
    obj = YAML(typ="safe").load(text)
    assert obj["apiVersion"] == "kueue.x-k8s.io/v1beta2" and obj["kind"] == "Workload"
    assert obj["metadata"]["name"] == "job-lo-borrower-a1b2c" and obj["metadata"]["namespace"] == "ml-lo"
    assert obj["spec"] == {"active": False}
    assert obj["metadata"]["labels"] == {"poolc.dev/stopped-allocation": "lo-borrower"}


def test_stop_objects_match_the_workload_crd(tmp_path):
    """Every stop object is valid against the Workload CRD's v1beta2 schema (unknown
    fields are errors), and the check can fail."""
    import jsonschema
    from ruamel.yaml import YAML
    from test_targets import CRDS, _closed

    if not CRDS.is_dir():
        pytest.skip(f"Kueue CRDs not found at {CRDS}")
    crd = YAML(typ="safe").load((CRDS / "kueue.x-k8s.io_workloads.yaml").read_text(encoding="utf-8"))
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")
    validator = jsonschema.Draft7Validator(_closed(version["schema"]["openAPIV3Schema"]))
    checked = 0
    for name in sorted(SCENARIOS):
        root = tmp_path / name
        root.mkdir()
        write(root, *SCENARIOS[name](True))
        result, _ = gate_replay(root)
        for path, text in result.files.items():
            if "/stop/" in path:
                obj = YAML(typ="safe").load(text)
                errors = sorted(validator.iter_errors(obj), key=str)
                assert not errors, f"{path}: {errors[0].message}"
                checked += 1
                obj["spec"]["active"] = "no"
                assert list(validator.iter_errors(obj))
    assert checked >= 4


def test_submit_all_says_which_plan_to_read(tmp_path):
    """`--submit all` keeps every Job for Kueue; the optimal plan then says that the
    plan to read is `--strategy kueue`, which agrees with the replay."""
    write(tmp_path, *SCENARIOS["several-policies-burst"](True))
    optimal = plan_paths([str(tmp_path)], state_file=str(tmp_path / "s.json"), submit="all").plan
    data = json.loads(__import__("poolc.domain.plan", fromlist=["to_json"]).to_json(optimal))
    assert data["runtime"]["submit"] == "all"
    assert any("--strategy kueue" in note for note in data["runtime"]["notes"])
    kueue = plan_paths([str(tmp_path)], state_file=str(tmp_path / "s.json"), submit="all", strategy="kueue").plan
    assert kueue.runtime is not None and kueue.runtime.agrees and kueue.runtime.submit == "all"
    assert not any("--strategy kueue" in note for note in kueue.runtime.notes)


def test_apply_submit_modes_write_what_the_plan_says(tmp_path):
    """apply in gate mode writes the stop object and holds queued Jobs back; a saved
    plan's mode wins over the option."""
    write(tmp_path, *SCENARIOS["non-preemptible-keeps-own-reserve"](True),
          pipeline("hi", {"wait": "{gpu_count: 8}"}))
    out, state = tmp_path / "deploy", tmp_path / "poolc.state.json"
    result = apply_paths([str(tmp_path / "platform.yaml")], str(out), state_file=str(state), now=BASE)
    assert result.ok and result.written
    assert (out / "held" / "kubernetes" / "ml-hi" / "hi--wait.job.yaml").is_file()
    assert not (out / "kubernetes" / "ml-hi" / "hi--wait.job.yaml").exists()


# ------------------------------------------------------------------ random contended platforms

def random_platform(seed: int) -> str:
    """One or two pools, three teams with policies of mixed priority, reserves and
    limits, running work that fits what Kueue would have admitted (capacity, limit,
    non-preemptible inside the reserve), and more new steps than fit."""
    rng = random.Random(seed)
    docs = []
    pools = {}
    for p in range(rng.randint(1, 2)):
        cap = {"gpu": rng.randint(4, 10), "mcpu": 1000 * rng.randint(8, 20)}
        pools[f"p{p}"] = cap
        docs.append(f"apiVersion: poolc/v1\nkind: ResourcePool\nmetadata: {{name: p{p}}}\n"
                    f"spec: {{capacity: {{gpu: {cap['gpu']}, cpu: {cap['mcpu'] // 1000}}}}}\n")
    policies = {}
    for name, cap in pools.items():
        left = dict(cap)
        for team in rng.sample(["a", "b", "c"], rng.randint(2, 3)):
            rsv = {"gpu": rng.randint(0, min(2, left["gpu"])),
                   "mcpu": 1000 * rng.randint(0, min(4, left["mcpu"] // 1000))}
            left = {k: left[k] - rsv[k] for k in left}
            lim = {"gpu": rng.randint(max(rsv["gpu"], 1), cap["gpu"])} if rng.random() < 0.4 else {}
            prio = rng.choice([10, 50, 100])
            policies[(team, name)] = (prio, rsv, lim or {"gpu": cap["gpu"]})
            limit = f", limit: {{gpu: {lim['gpu']}}}" if lim else ""
            docs.append(f"apiVersion: poolc/v1\nkind: Policy\nmetadata: {{name: {team}-{name}}}\n"
                        f"spec: {{subject: {team}-k8s, pool: {name}, priority: {prio}, "
                        f"reserved: {{gpu: {rsv['gpu']}, mcpu: {rsv['mcpu']}}}{limit}}}\n")
    used = {name: {"gpu": 0, "mcpu": 0} for name in pools}
    held: dict[tuple[str, str], dict[str, int]] = {}
    fixed: dict[tuple[str, str], dict[str, int]] = {}
    for i in range(rng.randint(2, 6)):
        team, name = rng.choice(sorted(policies))
        prio, rsv, lim = policies[(team, name)]
        holds = {"gpu": rng.randint(1, 3), "mcpu": 1000 * rng.randint(1, 4)}
        pre = rng.random() < 0.85
        mine, np = held.setdefault((team, name), {"gpu": 0, "mcpu": 0}), fixed.setdefault((team, name),
                                                                                         {"gpu": 0, "mcpu": 0})
        if any(used[name][k] + holds[k] > pools[name][k] for k in holds) or mine["gpu"] + holds["gpu"] > lim["gpu"] \
                or (not pre and any(np[k] + holds[k] > rsv[k] for k in holds)):
            continue
        for k in holds:
            used[name][k] += holds[k]
            mine[k] += holds[k]
            if not pre:
                np[k] += holds[k]
        docs.append(f"apiVersion: poolc/v1\nkind: Allocation\nmetadata: {{name: run-{i}}}\n"
                    f"spec: {{subject: {team}-k8s, pool: {name}, preemptible: {str(pre).lower()}, "
                    f"holds: {{gpu: {holds['gpu']}, mcpu: {holds['mcpu']}, step_run: 1}}, "
                    f"started_at: \"2026-01-01T0{rng.randint(0, 9)}:00:00Z\", "
                    f"workload: ml-{team}/job-run-{i}-x1y2z}}\n")
    for team in ("a", "b", "c"):
        docs.append(f"apiVersion: poolc/v1\nkind: Stack\nmetadata: {{name: {team}-stack}}\nspec:\n"
                    f"  orchestrator: {{name: {team}-k8s, flavor: kubernetes, namespace: ml-{team}, image: \"t:1\"}}\n")
        steps = {}
        for s in range(rng.randint(1, 4)):
            pre = rng.random() < 0.8
            steps[f"s{s}"] = (f"{{gpu_count: {rng.randint(0, 3)}, cpu_count: {rng.randint(1, 4)}"
                              f"{'' if pre else ', preemptible: false'}}}")
        docs.append(pipeline(team, steps).lstrip("-\n"))
    return "---\n".join(docs)


@pytest.mark.parametrize("block", blocks(8))
def test_random_contended_platforms_run_the_plan(tmp_path, block):
    """240 platforms (30 per block): the gate-mode replay equals the optimal plan on
    every request and every running allocation, with no runtime difference."""
    contended = with_running = 0
    for seed in range(block * 30, block * 30 + 30):
        root = tmp_path / f"s{seed}"
        root.mkdir()
        (root / "platform.yaml").write_text(random_platform(seed), encoding="utf-8")
        result, again = gate_replay(root)
        assert {x.rule for x in result.validation.diagnostics if x.severity == "error"} <= {"R003", "R004"}, seed
        with_running += bool(result.problem.running)
        try:
            assert_cluster_runs_the_plan(result, again)
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}: {exc}") from exc
        contended += any(r.status == "queued" for r in result.plan.requests) or bool(result.plan.preempted)
    assert contended >= 20 and with_running >= 25


def test_the_plan_says_how_long_a_step_waited_for_a_cycle(tmp_path, monkeypatch):
    """With the cycle's time given (SOURCE_DATE_EPOCH), a step with submitted_at says
    how long it waited: for this cycle when allocated, so far when queued."""
    steps = "".join(f"    {name}: {{submitted_at: \"2026-01-01T00:00:0{i}Z\", "
                    "settings: {resources: {gpu_count: 3}}}\n" for i, name in enumerate(("one", "two")))
    write(tmp_path, pool(4), policy("a", 10),
          "---\napiVersion: poolc/v1\nkind: Pipeline\nmetadata: {name: a}\nspec:\n  stack: a-stack\n"
          f"  steps:\n{steps}")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(1767225600 + 750))      # 2026-01-01T00:12:30Z
    plan = plan_paths([str(tmp_path)], state_file=str(tmp_path / "s.json")).plan
    messages = {r.id: r.message.text for r in plan.requests}
    assert "it waited 12m 30s for this reconcile cycle (submitted 2026-01-01T00:00:00Z)" in messages["a/one"]
    assert "it has waited 12m 29s since it was submitted" in messages["a/two"]
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    again = plan_paths([str(tmp_path)], state_file=str(tmp_path / "s.json")).plan
    assert not any("waited" in r.message.text for r in again.requests)


def test_the_pull_request_comment_says_which_plan_to_read(tmp_path):
    from poolc.report.plan_markdown import render_markdown

    write(tmp_path, *SCENARIOS["several-policies-burst"](True))
    notice = "The plan to read is `poolc plan --strategy kueue --submit all`"
    every = plan_paths([str(tmp_path)], state_file=str(tmp_path / "s.json"), submit="all").plan
    assert notice in render_markdown(every)
    gate = plan_paths([str(tmp_path)], state_file=str(tmp_path / "s.json")).plan
    assert notice not in render_markdown(gate)


def test_under_submit_all_the_commands_plan_what_they_write(tmp_path):
    """`poolc plan --submit all` and `poolc apply --submit all` use the `kueue` strategy
    unless told otherwise: the plan read is the plan of the Jobs written, and the
    runtime check agrees with it."""
    write(tmp_path, *SCENARIOS["several-policies-burst"](True))
    state = str(tmp_path / "s.json")
    planned = cli("plan", str(tmp_path), "--state", state, "--submit", "all", "--format", "json")
    assert planned.exit_code in (0, 1), planned.output
    data = json.loads(planned.stdout)
    assert data["solver"]["strategy"] == "kueue" and data["runtime"]["agrees"]
    applied = cli("apply", str(tmp_path), "--state", state, "--submit", "all", "--output-dir",
                  str(tmp_path / "deploy"), "--format", "json")
    assert applied.exit_code == 0, applied.output
    allocated = {r["id"] for r in data["requests"] if r["status"] == "allocated"}
    assert {r for r in json.loads(applied.stdout)["decided"]["allocated"]} == allocated
    explicit = json.loads(cli("plan", str(tmp_path), "--state", state, "--submit", "all", "--strategy", "optimal",
                              "--format", "json").stdout)
    assert explicit["solver"]["strategy"] == "optimal"
