"""`poolc state list | rm | import`: the state follows what really runs.

- ``list``: the allocations the state holds.
- ``rm NAME...``: a step (or allocation) finished: its allocation leaves the state
  and releases its capacity, and the step is not requested again until its
  inputs change (the state remembers the digest of the inputs it ran with).
- ``import``: refresh the running allocations from what the cluster reports:
  Kueue Workloads (``kubectl get workloads.kueue.x-k8s.io -A -o json``) and
  SageMaker training jobs (``aws sagemaker describe-training-job`` outputs). Jobs
  are matched to steps by the labels and environment poolc puts on them;
  admitted or running ones stay or appear with their real start times, finished,
  failed or evicted ones leave. Unknown or malformed entries are diagnostics, and
  an import with any error changes nothing.

Every change is one atomic write of the state under the state lock.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import diagnostics as d
from .diagnostics import Diagnostic
from .domain.naming import allocation_name, local_queue_name, step_label
from .lock import state_lock
from .model import Allocation, parse_timestamp
from .state import (
    INPUTS_LABEL,
    STEP_LABEL,
    StateRead,
    allocation_json,
    dump_state,
    format_time,
    new_allocation,
    read_state,
)
from .writer import write_atomic

RUNNING, GONE = "running", "gone"


@dataclass
class StateChange:
    """What a state command did, or why it did nothing."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    refused: str | None = None
    removed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.refused is None and not any(x.severity == "error" for x in self.diagnostics)


def _raw(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    return data if isinstance(data, dict) else {}


def _write(path: str, root: Mapping[str, Any], allocations: Iterable[Allocation]) -> None:
    state = dict(root)
    state["allocations"] = [allocation_json(a) for a in sorted(allocations, key=lambda a: a.metadata.name)]
    write_atomic(path, dump_state(state))


def _readable(path: str) -> tuple[StateRead, str | None]:
    state = read_state(path)
    if state.missing:
        return state, f"there is no state file {path}"
    if not state.ok:
        return state, f"the state file {path} is not valid; fix it first"
    return state, None


def list_allocations(path: str) -> tuple[StateRead, list[dict[str, Any]]]:
    """The state's allocations as rows: name, step, subject, pool, preemptible, started_at, holds."""
    state = read_state(path)
    rows = [{"name": a.metadata.name, "step": a.metadata.labels.get(STEP_LABEL), "subject": a.spec.subject,
             "pool": a.spec.pool, "preemptible": a.spec.preemptible, "started_at": a.spec.started_at,
             "holds": dict(sorted(a.spec.holds.items()))} for a in state.allocations]
    return state, rows


def remove(path: str, names: Iterable[str]) -> StateChange:
    """Release finished steps: NAME is an allocation name or a step id (``pipeline/step``)."""
    change = StateChange()
    with state_lock(path):
        state, problem = _readable(path)
        change.diagnostics = list(state.diagnostics)
        if problem:
            change.refused = problem
            return change
        by_name = {a.metadata.name: a for a in state.allocations}
        wanted = []
        for name in names:
            found = by_name.get(name)
            if found is None and "/" in name:   # a step id
                found = by_name.get(allocation_name(name))
            if found is None:
                known = ", ".join(sorted(by_name)[:8]) or "none"
                change.refused = f"no allocation {name!r} in {path} (it holds: {known})"
                return change
            wanted.append(found)
        root = _raw(path)
        finished = dict(root.get("finished", {}))
        for alloc in wanted:
            label, inputs = alloc.metadata.labels.get(STEP_LABEL), alloc.metadata.labels.get(INPUTS_LABEL)
            if label and inputs:
                finished[label] = inputs
            change.removed.append(alloc.metadata.name)
        if finished:
            root["finished"] = dict(sorted(finished.items()))
        _write(path, root, [a for a in state.allocations if a.metadata.name not in change.removed])
    return change


# --- what the cluster reports ----------------------------------------------------

@dataclass(frozen=True)
class Seen:
    """A job the cluster reports, matched to a step."""

    step: str                     # request id
    status: str                   # RUNNING or GONE
    started_at: datetime | None
    file: str                     # the report it came from
    where: str                    # for messages: "items[3]"
    queue: str | None = None      # the LocalQueue a Kueue workload was submitted to


def _condition(conditions: list[Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in conditions if isinstance(c, dict) and c.get("type") == kind
                 and c.get("status") == "True"), None)


def _time(text: Any) -> datetime | None:
    try:
        return parse_timestamp(text) if isinstance(text, str) else None
    except ValueError:
        return None


def kueue_workloads(file: str, data: Any) -> tuple[list[Seen], list[Diagnostic]]:
    """Workloads of `kubectl get workloads.kueue.x-k8s.io -A -o json` (a List, or one Workload)."""
    items = data.get("items") if isinstance(data, dict) and data.get("kind") == "List" else [data]
    if not isinstance(items, list):
        return [], [_at(file, "a Kueue Workload list (kubectl get workloads.kueue.x-k8s.io -A -o json)")]
    found, problems = [], []
    for index, item in enumerate(items):
        where = f"items[{index}]"
        if not isinstance(item, dict) or item.get("kind") != "Workload" \
                or not str(item.get("apiVersion", "")).startswith("kueue.x-k8s.io/"):
            problems.append(_at(file, f"{where} is not a kueue.x-k8s.io Workload"))
            continue
        podsets = item.get("spec", {}).get("podSets") or [{}]
        labels = podsets[0].get("template", {}).get("metadata", {}).get("labels", {}) if isinstance(podsets[0], dict) \
            else {}
        pipeline, step = labels.get("poolc.dev/pipeline"), labels.get("poolc.dev/step")
        if labels.get("app.kubernetes.io/managed-by") != "poolc" or not pipeline or not step:
            problems.append(_at(file, f"{where} ({item.get('metadata', {}).get('name', '?')}) carries no poolc "
                                "pipeline and step labels: not a Job poolc generated", severity="warning"))
            continue
        conditions = item.get("status", {}).get("conditions", []) or []
        admitted = _condition(conditions, "Admitted")
        gone = any(_condition(conditions, kind) for kind in ("Finished", "Evicted", "Preempted"))
        queue = item.get("spec", {}).get("queueName")
        found.append(Seen(f"{pipeline}/{step}", RUNNING if admitted and not gone else GONE,
                          _time(admitted.get("lastTransitionTime")) if admitted else None, file, where,
                          queue if isinstance(queue, str) else None))
    return found, problems


SAGEMAKER_RUNNING = {"InProgress", "Stopping"}


def sagemaker_jobs(file: str, data: Any) -> tuple[list[Seen], list[Diagnostic]]:
    """`aws sagemaker describe-training-job` outputs: a JSON array of them, or
    ``{"TrainingJobs": [...]}``; matched by the POOLC_PIPELINE/POOLC_STEP
    environment poolc writes into every body."""
    items = data.get("TrainingJobs") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return [], [_at(file, "a JSON array of `aws sagemaker describe-training-job` outputs")]
    found, problems = [], []
    for index, item in enumerate(items):
        where = f"[{index}]"
        if not isinstance(item, dict) or "TrainingJobStatus" not in item or "TrainingJobName" not in item:
            problems.append(_at(file, f"{where} is not a describe-training-job output (TrainingJobName, "
                                "TrainingJobStatus)"))
            continue
        env = item.get("Environment") or {}
        pipeline, step = env.get("POOLC_PIPELINE"), env.get("POOLC_STEP")
        if not pipeline or not step:
            problems.append(_at(file, f"{where} ({item['TrainingJobName']}) has no POOLC_PIPELINE/POOLC_STEP "
                                "environment: not a body poolc generated", severity="warning"))
            continue
        status = RUNNING if item["TrainingJobStatus"] in SAGEMAKER_RUNNING else GONE
        started = _time(item.get("TrainingStartTime")) or _time(item.get("CreationTime"))
        found.append(Seen(f"{pipeline}/{step}", status, started, file, where))
    return found, problems


def _at(file: str, message: str, severity: str = "error") -> Diagnostic:
    return Diagnostic(file, 1, 1, 1, 1, d.S003.id, "error" if severity == "error" else "warning", message)


MAX_REPORT_BYTES = 256 * 1024 * 1024   # kubectl's JSON for 50,000 Workloads is about 200 MB


def _load(file: str) -> tuple[Any, list[Diagnostic]]:
    from .writer import read_bytes  # a regular file of bounded size: a FIFO is refused, not waited on

    try:
        return json.loads(read_bytes(file, MAX_REPORT_BYTES, follow=True).decode("utf-8")), []
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Diagnostic(file, 1, 1, 1, 1, d.Y001.id, "error", f"cannot read it: {exc}")]
    except json.JSONDecodeError as exc:
        return None, [Diagnostic(file, exc.lineno, exc.colno, exc.lineno, exc.colno, d.Y002.id, "error",
                                 f"not valid JSON: {exc.msg}")]
    except (RecursionError, ValueError) as exc:
        return None, [Diagnostic(file, 1, 1, 1, 1, d.Y002.id, "error", f"not a cluster report: {exc}")]


def import_cluster(paths: Iterable[str], state_path: str, *, kueue: str | None = None,
                   sagemaker: str | None = None) -> StateChange:
    """Refresh the running allocations from the cluster's reports (module doc)."""
    from .plan import plan_paths

    change = StateChange()
    seen: list[Seen] = []
    for file, reader in ((kueue, kueue_workloads), (sagemaker, sagemaker_jobs)):
        if file is None:
            continue
        data, problems = _load(file)
        change.diagnostics += problems
        if data is not None:
            found, problems = reader(file, data)
            seen += found
            change.diagnostics += problems
    if not change.ok:
        change.refused = "the cluster's reports have errors; nothing was imported"
        return change
    with state_lock(state_path):
        planned = plan_paths(paths, state_file=state_path, runtime_check=False)
        if not planned.state.ok:
            change.refused = f"the state file {state_path} is not valid; fix it first"
            return change
        steps = {r.id: r for r in planned.plan.requests}
        unknown = [s for s in seen if s.step not in steps]
        change.diagnostics += [_at(s.file, f"{s.where}: step {s.step} is not in the inputs given", severity="warning")
                               for s in unknown]
        reported = {s.step: s for s in seen if s.step in steps}
        allocations = {a.metadata.name: a for a in planned.state.allocations}
        kinds = {"kueue": kueue is not None, "sagemaker": sagemaker is not None}
        for step_id, item in sorted(reported.items()):
            request = steps[step_id]
            name = allocation_name(step_id)
            if item.status == GONE:
                if allocations.pop(name, None) is not None:
                    change.removed.append(name)
                continue
            current = allocations.get(name)
            if current is not None:
                spec = current.spec.model_copy(update={"started_at": format_time(item.started_at)
                                                       if item.started_at else current.spec.started_at})
                allocations[name] = current.model_copy(update={"spec": spec})
                change.kept.append(name)
            elif request.requester and (placed := _placement(planned, request, item)) is not None:
                allocations[name] = new_allocation(step_id, request.requester, *placed,
                                                   request.preemptible, request.demand, started_at=item.started_at)
                change.added.append(name)
        # allocations of steps on a reported target that the cluster no longer runs
        by_label = {step_label(s): s for s in steps}
        for name, alloc in list(allocations.items()):
            label = alloc.metadata.labels.get(STEP_LABEL)
            owner = by_label.get(label) if label else None
            if owner is None or owner in reported:
                continue
            target = "sagemaker" if _is_sagemaker(planned, steps[owner].requester) else "kueue"
            if kinds[target]:
                allocations.pop(name)
                change.removed.append(name)
        _write(state_path, _raw(state_path) if not planned.state.missing else
               {"format_version": 1, "inputs_digest": None, "files": {}}, allocations.values())
    return change


def _placement(planned: Any, request: Any, item: Seen) -> tuple[str, str] | None:
    """(pool, policy) a step the cluster runs holds: the policy of the Kueue queue it was
    admitted from (the plan may have queued it, or chosen another pool), else the
    plan's allocation of it."""
    if item.queue is not None:
        for policy in planned.problem.policies:
            if policy.subject == request.requester and local_queue_name(policy.name, request.preemptible) == item.queue:
                return policy.pool, policy.name
    if request.pool and request.policy:
        return request.pool, request.policy
    return None


def _is_sagemaker(planned: Any, requester: str | None) -> bool:
    from .model import SageMakerComponent

    for entry in planned.validation.config.stacks.values():
        for component in entry.obj.spec.step_operators:
            if component.name == requester:
                return isinstance(component, SageMakerComponent)
    return False
