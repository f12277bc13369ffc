"""`poolc cycle`: one reconcile cycle, in the one order that keeps the plan (docs/apply.md#the-reconcile-cycle).

The README's workflow, docs/apply.md and the action's ``apply`` mode all run this
command, so the loop users copy is the loop the tests run (tests/test_cluster_box.py).
Each step waits for the one before; any failure stops the cycle before it hands the
cluster anything that could run out of turn:

1. **Observe**: ``kubectl get workloads.kueue.x-k8s.io -A -o json`` and, when the
   inputs have SageMaker step operators, ``aws sagemaker list-training-jobs`` and
   ``describe-training-job`` per region (running jobs, and those changed in the last
   `RECENT_DAYS`), written beside the state; ``state import`` reads both.
2. **Apply**: ``poolc apply`` (files and state, one transaction).
3. **Stop**: the stop objects of every namespace, and ``stop-training-job`` for the
   plan's SageMaker victims, tagged ``poolc:stopped=preempted`` first (the next
   observation reads the tags of stopped jobs: a preempted step is planned again, a job
   stopped by someone else is finished).
4. **Wait** until the stopped Workloads, and those of the Jobs poolc no longer writes
   (deleted now), hold no quota: only then is there room for what the plan admits.
5. **Admit**: the priority classes, the Kueue objects, then the admitted Jobs one
   ``kubectl apply`` in arrival order (the order the runtime check and the ``kueue``
   strategy replay them in); each new training-job body is created once, under a
   name with the cycle's run id, never when its step already runs or the name exists.

Held-back work (``held/``) is never handed to anyone. ``kubectl`` and ``aws`` are
the ones on PATH (or ``POOLC_KUBECTL``/``POOLC_AWS``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ruamel.yaml import YAML

from ..cluster.reports import PREEMPTED_TAG
from ..diagnostics import Diagnostic
from ..vocabulary import Strategy, SubmitMode
from ..writer import write_atomic

# Training jobs are read back this long after they last changed (a Job's TTL is 7 days):
# long enough for a finished one to be recorded finished, without describing an
# account's whole history each cycle.
RECENT_DAYS = 8
STOP_FILE = re.compile(r"^kubernetes/[^/]+/stop/[^/]+\.workload\.yaml$")
JOB_FILE = re.compile(r"^kubernetes/[^/]+/[^/]+\.job\.yaml$")
BODY_FILE = re.compile(r"^sagemaker/[^/]+\.json$")
SAGEMAKER_RUNNING = ("InProgress", "Stopping")
MANAGED = "app.kubernetes.io/managed-by=poolc"
RUN_ID = re.compile(r"^[A-Za-z0-9]{1,20}$")


class CycleError(Exception):
    """Why the cycle stopped, and the diagnostics that say where (what it did before was printed)."""

    def __init__(self, message: str, diagnostics: Sequence[Diagnostic] = ()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


@dataclass
class Tools:
    """The commands a cycle calls, and how it waits."""

    kubectl: str = "kubectl"
    aws: str = "aws"
    poll_seconds: float = 2.0
    wait_seconds: float = 300.0


@dataclass
class CycleResult:
    done: list[str] = field(default_factory=list)        # one line per action, in order
    diagnostics: list[Diagnostic] = field(default_factory=list)


def _run(argv: Sequence[str], what: str) -> str:
    """A tool's standard output; its failure (or absence) as a CycleError naming ``what``."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise CycleError(f"{what}: {argv[0]} is not on PATH") from None
    if done.returncode != 0:
        tail = " ".join(done.stderr.strip().splitlines()[-3:])[:500]
        raise CycleError(f"{what}: {' '.join(argv[:4])} ... exited {done.returncode}: {tail}")
    return done.stdout


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise CycleError(f"{what}: not JSON ({exc})") from None


def _sagemaker_regions(config: Any) -> list[str]:
    from ..model import SageMakerComponent

    return sorted({op.region for e in config.stacks.values() for op in e.obj.spec.step_operators
                   if isinstance(op, SageMakerComponent)})


def observe_training_jobs(tools: Tools, regions: Iterable[str], now: datetime,
                          held: Iterable[str] = ()) -> list[tuple[str, dict]]:
    """DescribeTrainingJob of each training job that runs, changed in the last RECENT_DAYS,
    or was submitted for a step the state holds (``held``: their body names), however
    long ago it finished: that step must be recorded finished, never submitted again.
    Each with its region (DescribeTrainingJob does not say it)."""
    from ..cluster.reports import report_time

    found = []
    since = now - timedelta(days=RECENT_DAYS)
    prefixes = tuple(f"{name}-" for name in held)
    for region in regions:
        listed = _json(_run([tools.aws, "sagemaker", "list-training-jobs", "--region", region, "--output", "json"],
                            "listing training jobs"), "aws sagemaker list-training-jobs")
        for summary in listed.get("TrainingJobSummaries", []):
            recent = summary.get("LastModifiedTime")
            name = summary["TrainingJobName"]
            if summary.get("TrainingJobStatus") not in SAGEMAKER_RUNNING and not name.startswith(prefixes) and (
                    recent is None or report_time(recent) < since):
                continue
            described = _run([tools.aws, "sagemaker", "describe-training-job", "--region", region,
                              "--training-job-name", name, "--output", "json"], f"describing training job {name}")
            job = _json(described, "aws sagemaker describe-training-job")
            if job.get("TrainingJobStatus") in ("Stopping", "Stopped") and job.get("TrainingJobArn"):
                # was it preempted by a plan (PREEMPTED_TAG) or stopped by someone? Only the tags say
                tags = _run([tools.aws, "sagemaker", "list-tags", "--region", region, "--resource-arn",
                             job["TrainingJobArn"], "--output", "json"], f"reading the tags of {name}")
                job["Tags"] = _json(tags, "aws sagemaker list-tags").get("Tags", [])
            found.append((region, job))
    return found


def _quota_held(workloads: dict, keys: set[str]) -> list[str]:
    """The Workloads among ``keys`` (namespace/name) that still hold quota."""
    held = []
    for item in workloads.get("items", []):
        meta = item.get("metadata", {})
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        if key not in keys:
            continue
        conditions = (item.get("status") or {}).get("conditions") or []
        if any(c.get("type") in ("QuotaReserved", "Admitted") and c.get("status") == "True" for c in conditions) \
                and not any(c.get("type") == "Finished" and c.get("status") == "True" for c in conditions):
            held.append(key)
    return sorted(held)


def _owned_by(workloads: dict, jobs: set[tuple[str, str]]) -> set[str]:
    """The Workloads (namespace/name) that Kueue made for these Jobs (namespace, name)."""
    found = set()
    for item in workloads.get("items", []):
        meta = item.get("metadata", {})
        for owner in meta.get("ownerReferences") or []:
            if owner.get("kind") == "Job" and (meta.get("namespace", ""), owner.get("name")) in jobs:
                found.add(f"{meta.get('namespace', '')}/{meta.get('name', '')}")
    return found


def _get_workloads(tools: Tools) -> dict:
    return _json(_run([tools.kubectl, "get", "workloads.kueue.x-k8s.io", "-A", "-o", "json"], "observing Kueue"),
                 "kubectl get workloads")


def _wait_free(tools: Tools, keys: set[str], say: Callable[[str], None],
               sleep: Callable[[float], None] = time.sleep) -> None:
    """Poll the Workloads until none of ``keys`` holds quota, or give up (CycleError)."""
    if not keys:
        return
    deadline = time.monotonic() + tools.wait_seconds
    while True:
        held = _quota_held(_get_workloads(tools), keys)
        if not held:
            say(f"freed: the quota of {len(keys)} stopped or deleted workload(s)")
            return
        if time.monotonic() >= deadline:
            raise CycleError(f"after {tools.wait_seconds:g}s, {len(held)} stopped workload(s) still hold quota "
                             f"({', '.join(held[:5])}); no Job was applied, so nothing can take their place out "
                             "of turn: the next cycle starts from what the cluster then reports")
        sleep(tools.poll_seconds)


def _steps_of_allocations(state_file: str, step_ids: Iterable[str]) -> dict[str, str]:
    """Allocation name -> step id, from the state as the import left it (``spec.step``, else
    the step label apply writes)."""
    from ..domain.naming import step_label
    from ..state.records import STEP_LABEL, read_state

    by_label = {step_label(s): s for s in step_ids}
    found = {}
    for alloc in read_state(state_file).allocations:
        step = alloc.spec.step or by_label.get(alloc.metadata.labels.get(STEP_LABEL, ""))
        if step:
            found[alloc.metadata.name] = step
    return found


def _held_bodies(state_file: str, validation: Any) -> list[str]:
    """The body names (``TrainingJobName`` before the run id) of the steps the state holds."""
    from ..domain.naming import training_job_name

    held = set(_steps_of_allocations(state_file, (r.id for r in validation.requests)).values())
    return sorted(training_job_name(step) for step in held)


def submit_name(body_name: str, run_id: str) -> str:
    """``<TrainingJobName>-<run id>`` within SageMaker's 63 characters (docs/targets.md)."""
    return f"{body_name[:62 - len(run_id)].rstrip('-')}-{run_id}"


def _submittable(body: dict, run_id: str) -> dict:
    """The body with the run id in its name and its output and checkpoint paths."""
    found = json.loads(json.dumps(body))
    found["TrainingJobName"] = submit_name(body["TrainingJobName"], run_id)
    found["OutputDataConfig"]["S3OutputPath"] += f"/{run_id}"
    if "CheckpointConfig" in found:
        found["CheckpointConfig"]["S3Uri"] = found["OutputDataConfig"]["S3OutputPath"] + "/checkpoints"
    return found


def _region_of(body: dict) -> str:
    return next(t["Value"] for t in body["Tags"] if t["Key"] == "poolc:region")


def _training_job_exists(tools: Tools, region: str, name: str) -> bool:
    try:
        done = subprocess.run([tools.aws, "sagemaker", "describe-training-job", "--region", region,
                               "--training-job-name", name, "--output", "json"],
                              capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise CycleError(f"checking training job {name}: {tools.aws} is not on PATH") from None
    if done.returncode == 0:
        return True
    # SageMaker answers a name it does not know with ValidationException "Requested resource not found"
    if re.search(r"not found|could not find|ResourceNotFound", done.stderr, re.IGNORECASE):
        return False
    raise CycleError(f"checking training job {name}: aws exited {done.returncode}: {done.stderr.strip()[:300]}")


def run_cycle(paths: Sequence[str], output_dir: str, *, state_file: str, strategy: Strategy, submit: SubmitMode,
              run_id: str | None = None, tools: Tools | None = None, allow_empty: bool = False,
              say: Callable[[str], None] = lambda line: None) -> CycleResult:
    """One cycle (module doc). Raises CycleError, having handed the cluster nothing out of turn."""
    from .apply import apply_paths
    from .planning import resolve_now
    from .state_command import import_cluster
    from .validate import validate_paths

    tools = tools or Tools(kubectl=os.environ.get("POOLC_KUBECTL", "kubectl"),
                           aws=os.environ.get("POOLC_AWS", "aws"))
    result = CycleResult()

    def did(line: str) -> None:
        result.done.append(line)
        say(line)

    now = resolve_now(None)
    run = run_id or f"c{int(now.timestamp())}"
    if not RUN_ID.match(run):
        raise CycleError(f"run id {run!r}: 1-20 letters and digits (it goes into training job names)")
    validation = validate_paths(list(paths))
    if not validation.ok:
        raise CycleError("the configuration has errors; the cluster was not touched", validation.diagnostics)
    regions = _sagemaker_regions(validation.config)

    # 1. observe
    workloads_file, jobs_file = f"{state_file}.workloads.json", f"{state_file}.training-jobs.json"
    workloads = _get_workloads(tools)
    write_atomic(workloads_file, json.dumps(workloads, indent=2, sort_keys=True) + "\n")
    described = observe_training_jobs(tools, regions, now, _held_bodies(state_file, validation)) if regions else []
    training_jobs = [job for _, job in described]
    if regions:
        write_atomic(jobs_file, json.dumps(training_jobs, indent=2, sort_keys=True, default=str) + "\n")
    imported = import_cluster(list(paths), state_file, kueue=workloads_file, sagemaker=jobs_file if regions else None,
                              allow_empty=allow_empty)
    result.diagnostics = list(imported.diagnostics)
    if not imported.ok:
        raise CycleError(f"state import: {imported.refused}", imported.diagnostics)
    did(f"observed: {len(workloads.get('items', []))} workload(s), {len(training_jobs)} training job(s); "
        f"{len(imported.finished)} step(s) finished since the last cycle")
    steps_of = _steps_of_allocations(state_file, (r.id for r in validation.requests))
    running_jobs: dict[str, tuple[str, dict]] = {}   # step -> (region, the training job that runs it)
    for region, job in described:
        env = job.get("Environment") or {}
        if job.get("TrainingJobStatus") in SAGEMAKER_RUNNING and env.get("POOLC_PIPELINE") and env.get("POOLC_STEP"):
            running_jobs[f"{env['POOLC_PIPELINE']}/{env['POOLC_STEP']}"] = (region, job)

    # 2. apply
    applied = apply_paths(list(paths), output_dir, state_file=state_file, strategy=strategy, submit=submit)
    result.diagnostics += applied.diagnostics
    if not applied.ok or applied.plan is None:
        raise CycleError(f"apply: {applied.refused}", applied.diagnostics)
    plan = applied.plan
    did(f"applied: {sum(r.status == 'allocated' for r in plan.requests)} allocated, "
        f"{sum(r.status == 'queued' for r in plan.requests)} queued, {len(plan.preempted)} preempted")
    files = applied.files

    def path(relative: str) -> str:
        return os.path.join(output_dir, relative)

    # 3. stop: every namespace's stop objects, and SageMaker's victims
    present = {f"{w['metadata'].get('namespace', '')}/{w['metadata']['name']}" for w in workloads.get("items", [])}
    yaml = YAML(typ="safe")
    stops = []
    for relative in sorted(p for p in files if STOP_FILE.match(p)):
        meta = yaml.load(files[relative])["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        if key in present:
            stops.append((relative, key))
        else:
            did(f"not stopped: {key} is gone already ({relative})")
    if stops:
        _run([tools.kubectl, "apply", *[a for r, _ in stops for a in ("-f", path(r))]], "applying stop objects")
        for _, key in stops:
            did(f"stopped: {key}")
    for victim in plan.preempted:
        step = steps_of.get(victim.id, "")
        if step not in running_jobs:
            continue
        region, job = running_jobs[step]
        key, value = PREEMPTED_TAG
        _run([tools.aws, "sagemaker", "add-tags", "--region", region, "--resource-arn", job["TrainingJobArn"],
              "--tags", f"Key={key},Value={value}"], f"tagging training job {job['TrainingJobName']} as preempted")
        _run([tools.aws, "sagemaker", "stop-training-job", "--region", region,
              "--training-job-name", job["TrainingJobName"]], f"stopping training job {job['TrainingJobName']}")
        did(f"stopped: training job {job['TrainingJobName']} ({victim.id})")

    # 4. delete the Jobs poolc no longer writes, then wait until no victim holds quota
    written_jobs = {}
    for relative in (p for p in files if JOB_FILE.match(p)):
        meta = yaml.load(files[relative])["metadata"]
        written_jobs[(meta["namespace"], meta["name"])] = relative
    listed = _json(_run([tools.kubectl, "get", "jobs", "-A", "-l", MANAGED, "-o", "json"], "listing Jobs"),
                   "kubectl get jobs")
    stale = sorted({(j["metadata"]["namespace"], j["metadata"]["name"]) for j in listed.get("items", [])}
                   - set(written_jobs))
    for namespace in sorted({ns for ns, _ in stale}):
        names = [n for ns, n in stale if ns == namespace]
        _run([tools.kubectl, "delete", "job", "-n", namespace, "--ignore-not-found", *names],
             f"deleting Jobs in {namespace}")
        for name in names:
            did(f"deleted: job {namespace}/{name}")
    _wait_free(tools, {k for _, k in stops} | _owned_by(workloads, set(stale)), did)

    # 5. admit: priorities, Kueue objects, then the Jobs in arrival order; new training jobs once
    first = [p for p in ("kueue/priorities.yaml", "kubernetes/priorityclasses.yaml") if p in files]
    kueue = sorted(p for p in files if p.startswith("kueue/") and p not in first)
    for group, what in ((first, "priorities"), (kueue, "Kueue objects")):
        if group:
            _run([tools.kubectl, "apply", *[a for p in group for a in ("-f", path(p))]], f"applying {what}")
            did(f"applied: {len(group)} file(s) of {what}")
    arrival = {r.id: i for i, r in enumerate(validation.requests)}
    ordered = []
    for relative in written_jobs.values():
        labels = yaml.load(files[relative])["metadata"].get("labels") or {}
        step = f"{labels.get('poolc.dev/pipeline')}/{labels.get('poolc.dev/step')}"
        ordered.append((arrival.get(step, len(arrival)), relative))
    ordered.sort()
    if ordered:
        _run([tools.kubectl, "apply", *[a for _, r in ordered for a in ("-f", path(r))]], "applying Jobs")
        did(f"applied: {len(ordered)} Job(s), in arrival order")
    for relative in sorted(p for p in files if BODY_FILE.match(p)):
        body = json.loads(files[relative])
        step = f"{body['Environment']['POOLC_PIPELINE']}/{body['Environment']['POOLC_STEP']}"
        if step in running_jobs:
            continue   # submitted by an earlier cycle, and still running
        region = _region_of(body)
        wanted = _submittable(body, run)
        if _training_job_exists(tools, region, wanted["TrainingJobName"]):
            did(f"not submitted: training job {wanted['TrainingJobName']} exists already (this run id)")
            continue
        submitted = f"{state_file}.{wanted['TrainingJobName']}.json"
        write_atomic(submitted, json.dumps(wanted, indent=2, sort_keys=True) + "\n")
        try:
            _run([tools.aws, "sagemaker", "create-training-job", "--region", region,
                  "--cli-input-json", f"file://{os.path.abspath(submitted)}"],
                 f"submitting {relative}")
        finally:
            os.unlink(submitted)
        did(f"submitted: training job {wanted['TrainingJobName']} ({relative})")
    return result
