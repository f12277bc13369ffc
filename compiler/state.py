"""The state file (CLI.md, State): what `apply` decided is running.

It is JSON, not YAML, because poolc writes it and tools read it; it holds the
allocations as full `Allocation` documents (so a user can move one into a YAML
file unchanged), the digest of the inputs the plan came from, and the digest of
every generated file (for `apply --check`). Reading never raises: a hand-edited,
broken state becomes diagnostics at the offending line and column.

Reproducibility: the state is a pure function of the inputs. New allocations
carry no ``started_at``: poolc does not know when a job really starts, and a
wall-clock time would make every `apply` produce a different state (so
`apply --check` could never call it fresh). A missing ``started_at`` counts as
"earliest" in the planner's orderings (SEMANTICS.md §3); a tool that knows the
real start time may add it.

Writes are atomic (compiler.writer) and guarded by ``<state>.lock``: see
``compiler.lock.state_lock``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from . import diagnostics as d
from . import jsonpos
from .config import build_config
from .diagnostics import Diagnostic
from .domain.naming import allocation_name
from .jsonpos import JsonScan
from .load import Document, Span
from .model import Allocation
from .writer import write_atomic

FORMAT_VERSION = 1
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
    """The bytes of a regular file; a FIFO, device or directory is an OSError, not a hang."""
    import errno
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        with os.fdopen(os.dup(fd), "rb") as handle:
            raw = handle.read(MAX_STATE_BYTES + 1)
        if len(raw) > MAX_STATE_BYTES:
            raise OSError(errno.EFBIG, f"larger than {MAX_STATE_BYTES} bytes")
        return raw
    finally:
        os.close(fd)


# --- reading -----------------------------------------------------------------------

class StateRead(NamedTuple):
    allocations: list[Allocation]
    files: dict[str, str]
    digest: str | None
    diagnostics: list[Diagnostic]
    # Allocations given in the config files that an applied plan preempted: they no
    # longer run, although the files still list them (see compiler/plan.py).
    preempted: list[str] = []


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
        return _EMPTY
    try:
        raw = _read_regular(path)
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        return StateRead([], {}, None, [_at(path, d.Y001, f"cannot read the state file: {exc.strerror or exc}")])
    except UnicodeDecodeError:
        return StateRead([], {}, None, [_at(path, d.Y001, "the state file is not valid UTF-8")])
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
    """The state's content; without ``scan`` every diagnostic is at 1:1 (the caller then
    reads again with the positions)."""
    top = Document(path, 0, root, scan.values[()] if scan else (1, 1, 1, 1),
                   scan.keys if scan else {}, scan.values if scan else {})
    problems = [_at(path, d.Y003, f"duplicate key {key!r}; JSON readers keep only one of them", span)
                for key, span in (scan.duplicates if scan else [])]
    version = root.get("format_version")
    if version != FORMAT_VERSION:
        where = ("format_version",) if "format_version" in root else ()
        problems.append(top.diagnostic(d.S004, f"state format_version {version!r} is not supported; this "
                                       f"poolc reads and writes format_version {FORMAT_VERSION}", where))
        return StateRead([], {}, None, problems)
    unknown = sorted(set(root) - {"format_version", "inputs_digest", "allocations", "files", "preempted"})
    problems += [top.diagnostic(d.S001, f"unknown field {k!r} in the state file", (k,), key=True) for k in unknown]

    digest = root.get("inputs_digest")
    if digest is not None and not isinstance(digest, str):
        problems.append(top.diagnostic(d.S003, "inputs_digest must be a string", ("inputs_digest",)))
        digest = None
    files = root.get("files", {})
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        problems.append(top.diagnostic(d.S003, "files must map relative paths to \"sha256:...\" strings",
                                       ("files",)))
        files = {}
    files = dict(files)   # pruned below; the data itself stays as read (it may be interpreted twice)
    for name in sorted(files):
        if not is_safe_relative(name):
            problems.append(top.diagnostic(d.S003, f"files lists {name!r}, which is not a relative path inside "
                                           "the output directory; poolc never writes or removes it",
                                           ("files", name), key=True))
            del files[name]
    items = root.get("allocations", [])
    if not isinstance(items, list):
        problems.append(top.diagnostic(d.S003, "allocations must be a list of Allocation documents",
                                       ("allocations",)))
        items = []

    documents = []
    groups = _by_allocation(scan) if items and scan else {}
    for index, item in enumerate(items):
        doc = _sub_document(path, index, item, groups.get(index, ({}, {(): (1, 1, 1, 1)})))
        if not isinstance(item, dict) or item.get("kind") != "Allocation":
            problems.append(doc.diagnostic(d.S004, "the state holds only Allocation documents "
                                           "(apiVersion poolc/v1, kind Allocation)",
                                           ("kind",) if isinstance(item, dict) else ()))
            continue
        documents.append(doc)
    preempted = root.get("preempted", [])
    if not isinstance(preempted, list) or not all(isinstance(n, str) for n in preempted):
        problems.append(top.diagnostic(d.S003, "preempted must be a list of allocation names", ("preempted",)))
        preempted = []
    config, found = build_config([path], documents)
    allocations = [entry.obj for _, entry in sorted(config.allocations.items())]
    return StateRead(allocations, dict(sorted(files.items())), digest, problems + found, sorted(preempted))


# --- building and writing ----------------------------------------------------------

def _name(allocation: Allocation | Mapping) -> str:
    if isinstance(allocation, Allocation):
        return allocation.metadata.name
    return allocation["metadata"]["name"]


def allocation_json(allocation: Allocation) -> dict:
    """An Allocation document as the state stores it (what it would be in YAML)."""
    return allocation.model_dump(mode="json", exclude_none=True)


# Marks an allocation apply recorded for a step ("<pipeline>.<step>"; a label value
# cannot hold "/"): when the step is gone from the inputs, so is its allocation.
STEP_LABEL = "poolc.dev/step"


def _step_of(allocation: Allocation) -> str | None:
    value = allocation.metadata.labels.get(STEP_LABEL)
    return value.replace(".", "/", 1) if value else None


def new_allocation(request_id: str, requester: str, pool: str, policy: str, preemptible: bool,
                   demand: Mapping[str, int]) -> Allocation:
    """The allocation `apply` records for a newly admitted step (no started_at: see the module doc)."""
    return Allocation.model_validate({
        "apiVersion": "poolc/v1",
        "kind": "Allocation",
        "metadata": {"name": allocation_name(request_id),
                     "description": f"step {request_id}, admitted through policy {policy}",
                     "labels": {STEP_LABEL: request_id.replace("/", ".", 1)}},
        "spec": {"subject": requester, "pool": pool, "preemptible": preemptible,
                 "holds": dict(sorted(demand.items()))},
    })


def state_from_plan(plan, previous: Iterable[Allocation], *, files: Mapping[str, str] | None = None,
                    digest: str | None = None, from_files: Iterable[str] = (),
                    preempted_before: Iterable[str] = ()) -> dict:
    """The state a plan decides: the running allocations it keeps (every document in
    ``previous`` it does not preempt, those from the files included, so the state
    is the whole picture) plus one new allocation per newly admitted step.

    ``previous`` are the running Allocation documents the plan started from
    (PlanResult.previous); ``files`` the digests of the generated files (apply).
    ``digest`` is the configuration's digest without any state
    (``inputs_digest(config)``; default: the plan's). Not the plan's own digest,
    which covers the previous state: the state would then never match a re-run
    right after `apply`, and `apply --check` would call every fresh state stale."""
    preempted = {p.id for p in plan.preempted}
    steps = {r.id for r in plan.requests}
    kept = {a.metadata.name: a for a in previous if a.metadata.name not in preempted
            and (_step_of(a) is None or _step_of(a) in steps)}
    for request in plan.requests:
        if request.status == "allocated" and request.pool is not None and request.running is None:
            alloc = new_allocation(request.id, request.requester, request.pool, request.policy,
                                   request.preemptible, request.demand)
            kept.setdefault(alloc.metadata.name, alloc)
    # Allocations from the config files that are gone (preempted now or before):
    # remembered so the next plan does not take them as running again.
    from_files = set(from_files)
    gone = sorted((set(preempted_before) | preempted) & from_files)
    state = {
        "format_version": FORMAT_VERSION,
        "inputs_digest": digest or plan.inputs_digest,
        "allocations": [allocation_json(kept[name]) for name in sorted(kept)],
        "files": dict(sorted((files or {}).items())),
    }
    if gone:
        state["preempted"] = gone
    return state


def dump_state(state: Mapping) -> str:
    """The state's bytes: sorted keys, two-space indent, a final newline."""
    return json.dumps(state, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_state(path: str, state: Mapping) -> None:
    """Replace the state file atomically. Hold ``compiler.lock.state_lock(path)`` around the whole
    read-plan-write cycle, not just this call, so no other apply interleaves."""
    write_atomic(path, dump_state(state))


def changes(previous_allocations: Iterable[Allocation | Mapping],
            new_state_allocations: Iterable[Allocation | Mapping]) -> dict[str, list[str]]:
    """What a plan changes against what runs: names added, removed (preempted) and
    unchanged, each sorted."""
    before = {_name(a) for a in previous_allocations}
    after = {_name(a) for a in new_state_allocations}
    return {"added": sorted(after - before), "removed": sorted(before - after),
            "unchanged": sorted(before & after)}
