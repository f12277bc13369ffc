"""The cluster in a box: `poolc cycle`, the one loop the README, docs/apply.md and the action
run, against `kubectl` and `aws` stand-ins backed by real behaviour (tests/clusterbox/): the
project's Kueue simulation holding objects as the API server would, scheduling after every
object applied, and moto's SageMaker.

Each cycle is followed by arrivals (new pipelines), completions (Workloads and training
jobs finish) and the preemptions the next plan makes, and each cycle is checked:

- the cluster runs exactly what the plan admitted: the admitted Workloads are the
  Kubernetes steps the state holds after the cycle, and the InProgress training jobs
  its SageMaker steps; Kueue itself preempted nothing;
- it stopped only the plan's victims (the Workloads its stop objects name);
- each training-job body was submitted once (one job per step allocation);
- finished work never runs again;
- importing the cluster's reports right after the cycle changes nothing in the state.

The stand-ins read only the files poolc wrote; the checks read the state and the
stand-ins' records, never poolc's plan objects.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sweep import blocks

sys.path.insert(0, str(Path(__file__).resolve().parent / "clusterbox"))

from box import Box  # noqa: E402

from poolc.commands.state_command import import_cluster  # noqa: E402
from poolc.state.records import STEP_LABEL, read_state  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
POOLC = str(Path(sys.executable).parent / "poolc")
# moto stamps training jobs with the real clock, and the cycle reads back the ones changed in
# the last days: the cycles' clock (SOURCE_DATE_EPOCH) starts at this hour.
START = int(time.time()) // 3600 * 3600
INTERVAL = 600


@pytest.fixture
def box(tmp_path):
    found = Box(tmp_path / "box", clock=START)
    yield found
    found.stop()


def cycle(box: Box, work: Path, now: int, *extra: str) -> subprocess.CompletedProcess:
    done = subprocess.run([POOLC, "cycle", "config/", "--output-dir", "deploy", "--poll", "0", "--wait", "30", *extra],
                          cwd=work, env=box.env(now), capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{box.dump()}"
    return done


def _kubectl_json(box: Box, now: int, *args: str) -> dict:
    done = subprocess.run(["kubectl", *args], env=box.env(now), capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def _steps_of_state(work: Path) -> dict[str, str]:
    """Step id -> subject, of every allocation the state holds."""
    state = read_state(str(work / "poolc.state.json"))
    assert state.ok, state.diagnostics
    return {a.metadata.labels[STEP_LABEL].replace(".", "/", 1): a.spec.subject for a in state.allocations
            if STEP_LABEL in a.metadata.labels}


class Checker:
    """What the cycles did, across cycles: submissions, finished steps, stops."""

    def __init__(self, box: Box, work: Path):
        self.box, self.work = box, work
        self.finished: set[str] = set()
        self.created_jobs: set[str] = set()
        self.training: dict[str, str] = {}   # training job name -> step

    def after_cycle(self, now: int, log_before: int, stdout: str) -> dict:
        box, work = self.box, self.work
        cluster = box.cluster()
        new_log = cluster.log[log_before:]
        # Kueue preempted nothing: every victim was stopped by the plan's stop objects
        assert not [e for e in new_log if e.startswith("preempt ")], (new_log, stdout)
        stopped = {e.split(" ", 1)[1] for e in new_log if e.startswith("deactivate ")}
        stop_files = {}
        for path in (work / "deploy" / "kubernetes").glob("*/stop/*.workload.yaml"):
            text = path.read_text()
            name = next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("  name:"))
            namespace = next(line.split(":", 1)[1].strip() for line in text.splitlines()
                             if line.startswith("  namespace:"))
            stop_files[f"{namespace}/{name}"] = path
        assert stopped <= set(stop_files), (stopped, stop_files)
        for key in set(stop_files) - stopped:   # every victim stopped: now, or by an earlier cycle, or gone
            assert key not in cluster.workloads or not cluster.workloads[key]["active"], (key, stdout)
        # the cluster runs what the state (written from the plan) holds
        held = _steps_of_state(work)
        running = {}
        for key, w in cluster.admitted().items():
            labels = w["template"]["metadata"]["labels"]
            step = f"{labels['poolc.dev/pipeline']}/{labels['poolc.dev/step']}"
            assert step not in running, f"{step} runs twice: {running[step]} and {key}"
            running[step] = key
        in_progress = {}
        for job in box.training_jobs():
            env = getattr(job, "environment", None) or {}
            step = f"{env.get('POOLC_PIPELINE')}/{env.get('POOLC_STEP')}"
            if job.training_job_name not in self.training:
                self.training[job.training_job_name] = step
                assert step not in self.finished, f"finished step {step} was submitted again"
            if job.training_job_status == "InProgress":
                assert step not in in_progress, f"{step} submitted twice: {in_progress[step]}, {job.training_job_name}"
                in_progress[step] = job.training_job_name
        for entry in new_log:
            if entry.startswith("create job "):
                key = entry.split(" ", 2)[2]
                job = next(o for o in cluster.objects.values()
                           if o["kind"] == "Job" and f"{o['metadata']['namespace']}/{o['metadata']['name']}" == key)
                labels = job["metadata"]["labels"]
                step = f"{labels['poolc.dev/pipeline']}/{labels['poolc.dev/step']}"
                assert step not in self.finished, f"finished step {step} was created again ({key})"
        sagemaker_steps = {s for s in held if s in in_progress or s in self._sagemaker_steps()}
        assert set(running) == set(held) - sagemaker_steps, (sorted(running), sorted(held), stdout, box.dump())
        assert set(in_progress) == sagemaker_steps, (sorted(in_progress), sorted(sagemaker_steps))
        # importing what the cluster reports now changes nothing
        workloads = _kubectl_json(box, now, "get", "workloads.kueue.x-k8s.io", "-A", "-o", "json")
        (work / "check-workloads.json").write_text(json.dumps(workloads))
        jobs = [_aws_json(box, now, "describe-training-job", "--region", job.arn.split(":")[3],
                          "--training-job-name", job.training_job_name) for job in box.training_jobs()]
        for job in jobs:   # as the cycle observes them: a stopped job's tags say whether a plan preempted it
            if job["TrainingJobStatus"] in ("Stopping", "Stopped"):
                job["Tags"] = _aws_json(box, now, "list-tags", "--region", job["TrainingJobArn"].split(":")[3],
                                        "--resource-arn", job["TrainingJobArn"])["Tags"]
        (work / "check-training-jobs.json").write_text(json.dumps(jobs))
        shutil.copy(work / "poolc.state.json", work / "check.state.json")
        change = import_cluster([str(work / "config")], str(work / "check.state.json"),
                                kueue=str(work / "check-workloads.json"),
                                sagemaker=str(work / "check-training-jobs.json") if jobs else None, allow_empty=True)
        assert change.ok, change.diagnostics
        assert (change.added, change.removed) == ([], []), change
        # the same allocations and finished steps; only start times and Workload names become the
        # cluster's own (apply records the cycle's time for what it starts; Kueue names Workloads)
        assert _without_start_times(work / "check.state.json") == _without_start_times(work / "poolc.state.json")
        waiting = len(list((work / "deploy" / "held").rglob("*.job.yaml")))
        return {"running": running, "in_progress": in_progress, "stopped": stopped, "waiting": waiting}

    def _sagemaker_steps(self) -> set[str]:
        return {json.loads(p.read_text())["Environment"]["POOLC_PIPELINE"] + "/"
                + json.loads(p.read_text())["Environment"]["POOLC_STEP"]
                for p in (self.work / "deploy" / "sagemaker").glob("*.json")}

    def complete_some(self, rng: random.Random, share: float) -> None:
        """Some running work finishes: Workloads and training jobs."""
        cluster = self.box.cluster()
        for key in sorted(cluster.admitted()):
            if rng.random() < share:
                labels = cluster.workloads[key]["template"]["metadata"]["labels"]
                self.finished.add(f"{labels['poolc.dev/pipeline']}/{labels['poolc.dev/step']}")
                cluster.finish(key)
        cluster.save()
        for job in sorted(self.box.training_jobs(), key=lambda j: j.training_job_name):
            if job.training_job_status == "InProgress" and rng.random() < share:
                self.finished.add(self.training[job.training_job_name])
                self.box.finish_training_job(job.training_job_name)


def _without_start_times(path: Path) -> dict:
    state = json.loads(path.read_text())
    for alloc in state.get("allocations", []):
        alloc["spec"].pop("started_at", None)
        alloc["spec"].pop("workload", None)
    return state


def _aws_json(box: Box, now: int, *args: str) -> dict:
    done = subprocess.run(["aws", "sagemaker", *args, "--output", "json"], env=box.env(now),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def run_cycles(box: Box, work: Path, arrivals: list[dict[str, str]], seed: int) -> list[dict]:
    """One cycle per entry of ``arrivals`` (files to add before it), completions between."""
    rng = random.Random(seed)
    checker = Checker(box, work)
    seen = []
    for index, files in enumerate(arrivals):
        now = START + index * INTERVAL
        for relative, text in files.items():
            (work / "config" / relative).parent.mkdir(parents=True, exist_ok=True)
            (work / "config" / relative).write_text(text)
        before = len(box.cluster().log)
        done = cycle(box, work, now, *(["--allow-empty"] if index == 0 else []))
        seen.append(checker.after_cycle(now, before, done.stdout))
        checker.complete_some(rng, 0.3)
    return seen


def test_three_cycles_of_the_examples(box, tmp_path):
    """examples/ (without state/: the cluster says what runs), then production's pipelines
    arrive again under new names (more than the pools hold: research's borrowed GPUs and
    SageMaker's quota are contended), then one more research sweep."""
    work = tmp_path / "work"
    # without the running allocations, and the scenarios that name them
    shutil.copytree(REPO / "examples", work / "config",
                    ignore=shutil.ignore_patterns("state", "scenarios", "README.md"))
    pipelines = REPO / "examples" / "pipelines"
    again = {f"pipelines/{name}-2.yaml": (pipelines / f"{name}.yaml").read_text().replace(
        f"name: {name}", f"name: {name}-2", 1) for name in ("prod-training", "llm-finetune")}
    sweep = {"pipelines/research-sweep-2.yaml": (pipelines / "research-sweep.yaml").read_text().replace(
        "name: research-sweep", "name: research-sweep-2", 1)}
    seen = run_cycles(box, work, [{}, again, sweep], seed=1)
    assert seen[0]["running"] and seen[0]["in_progress"]
    assert seen[1]["waiting"] and seen[2]["waiting"]       # contended: the later cycles hold steps back


# ------------------------------------------------------------------ random contended platforms

def staged_platform(seed: int) -> list[dict[str, str]] | None:
    """A random contended platform of tests/test_gate_replay.py, without its running Allocations
    (the cluster says what runs), as three arrivals: the pools, policies and stacks with the
    pipelines of two teams, then the third team's pipeline, then a second pipeline of one team.
    None when the platform does not validate (a rejected step stops every cycle before it
    starts), or is not contended: its whole demand, planned at once, fits without a wait."""
    from test_gate_replay import random_platform

    from poolc.commands.validate import validate_paths

    docs = [d for d in random_platform(seed).split("---\n") if d.strip() and "kind: Allocation" not in d]
    pipelines = {d.split("name: ", 1)[1].split("}", 1)[0]: d for d in docs if "kind: Pipeline" in d}
    rest = "---\n".join(d for d in docs if "kind: Pipeline" not in d)
    teams = sorted(pipelines)
    rng = random.Random(seed)
    late, again = rng.choice(teams), rng.choice(teams)
    second = pipelines[again].replace(f"name: {again}", f"name: {again}-more", 1)
    # the late team arrives with its policies raised to priority 1000: the plan may preempt
    # what the others borrow, so the cycles stop work as well as start it
    raised = re.sub(rf"(metadata: {{name: {late}-p\d}}\nspec: {{subject: {late}-k8s, pool: p\d, priority: )\d+",
                    r"\g<1>1000", rest)
    stages = [{"platform.yaml": rest, **{f"pipelines/{t}.yaml": pipelines[t] for t in teams if t != late}},
              {"platform.yaml": raised, f"pipelines/{late}.yaml": pipelines[late]},
              {f"pipelines/{again}-more.yaml": second}]
    return stages if _validates_contended(stages, validate_paths) else None


def _validates_contended(stages: list[dict[str, str]], validate_paths) -> bool:   # type: ignore[no-untyped-def]
    import tempfile

    from poolc.commands.planning import plan_paths

    with tempfile.TemporaryDirectory() as scratch:
        for files in stages:
            for relative, text in files.items():
                (Path(scratch) / relative).parent.mkdir(parents=True, exist_ok=True)
                (Path(scratch) / relative).write_text(text)
            if not validate_paths([scratch]).ok:
                return False
        plan = plan_paths([scratch], state_file=str(Path(scratch) / "s.json")).plan
        return any(r.status == "queued" for r in plan.requests)


def _platforms(first: int, count: int) -> list[tuple[int, list[dict[str, str]]]]:
    found, seed = [], first
    while len(found) < count:
        stages = staged_platform(seed)
        if stages is not None:
            found.append((seed, stages))
        seed += 1
    return found


# 50 platforms in blocks of 5 (the first block in the edit loop); seeds are found in order from
# 10,000 per block, skipping the ones that do not validate or are not contended.
@pytest.mark.parametrize("block", blocks(10))
def test_random_contended_platforms_over_three_cycles(tmp_path, block):
    stops = waited = 0
    for seed, stages in _platforms(10_000 + 1_000 * block, 5):
        box = Box(tmp_path / f"box{seed}", seed=seed, clock=START)
        try:
            work = tmp_path / f"work{seed}"
            (work / "config").mkdir(parents=True)
            seen = run_cycles(box, work, stages, seed=seed)
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}: {exc}") from exc
        finally:
            box.stop()
        stops += sum(len(s["stopped"]) for s in seen)
        waited += any(s["waiting"] for s in seen)
    print(f"block {block}: {waited} of 5 platforms held steps back in a cycle, {stops} stops")
    assert waited >= 1, "no platform of the block held a step back in any cycle"


# ------------------------------------------------------------------ the box has teeth

def _displacing(work: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Two arrivals: hi (priority 100, 2 GPUs reserved) and lo (10) fill an 8-GPU pool; then hi
    asks 4 more GPUs, which the plan takes from lo's borrowed 6 by stopping it."""
    from test_kueue_replay import STACKS, pipeline, policy, pool

    first = pool(8) + policy("hi", 100, "{gpu: 2}") + policy("lo", 10) + STACKS
    return ({"platform.yaml": first, "hi.yaml": pipeline("hi", {"base": "{gpu_count: 2}"}).lstrip("-\n"),
             "lo.yaml": pipeline("lo", {"big": "{gpu_count: 6}"}).lstrip("-\n")},
            {"burst.yaml": pipeline("hi", {"burst": "{gpu_count: 4}"}).replace("name: hi}", "name: hi-burst}")
             .lstrip("-\n")})


def test_the_cycle_stops_before_it_admits(box, tmp_path):
    work = tmp_path / "work"
    (work / "config").mkdir(parents=True)
    seen = run_cycles(box, work, list(_displacing(work)), seed=0)
    assert seen[0]["running"].keys() == {"hi/base", "lo/big"}
    # (hi/base may have finished between the cycles: the checker completes work at random)
    assert seen[1]["stopped"] == {seen[0]["running"]["lo/big"]}
    assert "hi-burst/burst" in seen[1]["running"] and "lo/big" not in seen[1]["running"]


def test_the_old_per_namespace_order_lets_kueue_choose(tmp_path):
    """The loop docs/apply.md had (each namespace's Jobs and stop objects together, namespaces
    in name order) creates hi's new Job while lo's victim still holds its quota: Kueue
    preempts by its own order, which the box records and the cycle's checks refuse."""
    first, second = _displacing(tmp_path)
    box = Box(tmp_path / "box", clock=START)
    try:
        work = tmp_path / "work"
        (work / "config").mkdir(parents=True)
        for relative, text in first.items():
            (work / "config" / relative).write_text(text)
        cycle(box, work, START, "--allow-empty")
        for relative, text in second.items():
            (work / "config" / relative).write_text(text)
        env = box.env(START + INTERVAL)
        workloads = subprocess.run(["kubectl", "get", "workloads.kueue.x-k8s.io", "-A", "-o", "json"], env=env,
                                   capture_output=True, text=True, check=True).stdout
        (work / "workloads.json").write_text(workloads)
        for argv in (["state", "import", "config/", "--kueue", "workloads.json"],
                     ["apply", "config/", "--output-dir", "deploy"]):
            subprocess.run([POOLC, *argv], cwd=work, env=env, check=True, capture_output=True)
        stops = sorted((work / "deploy" / "kubernetes").glob("*/stop/*.yaml"))
        assert len(stops) == 1
        before = len(box.cluster().log)
        for namespace in sorted((work / "deploy" / "kubernetes").glob("ml-*")):
            for file in sorted(namespace.rglob("*.yaml")):
                subprocess.run(["kubectl", "apply", "-f", str(file)], env=env, check=True, capture_output=True)
        assert any(e.startswith("preempt ") for e in box.cluster().log[before:]), box.dump()
    finally:
        box.stop()


def _sagemaker_platform() -> tuple[dict[str, str], dict[str, str]]:
    """An 8-GPU SageMaker quota, all of it reserved to hi (priority 100): lo (priority 10)
    borrows half with a 4-GPU spot job while hi runs one; then hi asks 4 more, which the
    plan takes back from lo by stopping its training job."""
    def stack(team: str) -> str:
        return (f"apiVersion: poolc/v1\nkind: Stack\nmetadata: {{name: {team}-stack}}\nspec:\n"
                f"  orchestrator: {{name: {team}-k8s, flavor: kubernetes, namespace: ml-{team}, image: \"t:1\"}}\n"
                f"  step_operators:\n    - {{name: {team}-sm, flavor: sagemaker, region: us-east-1, "
                f"role_arn: \"arn:aws:iam::123456789012:role/R\", output_s3_uri: \"s3://acme-artifacts/{team}/\", "
                f"image: \"1.dkr.ecr.us-east-1.amazonaws.com/t:1\"}}\n")

    def job(name: str, team: str, steps: dict[str, bool]) -> str:
        body = "".join(f"    {s}:\n      step_operator: {team}-sm\n      settings: {{resources: {{gpu_count: 4, "
                       f"cpu_count: 8, memory: 64GB, preemptible: {str(p).lower()}}}}}\n" for s, p in steps.items())
        return f"apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {{name: {name}}}\nspec:\n  stack: {team}-stack\n" \
               f"  steps:\n{body}"

    platform = "---\n".join([
        "apiVersion: poolc/v1\nkind: ResourcePool\nmetadata: {name: sm}\nspec: {capacity: {gpu: 8, step_run: 4}}\n",
        "apiVersion: poolc/v1\nkind: Policy\nmetadata: {name: hi-sm}\n"
        "spec: {subject: hi-sm, pool: sm, priority: 100, reserved: {gpu: 8, step_run: 2}}\n",
        "apiVersion: poolc/v1\nkind: Policy\nmetadata: {name: lo-sm}\nspec: {subject: lo-sm, pool: sm, priority: 10}\n",
        stack("hi"), stack("lo")])
    return ({"platform.yaml": platform, "hi.yaml": job("hi", "hi", {"base": False}),
             "lo.yaml": job("lo", "lo", {"spot": True})},
            {"hi-more.yaml": job("hi-more", "hi", {"more": False})})


@pytest.mark.slow
def test_a_sagemaker_victim_is_stopped_and_its_place_taken(box, tmp_path):
    work = tmp_path / "work"
    (work / "config").mkdir(parents=True)
    first, second = _sagemaker_platform()
    checker = Checker(box, work)
    for index, files in enumerate((first, second)):
        for relative, text in files.items():
            (work / "config" / relative).write_text(text)
        before = len(box.cluster().log)
        done = cycle(box, work, START + index * INTERVAL, *(["--allow-empty"] if index == 0 else []))
        seen = checker.after_cycle(START + index * INTERVAL, before, done.stdout)
        if index == 0:
            assert set(seen["in_progress"]) == {"hi/base", "lo/spot"}
            victim = seen["in_progress"]["lo/spot"]
    assert f"stopped: training job {victim} (lo--spot)" in done.stdout
    assert set(seen["in_progress"]) == {"hi/base", "hi-more/more"}
    stopped = [j for j in box.training_jobs() if j.training_job_name == victim]
    assert stopped[0].training_job_status == "Stopped"
    # hi's jobs finish: the preempted step runs again, under a new name; when that run
    # finishes, it is recorded finished and never submitted again
    for name in (seen["in_progress"]["hi/base"], seen["in_progress"]["hi-more/more"]):
        checker.finished.add(checker.training[name])
        box.finish_training_job(name)
    for index in (2, 3):
        before = len(box.cluster().log)
        done = cycle(box, work, START + index * INTERVAL)
        seen = checker.after_cycle(START + index * INTERVAL, before, done.stdout)
        if index == 2:
            assert set(seen["in_progress"]) == {"lo/spot"} and seen["in_progress"]["lo/spot"] != victim
            checker.finished.add("lo/spot")
            box.finish_training_job(seen["in_progress"]["lo/spot"])
    assert seen["in_progress"] == {} and len(box.training_jobs()) == 4


@pytest.mark.slow
def test_a_cycle_that_cannot_free_the_quota_admits_nothing(box, tmp_path):
    """A victim that holds its quota past --wait stops the cycle (exit 1, one line) before
    any Job is applied; the next cycle finds the victim gone and admits the plan's Job."""
    work = tmp_path / "work"
    (work / "config").mkdir(parents=True)
    first, second = _displacing(work)
    for relative, text in first.items():
        (work / "config" / relative).write_text(text)
    cycle(box, work, START, "--allow-empty")
    for relative, text in second.items():
        (work / "config" / relative).write_text(text)
    before = len(box.cluster().log)
    env = {**box.env(START + INTERVAL), "CLUSTERBOX_EVICTION_LOOKS": "3"}
    done = subprocess.run([POOLC, "cycle", "config/", "--output-dir", "deploy", "--poll", "0", "--wait", "0"],
                          cwd=work, env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stdout + box.dump()
    assert "poolc: cycle stopped: after 0s, 1 stopped workload(s) still hold quota" in done.stderr
    log = box.cluster().log[before:]
    assert [e for e in log if e.startswith("deactivate ")] and not [e for e in log if e.startswith("create job")]
    checker = Checker(box, work)
    done = cycle(box, work, START + 2 * INTERVAL)
    assert any(e.startswith("create job ml-hi/hi-burst--burst") for e in box.cluster().log), box.dump()
    seen = checker.after_cycle(START + 2 * INTERVAL, len(box.cluster().log), done.stdout)
    assert "hi-burst/burst" in seen["running"] and "lo/big" not in seen["running"]


def test_a_cycle_without_kubectl_says_so(box, tmp_path):
    work = tmp_path / "work"
    # without the running allocations, and the scenarios that name them
    shutil.copytree(REPO / "examples", work / "config",
                    ignore=shutil.ignore_patterns("state", "scenarios", "README.md"))
    env = {**box.env(START), "POOLC_KUBECTL": str(tmp_path / "no-kubectl")}
    done = subprocess.run([POOLC, "cycle", "config/", "--output-dir", "deploy"], cwd=work, env=env,
                          capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"poolc: cycle stopped: observing Kueue: {tmp_path / 'no-kubectl'} is not on PATH\n"
    assert not (work / "deploy").exists() and not (work / "poolc.state.json").exists()
