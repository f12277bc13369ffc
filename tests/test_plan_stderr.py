"""Two runs of the same plan print the same bytes, on stdout and on stderr: solver
progress (which depends on how long a solve takes) appears only with --verbose,
or when stderr is a terminal a person watches. Real `poolc` processes, with
stdout and stderr pipes as in CI and pre-commit."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
REVIEW = REPO / "tests" / "fixtures" / "review"


def poolc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("FORCE_COLOR", None)
    return subprocess.run([sys.executable, "-m", "poolc", *args], capture_output=True, cwd=cwd, env=env,
                          timeout=600)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """About 550 requests: a solve that takes seconds, not milliseconds."""
    root = tmp_path_factory.mktemp("generated")
    subprocess.run([sys.executable, str(REPO / "benchmarks" / "gen_pipelines.py"), str(root), "--pipelines", "100"],
                   check=True, capture_output=True)
    return root


def _platform(name: str, generated: Path) -> Path:
    return {"review": REVIEW, "examples": REPO / "examples", "generated": generated}[name]


@pytest.mark.parametrize("name", ["review", "examples", pytest.param("generated", marks=pytest.mark.slow)])
def test_same_plan_same_stdout_and_stderr(name, generated, tmp_path):
    root = _platform(name, generated)
    args = ("plan", str(root), "--state", str(tmp_path / "no-state.json"))
    first, second = poolc(*args, cwd=tmp_path), poolc(*args, cwd=tmp_path)
    assert first.returncode == second.returncode
    assert first.stdout == second.stdout and first.stderr == second.stderr
    assert first.stdout and first.stderr     # the state note, and diagnostics where there are some
    assert b"tier " not in first.stderr and b"planned in" not in first.stderr


@pytest.mark.parametrize("name", ["review", pytest.param("generated", marks=pytest.mark.slow)])
def test_verbose_is_the_only_way_to_progress_off_a_terminal(name, generated, tmp_path):
    args = ("plan", str(_platform(name, generated)), "--state", str(tmp_path / "no-state.json"))
    quiet, verbose = poolc(*args, cwd=tmp_path), poolc(*args, "--verbose", cwd=tmp_path)
    assert verbose.stdout == quiet.stdout
    progress = [line for line in verbose.stderr.decode().splitlines() if ": tier " in line]
    assert progress and all(line.startswith("poolc: ") for line in progress) and ": tier 1/" in progress[0]
    assert b"poolc: planned in " in verbose.stderr
    assert b": tier " not in quiet.stderr


def test_a_terminal_on_stderr_sees_progress(tmp_path):
    """A person running poolc in a terminal sees the solver work, unasked."""
    leader, follower = pty.openpty()
    seen: list[bytes] = []

    def drain() -> None:             # a full terminal buffer would block the process
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:          # the terminal is gone once the process closed it
                return
            if not chunk:
                return
            seen.append(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with subprocess.Popen([sys.executable, "-m", "poolc", "plan", str(REVIEW), "--state",
                           str(tmp_path / "no-state.json")], stdout=subprocess.PIPE, stderr=follower,
                          cwd=tmp_path, env=env) as proc:
        os.close(follower)
        stdout, _ = proc.communicate(timeout=600)
    reader.join(timeout=60)
    os.close(leader)
    assert proc.returncode == 1 and stdout.startswith(b"Plan: strategy optimal")
    assert b": tier 1/" in b"".join(seen) and b"".join(seen).startswith(b"poolc: ")
