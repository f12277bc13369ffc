"""`poolc state list | rm | import`: the state follows what really runs.

- ``list``: the allocations the state holds.
- ``rm NAME...``: a step (or allocation) finished: its allocation leaves the state
  and releases its capacity, and the step is not requested again until its
  inputs change (the state remembers the digest of the inputs it ran with).
- ``rerun NAME...``: forget that steps finished, so they are planned (and run) again.
- ``import``: make the state what the cluster reports: Kueue Workloads (``kubectl
  get workloads.kueue.x-k8s.io -A -o json``) and SageMaker training jobs (``aws
  sagemaker describe-training-job`` outputs), read by ``poolc.cluster.reports`` and turned
  into a state by ``poolc.cluster.observe`` (running work keeps its real start time,
  finished work is recorded finished, evicted work waits again, foreign Workloads
  in poolc's queues count). Malformed entries are diagnostics, and an import with
  any error changes nothing.

Every change is one atomic write of the state under the state lock; a lock held by
another command is ``StateLockError``, which the CLI reports as one line, exit 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..diagnostics import Diagnostic
from ..domain.naming import allocation_name, step_label
from ..state.lock import state_lock
from ..state.records import INPUTS_LABEL, STEP_LABEL, StateRead, dump_state, read_state, state_dict
from ..writer import write_atomic


@dataclass
class StateChange:
    """What a state command did, or why it did nothing."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    refused: str | None = None
    removed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)       # step ids the cluster reports finished

    @property
    def ok(self) -> bool:
        return self.refused is None and not any(x.severity == "error" for x in self.diagnostics)


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


def _locked_read(path: str, change: StateChange) -> StateRead | None:
    """The state, read under the lock the caller holds; None (``change`` refused,
    with the state's diagnostics) when it is missing or invalid."""
    state, problem = _readable(path)
    change.diagnostics = list(state.diagnostics)
    if problem:
        change.refused = problem
        return None
    return state


def remove(path: str, names: Iterable[str]) -> StateChange:
    """Release finished steps: NAME is an allocation name or a step id (``pipeline/step``)."""
    change = StateChange()
    with state_lock(path):
        state = _locked_read(path, change)
        if state is None:
            return change
        by_name = {a.metadata.name: a for a in state.allocations}
        wanted = []
        for name in names:
            found = by_name.get(name)
            if found is None and "/" in name:   # a step id
                found = by_name.get(allocation_name(name)) or next(
                    (a for a in state.allocations if a.spec.step == name
                     or a.metadata.labels.get(STEP_LABEL) == step_label(name)), None)
            if found is None:
                known = ", ".join(sorted(by_name)[:8]) or "none"
                change.refused = f"no allocation {name!r} in {path} (it holds: {known})"
                return change
            wanted.append(found)
        finished = dict(state.finished)
        for alloc in wanted:
            label, inputs = alloc.metadata.labels.get(STEP_LABEL), alloc.metadata.labels.get(INPUTS_LABEL)
            if label and inputs:
                finished[label] = inputs
            change.removed.append(alloc.metadata.name)
        kept = [a for a in state.allocations if a.metadata.name not in change.removed]
        write_atomic(path, dump_state(state_dict(state, kept, finished)))
    return change


def rerun(path: str, names: Iterable[str]) -> StateChange:
    """Forget that steps finished, so the next plan requests them again: NAME is a step
    id (``pipeline/step``) or a pipeline (all its finished steps)."""
    change = StateChange()
    with state_lock(path):
        state = _locked_read(path, change)
        if state is None:
            return change
        finished = dict(state.finished)
        for name in names:
            labels = [step_label(name)] if "/" in name else [k for k in finished if k.startswith(f"{name}.")]
            found = [label for label in labels if label in finished]
            if not found:
                known = ", ".join(sorted(finished)[:8]) or "none"
                change.refused = f"no finished step {name!r} in {path} (finished: {known})"
                return change
            for label in found:
                del finished[label]
                change.removed.append(label)
        write_atomic(path, dump_state(state_dict(state, state.allocations, finished)))
    return change


# --- what the cluster reports ----------------------------------------------------

def import_cluster(paths: Iterable[str], state_path: str, *, kueue: str | None = None,
                   sagemaker: str | None = None, allow_empty: bool = False) -> StateChange:
    """Refresh the state from the cluster's reports (poolc.cluster.observe); any error changes nothing."""
    from ..cluster.observe import observe
    from ..cluster.reports import KUEUE, SAGEMAKER, load_report
    from .validate import validate_paths

    change = StateChange()
    reports = [load_report(file, kind) for file, kind in ((kueue, KUEUE), (sagemaker, SAGEMAKER)) if file]
    change.diagnostics = [x for r in reports for x in r.diagnostics]
    if not change.ok:
        change.refused = "the cluster's reports have errors; nothing was imported"
        return change
    with state_lock(state_path):
        state = read_state(state_path)
        if not state.ok:
            change.diagnostics = list(state.diagnostics)
            change.refused = f"the state file {state_path} is not valid; fix it first"
            return change
        validation = validate_paths(list(paths) or ["."])
        observed = observe(state, reports, validation.config, validation.requests, allow_empty=allow_empty)
        change.diagnostics = observed.diagnostics
        if not observed.ok:
            change.refused = "the cluster's reports have errors; nothing was imported"
            return change
        change.added, change.removed, change.kept = observed.added, observed.removed, observed.kept
        change.finished = observed.completed
        assert observed.state is not None   # observe() sets it before it returns
        write_atomic(state_path, dump_state(observed.state))
    return change
