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

Writes are atomic (compiler.writer) and guarded by ``<state>.lock``: see
``state_lock``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping, NamedTuple

from . import diagnostics as d
from .config import build_config
from .diagnostics import Diagnostic
from .load import Document, Span
from .model import Allocation
from .writer import write_atomic

FORMAT_VERSION = 1
DEFAULT_STATE = "poolc.state.json"
_MAX_NAME = 63
_HASH_CHARS = 8


# --- names -------------------------------------------------------------------------

def allocation_name(request_id: str) -> str:
    """The allocation name of a step: ``<pipeline>--<step>`` as a DNS-1123 label.

    Step names may hold ``_``, which a label may not; a replaced character or a
    name over 63 characters gets an 8-hex suffix of the sha256 of the request id,
    so ``train_model`` and ``train-model`` never share an allocation."""
    pipeline, _, step = request_id.partition("/")
    plain = f"{pipeline}--{step}"
    label = re.sub(r"[^a-z0-9-]", "-", plain.lower())
    if label == plain and len(label) <= _MAX_NAME:
        return label
    suffix = hashlib.sha256(request_id.encode("utf-8")).hexdigest()[:_HASH_CHARS]
    head = label[: _MAX_NAME - _HASH_CHARS - 1].strip("-") or "step"
    return f"{head}-{suffix}"


def is_safe_relative(path: str) -> bool:
    """A generated file's path as the state may name it: relative, forward slashes,
    no '..' and nothing absolute, so a hand-edited state cannot aim apply elsewhere."""
    if not path or path.startswith("/") or "\\" in path or ":" in path.split("/")[0]:
        return False
    return all(part not in ("", ".", "..") for part in path.split("/"))


# --- reading -----------------------------------------------------------------------

class StateRead(NamedTuple):
    allocations: list[Allocation]
    files: dict[str, str]
    digest: str | None
    diagnostics: list[Diagnostic]
    # Allocations given in the config files that an applied plan preempted: they no
    # longer run, although the files still list them (see planner/run.py).
    preempted: list[str] = []


_EMPTY = StateRead([], {}, None, [])


class _Positions:
    """Character offset -> 1-based (line, column)."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def at(self, offset: int) -> tuple[int, int]:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:  # last line start <= offset
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, offset - self.starts[lo] + 1

    def span(self, start: int, end: int) -> Span:
        return (*self.at(start), *self.at(end))


_WS = " \t\n\r"
_DECODER = json.JSONDecoder()


class _JsonScan:
    """Positions of every key and value of a JSON text that json.loads accepted,
    in the same (path -> span) shape compiler.load gives YAML documents."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = _Positions(text)
        self.keys: dict[tuple, Span] = {}
        self.values: dict[tuple, Span] = {}
        self.duplicates: list[tuple[str, Span]] = []
        self._value(0, ())

    def _skip(self, i: int) -> int:
        while i < len(self.text) and self.text[i] in _WS:
            i += 1
        return i

    def _value(self, i: int, path: tuple) -> int:
        start = i = self._skip(i)
        opener = self.text[i]
        if opener in "{[":
            closer, index = ("}" if opener == "{" else "]"), 0
            i = self._skip(i + 1)
            while self.text[i] != closer:
                if opener == "{":
                    key_start = i
                    key, i = json.decoder.scanstring(self.text, i + 1)
                    child = path + (key,)
                    if child in self.keys:
                        self.duplicates.append((key, self.pos.span(key_start, i)))
                    self.keys[child] = self.pos.span(key_start, i)
                    i = self._skip(i) + 1  # past ':'
                else:
                    child = path + (index,)
                    index += 1
                i = self._skip(self._value(i, child))
                if self.text[i] == ",":
                    i = self._skip(i + 1)
            i += 1
        else:
            _, i = _DECODER.raw_decode(self.text, i)
        self.values[path] = self.pos.span(start, i)
        return i


def _at(file: str, rule: d.Rule, message: str, span: Span = (1, 1, 1, 1)) -> Diagnostic:
    return Diagnostic(file, *span, rule.id, rule.severity, message)


def _sub_document(file: str, index: int, data: Any, scan: _JsonScan, prefix: tuple) -> Document:
    """One element of ``allocations`` as a Document, positions re-rooted to it."""
    cut = len(prefix)
    keys = {p[cut:]: s for p, s in scan.keys.items() if p[:cut] == prefix and len(p) > cut}
    values = {p[cut:]: s for p, s in scan.values.items() if p[:cut] == prefix}
    return Document(file, index, data, scan.values[prefix], keys, values)


def read_state(path: str) -> StateRead:
    """(allocations, files, inputs digest, diagnostics) of a state file.

    A missing file is an empty state. Broken JSON is Y002, a wrong shape S003/S004,
    and each invalid Allocation is reported like one in a YAML file (S00x, N001);
    the valid allocations are still returned."""
    if not os.path.exists(path):
        return _EMPTY
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        return StateRead([], {}, None, [_at(path, d.Y001, f"cannot read the state file: {exc.strerror or exc}")])
    except UnicodeDecodeError:
        return StateRead([], {}, None, [_at(path, d.Y001, "the state file is not valid UTF-8")])
    try:
        root = json.loads(text)
    except json.JSONDecodeError as exc:
        span = (exc.lineno, exc.colno, exc.lineno, exc.colno)
        return StateRead([], {}, None, [_at(path, d.Y002, f"the state file is not valid JSON: {exc.msg}; "
                                            "fix it, or delete it to start from an empty state", span)])
    except RecursionError:
        return StateRead([], {}, None, [_at(path, d.Y006, "the state file nests too deeply")])
    if not isinstance(root, dict):
        return StateRead([], {}, None, [_at(path, d.S003, "the state file must hold a JSON object "
                                            "with format_version, inputs_digest, allocations and files")])
    scan = _JsonScan(text)
    top = Document(path, 0, root, scan.values[()], scan.keys, scan.values)
    problems = [_at(path, d.Y003, f"duplicate key {key!r}; JSON readers keep only one of them", span)
                for key, span in scan.duplicates]
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
    for index, item in enumerate(items):
        doc = _sub_document(path, index, item, scan, ("allocations", index))
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
    """Replace the state file atomically. Hold ``state_lock(path)`` around the whole
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


# --- the lock ----------------------------------------------------------------------

class StateLockError(Exception):
    """Another process holds the state lock."""

    def __init__(self, lock: str, pid: int | None) -> None:
        holder = f"process {pid}" if pid is not None else "a process that has not written its pid yet"
        super().__init__(f"the state is locked: {lock} is held by {holder}; another `poolc apply` is "
                         f"running; wait for it to finish, or delete {lock} if no poolc is running")
        self.lock, self.pid = lock, pid


def _read_pid(lock: str) -> int | None:
    try:
        with open(lock, encoding="utf-8") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    return True


def _take_over_stale(lock: str) -> bool:
    """Remove a lock whose pid is dead; True if it is gone (by us or anyone).

    Takers serialize on flock of the stale file and remove it only while the
    path still names that file, so two takers cannot remove each other's fresh lock."""
    import fcntl

    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            return True
        if not same:
            return True  # replaced meanwhile: try again from the start
        pid = _read_pid(lock)
        if pid is None or _alive(pid):
            return False
        os.unlink(lock)
        return True
    finally:
        os.close(fd)


@contextmanager
def state_lock(path: str) -> Iterator[str]:
    """Hold ``<path>.lock`` (created with O_CREAT|O_EXCL, holding our pid) for the
    duration; a live holder raises StateLockError, a dead one's lock is taken over."""
    lock = f"{path}.lock"
    directory = os.path.dirname(lock) or "."
    os.makedirs(directory, exist_ok=True)
    for _ in range(100):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _take_over_stale(lock):
                continue
            raise StateLockError(lock, _read_pid(lock)) from None
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")
        break
    else:
        raise StateLockError(lock, _read_pid(lock))
    try:
        yield lock
    finally:
        if _read_pid(lock) == os.getpid():
            os.unlink(lock)
