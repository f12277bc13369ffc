"""Issue #12 as regression tests: a repository (or a CI system) that attacks apply.

One test per finding: writes and deletes outside the output directory, injection
through file names, collisions of generated names, the lock, and inputs that used
to crash or blow up. The kills and signals are in tests/test_kill.py.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from support import cli

from poolc import load
from poolc.commands.apply import apply_paths
from poolc.commands.validate import validate_paths
from poolc.domain.naming import allocation_name, training_job_name
from poolc.load import dispatch
from poolc.state.lock import state_lock
from poolc.state.records import read_state

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "from poolc.cli import main; main()"]
POOL_FILE = "examples/pools/cpu-batch.yaml"


# apply records start times: one fixed clock for the whole module (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("fixed_clock")


def apply(*extra: str):
    return cli("apply", "examples", "--output-dir", "deploy", *extra)


def poolc(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def state() -> dict:
    return json.loads(Path("poolc.state.json").read_text(encoding="utf-8"))


def save_state(data: dict) -> None:
    Path("poolc.state.json").write_text(json.dumps(data, indent=2), encoding="utf-8")


def digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def rules(result) -> list[str]:
    return [d.rule for d in result.diagnostics if d.severity == "error"]


# --- nothing outside the output dir ---------------------------------------------------------

def test_symlinked_subdirectory_is_refused_and_nothing_is_written(platform):
    elsewhere = platform / "elsewhere"
    elsewhere.mkdir()
    (platform / "deploy").mkdir()
    (platform / "deploy" / "kubernetes").symlink_to("../elsewhere")
    result = apply()
    assert result.exit_code == 1 and "refusing" in result.stderr and "symbolic link" in result.stderr
    assert list(elsewhere.iterdir()) == [] and not Path("poolc.state.json").exists()
    assert "Traceback" not in result.stderr


def test_state_naming_a_file_through_a_symlink_deletes_nothing(platform):
    assert apply().exit_code == 0
    outside = platform / "outside" / "sub"
    outside.mkdir(parents=True)
    victim = outside / "file"
    victim.write_text("precious\n", encoding="utf-8")
    (platform / "deploy" / "link").symlink_to("../outside")
    saved = state()
    saved["files"]["link/sub/file"] = digest(victim)      # even with the right digest
    save_state(saved)
    result = apply()
    assert result.exit_code == 0, result.output
    assert victim.read_text(encoding="utf-8") == "precious\n"
    assert "kept: link/sub/file" in result.stdout


def test_state_naming_a_users_own_file_does_not_delete_it(platform):
    assert apply().exit_code == 0
    notes = platform / "deploy" / "kueue" / "NOTES.md"
    notes.write_text("our runbook\n", encoding="utf-8")
    saved = state()
    saved["files"]["kueue/NOTES.md"] = "sha256:" + "0" * 64
    save_state(saved)
    result = apply()
    assert result.exit_code == 0
    assert notes.read_text(encoding="utf-8") == "our runbook\n"
    assert "kueue/NOTES.md" not in state()["files"]


def test_generated_file_replaced_by_a_symlink_is_refused_not_followed(platform):
    assert apply().exit_code == 0
    secret = platform / "secret.txt"
    secret.write_text("AKIA-SECRET\n", encoding="utf-8")
    target = platform / "deploy" / "kueue" / "cpu-batch.yaml"
    target.unlink()
    target.symlink_to(secret)
    result = apply()
    assert result.exit_code == 1 and "symbolic link" in result.stderr
    assert target.is_symlink() and secret.read_text(encoding="utf-8") == "AKIA-SECRET\n"
    assert not list((platform / "deploy").rglob(".poolc-*"))


@pytest.mark.parametrize("kind", ["symlink", "fifo", "device"])
def test_plan_out_and_state_refuse_what_is_not_a_regular_file(platform, kind):
    secret = platform / "secret.txt"
    secret.write_text("keep\n", encoding="utf-8")
    names = {"plan": "plan.json", "state": "state.json"}
    for name in names.values():
        path = platform / name
        if kind == "symlink":
            path.symlink_to(secret)
        elif kind == "fifo":
            os.mkfifo(path)
    if kind == "device":
        names = {"plan": "/dev/null", "state": "/dev/null"}
    planned = poolc("plan", "examples", "--out", names["plan"], "-q", cwd=platform, timeout=60)
    assert planned.returncode == 1 and "cannot write the plan" in planned.stderr, planned.stderr
    applied = poolc("apply", "examples", "--output-dir", "deploy", "--state", names["state"], cwd=platform,
                    timeout=60)
    assert applied.returncode == 1 and "Traceback" not in applied.stderr, applied.stderr
    assert secret.read_text(encoding="utf-8") == "keep\n"
    assert (platform / "plan.json").is_symlink() == (kind == "symlink")
    assert Path("/dev/null").is_char_device()


def test_plan_out_into_an_unwritable_place_is_a_diagnostic(platform):
    Path("afile").write_text("x", encoding="utf-8")
    result = cli("plan", "examples", "--out", "afile/plan.json", "-q")
    assert result.exit_code == 1 and "cannot write the plan to afile/plan.json" in result.stderr
    assert "internal error" not in result.stderr


def test_a_journal_planted_in_the_repository_cannot_aim_apply_elsewhere(platform):
    Path("poolc.state.json.journal").write_text(json.dumps({
        "poolc_journal": 1, "id": "0" * 16, "phase": "commit", "output_dir": "deploy",
        "state": "poolc.state.json", "dirs": [],
        "entries": [{"tree": "out", "path": "../victim", "new": None, "backup": True}]}), encoding="utf-8")
    (platform / "victim").write_text("mine\n", encoding="utf-8")
    result = apply()
    assert result.exit_code == 1 and "not a journal poolc can recover" in result.stderr
    assert (platform / "victim").read_text(encoding="utf-8") == "mine\n"


# --- injection through file names -----------------------------------------------------------

INJECTED = "x\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: evil, namespace: kube-system}\n# .yaml"


def test_newline_in_a_file_name_cannot_inject_yaml_into_a_generated_header(platform):
    source = Path("examples/pipelines/prod-training.yaml")
    source.rename(Path("examples/pipelines") / INJECTED)
    assert apply().exit_code == 0
    for generated in Path("deploy").rglob("*.yaml"):
        text = generated.read_text(encoding="utf-8")
        assert text.splitlines()[0].startswith("# Generated by poolc")
        assert all(doc.get("kind") != "Pod" for doc in yaml.safe_load_all(text) if doc), generated
    job = next(Path("deploy").rglob("prod-training--train_model.job.yaml")).read_text(encoding="utf-8")
    assert '\\n---\\napiVersion: v1' in job.splitlines()[0]


@pytest.mark.parametrize("name", ["::error file=.github/x,line=1::pwned.yaml",
                                  "ok.yaml\n::error file=x::pwned.yaml", "  ::warning::x.yaml"])
def test_a_file_name_is_no_workflow_command_in_the_text_output(platform, name):
    Path(name.replace("/", "_")).write_text("apiVersion: poolc/v1\nkind: [Pipeline\n", encoding="utf-8")
    result = cli("validate", ".")
    assert result.exit_code == 1 and result.stdout
    assert not any(line.strip().startswith("::") for line in result.stdout.splitlines()), result.stdout
    github = cli("validate", ".", "--format", "github")
    assert all(line.startswith(("::error ", "::warning ")) for line in github.stdout.splitlines())
    # text output adds the source line and a caret under each diagnostic, indented
    diagnostics = [line for line in result.stdout.splitlines() if not line.startswith(" ")]
    assert len(github.stdout.splitlines()) == len(diagnostics)


# --- collisions ---------------------------------------------------------------------------------

def _pipeline(name: str, step: str) -> str:
    return (f"apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {{name: {name}}}\n"
            f"spec:\n  stack: prod-stack\n  settings: {{resources: {{cpu_count: 1, memory: 1GB}}}}\n"
            f"  steps:\n    {step}: {{}}\n")


def test_steps_that_map_to_one_job_file_are_an_error(platform):
    Path("examples/pipelines/a.yaml").write_text(_pipeline("a", "b--c"), encoding="utf-8")
    Path("examples/pipelines/a-b.yaml").write_text(_pipeline("a--b", "c"), encoding="utf-8")
    result = validate_paths(["examples"])
    assert rules(result).count("N003") >= 2             # the file name and the allocation name
    assert any("a--b--c" in d.message for d in result.diagnostics)
    assert apply().exit_code == 1


def test_a_pool_named_priorities_is_an_error(platform):
    text = Path(POOL_FILE).read_text(encoding="utf-8")
    Path(POOL_FILE).write_text(text.replace("name: cpu-batch", "name: priorities"), encoding="utf-8")
    result = validate_paths(["examples"])
    assert "N003" in rules(result)
    assert any("kueue/priorities.yaml" in d.message for d in result.diagnostics)


def test_train_model_and_train_dash_model_get_distinct_names():
    assert training_job_name("p/train_model") != training_job_name("p/train-model")
    assert allocation_name("p/train_model") != allocation_name("p/train-model")
    assert training_job_name("p/train-model") == "p--train-model"          # unchanged when nothing is rewritten
    assert training_job_name("p/train_model").startswith("p--train-model-")


def test_train_model_and_train_dash_model_validate_and_apply(platform):
    text = Path("examples/pipelines/llm-finetune.yaml").read_text(encoding="utf-8")
    assert "    tokenize:" in text
    Path("examples/pipelines/llm-finetune.yaml").write_text(
        text.replace("    tokenize:", "    tok_en: {}\n    tok-en: {}\n    tokenize:", 1), encoding="utf-8")
    assert "N003" not in rules(validate_paths(["examples"]))


# --- the lock ----------------------------------------------------------------------------------

def test_an_empty_lock_file_does_not_block(platform):
    Path("poolc.state.json.lock").write_text("", encoding="utf-8")
    result = apply()
    assert result.exit_code == 0, result.output


def test_a_pid_from_another_namespace_does_not_block_or_fool_the_lock(platform):
    Path("poolc.state.json.lock").write_text(f"{os.getpid()}\n", encoding="utf-8")   # alive, but holds nothing
    assert apply().exit_code == 0
    with state_lock(str(platform / "poolc.state.json")):     # a real holder, whatever its pid says
        Path("poolc.state.json.lock").write_text("1\n", encoding="utf-8")
        result = apply()
        assert result.exit_code == 1 and "locked" in result.stderr


def test_a_symlinked_lock_file_is_refused(platform):
    os.symlink(platform / "elsewhere.lock", "poolc.state.json.lock")
    result = apply()
    assert result.exit_code == 1 and "symbolic link" in result.stderr
    assert not (platform / "elsewhere.lock").exists()


# --- crashes and blow-ups ------------------------------------------------------------------

def test_block_nesting_thirty_thousand_deep_is_no_crash(tmp_path):
    (tmp_path / "foreign.yaml").write_text("# mentions poolc/\n" + "- " * 30_000 + "x\n", encoding="utf-8")
    (tmp_path / "ours.yaml").write_text("apiVersion: poolc/v1\nkind: Pipeline\n---\n" + "- " * 30_000 + "x\n",
                                        encoding="utf-8")
    proc = poolc("validate", ".", cwd=tmp_path)
    assert proc.returncode == 1, proc
    assert "ours.yaml:4:" in proc.stdout and "Y006" in proc.stdout and "foreign" not in proc.stdout


def test_deeply_nested_state_json_is_a_diagnostic(tmp_path):
    path = tmp_path / "state.json"
    path.write_text('{"format_version": 1, "allocations": ' + "[" * 900 + "]" * 900 + "}", encoding="utf-8")
    read = read_state(str(path))
    assert read.diagnostics and not read.allocations


def test_a_5000_digit_integer_in_the_state_is_a_diagnostic(platform):
    assert apply().exit_code == 0
    text = Path("poolc.state.json").read_text(encoding="utf-8")
    Path("poolc.state.json").write_text(text.replace('"format_version": 1', '"format_version": ' + "9" * 5000),
                                        encoding="utf-8")
    result = apply()
    assert result.exit_code == 1 and "internal error" not in result.stderr
    assert "poolc.state.json" in result.stdout + result.stderr


def test_a_5000_digit_integer_in_a_plan_file_is_refused(platform):
    assert cli("plan", "examples", "--out", "plan.json", "-q").exit_code == 0
    saved = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    Path("plan.json").write_text(json.dumps(saved).replace('"format_version": 1', '"format_version": ' + "7" * 5000),
                                 encoding="utf-8")
    result = apply("--plan", "plan.json")
    assert result.exit_code == 1 and "internal error" not in result.stderr and "plan" in result.stderr


def test_an_absurd_memory_quantity_is_a_diagnostic_not_a_solver_error(platform):
    text = Path(POOL_FILE).read_text(encoding="utf-8")
    Path(POOL_FILE).write_text(text.replace("memory: 1536GB", "memory: 99999999999999999999999PiB"),
                               encoding="utf-8")
    validated = cli("validate", "examples")
    assert validated.exit_code == 1 and "P007" in validated.stdout and "cpu-batch.yaml:15:" in validated.stdout
    planned = cli("plan", "examples", "-q")
    assert planned.exit_code == 1 and "internal error" not in planned.stderr
    applied = apply()
    assert applied.exit_code == 1 and "internal error" not in applied.stderr
    assert len(applied.stderr.splitlines()) <= 3


def test_reading_the_state_is_linear():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import state_read
    finally:
        sys.path.pop(0)
    import tempfile

    times = {}
    with tempfile.TemporaryDirectory() as scratch:
        for count in (1000, 8000):
            path = os.path.join(scratch, f"{count}.json")
            Path(path).write_text(state_read.state_text(count), encoding="utf-8")
            best = math.inf
            for _ in range(3):    # the best of three: a busy machine only ever adds time
                started = time.perf_counter()
                assert len(read_state(path).allocations) == count
                best = min(best, time.perf_counter() - started)
            times[count] = best
    assert times[8000] < 8 * times[1000] * 2.5, times      # quadratic would be 64x


def test_yaml_links_to_a_device_or_a_fifo_are_refused_at_once(tmp_path):
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "pipe.yaml")
    started = time.perf_counter()
    proc = poolc("validate", ".", cwd=tmp_path, timeout=60)
    assert time.perf_counter() - started < 30
    assert proc.returncode == 1
    assert "zero.yaml:1:1: error[Y001]" in proc.stdout and "pipe.yaml:1:1: error[Y001]" in proc.stdout


def test_the_inputs_have_a_total_budget(platform, monkeypatch):
    everything = load.load_paths(["examples"])
    monkeypatch.setattr(dispatch, "MAX_TOTAL_BYTES", 6000)
    result = load.load_paths(["examples"])
    over = [d for d in result.diagnostics if d.rule == "Y007"]
    assert len(over) == 1 and "add up to more than 6000 bytes" in over[0].message
    assert len(result.documents) < len(everything.documents)


def test_the_inputs_have_a_document_budget(platform, monkeypatch):
    monkeypatch.setattr(dispatch, "MAX_DOCUMENTS", 3)
    result = load.load_paths(["examples"])
    assert [d.rule for d in result.diagnostics if d.rule == "Y007"] == ["Y007"]
    assert len(result.documents) <= 3


def test_apply_in_process_still_writes_through_a_symlinked_output_root(platform):
    """The output directory itself may be a link (the user's choice); only what is below is walked."""
    (platform / "real").mkdir()
    (platform / "deploy").symlink_to("real")
    assert apply_paths(["examples"], "deploy").written
    assert (platform / "real" / "kueue" / "cpu-batch.yaml").is_file()


def test_a_long_chain_of_merge_keys_is_a_depth_diagnostic():
    chain = "".join(f"a{i}: &a{i} {{<<: *a{i - 1}}}\n" for i in range(1, 3000))
    docs, problems = load.load_text("f.yaml", "apiVersion: poolc/v1\nkind: Pipeline\na0: &a0 {x: 1}\n" + chain)
    assert docs == [] and [p.rule for p in problems] == ["Y006"]


HOLDER = ("import sys, time\nfrom poolc.state.lock import state_lock\n"
          "with state_lock(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(60)\n")


def test_a_holder_in_another_pid_namespace_keeps_the_lock(platform):
    """Its pid means nothing here (1 or 2 in its namespace); the flock still counts."""
    probe = subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("unshare --pid is not permitted here")
    holder = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", sys.executable, "-c", HOLDER,
                               str(platform / "poolc.state.json")], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout.readline().strip() == "held"
        assert int(Path("poolc.state.json.lock").read_text(encoding="utf-8")) <= 2
        result = apply()
        assert result.exit_code == 1 and "locked" in result.stderr
        assert not Path("deploy").exists()
    finally:
        holder.kill()
        holder.wait()


def test_a_file_past_the_document_budget_is_not_composed_to_its_end():
    doc = "apiVersion: poolc/v1\nkind: ResourcePool\nmetadata: {{name: p{i}}}\nspec: {{capacity: {{gpu: 1}}}}\n"
    text = "---\n".join(doc.format(i=i) for i in range(50))
    documents, _ = load.load_text("pools.yaml", text, max_documents=5)
    assert len(documents) == 6
