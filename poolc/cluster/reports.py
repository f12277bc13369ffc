"""The cluster's reports, read through typed models: what runs, what finished, what waits.

Two reports are understood (docs/cli.md#state-import):

- Kueue Workloads, ``kubectl get workloads.kueue.x-k8s.io -A -o json`` (a List, or
  one Workload);
- SageMaker training jobs, a JSON array of ``aws sagemaker describe-training-job``
  outputs (or ``{"TrainingJobs": [...]}``); a stopped job tagged ``poolc:stopped=preempted``
  (``Tags``, as ``poolc cycle`` adds them) was preempted by a plan and waits again.

Reports come from tools and clusters poolc does not control, so every entry is
validated: a malformed one (``spec: null``, ``podSets: 5``, a ``conditions``
object, ``TrainingJobStatus: null``, a timestamp without a time zone or outside
1970-9999) is an error at the entry's position, naming the file and the entry's
index and name; an entry listed twice is an error too. Nothing here decides what
the state becomes (``poolc.cluster.observe`` does); this module only turns bytes into
``Observation`` values or diagnostics.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from .. import diagnostics as d
from ..diagnostics import Diagnostic
from ..kueuesim.quantity import parse_quantity
from ..model import MAX_INT
from ..text.jsonpos import JsonScan, bounded_int

KUEUE, SAGEMAKER = "kueue", "sagemaker"
RUNNING, FINISHED, PENDING = "running", "finished", "pending"
MAX_REPORT_BYTES = 256 * 1024 * 1024
EARLIEST_YEAR, LATEST_YEAR = 1970, 9999
MAX_COUNT = 10**6            # pods of one pod set
LABEL_PREFIX = "poolc.dev/"
MANAGED_BY = ("app.kubernetes.io/managed-by", "poolc")
SAGEMAKER_RUNNING = {"InProgress", "Stopping"}
# `poolc cycle` tags a training job it stops for a plan (Key, Value) before it stops it: such a
# job was preempted, not finished, and its step is planned again.
PREEMPTED_TAG = ("poolc:stopped", "preempted")


# --- timestamps ------------------------------------------------------------------

def report_time(value: Any) -> datetime:
    """An aware UTC datetime from an RFC 3339 string or epoch seconds (what the AWS CLI
    prints with ``cli_timestamp_format = none``). A time without a zone is refused
    rather than read in this machine's zone; so is a year outside 1970-9999."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError("a timestamp must be an RFC 3339 string or epoch seconds")
    if isinstance(value, str):
        text = value.strip()
        try:
            when = datetime.fromisoformat(text.replace("z", "Z").replace("t", "T"))
        except ValueError:
            raise ValueError(f"{value[:40]!r} is not an RFC 3339 timestamp") from None
        if when.tzinfo is None:
            raise ValueError(f"{value[:40]!r} has no time zone; poolc does not guess one (add Z or an offset)")
    else:
        if not (0 <= value < 253402300800):   # 1970-01-01 .. 9999-12-31
            raise ValueError(f"{value!r} epoch seconds is outside {EARLIEST_YEAR}-{LATEST_YEAR}")
        when = datetime.fromtimestamp(value, tz=UTC)
    try:
        when = when.astimezone(UTC)
    except (OverflowError, ValueError):
        raise ValueError(f"{value!r} is outside {EARLIEST_YEAR}-{LATEST_YEAR}") from None
    if not EARLIEST_YEAR <= when.year <= LATEST_YEAR:
        raise ValueError(f"{value!r} is outside {EARLIEST_YEAR}-{LATEST_YEAR}")
    return when


ReportTime = Annotated[datetime, BeforeValidator(report_time)]


class _Report(BaseModel):
    """Fields poolc reads are typed and checked; everything else is ignored."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


# --- Kueue -----------------------------------------------------------------------

Quantity = str | int


class Resources(_Report):
    requests: dict[str, Quantity] | None = None
    limits: dict[str, Quantity] | None = None


class Container(_Report):
    resources: Resources | None = None


class PodSpec(_Report):
    containers: list[Container] = Field(default_factory=list)


class TemplateMeta(_Report):
    labels: dict[str, str] | None = None


class PodTemplate(_Report):
    metadata: TemplateMeta | None = None
    spec: PodSpec | None = None


class PodSet(_Report):
    name: str = "main"
    count: int = Field(default=1, ge=0, le=MAX_COUNT)
    template: PodTemplate


class WorkloadSpec(_Report):
    podSets: list[PodSet] = Field(min_length=1, max_length=32)
    queueName: str | None = None
    active: bool | None = None


class Condition(_Report):
    type: str
    status: Literal["True", "False", "Unknown"]
    lastTransitionTime: ReportTime | None = None
    reason: str | None = None


class Assignment(_Report):
    name: str = "main"
    count: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    resourceUsage: dict[str, Quantity] | None = None


class Admission(_Report):
    clusterQueue: str = Field(min_length=1)
    podSetAssignments: list[Assignment] | None = None


class WorkloadStatus(_Report):
    conditions: list[Condition] | None = None
    admission: Admission | None = None


class ObjectMeta(_Report):
    name: str = Field(min_length=1, max_length=253)
    namespace: str = Field(default="", max_length=63)


class Workload(_Report):
    apiVersion: str = Field(pattern=r"^kueue\.x-k8s\.io/")
    kind: Literal["Workload"]
    metadata: ObjectMeta
    spec: WorkloadSpec
    status: WorkloadStatus | None = None


# --- SageMaker -------------------------------------------------------------------

class Tag(_Report):
    Key: str
    Value: str


class TrainingJob(_Report):
    """The part of DescribeTrainingJob's output poolc reads (botocore's shape names
    the fields; the AWS CLI prints timestamps as strings)."""

    TrainingJobName: str = Field(min_length=1, max_length=63)
    TrainingJobStatus: Literal["InProgress", "Completed", "Failed", "Stopping", "Stopped"]
    CreationTime: ReportTime
    TrainingStartTime: ReportTime | None = None
    TrainingEndTime: ReportTime | None = None
    Environment: dict[str, str] | None = None
    Tags: list[Tag] | None = None     # not DescribeTrainingJob's: `poolc cycle` adds ListTags' answer
    RoleArn: str | None = Field(default=None, max_length=2048)


# --- what a report says ----------------------------------------------------------

@dataclass(frozen=True)
class Observation:
    """One entry of a report, in poolc's terms."""

    kind: str                         # KUEUE | SAGEMAKER
    file: str
    where: str                        # "items[3] (ml-prod/job-train-1a2b3)": for messages
    span: tuple[int, int, int, int]
    name: str                         # namespace/name of a Workload, the training job's name
    status: str                       # RUNNING | FINISHED | PENDING
    step: str | None = None           # "<pipeline>/<step>" for poolc's own work; None for foreign work
    started_at: datetime | None = None
    queue: str | None = None          # the ClusterQueue a Workload was admitted through (else its LocalQueue)
    inputs: str | None = None         # the step inputs digest the job ran with, when it says
    pool: str | None = None           # SageMaker: POOLC_POOL / POOLC_POLICY of the body
    policy: str | None = None
    holds: dict[str, int] = field(default_factory=dict)   # a running Workload: what it holds, in request keys
    role: str | None = None           # SageMaker: the RoleArn the job runs as
    warning: str | None = None        # why the entry is read as foreign work though it looks like poolc's


@dataclass
class Report:
    """A report file read: its kind, its entries, and what was wrong in it."""

    file: str
    kind: str | None
    observations: list[Observation] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    entries: int = 0                  # entries the file lists, valid or not

    @property
    def ok(self) -> bool:
        return not any(x.severity == "error" for x in self.diagnostics)


def _diagnostic(file: str, rule: d.Rule, message: str, span: tuple[int, int, int, int] = (1, 1, 1, 1)) -> Diagnostic:
    return Diagnostic(file, *span, rule.id, rule.severity, message)


def _read_bytes(path: str) -> bytes:
    """A regular file's bytes, bounded, never through a symbolic link: the one reader of
    plans and reports (poolc.writer.read_bytes); a FIFO, device, directory or link is an
    OSError, not a hang or another file's content."""
    from ..writer import read_bytes

    return read_bytes(path, MAX_REPORT_BYTES)


def load_report(path: str, kind: str | None = None) -> Report:
    """Read one report file. ``kind`` (KUEUE or SAGEMAKER) says what it must be; None
    recognises it from its content (``plan --observed``)."""
    report = Report(path, kind)
    try:
        text = _read_bytes(path).decode("utf-8-sig")
        data = json.loads(text, parse_int=bounded_int)
    except OSError as exc:
        report.diagnostics.append(_diagnostic(path, d.Y001, f"cannot read the report: {exc.strerror or exc}"))
        return report
    except UnicodeDecodeError:
        report.diagnostics.append(_diagnostic(path, d.Y001, "the report is not valid UTF-8"))
        return report
    except json.JSONDecodeError as exc:
        span = (exc.lineno, exc.colno, exc.lineno, exc.colno)
        report.diagnostics.append(_diagnostic(path, d.Y002, f"the report is not valid JSON: {exc.msg}", span))
        return report
    except RecursionError:
        report.diagnostics.append(_diagnostic(path, d.Y006, "the report nests too deeply"))
        return report
    except ValueError as exc:
        report.diagnostics.append(_diagnostic(path, d.Y002, f"the report is not valid JSON: {exc}"))
        return report
    if report.kind is None:
        report.kind = recognise(data)
        if report.kind is None:
            report.diagnostics.append(_diagnostic(path, d.O001, "not a report poolc reads: give `kubectl get "
                                                  "workloads.kueue.x-k8s.io -A -o json` output or a JSON array of "
                                                  "`aws sagemaker describe-training-job` outputs"))
            return report
    scan: JsonScan | None = None

    def span_of(path_: tuple) -> tuple[int, int, int, int]:
        nonlocal scan
        if scan is None:
            try:
                scan = JsonScan(text)
            except (ValueError, IndexError, RecursionError):
                return (1, 1, 1, 1)
        while path_ and path_ not in scan.values:
            path_ = path_[:-1]
        return scan.values.get(path_, (1, 1, 1, 1))

    reader = _kueue if report.kind == KUEUE else _sagemaker
    reader(report, data, span_of)
    return report


def recognise(data: Any) -> str | None:
    """KUEUE, SAGEMAKER or None, from a report's top level."""
    if isinstance(data, dict):
        if data.get("kind") in ("List", "WorkloadList", "Workload"):
            return KUEUE
        if "TrainingJobs" in data or "TrainingJobName" in data:
            return SAGEMAKER
        return None
    if isinstance(data, list):
        if all(isinstance(x, dict) and "TrainingJobName" in x for x in data):
            return SAGEMAKER
        if all(isinstance(x, dict) and x.get("kind") == "Workload" for x in data):
            return KUEUE
    return None


def _problem(error: Any) -> tuple[tuple, str]:
    """(path inside the entry, one sentence) of pydantic's first error."""
    location = tuple(error.get("loc", ()))
    where = ".".join(str(x) for x in location) or "the entry"
    message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    if error.get("type") == "missing":
        message = "is missing"
    return location, f"{where}: {message}"


def _items(report: Report, data: Any, key: str, what: str, span_of: Any) -> list[tuple[tuple, Any]] | None:
    base: tuple | None
    if isinstance(data, dict) and key in data:
        items, base = data[key], (key,)
    elif isinstance(data, dict):
        items, base = [data], None
    else:
        items, base = data, ()
    if not isinstance(items, list):
        report.diagnostics.append(_diagnostic(report.file, d.O001, f"{key} must be a list of {what}",
                                              span_of((key,))))
        return None
    report.entries = len(items)
    if base is None:
        return [((), items[0])]
    return [((*base, index), item) for index, item in enumerate(items)]


def _label(path: tuple, name: str | None) -> str:
    index = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" if i else str(p) for i, p in enumerate(path))
    index = index or "the report"
    return f"{index} ({name})" if name else index


def _kueue(report: Report, data: Any, span_of: Any) -> None:
    entries = _items(report, data, "items", "Workloads", span_of)
    if entries is None:
        return
    seen: dict[str, str] = {}
    for path, item in entries:
        meta = item.get("metadata") if isinstance(item, dict) else None
        raw_name = meta.get("name") if isinstance(meta, dict) and isinstance(meta.get("name"), str) else None
        namespace = meta.get("namespace") if isinstance(meta, dict) and isinstance(meta.get("namespace"), str) else ""
        shown = f"{namespace}/{raw_name}" if raw_name and namespace else raw_name
        where = _label(path, shown)
        if not isinstance(item, dict) or item.get("kind") != "Workload":
            report.diagnostics.append(_diagnostic(report.file, d.O001, f"{where} is not a kueue.x-k8s.io "
                                                  "Workload", span_of(path)))
            continue
        try:
            workload = Workload.model_validate(item)
        except ValidationError as exc:
            location, message = _problem(exc.errors()[0])
            report.diagnostics.append(_diagnostic(report.file, d.O001, f"{where}: malformed Workload: {message}",
                                                  span_of(path + location)))
            continue
        key = f"{workload.metadata.namespace}/{workload.metadata.name}"
        if key in seen:
            report.diagnostics.append(_diagnostic(report.file, d.O001, f"{where}: Workload {key} is listed twice "
                                                  f"(also {seen[key]}); poolc does not guess which one is current",
                                                  span_of(path)))
            continue
        seen[key] = where
        observed = _workload(report.file, where, span_of(path), key, workload)
        if isinstance(observed, str):   # one entry that contradicts itself halts nobody's import (#42)
            report.diagnostics.append(_diagnostic(report.file, d.O002, f"{where}: {observed}; ignored",
                                                  span_of(path)))
        else:
            if observed.warning:
                report.diagnostics.append(_diagnostic(report.file, d.O002, f"{where}: {observed.warning}",
                                                      span_of(path)))
            report.observations.append(observed)


def _workload(file: str, where: str, span: tuple[int, int, int, int], key: str,
              workload: Workload) -> Observation | str:
    """The Observation of one valid Workload, or why it contradicts itself."""
    conditions = (workload.status.conditions if workload.status else None) or []
    by_type: dict[str, Condition] = {}
    for condition in conditions:
        if condition.type in by_type:
            return f"condition {condition.type} is listed twice"
        by_type[condition.type] = condition

    def true(kind: str) -> Condition | None:
        found = by_type.get(kind)
        return found if found is not None and found.status == "True" else None

    admitted = true("Admitted")
    admission = workload.status.admission if workload.status else None
    if true("Finished"):
        status = FINISHED
    elif admitted and not true("Evicted") and not true("Preempted") and workload.spec.active is not False:
        status = RUNNING
    else:
        status = PENDING
    if status == RUNNING and admission is None:
        return "it is Admitted but has no status.admission (which ClusterQueue admitted it?)"
    labels = {}
    first = workload.spec.podSets[0].template.metadata
    if first is not None and first.labels:
        labels = first.labels
    pipeline, step = labels.get(f"{LABEL_PREFIX}pipeline"), labels.get(f"{LABEL_PREFIX}step")
    ours = labels.get(MANAGED_BY[0]) == MANAGED_BY[1] or any(k.startswith(LABEL_PREFIX) for k in labels)
    queue = admission.clusterQueue if admission else workload.spec.queueName
    started = admitted.lastTransitionTime if admitted else None
    holds: dict[str, int] = {}
    if status == RUNNING:
        try:
            holds = _holds(workload)
        except (ValueError, TypeError, ZeroDivisionError) as exc:
            return f"cannot read what it holds: {exc}"
    if ours and pipeline and step:
        return Observation(KUEUE, file, where, span, key, status, step=f"{pipeline}/{step}", started_at=started,
                           queue=queue, inputs=labels.get(f"{LABEL_PREFIX}inputs"), holds=holds)
    # a partial label is no step's Job (poolc writes both): counted as the foreign work it is
    warning = (f"it carries poolc labels but not both {LABEL_PREFIX}pipeline and {LABEL_PREFIX}step (a Job "
               "poolc generated always has them); counted as work poolc did not write") if ours else None
    return Observation(KUEUE, file, where, span, key, status, started_at=started, queue=queue, holds=holds,
                       warning=warning)


# Kubernetes resource -> poolc request key, and the factor from Kueue's integer units.
_KEYS = {"cpu": "mcpu", "memory": "memory_mb", "nvidia.com/gpu": "gpu", "pods": "step_run"}
MAX_HELD = MAX_INT          # what an Allocation's holds may say


def _amount(resource: str, quantity: Quantity) -> int:
    value = parse_quantity(quantity)
    if value < 0:
        raise ValueError(f"{resource} {quantity!r} is negative")
    if resource == "cpu":
        value *= 1000
    elif resource == "memory":
        value /= 10**6
    amount = -(-value.numerator // value.denominator)
    if amount > MAX_HELD:
        raise ValueError(f"{resource} {quantity!r} is too large")
    return amount


def _holds(workload: Workload) -> dict[str, int]:
    """What an admitted foreign Workload holds, in request keys: Kueue's own account
    (``status.admission.podSetAssignments[].resourceUsage``) when it gives one, else
    the pod sets' container requests times their counts."""
    held: dict[str, int] = {}
    admission = workload.status.admission if workload.status else None
    usage = [a.resourceUsage for a in (admission.podSetAssignments or [])] if admission else []
    if usage and all(u for u in usage):
        for resources in usage:
            for resource, quantity in (resources or {}).items():
                if resource in _KEYS:
                    held[_KEYS[resource]] = held.get(_KEYS[resource], 0) + _amount(resource, quantity)
    else:
        for podset in workload.spec.podSets:
            spec = podset.template.spec
            for container in spec.containers if spec else []:
                given = container.resources
                wanted = dict((given.limits or {}) if given else {})
                wanted.update((given.requests or {}) if given else {})
                for resource, quantity in wanted.items():
                    if resource in _KEYS and resource != "pods":
                        key = _KEYS[resource]
                        held[key] = held.get(key, 0) + _amount(resource, quantity) * podset.count
    if "step_run" not in held:
        held["step_run"] = sum(p.count for p in workload.spec.podSets)
    return {k: v for k, v in sorted(held.items()) if v > 0}


def _sagemaker(report: Report, data: Any, span_of: Any) -> None:
    entries = _items(report, data, "TrainingJobs", "describe-training-job outputs", span_of)
    if entries is None:
        return
    seen: dict[str, str] = {}
    for path, item in entries:
        name = item.get("TrainingJobName") if isinstance(item, dict) else None
        where = _label(path, name if isinstance(name, str) else None)
        if not isinstance(item, dict):
            report.diagnostics.append(_diagnostic(report.file, d.O001, f"{where} is not a describe-training-job "
                                                  "output (an object with TrainingJobName, TrainingJobStatus)",
                                                  span_of(path)))
            continue
        try:
            job = TrainingJob.model_validate(item)
        except ValidationError as exc:
            location, message = _problem(exc.errors()[0])
            report.diagnostics.append(_diagnostic(report.file, d.O001, f"{where}: malformed training job: "
                                                  f"{message}", span_of(path + location)))
            continue
        if job.TrainingJobName in seen:
            report.diagnostics.append(_diagnostic(report.file, d.O001, f"{where}: training job {job.TrainingJobName}"
                                                  f" is listed twice (also {seen[job.TrainingJobName]})",
                                                  span_of(path)))
            continue
        seen[job.TrainingJobName] = where
        env = job.Environment or {}
        pipeline, step = env.get("POOLC_PIPELINE"), env.get("POOLC_STEP")
        if not pipeline or not step:
            continue   # not a body poolc wrote: SageMaker work outside poolc's pools
        preempted = job.TrainingJobStatus in ("Stopping", "Stopped") and any(
            (t.Key, t.Value) == PREEMPTED_TAG for t in job.Tags or [])
        status = PENDING if preempted else RUNNING if job.TrainingJobStatus in SAGEMAKER_RUNNING else FINISHED
        report.observations.append(Observation(
            SAGEMAKER, report.file, where, span_of(path), job.TrainingJobName, status, step=f"{pipeline}/{step}",
            started_at=job.TrainingStartTime or job.CreationTime, pool=env.get("POOLC_POOL"),
            policy=env.get("POOLC_POLICY"), role=job.RoleArn))


def load_reports(files: Iterable[tuple[str, str | None]]) -> list[Report]:
    """Each (path, kind) read; see ``load_report``."""
    return [load_report(path, kind) for path, kind in files]
