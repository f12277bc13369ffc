"""The state file (docs/cli.md#the-state-file): what `apply` decided is running.

It is JSON, not YAML, because poolc writes it and tools read it; it holds the
allocations as full `Allocation` documents (so a user can move one into a YAML
file unchanged), the digest of the inputs the plan came from, and the digest of
every generated file (for `apply --check`). Reading never raises: a hand-edited,
broken state becomes diagnostics at the offending line and column.

Reproducibility: the state is a pure function of the inputs. New allocations
carry no ``started_at``: poolc does not know when a job really starts, and a
wall-clock time would make every `apply` produce a different state (so
`apply --check` could never call it fresh). A missing ``started_at`` counts as
"earliest" in the planner's orderings (docs/planning.md#reserved-share-and-borrowing); a tool that knows the
real start time may add it.

Writes are atomic (poolc.writer) and guarded by ``<state>.lock``: see
``poolc.state.lock.state_lock``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from .. import API_VERSION
from .. import diagnostics as d
from ..config import Config, build_config
from ..diagnostics import Diagnostic
from ..domain.naming import allocation_name, step_label
from ..domain.plan import ALLOCATED, Plan
from ..load import Document, Span
from ..model import Allocation
from ..text import jsonpos
from ..text.jsonpos import JsonScan
from ..text.jsontext import dumps_sorted
from ..writer import read_bytes, write_atomic
from . import file_format as state_file
from .file_format import StateFile

FORMAT_VERSION = state_file.FORMAT_VERSION
DEFAULT_STATE = "poolc.state.json"


MAX_STATE_BYTES = 256 * 1024 * 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def is_safe_relative(path: str) -> bool:
    """A generated file's path as the state may name it: relative, forward slashes,
    no '..', nothing absolute and no control characters, so a hand-edited state
    cannot aim apply elsewhere (apply also walks it without following links)."""
    if not path or path.startswith("/") or "\\" in path or ":" in path.split("/")[0]:
        return False
    if _CONTROL.search(path):
        return False
    return all(part not in ("", ".", "..") for part in path.split("/"))


def _read_regular(path: str) -> bytes:
    """The bytes of a regular file; a FIFO, device, directory or symbolic link is an
    OSError, not a hang, and a link is never followed (a pull request that turns the
    state into a link to a secret gets a diagnostic, not the secret read)."""
    return read_bytes(path, MAX_STATE_BYTES)


# --- reading -----------------------------------------------------------------------

class StateRead(NamedTuple):
    allocations: list[Allocation]
    files: dict[str, str]
    digest: str | None
    diagnostics: list[Diagnostic]
    # Allocations given in the config files that an applied plan preempted: they no
    # longer run, although the files still list them (see poolc/commands/planning.py).
    preempted: list[str] = []
    missing: bool = False               # no state file at that path (an empty state)
    # Steps `poolc state rm` released as finished: step label (naming.step_label) ->
    # the digest of the step's inputs then; not requested again until they change.
    finished: dict[str, str] = {}
    output_dir: str | None = None       # where apply wrote the files, relative to the state's folder
    # The file's text as read (a BOM kept), so a caller compares the state it would
    # write with the file without reading it again; None when missing or unreadable.
    text: str | None = None

    @property
    def ok(self) -> bool:
        return not any(x.severity == "error" for x in self.diagnostics)


_EMPTY = StateRead([], {}, None, [])


def _at(file: str, rule: d.Rule, message: str, span: Span = (1, 1, 1, 1)) -> Diagnostic:
    return Diagnostic(file, *span, rule.id, rule.severity, message)


def _by_allocation(scan: JsonScan) -> dict[int, tuple[dict, dict]]:
    """Index -> (keys, values) of each element of ``allocations``, re-rooted to it,
    in one pass over the scan (per element it would be quadratic)."""
    groups: dict[int, tuple[dict, dict]] = {}
    for table, position in ((scan.keys, 0), (scan.values, 1)):
        for path, span in table.items():
            if len(path) >= 2 and path[0] == "allocations" and isinstance(path[1], int):
                if position == 0 and len(path) == 2:
                    continue
                groups.setdefault(path[1], ({}, {}))[position][path[2:]] = span
    return groups


def _sub_document(file: str, index: int, data: Any, group: tuple[dict, dict]) -> Document:
    """One element of ``allocations`` as a Document, positions re-rooted to it."""
    keys, values = group
    return Document(file, index, data, values[()], keys, values)


def read_state(path: str) -> StateRead:
    """See ``_read_state``; the cyclic garbage collector is paused meanwhile: the state
    builds hundreds of thousands of acyclic objects, and its passes over them would
    make reading superlinear (50,000 allocations: 8.5 s with it, 3.5 s without)."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        return _read_state(path)
    finally:
        if enabled:
            gc.enable()


def _read_state(path: str) -> StateRead:
    """(allocations, files, inputs digest, diagnostics) of a state file.

    A missing file is an empty state. Broken JSON is Y002, a wrong shape S003/S004,
    and each invalid Allocation is reported like one in a YAML file (S00x, N001);
    the valid allocations are still returned."""
    if not os.path.lexists(path):
        return _EMPTY._replace(missing=True)
    try:
        raw = _read_regular(path)
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        return StateRead([], {}, None, [_at(path, d.Y001, f"cannot read the state file: {exc.strerror or exc}")])
    except UnicodeDecodeError:
        return StateRead([], {}, None, [_at(path, d.Y001, "the state file is not valid UTF-8")])
    return _parse(path, text)._replace(text=("\ufeff" if raw.startswith(b"\xef\xbb\xbf") else "") + text)


def _parse(path: str, text: str) -> StateRead:
    duplicates = [False]

    def pairs(items: list[tuple[str, Any]]) -> dict:
        found = dict(items)
        if len(found) != len(items):
            duplicates[0] = True
        return found

    try:
        root = json.loads(text, parse_int=jsonpos.bounded_int, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        span = (exc.lineno, exc.colno, exc.lineno, exc.colno)
        return StateRead([], {}, None, [_at(path, d.Y002, f"the state file is not valid JSON: {exc.msg}; "
                                            "fix it, or delete it to start from an empty state", span)])
    except RecursionError:
        return StateRead([], {}, None, [_at(path, d.Y006, "the state file nests too deeply")])
    except ValueError as exc:
        return StateRead([], {}, None, [_at(path, d.Y002, f"the state file is not valid JSON: {exc}")])
    if not isinstance(root, dict):
        return StateRead([], {}, None, [_at(path, d.S003, "the state file must hold a JSON object "
                                            "with format_version, inputs_digest, allocations and files")])
    if not duplicates[0]:   # positions are needed only for diagnostics: scan only when there are some
        read = _interpret(path, root, None)
        if not read.diagnostics:
            return read
    return _interpret(path, root, JsonScan(text))


def _interpret(path: str, root: dict, scan: JsonScan | None) -> StateRead:
    """The state's content, checked through its model (poolc.state.file_format); without
    ``scan`` every diagnostic is at 1:1 (the caller then reads again with the positions)."""
    top = Document(path, 0, root, scan.values[()] if scan else (1, 1, 1, 1),
                   scan.keys if scan else {}, scan.values if scan else {})

    def place(rule: d.Rule, message: str, where: tuple[str | int, ...], key: bool) -> Diagnostic:
        return top.diagnostic(rule, message, where, key=key)

    problems = [_at(path, d.Y003, f"duplicate key {key!r}; JSON readers keep only one of them", span)
                for key, span in (scan.duplicates if scan else [])]
    version = state_file.version_problem(root, place)
    if version is not None:
        return StateRead([], {}, None, problems + [version])
    checked = state_file.check(root, place)
    problems += checked.problems
    model = checked.model
    files = dict(model.files)
    for name in sorted(files):
        if not is_safe_relative(name):
            problems.append(top.diagnostic(d.S003, f"files lists {name!r}, which is not a relative path inside "
                                           "the output directory; poolc never writes or removes it",
                                           ("files", name), key=True))
            del files[name]
    groups = _by_allocation(scan) if checked.allocations and scan else {}
    documents = [_sub_document(path, index, item, groups.get(index, ({}, {(): (1, 1, 1, 1)})))
                 for index, item in checked.allocations]
    config, found = build_config([path], documents)
    allocations = [entry.obj for _, entry in sorted(config.allocations.items())]
    return StateRead(allocations, dict(sorted(files.items())), model.inputs_digest, problems + found,
                     sorted(model.preempted), finished=dict(sorted(model.finished.items())),
                     output_dir=model.output_dir)


# --- building and writing ----------------------------------------------------------

def _name(allocation: Allocation | Mapping) -> str:
    if isinstance(allocation, Allocation):
        return allocation.metadata.name
    return allocation["metadata"]["name"]


def allocation_json(allocation: Allocation) -> dict:
    """An Allocation document as the state stores it (what it would be in YAML)."""
    return allocation.model_dump(mode="json", exclude_none=True)


# Marks an allocation apply recorded for a step (naming.step_label): when the step
# is gone from the inputs, so is its allocation.
STEP_LABEL = "poolc.dev/step"
# The digest of the step's inputs when apply recorded it: `poolc state rm` keeps it,
# so a finished step is requested again only once its inputs change.
INPUTS_LABEL = "poolc.dev/inputs"


def step_of(allocation: Allocation) -> str | None:
    """The step label of an allocation apply recorded; None for one a user wrote."""
    return allocation.metadata.labels.get(STEP_LABEL)


def new_allocation(request_id: str, requester: str, pool: str, policy: str, preemptible: bool,
                   demand: Mapping[str, int], *, started_at: datetime | None = None,
                   inputs: str | None = None, workload: str | None = None) -> Allocation:
    """The allocation `apply` records for a newly admitted step, started at the
    time of the apply (victims are ordered by real start times)."""
    labels = {STEP_LABEL: step_label(request_id)}
    if inputs:
        labels[INPUTS_LABEL] = inputs
    spec: dict[str, object] = {"subject": requester, "pool": pool, "preemptible": preemptible,
                               "holds": dict(sorted(demand.items()))}
    if started_at is not None:
        spec["started_at"] = format_time(started_at)
    if workload is not None:
        spec["workload"] = workload
    return Allocation.model_validate({
        "apiVersion": API_VERSION,
        "kind": "Allocation",
        "metadata": {"name": allocation_name(request_id),
                     "description": f"step {request_id}, admitted through policy {policy}",
                     "labels": dict(sorted(labels.items()))},
        "spec": spec,
    })


def format_time(when: datetime) -> str:
    """RFC 3339 in UTC (``2026-11-20T10:00:00Z``), with microseconds only when it has some
    (the grants of one apply are a microsecond apart, in the order the plan granted them)."""
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if when.microsecond else "%Y-%m-%dT%H:%M:%SZ")





@dataclass(frozen=True, slots=True)
class StateInputs:
    """What a new state records beside the plan, each from the run that makes it."""

    files: Mapping[str, str] = field(default_factory=dict)   # generated file -> its digest (apply)
    # the configuration's digest without any state (``inputs_digest(config)``; None: the plan's)
    digest: str | None = None
    from_files: frozenset[str] = frozenset()           # Allocation documents of the configuration's files
    preempted_before: tuple[str, ...] = ()             # what the previous state recorded as preempted
    released: tuple[str, ...] = ()                     # allocations of steps whose request changed
    started_at: datetime | None = None                 # when the new allocations start (the apply)
    step_inputs: Mapping[str, str] = field(default_factory=dict)   # step id -> digest of its inputs
    finished: Mapping[str, str] = field(default_factory=dict)      # the previous state's finished steps
    output_dir: str | None = None                      # relative to the state file's directory
    grant_order: Mapping[str, int] = field(default_factory=dict)   # request id -> place among new grants


def state_from_plan(plan: Plan, previous: Iterable[Allocation], given: StateInputs = StateInputs()) -> StateFile:
    """The state a plan decides: the running allocations it keeps (every document in
    ``previous`` it does not preempt, those from the files included, so the state
    is the whole picture) plus one new allocation per newly admitted step.

    ``previous`` are the running Allocation documents the plan started from
    (PlanResult.previous). ``given.digest`` is the configuration's digest without
    any state; not the plan's own digest, which covers the previous state: the
    state would then never match a re-run right after `apply`, and `apply --check`
    would call every fresh state stale.

    ``given.released`` are re-planned, so dropped; ``given.finished`` steps are kept
    while their inputs stay; by ``given.grant_order`` (domain.borrowing.grant_order)
    the k-th new grant starts ``k`` microseconds after ``given.started_at``, so the
    next plan walks the reserved shares in the order this one did."""
    preempted = {p.id for p in plan.preempted}
    gone_now = preempted | set(given.released)
    steps = {step_label(r.id) for r in plan.requests} | {step_label(s) for s in plan.finished}
    kept = {a.metadata.name: a for a in previous if a.metadata.name not in gone_now
            and (step_of(a) is None or step_of(a) in steps)}
    for request in plan.requests:
        if (request.status == ALLOCATED and request.pool is not None and request.policy is not None
                and request.requester is not None and request.running is None):
            start = given.started_at
            if start is not None and given.grant_order:
                start = start + timedelta(microseconds=given.grant_order.get(request.id, 0))
            alloc = new_allocation(request.id, request.requester, request.pool, request.policy,
                                   request.preemptible, request.demand, started_at=start,
                                   inputs=given.step_inputs.get(request.id))
            kept.setdefault(alloc.metadata.name, alloc)
    # Allocations from the config files that are gone (preempted now or before):
    # remembered so the next plan does not take them as running again.
    gone = sorted((set(given.preempted_before) | preempted) & given.from_files)
    labels = {step_label(step) for step in plan.finished}
    still_finished = {label: digest for label, digest in given.finished.items() if label in labels}
    return _state(given.digest or plan.inputs_digest, [kept[name] for name in sorted(kept)], given.files, gone,
                  still_finished, given.output_dir)


def state_dict(state: StateRead, allocations: Iterable[Allocation], finished: Mapping[str, str]) -> StateFile:
    """The state with these allocations and finished steps; everything else as
    ``state`` holds it."""
    return _state(state.digest, sorted(allocations, key=lambda a: a.metadata.name), state.files,
                  sorted(state.preempted), finished, state.output_dir)


def _state(digest: str | None, allocations: Iterable[Allocation], files: Mapping[str, str], preempted: list[str],
           finished: Mapping[str, str], output_dir: str | None) -> StateFile:
    return StateFile.model_validate({
        "format_version": FORMAT_VERSION, "inputs_digest": digest,
        "allocations": [allocation_json(a) for a in allocations], "files": dict(sorted(files.items())),
        "preempted": preempted, "finished": dict(sorted(finished.items())), "output_dir": output_dir or None})


def dump_state(state: StateFile | Mapping) -> str:
    """The state's bytes: sorted keys, two-space indent, a final newline (``jsontext``:
    the standard library's bytes, without its slow indenting encoder). A mapping is
    written as it is (tests write states poolc would not)."""
    found = state_file.content(state) if isinstance(state, StateFile) else state
    return dumps_sorted(found, indent=2, ensure_ascii=False) + "\n"


def write_state(path: str, state: StateFile | Mapping) -> None:
    """Replace the state file atomically. Hold ``poolc.state.lock.state_lock(path)`` around the whole
    read-plan-write cycle, not just this call, so no other apply interleaves."""
    write_atomic(path, dump_state(state))


def changes(previous_allocations: Iterable[Allocation | Mapping],
            new_state_allocations: Iterable[Allocation | Mapping],
            resized: Iterable[str] = ()) -> dict[str, list[str]]:
    """What a plan changes against what runs: allocation names added, removed
    (preempted, or their step is gone), resized (their step's request changed, so
    it was planned again) and unchanged, each sorted."""
    before = {_name(a) for a in previous_allocations}
    after = {_name(a) for a in new_state_allocations}
    changed = set(resized) & before
    return {"added": sorted(after - before - changed), "removed": sorted(before - after - changed),
            "resized": sorted(changed), "unchanged": sorted((before & after) - changed)}


# --- Allocation documents against the state ---------------------------------------

def documents_against_state(config: Config, state: StateRead, inputs: Mapping[str, str]
                            ) -> tuple[set[str], dict[str, str], list[Diagnostic]]:
    """Which Allocation documents of the configuration give way to the state, and
    which step each remaining document runs.

    A document that runs a step (its ``spec.step``, or the name apply gives the
    step) loses to the state when the state knows better: the step is recorded as
    finished (`state rm`, or `state import` of a finished job) with its current
    inputs, or the state holds its own allocation of the step (apply's, or what the
    cluster reported). Each such case is a warning (A003), never silent.

    Returns (names of documents to leave out, document name -> step id it runs,
    warnings). ``inputs``: step id -> its current inputs digest."""
    names_of = {allocation_name(step): step for step in inputs}
    labels = {step_label(step): step for step in inputs}
    held: dict[str, Allocation] = {}
    for alloc in state.allocations:
        label = alloc.metadata.labels.get(STEP_LABEL)
        step = alloc.spec.step or (labels.get(label) if label else None) or names_of.get(alloc.metadata.name)
        if step is not None:
            held.setdefault(step, alloc)
    dropped: set[str] = set()
    runs: dict[str, str] = {}
    warnings: list[Diagnostic] = []
    for name, entry in sorted(config.allocations.items()):
        step = entry.obj.spec.step or names_of.get(name)
        if step is None or step not in inputs:
            continue
        where = ("spec", "step") if entry.obj.spec.step else ("metadata", "name")
        if state.finished.get(step_label(step)) == inputs[step]:
            dropped.add(name)
            warnings.append(entry.doc.diagnostic(d.A003, f"allocation {name!r} says step {step} runs, but the "
                                                 "state records it finished (state rm or state import); the "
                                                 "state wins and this document is not counted: delete it",
                                                 where))
            continue
        mine = held.get(step)
        if mine is not None:
            dropped.add(name)
            if mine.spec.model_dump(exclude={"step", "started_at"}) != entry.obj.spec.model_dump(
                    exclude={"step", "started_at"}):
                warnings.append(entry.doc.diagnostic(
                    d.A003, f"allocation {name!r} and the state's allocation {mine.metadata.name!r} both run step "
                    f"{step} and disagree (subject, pool, preemptible or holds); the state wins, as the cluster "
                    "reported or apply recorded it: delete this document or fix it", where))
            continue
        runs[name] = step
    return dropped, runs, warnings

