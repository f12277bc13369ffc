"""Issue #43: every file a command line names goes through poolc's one reader
(``writer.read_bytes``): a symbolic link and a FIFO are refused, each with a line
that says so and the command's exit code, and a FIFO nothing writes to never hangs
the command (the subprocess timeout is only a guard; the assertions are on the
messages)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from support import cli
from test_untrusted import poolc

LINK, FIFO = "it is a symbolic link", "not a regular file"
REPORT = {"apiVersion": "v1", "kind": "List", "items": []}


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """A plan file, a state, a scenario report and a price table, made once for the module."""
    here = tmp_path_factory.mktemp("saved")
    shutil.copytree(Path(__file__).resolve().parents[1] / "examples", here / "examples")
    for args in (("plan", "examples", "--out", "plan.json", "--state", "none.json", "-q"),
                 ("apply", "examples", "--output-dir", "deploy", "--state", "state.json", "-q",
                  "--now", "2026-11-23T03:00:00Z"),
                 ("test", "examples", "--format", "json")):
        done = poolc(*args, cwd=here)
        assert done.returncode == 0, (args, done.stderr)
        if args[0] == "test":
            (here / "report.json").write_bytes(done.stdout)
    (here / "prices.csv").write_text("instance_type,usd_hour\nml.m5.4xlarge,0.9\n", encoding="utf-8")
    (here / "kueue.json").write_text(json.dumps(REPORT), encoding="utf-8")
    return here


@pytest.fixture(params=["link", "fifo"])
def bad(request, saved, tmp_path) -> tuple[Path, str, str]:
    """(working directory, how to name the bad file, the words its refusal must hold)."""
    for name in ("examples", "plan.json", "state.json", "report.json", "prices.csv", "kueue.json"):
        source = saved / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, tmp_path / name)
    return tmp_path, request.param, LINK if request.param == "link" else FIFO


def _make(where: Path, kind: str, name: str, target: str) -> str:
    """``name`` in ``where`` as a link to ``target`` or as a FIFO nothing writes to."""
    path = where / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "link":
        path.symlink_to(os.path.relpath(where / target, path.parent))
    else:
        os.mkfifo(path)
    return name


@pytest.mark.parametrize(("args", "target", "exit_code", "says"), [
    (("plan", "examples", "--base", "{}"), "plan.json", 1, "cannot read the base plan"),
    (("show", "{}"), "plan.json", 1, "cannot read plan file"),
    (("apply", "examples", "--output-dir", "out", "--plan", "{}"), "plan.json", 1, "cannot read plan file"),
    (("plan", "examples", "--state", "{}"), "state.json", 1, "cannot read the state file"),
    (("apply", "examples", "--output-dir", "out", "--state", "{}"), "state.json", 1, "cannot read the state file"),
    (("state", "list", "--state", "{}"), "state.json", 1, "cannot read the state file"),
    (("plan", "examples", "--observed", "{}"), "kueue.json", 1, "cannot read the report"),
    (("state", "import", "examples", "--state", "state.json", "--kueue", "{}"), "kueue.json", 1,
     "cannot read the report"),
    (("plan", "examples", "--forecast", "--instance-prices", "{}"), "prices.csv", 1,
     "cannot read the instance price table"),
    (("test", "examples", "--format", "markdown", "--base", "{}"), "report.json", 0, "cannot read the base report"),
])
def test_a_file_named_on_the_command_line(bad, args, target, exit_code, says):
    where, kind, why = bad
    name = _make(where, kind, "bad-" + target, target)
    done = poolc(*(a.replace("{}", name) for a in args), cwd=where, timeout=180)
    err = done.stderr.decode() + done.stdout.decode()   # diagnostics go to stdout, notes to stderr
    assert done.returncode == exit_code, err
    assert says in err and why in err and "Traceback" not in err, err


@pytest.mark.parametrize("command", [("validate", "examples"), ("test", "examples"), ("plan", "examples", "-q")])
def test_a_scenario_file_under_the_inputs(bad, command):
    where, kind, why = bad
    name = _make(where, kind, "examples/scenarios/zz-bad.yaml", "examples/scenarios/01-prod-nightly-retrain.yaml")
    done = poolc(*command, cwd=where, timeout=180)
    err = done.stderr.decode() + done.stdout.decode()
    assert done.returncode == 1, err
    assert f"{name}:1:1: error[Y001] " in err and why in err, err


def test_a_journal_that_is_a_fifo_is_refused_not_waited_on(saved, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(saved / "examples", tmp_path / "examples")
    os.mkfifo(tmp_path / "poolc.state.json.journal")
    result = cli("apply", "examples", "--output-dir", "out", "-q")
    assert result.exit_code != 0 and "poolc.state.json.journal" in result.stderr, result.output
    assert not (tmp_path / "out").exists()


def test_a_python_source_that_is_a_link_inside_the_repository_is_not_read(tmp_path):
    from test_source_paths import CODE, repository, run

    repo, doc = repository(tmp_path, "python: ../training.py, pipeline: training")
    (repo / "real").mkdir()
    (repo / "real" / "training.py").write_text(CODE, encoding="utf-8")
    (repo / "training.py").unlink()
    (repo / "training.py").symlink_to("real/training.py")
    code, out = run(repo, doc)
    assert code == 1 and "error[C001]" in out and LINK in out, out
