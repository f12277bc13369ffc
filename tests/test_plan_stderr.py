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


def unclocked(stderr: bytes) -> bytes:
    """``stderr`` without the heartbeat's lines, the one output that depends on the clock
    (a run that takes longer than 5 s on a busy machine says what it is working on)."""
    return b"".join(line for line in stderr.splitlines(keepends=True) if b" s so far: " not in line)


def _platform(name: str, generated: Path) -> Path:
    return {"review": REVIEW, "examples": REPO / "examples", "generated": generated}[name]


@pytest.mark.parametrize("name", ["review", "examples", pytest.param("generated", marks=pytest.mark.slow)])
def test_same_plan_same_stdout_and_stderr(name, generated, tmp_path):
    root = _platform(name, generated)
    args = ("plan", str(root), "--state", str(tmp_path / "no-state.json"))
    first, second = poolc(*args, cwd=tmp_path), poolc(*args, cwd=tmp_path)
    assert first.returncode == second.returncode
    assert first.stdout == second.stdout and unclocked(first.stderr) == unclocked(second.stderr)
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


def test_a_long_plan_says_what_it_is_proving(tmp_path):
    """Off a terminal and without --verbose, a plan that has run for the heartbeat's
    delay says which tier it is proving as each one begins (here the delay is 0, so
    every tier speaks); stdout is the plan, unchanged."""
    args = ("plan", str(REVIEW), "--state", str(tmp_path / "no-state.json"))
    plain = poolc(*args, cwd=tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO), "POOLC_HEARTBEAT_AFTER": "0"}
    beating = subprocess.run([sys.executable, "-m", "poolc", *args], capture_output=True, cwd=tmp_path, env=env,
                             timeout=600)
    assert beating.stdout == plain.stdout and beating.returncode == plain.returncode
    lines = [line for line in beating.stderr.decode().splitlines() if " s so far: " in line]
    assert lines and all(line.startswith("poolc: ") for line in lines)
    assert any(" s so far: proving " in line and "tier 1/" in line for line in lines)
    assert unclocked(beating.stderr) == plain.stderr


def test_verbose_gives_each_tier_s_cpu_seconds_and_the_solves_total(tmp_path):
    """--verbose puts the CPU seconds of a tier's solves beside the deterministic
    time the budget counts, and ends with the total of every CP-SAT solve."""
    verbose = poolc("plan", str(REVIEW), "--state", str(tmp_path / "no-state.json"), "--verbose", cwd=tmp_path)
    lines = verbose.stderr.decode().splitlines()
    tiers = [line for line in lines if ": tier " in line and "[deterministic time" in line]
    assert tiers and all(line.endswith(" CPU s]") for line in tiers)
    totals = [line for line in lines if " CP-SAT solves: " in line]
    assert len(totals) == 1 and totals[0].endswith(" CPU s")


def test_a_long_forecast_says_how_far_it_has_rolled(tmp_path):
    """The forecast's re-plans speak through the same heartbeat: the completion time
    it has reached of the horizon, and how many re-plans so far."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "POOLC_HEARTBEAT_AFTER": "0", "SOURCE_DATE_EPOCH": "1795147200"}
    done = subprocess.run([sys.executable, "-m", "poolc", "plan", str(REPO / "examples"), "--forecast",
                           "--horizon", "1d", "--state", str(tmp_path / "none.json")], capture_output=True,
                          cwd=tmp_path, env=env, timeout=600)
    lines = [line for line in done.stderr.decode().splitlines() if " s so far: forecast at +" in line]
    assert lines and all(line.endswith("pool(s) again") and " of 1440: " in line for line in lines)
