"""The state as the cluster reports it: `state import` writes it, `plan --observed` plans on it.

Given the state file's content and the cluster's reports (``poolc.cluster.reports``), this
works out the state the cluster implies, without writing anything:

- a step the cluster **runs** keeps (or gains) its allocation, with the cluster's
  start time; the pool and policy are those of the ClusterQueue Kueue admitted it
  through, or the ``POOLC_POOL``/``POOLC_POLICY`` of its SageMaker body;
- a step whose job **finished** (Workload ``Finished=True``; SageMaker ``Completed``,
  ``Failed`` or ``Stopped``) leaves, and is recorded as finished with the inputs it
  ran with, as `poolc state rm` does: it is not planned again until they change;
- a step whose job is **pending** (evicted, preempted, deactivated, not admitted yet)
  leaves and is planned again;
- a step on a reported target that the report does not mention at all leaves;
- a **foreign** Workload (no poolc labels) admitted through one of poolc's
  ClusterQueues becomes an external allocation of that queue's policy and pool,
  named by the workload, so plans count what it holds.

Contradictions (a step reported by both targets, a step that runs twice) are
errors; so is an empty report for a target that holds running allocations, unless
the caller accepts it (``allow_empty``: a wrong kubectl context looks the same).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from .. import diagnostics as d
from ..config import Config
from ..diagnostics import Diagnostic
from ..domain.naming import MAX_NAME, cluster_queue_name, hash_suffixed, local_queue_name, step_label
from ..model import WORKLOAD_REF, Allocation, KubernetesComponent, SageMakerComponent
from ..requests import StepRequest, step_inputs
from ..state.file_format import StateFile
from ..state.records import INPUTS_LABEL, STEP_LABEL, StateRead, format_time, new_allocation, state_dict
from .reports import FINISHED, KUEUE, PENDING, RUNNING, SAGEMAKER, Observation, Report

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Marks an allocation the import made for work poolc did not write (a foreign Workload).
EXTERNAL_LABEL = "poolc.dev/external"
POLICY_LABEL = "poolc.dev/policy"


@dataclass
class Observed:
    """The state the reports imply, and what changed against the state file."""

    state: StateFile | None                # the state to write; set once the reports are read
    allocations: list[Allocation]
    finished: dict[str, str]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)        # pending again, or no longer reported
    kept: list[str] = field(default_factory=list)
    completed: list[str] = field(default_factory=list)      # step ids recorded as finished
    external: list[str] = field(default_factory=list)       # foreign workloads' allocations

    @property
    def ok(self) -> bool:
        return not any(x.severity == "error" for x in self.diagnostics)


def _at(item: Observation, rule: d.Rule, message: str) -> Diagnostic:
    return Diagnostic(item.file, *item.span, rule.id, rule.severity, f"{item.where}: {message}")


def _components(config: Config) -> dict[str, object]:
    found: dict[str, object] = {}
    for entry in config.stacks.values():
        found.setdefault(entry.obj.spec.orchestrator.name, entry.obj.spec.orchestrator)
        for component in entry.obj.spec.step_operators:
            found.setdefault(component.name, component)
    return found


def _target(component: object) -> str | None:
    if isinstance(component, KubernetesComponent):
        return KUEUE
    if isinstance(component, SageMakerComponent):
        return SAGEMAKER
    return None


def external_name(workload: str) -> str:
    """The allocation of a foreign Workload ``namespace/name``: ``wl-<namespace>--<name>``
    as a DNS-1123 label; a rewritten character (``x.y`` and ``x-y``), a namespace holding
    ``--`` or a cut gets the digest of the Workload, so two Workloads never share one (#42)."""
    namespace, _, name = workload.partition("/")
    plain = f"wl-{namespace}--{name}" if name else f"wl-{namespace}"
    label = re.sub(r"[^a-z0-9-]", "-", plain.lower())
    if label == plain and len(label) <= MAX_NAME and "--" not in namespace:
        return label
    return hash_suffixed(label, workload)


def _queues(config: Config, components: Mapping[str, object]) -> dict[str, tuple[str, str, str, bool]]:
    """ClusterQueue name -> (policy, pool, subject, preemptible) of every Kubernetes policy."""
    found = {}
    for name, entry in sorted(config.policies.items()):
        spec = entry.obj.spec
        if isinstance(components.get(spec.subject), KubernetesComponent):
            for preemptible in (False, True):
                found[cluster_queue_name(name, preemptible)] = (name, spec.pool, spec.subject, preemptible)
    return found


def _one_per_step(items: Sequence[Observation], problems: list[Diagnostic],
                  current: Mapping[str, str]) -> dict[str, Observation]:
    """The entry that speaks for each step (``_speaker``). A step reported by both
    targets is an error (``_both_targets``); one running twice, a warning (``_running_twice``)."""
    by_step: dict[str, list[Observation]] = {}
    for item in items:
        if item.step is not None:
            by_step.setdefault(item.step, []).append(item)
    chosen = {}
    for step, found in sorted(by_step.items()):
        if len({x.kind for x in found}) > 1:
            problems.append(_both_targets(step, found))
            continue
        found = sorted(found, key=_preference(current.get(step)))
        running = [x for x in found if x.status == RUNNING]
        if len(running) > 1:
            problems.append(_running_twice(step, running, current.get(step)))
        chosen[step] = _speaker(found, running)
    return chosen


def _preference(inputs: str | None) -> Callable[[Observation], tuple[bool, bool, float, str]]:
    """The order a step's entries are weighed in: the current inputs first, then the
    earliest started, then by name, so that the same entry is chosen run after run."""
    def key(x: Observation) -> tuple[bool, bool, float, str]:
        return (x.inputs != inputs, x.started_at is None, x.started_at.timestamp() if x.started_at else 0.0, x.name)
    return key


def _speaker(found: Sequence[Observation], running: Sequence[Observation]) -> Observation:
    """Of a step's entries (in ``_preference`` order): the running one, else a pending
    one, else a finished one; of training jobs none of which runs, the latest, since a
    preempted one is followed by its rerun."""
    if not running and found[0].kind == SAGEMAKER:
        return max(found, key=lambda x: (x.started_at or _EPOCH, x.name))
    pending = [x for x in found if x.status == PENDING]
    return (running or pending or found)[0]


def _both_targets(step: str, found: Sequence[Observation]) -> Diagnostic:
    """A step runs on one target: reported by Kueue and SageMaker both, it is ignored."""
    return _at(found[-1], d.O002, f"step {step} is reported both by Kueue ({_names(found, KUEUE)}) "
               "and by SageMaker (" + _names(found, SAGEMAKER) + "); a step runs on one target: ignored")


def _running_twice(step: str, running: Sequence[Observation], inputs: str | None) -> Diagnostic:
    """A step running twice is a warning, never a halt: the first entry counts. When only
    it runs the current inputs, the other is an old Job not yet deleted; otherwise a copy
    of a running Job's labels in the step's own queue (#42)."""
    if running[0].inputs == inputs and running[1].inputs != inputs:
        return _at(running[1], d.O002, f"an older Job of step {step} still runs beside "
                   f"{running[0].where}; the current one counts: delete the old one")
    return _at(running[-1], d.O002, f"step {step} runs twice ({_names(running, None)}); "
               f"{running[0].where} (started first) counts: stop the other one")


def _step_queues(config: Config, subject: str) -> set[str]:
    """The ClusterQueues and LocalQueues poolc writes for the subject's policies."""
    return {name(policy, preemptible) for policy, entry in config.policies.items() if entry.obj.spec.subject == subject
            for preemptible in (False, True) for name in (cluster_queue_name, local_queue_name)}


def _foreign_reason(item: Observation, request: StepRequest, components: Mapping[str, object],
                    config: Config) -> str | None:
    """Why an entry labelled as ``request``'s cannot be that step's (issue #42: a label
    or an environment anyone can copy counts only from the step's own namespace and
    queues, or the role and policy its SageMaker body was written with); None when it can."""
    component = components.get(request.requester or "")
    if item.kind == KUEUE:
        if not isinstance(component, KubernetesComponent):
            return f"it is a Workload, but step {request.id} does not run on Kubernetes"
        namespace = item.name.partition("/")[0]
        if namespace != component.namespace:
            return f"it is in namespace {namespace}, but step {request.id} runs in {component.namespace}"
        if item.queue not in _step_queues(config, component.name):
            return f"it runs through queue {item.queue}, which is none of {component.name}'s policies' queues"
        return None
    if not isinstance(component, SageMakerComponent):
        return f"it is a SageMaker training job, but step {request.id} does not run on SageMaker"
    if item.role != component.role_arn:
        return f"it runs as role {item.role}, not {component.name}'s role"
    policy = config.policies.get(item.policy or "")
    if item.policy is not None and (policy is None or policy.obj.spec.subject != component.name):
        return f"its POOLC_POLICY {item.policy} is no policy of {component.name}"
    return None


def _own_entries(items: Sequence[Observation], steps: Mapping[str, StepRequest], components: Mapping[str, object],
                 config: Config, problems: list[Diagnostic]) -> list[Observation]:
    """The entries, with those labelled as a step they cannot be (``_foreign_reason``)
    read as the foreign work they are: a warning each, never an error."""
    out = []
    for item in items:
        request = steps.get(item.step) if item.step is not None else None
        why = _foreign_reason(item, request, components, config) if request is not None else None
        if why is not None:
            problems.append(_at(item, d.O002, f"labelled as step {item.step}, but {why}; counted as no step's"))
            item = dataclasses.replace(item, step=None)
        out.append(item)
    return out


def _names(items: Iterable[Observation], kind: str | None) -> str:
    return ", ".join(f"{x.where} in {x.file}" for x in items if kind is None or x.kind == kind)


def observe(state: StateRead, reports: Sequence[Report], config: Config, requests: Sequence[StepRequest], *,
            allow_empty: bool = False) -> Observed:
    """The state ``reports`` imply (module doc). Never raises on report content."""
    problems: list[Diagnostic] = [x for r in reports for x in r.diagnostics]
    inputs = _Inputs.of(config, requests)
    allocations = {a.metadata.name: a for a in state.allocations}
    observed = Observed(None, [], dict(state.finished), problems)
    if not allow_empty:
        problems.extend(_empty_reports(reports, allocations, inputs))
    items = _own_entries([o for r in reports for o in r.observations], inputs.steps, inputs.components, config,
                         problems)
    chosen = _one_per_step(items, problems, {r.id: step_inputs(r) for r in requests})
    problems.extend(_unknown_steps(chosen, inputs))
    if not observed.ok:
        return observed
    owners = {name: inputs.owner(a) for name, a in allocations.items()}
    _apply_all(chosen, _held_by_step(owners), inputs, allocations, observed)
    reported = {r.kind for r in reports if r.kind is not None}
    _drop_unmentioned(allocations, owners, chosen, inputs, reported, observed)
    if KUEUE in reported:
        _foreign(items, inputs.queues, allocations, observed)
    return _settled(state, allocations, observed)


@dataclass(frozen=True)
class _Inputs:
    """What the configuration and the requests say, fixed for one ``observe``: each
    step's request and target, each ClusterQueue's policy, and who owns an allocation."""

    config: Config
    steps: Mapping[str, StepRequest]
    components: Mapping[str, object]
    target_of: Mapping[str, str | None]                   # step -> KUEUE | SAGEMAKER | None
    queues: Mapping[str, tuple[str, str, str, bool]]      # ``_queues``
    by_label: Mapping[str, str]                           # step label -> step

    @classmethod
    def of(cls, config: Config, requests: Sequence[StepRequest]) -> _Inputs:
        """The inputs of one ``observe`` call, worked out once."""
        components = _components(config)
        steps = {r.id: r for r in requests}
        return cls(config, steps, components,
                   {r.id: _target(components.get(r.requester or "")) for r in requests},
                   _queues(config, components), {step_label(s): s for s in steps})

    def owner(self, alloc: Allocation) -> str | None:
        """The step an allocation is of: its spec says, or its step label does."""
        if alloc.spec.step is not None:
            return alloc.spec.step
        label = alloc.metadata.labels.get(STEP_LABEL)
        return self.by_label.get(label) if label else None

    def target(self, alloc: Allocation) -> str | None:
        """The target an allocation runs on, which that target's report must mention."""
        if alloc.metadata.labels.get(EXTERNAL_LABEL):
            return alloc.metadata.labels[EXTERNAL_LABEL]
        step = self.owner(alloc)
        return self.target_of.get(step) if step else None


def _empty_reports(reports: Iterable[Report], allocations: Mapping[str, Allocation],
                   inputs: _Inputs) -> list[Diagnostic]:
    """O003 for a report that lists nothing while the state holds running allocations
    on its target: a wrong kubectl context or AWS region looks the same."""
    problems = []
    for report in reports:
        if report.kind is None or not report.ok or report.entries != 0:
            continue
        held = sorted(n for n, a in allocations.items() if inputs.target(a) == report.kind)
        if held:
            problems.append(Diagnostic(report.file, 1, 1, 1, 1, d.O003.id, d.O003.severity,
                                       f"the {report.kind} report lists nothing, but the state holds "
                                       f"{len(held)} running allocation(s) there ({', '.join(held[:5])}); a "
                                       "wrong kubectl context or AWS region looks the same: check it, or "
                                       "give --allow-empty if nothing runs"))
    return problems


def _held_by_step(owners: Mapping[str, str | None]) -> dict[str, list[str]]:
    """Step -> the names of the allocations it holds in the state file."""
    held: dict[str, list[str]] = {}
    for name, owned in owners.items():
        if owned is not None:
            held.setdefault(owned, []).append(name)
    return held


def _unknown_steps(chosen: Mapping[str, Observation], inputs: _Inputs) -> list[Diagnostic]:
    """An error for each step the cluster reports that the inputs given do not have."""
    return [_at(item, d.O002, f"step {step} is not in the inputs given; ignored")
            for step, item in sorted(chosen.items()) if step not in inputs.steps]


def _apply_all(chosen: Mapping[str, Observation], held: Mapping[str, Sequence[str]], inputs: _Inputs,
               allocations: dict[str, Allocation], observed: Observed) -> None:
    """Each step's chosen entry applied to its allocations, in step order."""
    for step, item in sorted(chosen.items()):
        request = inputs.steps.get(step)
        if request is not None:
            _apply(item, request, held.get(step, []), inputs, allocations, observed)


def _apply(item: Observation, request: StepRequest, held: Sequence[str], inputs: _Inputs,
           allocations: dict[str, Allocation], observed: Observed) -> None:
    """What the entry that speaks for a step does to its allocations (module doc)."""
    if item.status in (FINISHED, PENDING):
        _leave(item, request, held, allocations, observed)
        return
    observed.finished.pop(step_label(request.id), None)
    if held:
        _keep(item, held, allocations, observed)
    else:
        _place(item, request, inputs, allocations, observed)


def _leave(item: Observation, request: StepRequest, held: Sequence[str], allocations: dict[str, Allocation],
           observed: Observed) -> None:
    """A finished or pending step's allocations go; a finished one is recorded with the
    inputs it ran with (as `poolc state rm` does), a pending one is planned again."""
    recorded = next((allocations[n].metadata.labels.get(INPUTS_LABEL) for n in held
                     if allocations[n].metadata.labels.get(INPUTS_LABEL)), None)
    for name in held:
        allocations.pop(name, None)
        observed.removed.append(name)
    label = step_label(request.id)
    if item.status == FINISHED:
        observed.finished[label] = item.inputs or recorded or step_inputs(request)
        observed.completed.append(request.id)
    else:
        observed.finished.pop(label, None)


def _keep(item: Observation, held: Sequence[str], allocations: dict[str, Allocation], observed: Observed) -> None:
    """A running step keeps its allocations, with the cluster's start time and Workload."""
    update = _run_facts(item)
    for name in held:
        if update:
            current = allocations[name]
            allocations[name] = current.model_copy(update={"spec": current.spec.model_copy(update=update)})
        observed.kept.append(name)


def _place(item: Observation, request: StepRequest, inputs: _Inputs, allocations: dict[str, Allocation],
           observed: Observed) -> None:
    """A running step the state does not hold gains an allocation where the cluster
    runs it; unmanaged work (outside every pool) gains none."""
    placed = _placement(item, request, inputs.queues, inputs.config)
    if isinstance(placed, str):
        observed.diagnostics.append(_at(item, d.O002, placed))
        return
    if placed is None or request.requester is None:
        return
    alloc = new_allocation(request.id, request.requester, placed[0], placed[1], request.preemptible,
                           request.demand, started_at=item.started_at, inputs=item.inputs or step_inputs(request),
                           workload=_workload(item))
    allocations[alloc.metadata.name] = alloc
    observed.added.append(alloc.metadata.name)


def _run_facts(item: Observation) -> dict[str, object]:
    """What an allocation records of a running entry: its start time, and the Workload
    that gate mode stops when a plan preempts it."""
    facts: dict[str, object] = {}
    if item.started_at is not None:
        facts["started_at"] = format_time(item.started_at)
    if _workload(item) is not None:
        facts["workload"] = _workload(item)
    return facts


def _drop_unmentioned(allocations: dict[str, Allocation], owners: Mapping[str, str | None],
                      chosen: Mapping[str, Observation], inputs: _Inputs, reported: set[str],
                      observed: Observed) -> None:
    """poolc's allocations on a reported target that the cluster no longer mentions go."""
    for name in sorted(allocations):
        owned = owners.get(name)
        if owned is None or owned in chosen or owned not in inputs.steps:
            continue
        if inputs.target_of.get(owned) in reported:
            del allocations[name]
            observed.removed.append(name)


def _settled(state: StateRead, allocations: Mapping[str, Allocation], observed: Observed) -> Observed:
    """``observed`` with the state to write, its lists in name order."""
    observed.allocations = [allocations[n] for n in sorted(allocations)]
    observed.state = state_dict(state, observed.allocations, observed.finished)
    for bucket in (observed.added, observed.removed, observed.kept, observed.completed, observed.external):
        bucket.sort()
    return observed


def _workload(item: Observation) -> str | None:
    """A Kueue entry's Workload, ``<namespace>/<name>``, as an allocation records it."""
    return item.name if item.kind == KUEUE and re.match(WORKLOAD_REF, item.name) else None


def _placement(item: Observation, request: StepRequest, queues: Mapping[str, tuple[str, str, str, bool]],
               config: Config) -> tuple[str, str] | str | None:
    """(pool, policy) a step the cluster runs holds, None for unmanaged work, or why it
    cannot be placed."""
    if item.kind == KUEUE:
        if item.queue is None:
            return None
        found = queues.get(item.queue)
        if found is None:
            return (f"step {request.id} runs through ClusterQueue {item.queue}, which is no queue of a poolc "
                    "policy; ignored")
        return found[1], found[0]
    if item.pool and item.policy:
        policy = config.policies.get(item.policy)
        if policy is None or policy.obj.spec.pool != item.pool:
            return (f"step {request.id} runs under policy {item.policy} on pool {item.pool}, which the inputs "
                    "do not define; ignored")
        return item.pool, item.policy
    return None


def _foreign(items: Iterable[Observation], queues: Mapping[str, tuple[str, str, str, bool]],
             allocations: dict[str, Allocation], observed: Observed) -> None:
    """Admitted Workloads poolc did not write, through one of its ClusterQueues."""
    before = {n for n, a in allocations.items() if a.metadata.labels.get(EXTERNAL_LABEL) == KUEUE}
    now = set()
    for item in items:
        if item.step is not None or item.status != RUNNING or item.queue is None or item.queue not in queues:
            continue
        policy, pool, subject, preemptible = queues[item.queue]
        name = external_name(item.name)
        spec: dict[str, object] = {"subject": subject, "pool": pool, "preemptible": preemptible,
                                   "holds": dict(item.holds), **_run_facts(item)}
        alloc = Allocation.model_validate({
            "apiVersion": "poolc/v1", "kind": "Allocation",
            "metadata": {"name": name, "labels": {EXTERNAL_LABEL: KUEUE, POLICY_LABEL: policy},
                         "description": f"Workload {item.name}, admitted through ClusterQueue {item.queue}; "
                                        "not written by poolc"},
            "spec": spec})
        if name in allocations and name not in before:
            continue   # a name poolc's own allocation has: never replaced
        now.add(name)
        (observed.kept if name in before else observed.added).append(name)
        allocations[name] = alloc
        observed.external.append(name)
    for name in sorted(before - now):
        del allocations[name]
        observed.removed.append(name)


def as_state_read(state: StateRead, observed: Observed) -> StateRead:
    """The StateRead a plan starts from when it plans against what the cluster reports."""
    return state._replace(allocations=observed.allocations, finished=dict(sorted(observed.finished.items())),
                          diagnostics=[*state.diagnostics, *observed.diagnostics], missing=False)


def observe_files(state: StateRead, files: Sequence[str], config: Config,
                  requests: Sequence[StepRequest]) -> StateRead:
    """The state a plan starts from with ``plan --observed FILE...``: each file's kind
    is recognised from its content; report errors make the state unreadable."""
    from .reports import load_report

    observed = observe(state, [load_report(file) for file in files], config, requests)
    return as_state_read(state, observed)
