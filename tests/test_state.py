"""The state file: names, round trip, diagnostics for broken files, the lock, changes."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_plan_output import FILES, decided, greedy, write_platform

from poolc.commands.planning import plan_paths
from poolc.domain.naming import allocation_name
from poolc.domain.plan import AllocationChanges
from poolc.model import Allocation
from poolc.planner.solution import Solution
from poolc.state.lock import StateLockError, state_lock
from poolc.state.records import StateInputs, changes, dump_state, read_state, state_from_plan, write_state

REPO = Path(__file__).resolve().parent.parent


def alloc(name: str, **spec) -> Allocation:
    return Allocation.model_validate({"apiVersion": "poolc/v1", "kind": "Allocation", "metadata": {"name": name},
                                      "spec": {"subject": "research-k8s", "pool": "dc", "holds": {"gpu": 1},
                                               **spec}})


def test_allocation_names_are_dns_labels_and_distinct():
    assert allocation_name("prod-training/evaluate") == "prod-training--evaluate"
    underscored = allocation_name("prod-training/train_model")
    dashed = allocation_name("prod-training/train-model")
    assert dashed == "prod-training--train-model"
    assert underscored.startswith("prod-training--train-model-") and len(underscored) == 35
    assert underscored == allocation_name("prod-training/train_model")       # deterministic
    long = allocation_name("p" * 63 + "/" + "s" * 63)
    assert len(long) == 63 and long.startswith("p" * 54 + "-")
    for name in (underscored, long, allocation_name("a/b_")):
        Allocation.model_validate({"apiVersion": "poolc/v1", "kind": "Allocation", "metadata": {"name": name},
                                   "spec": {"subject": "x", "pool": "y", "holds": {}}})


def test_missing_state_is_empty(tmp_path):
    state = read_state(str(tmp_path / "nope.json"))
    assert state[:5] == ([], {}, None, [], []) and state.missing and state.ok


def test_round_trip(tmp_path, monkeypatch):
    monkeypatch.chdir(write_platform(tmp_path))
    result = plan_paths(["."], strategy=decided)
    state = state_from_plan(result.plan, result.previous, StateInputs(files={"kueue/dc.yaml": "sha256:ab"}))
    assert [a["metadata"]["name"] for a in state.allocations] == ["research--probe", "train--eval",
                                                                 "train--train"]
    assert state.allocations[2] == {
        "apiVersion": "poolc/v1", "kind": "Allocation",
        "metadata": {"name": "train--train", "description": "step train/train, admitted through policy prod",
                     "labels": {"poolc.dev/step": "train.train"}},
        "spec": {"subject": "prod-k8s", "pool": "dc", "preemptible": False, "holds": {"gpu": 4, "step_run": 1}},
    }
    path = str(tmp_path / "poolc.state.json")
    write_state(path, state)
    text = Path(path).read_text(encoding="utf-8")
    assert text == dump_state(state) and text.endswith("}\n")
    allocations, files, digest, diagnostics, _ = read_state(path)[:5]
    assert diagnostics == []
    assert digest == result.plan.inputs_digest and files == {"kueue/dc.yaml": "sha256:ab"}
    assert [a.model_dump(mode="json", exclude_none=True) for a in allocations] == state.allocations
    # writing what was read gives the same bytes: the state is reproducible
    again = state.model_copy(update={"allocations": [a.model_dump(mode="json", exclude_none=True)
                                                     for a in allocations]})
    assert dump_state(again) == text


def test_planning_again_after_apply_changes_nothing(tmp_path, monkeypatch):
    files = {k: v for k, v in FILES.items() if k != "running.yaml"}
    monkeypatch.chdir(write_platform(tmp_path, files))
    path = str(tmp_path / "poolc.state.json")
    first = plan_paths(["."], strategy=greedy, state_file=path, now="2026-11-23T03:00:00Z")
    assert first.changes.allocations.added == ("research--probe", "train--eval", "train--train")
    Path(path).write_text(first.state_text, encoding="utf-8")
    second = plan_paths(["."], strategy=greedy, state_file=path, now="2026-11-23T04:00:00Z")
    assert second.changes.allocations == AllocationChanges(
        unchanged=("research--probe", "train--eval", "train--train"))
    assert second.changes.files == () and second.changes.state is None
    assert not second.changed
    assert new_state(second)["allocations"] == new_state(first)["allocations"]
    assert [r.id for r in second.problem.requests] == ["adhoc/notebook", "train/huge", "train/fixed"]
    train = next(r for r in second.plan.requests if r.id == "train/train")
    assert (train.status, train.pool, train.policy, train.running) == ("allocated", "dc", "prod", "train--train")
    assert train.message.text == "already running as allocation train--train; allocated within reserved share"
    assert second.plan.inputs_digest != first.plan.inputs_digest   # the state is an input of a plan ...
    assert new_state(second)["inputs_digest"] == new_state(first)["inputs_digest"]   # ... not of the state


def new_state(result) -> dict:
    return json.loads(result.state_text)


def test_state_text_is_a_fixed_point_after_apply(tmp_path, monkeypatch):
    """`apply` then `apply --check`: the state it would write is the one on disk,
    and it records the digest of every file apply would write."""
    monkeypatch.chdir(write_platform(tmp_path))
    path = str(tmp_path / "poolc.state.json")
    first = plan_paths(["."], strategy=greedy, state_file=path, now="2026-11-23T03:00:00Z")
    Path(path).write_text(first.state_text, encoding="utf-8")
    again = plan_paths(["."], strategy=greedy, state_file=path, now="2026-11-23T05:00:00Z")
    assert again.previous_state_files == {p: "sha256:" + hashlib.sha256(t.encode()).hexdigest()
                                          for p, t in first.files.items()}
    assert again.state_text == Path(path).read_text(encoding="utf-8")
    assert not again.changed and again.plan.diagnostics_list() == list(again.plan.diagnostics)


def test_running_step_preempted_is_queued_again(tmp_path, monkeypatch):
    monkeypatch.chdir(write_platform(tmp_path))
    path = str(tmp_path / "poolc.state.json")
    probe = Allocation.model_validate({"apiVersion": "poolc/v1", "kind": "Allocation",
                                       "metadata": {"name": "research--probe"},
                                       "spec": {"subject": "research-k8s", "pool": "dc",
                                                "holds": {"gpu": 2, "step_run": 1}}})
    write_state(path, {"format_version": 1, "inputs_digest": "sha256:0", "files": {},
                       "allocations": [probe.model_dump(mode="json", exclude_none=True)]})

    def preempt_the_probe(problem):
        assert "research/probe" not in [r.id for r in problem.requests]   # it runs already
        return Solution("optimal", {"train/train": "prod"}, {"research--probe": ["train/train"]})

    result = plan_paths(["."], strategy=preempt_the_probe, state_file=path)
    probe_step = next(r for r in result.plan.requests if r.id == "research/probe")
    assert probe_step.status == "queued" and probe_step.running == "research--probe"
    assert probe_step.message.text.startswith("its running allocation research--probe is preempted for train/train")
    assert "research--probe" in result.changes.allocations.removed


def test_state_of_a_plan_keeps_unpreempted_allocations(tmp_path, monkeypatch):
    monkeypatch.chdir(write_platform(tmp_path))
    result = plan_paths(["."], strategy=greedy, now="2026-11-23T03:00:00Z")
    names = [a["metadata"]["name"] for a in new_state(result)["allocations"]]
    assert names == ["research--probe", "sweep-old", "train--eval"]
    kept = new_state(result)["allocations"][1]
    assert kept["spec"]["started_at"] == "2026-01-01T00:00:00Z"       # copied as it was
    assert new_state(result)["allocations"][0]["spec"]["started_at"] == "2026-11-23T03:00:00Z"  # the apply's time


# --- broken state files -----------------------------------------------------------------

def test_malformed_json_is_a_diagnostic(tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{\n  "format_version": 1,\n  "allocations": [\n    {"kind": }\n  ]\n}\n', encoding="utf-8")
    allocations, files, digest, diagnostics, _ = read_state(str(path))[:5]
    assert allocations == [] and digest is None
    [problem] = diagnostics
    assert (problem.file, problem.line, problem.column, problem.rule) == (str(path), 4, 14, "Y002")
    assert problem.message.startswith("the state file is not valid JSON: Expecting value")


def test_invalid_allocation_points_at_its_field(tmp_path):
    good = alloc("good").model_dump(mode="json", exclude_none=True)
    bad = alloc("bad").model_dump(mode="json", exclude_none=True)
    bad["spec"]["holds"] = {"gpu": "two"}
    other = {"apiVersion": "poolc/v1", "kind": "ResourcePool", "metadata": {"name": "p"}, "spec": {}}
    path = tmp_path / "s.json"
    path.write_text(dump_state({"format_version": 1, "inputs_digest": "sha256:x", "files": {},
                                "allocations": [bad, good, other, good]}), encoding="utf-8")
    lines = path.read_text(encoding="utf-8").splitlines()
    allocations, _, digest, diagnostics, _ = read_state(str(path))[:5]
    assert [a.metadata.name for a in allocations] == ["good"] and digest == "sha256:x"
    rules = sorted((x.rule, x.line) for x in diagnostics)
    assert [r for r, _ in rules] == ["N001", "S003", "S004"]
    s003 = next(x for x in diagnostics if x.rule == "S003")
    assert lines[s003.line - 1][s003.column - 1:].startswith('"two"')
    s004 = next(x for x in diagnostics if x.rule == "S004")
    assert lines[s004.line - 1][s004.column - 1:].startswith('"ResourcePool"')
    assert s004.message.startswith("the state holds only Allocation documents")


@pytest.mark.parametrize("text, rule", [
    ('[]', "S003"),
    ('{"format_version": 2, "allocations": []}', "S004"),
    ('{"format_version": 1, "allocations": {}}', "S003"),
    ('{"format_version": 1, "files": [1]}', "S003"),
    ('{"format_version": 1, "allocations": [], "allocations": []}', "Y003"),
    ('{"format_version": 1, "extra": 1}', "S001"),
    ('\xff', "Y001"),
])
def test_wrong_shapes_are_diagnostics(tmp_path, text, rule):
    path = tmp_path / "s.json"
    path.write_bytes(text.encode("latin-1") if text == "\xff" else text.encode("utf-8"))
    assert [x.rule for x in read_state(str(path)).diagnostics] == [rule]


@pytest.mark.parametrize("field, value, bad, message", [
    ("files", {"a.yaml": "sha256:0", "b.yaml": 7}, "7", 'files must map relative paths to "sha256:..." strings'),
    ("finished", {"p.a": "sha256:0", "p.b": None}, "null", "finished must map step ids to input digests"),
    ("preempted", ["x", ["y"]], '[\n', "preempted must be a list of allocation names"),
    ("inputs_digest", 3, "3", "inputs_digest must be a string"),
    ("output_dir", "", '""', "output_dir must be a path"),
])
def test_a_wrong_entry_is_reported_at_the_entry(tmp_path, field, value, bad, message):
    """The state's model points at the offending entry itself, as a YAML file's
    diagnostics do; the rest of the state is still read."""
    path = tmp_path / "s.json"
    path.write_text(dump_state({"format_version": 1, "inputs_digest": "sha256:x", "files": {},
                                "allocations": [alloc("good").model_dump(mode="json", exclude_none=True)],
                                field: value}), encoding="utf-8")
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    state = read_state(str(path))
    [problem] = state.diagnostics
    assert (problem.rule, problem.message) == ("S003", message)
    assert lines[problem.line - 1][problem.column - 1:].startswith(bad)
    assert [a.metadata.name for a in state.allocations] == ["good"]


def test_every_wrong_field_is_reported_once_each(tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{\n  "format_version": 1,\n  "inputs_digest": [1],\n  "files": 3,\n  "preempted": {},\n'
                    '  "finished": "x",\n  "output_dir": [],\n  "extra": 2\n}\n', encoding="utf-8")
    found = sorted((x.rule, x.message.split(" ")[0], x.line) for x in read_state(str(path)).diagnostics)
    assert found == [("S001", "unknown", 8), ("S003", "files", 4), ("S003", "finished", 6),
                     ("S003", "inputs_digest", 3), ("S003", "output_dir", 7), ("S003", "preempted", 5)]


def test_plan_with_a_broken_state_reports_it(tmp_path, monkeypatch):
    monkeypatch.chdir(write_platform(tmp_path))
    (tmp_path / "state.json").write_text("{oops", encoding="utf-8")
    result = plan_paths(["."], strategy=greedy, state_file="state.json")
    assert [(x.file, x.rule) for x in result.plan.diagnostics if x.file == "state.json"] == [("state.json", "Y002")]
    assert not result.ok


# --- changes ----------------------------------------------------------------------------

def test_changes():
    before = [alloc("a"), alloc("b")]
    after = [alloc("b").model_dump(mode="json"), {"metadata": {"name": "c"}}]
    assert changes(before, after) == {"added": ["c"], "removed": ["a"], "resized": [], "unchanged": ["b"]}
    assert changes(before, after, resized=["b"]) == {"added": ["c"], "removed": ["a"], "resized": ["b"],
                                                     "unchanged": []}


# --- the lock ---------------------------------------------------------------------------

def test_lock_is_exclusive_and_released(tmp_path):
    path = str(tmp_path / "poolc.state.json")
    with state_lock(path) as lock:
        assert lock == path + ".lock"
        assert Path(lock).read_text(encoding="utf-8") == f"{os.getpid()}\n"
        with pytest.raises(StateLockError) as caught:
            with state_lock(path):
                pass
        assert lock in str(caught.value) and str(os.getpid()) in str(caught.value)
    assert not os.path.exists(path + ".lock")


def test_lock_held_by_another_process(tmp_path):
    path = str(tmp_path / "poolc.state.json")
    code = ("import sys, time; from poolc.state.lock import state_lock\n"
            "with state_lock(sys.argv[1]):\n    print('held', flush=True); time.sleep(30)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, path], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StateLockError) as caught:
            with state_lock(path):
                pass
        assert caught.value.pid == holder.pid and caught.value.lock == path + ".lock"
    finally:
        holder.kill()
        holder.wait()


def test_stale_lock_is_taken_over(tmp_path):
    path = str(tmp_path / "poolc.state.json")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    Path(path + ".lock").write_text(f"{dead.pid}\n", encoding="utf-8")
    with state_lock(path):
        assert Path(path + ".lock").read_text(encoding="utf-8") == f"{os.getpid()}\n"
    assert not os.path.exists(path + ".lock")


def _apply_once(path: str, start, results, release) -> None:
    start.wait()
    try:
        with state_lock(path):
            results.put("ok")
            release.wait(60)     # held until every other worker has tried
    except StateLockError:
        results.put("locked")


def test_concurrent_applies_exactly_one_holds_the_lock(tmp_path):
    # the holder keeps the lock until the main process has heard from every
    # other worker, so a worker the machine starts late still finds it taken
    path = str(tmp_path / "poolc.state.json")
    context = multiprocessing.get_context("spawn")
    start, results, release = context.Barrier(4), context.Queue(), context.Event()
    workers = [context.Process(target=_apply_once, args=(path, start, results, release)) for _ in range(4)]
    for worker in workers:
        worker.start()
    outcomes = sorted(results.get(timeout=60) for _ in workers)
    release.set()
    for worker in workers:
        worker.join(30)
    assert outcomes == ["locked", "locked", "locked", "ok"]
    assert not os.path.exists(path + ".lock")
