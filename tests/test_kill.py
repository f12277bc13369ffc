"""The kill harness: apply is cut at every write, link, rename, unlink, mkdir and
rmdir of its commit (poolc.state.transaction._point counts them), by a real SIGKILL
in a subprocess, by SIGTERM/SIGINT, and by an injected I/O error. Each time the
tree must be the old one or the new one once the next run has recovered, the
run after that must converge on the new one, and nothing may be left behind.

The scenario changes the inputs so that the commit writes files, creates a
directory (a namespace renamed), removes eleven files and two directories, and
rewrites the state.

The applies that are killed plan once: tests/forked_apply.py runs one real
`poolc apply`, which forks at its commit into one child per kill point, each on
its own byte copy of the tree (planning, not committing, is what a kill point
used to cost). The default run kills at the first and last step of each kind;
`-m slow` kills at every step.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from forked_apply import Job, forked_applies

from poolc.commands.apply import apply_paths
from poolc.state import transaction
from poolc.state.lock import state_lock
from poolc.state.transaction import recover, write_transaction

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "from poolc.cli import main; main()"]
STATE = "poolc.state.json"


# apply records start times: one fixed clock for the whole module (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("fixed_clock")


def tree(root: Path) -> dict[str, bytes]:
    """deploy/ and the state, by relative path (the inputs and the lock file aside)."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_file() and not relative.startswith(("examples/", "trace")) and not relative.endswith(".lock"):
            found[relative] = path.read_bytes()
    return found


def dirs(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in (root / "deploy").rglob("*") if p.is_dir()}


# Every apply here starts its new allocations at this time, so "new" is one tree whatever
# the clock did between the reference apply and a killed one (started_at is the apply's time).
NOW = "2026-01-05T09:00:00Z"


def leftovers(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.name.startswith(".poolc-") or p.name.endswith((".journal", ".journal.tmp")))


def change_inputs(root: Path) -> None:
    training = root / "examples/pipelines/prod-training.yaml"
    training.write_text(training.read_text().replace("      cpu_count: 4\n", "      cpu_count: 6\n", 1))
    (root / "examples/pipelines/research-sweep.yaml").unlink()
    stack = root / "examples/stacks/prod-stack.yaml"
    stack.write_text(stack.read_text().replace("namespace: ml-prod\n", "namespace: ml-prod-v2\n", 1))


class Scenario:
    """An applied tree with changed inputs (``base``), and what old and new look like."""

    def __init__(self, root: Path) -> None:
        self.base = root / "base"
        shutil.copytree(REPO / "examples", self.base / "examples")
        with chdir(self.base):
            assert apply_paths(["examples"], "deploy", now=NOW).written
        change_inputs(self.base)
        self.old, self.old_dirs = tree(self.base), dirs(self.base)
        done = self.copy(root / "new")
        with chdir(done):
            calls = []
            real = transaction._point
            transaction._point = lambda label: (calls.append(label), real(label))[1]
            try:
                assert apply_paths(["examples"], "deploy", now=NOW).written
            finally:
                transaction._point = real
        self.new, self.new_dirs, self.labels = tree(done), dirs(done), calls
        assert self.old != self.new and "ml-prod-v2" not in str(self.old_dirs)

    def copy(self, where: Path) -> Path:
        shutil.copytree(self.base, where, symlinks=True)
        return where

    def which(self, root: Path) -> str:
        now = (tree(root), dirs(root))
        if now == (self.old, self.old_dirs):
            return "old"
        if now == (self.new, self.new_dirs):
            return "new"
        return "mixed"


class chdir:
    def __init__(self, where: Path) -> None:
        self.where, self.before = where, os.getcwd()

    def __enter__(self) -> None:
        os.chdir(self.where)

    def __exit__(self, *exc: object) -> None:
        os.chdir(self.before)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Scenario:
    return Scenario(tmp_path_factory.mktemp("kill"))


APPLY_ARGS = ("examples", "--output-dir", "deploy", "-q", "--now", NOW)


def run_apply(root: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "apply", *APPLY_ARGS, *extra], cwd=root,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO), **env})


def recovered(root: Path) -> None:
    """Only the recovery the next apply starts with (under the lock, as apply does)."""
    with chdir(root), state_lock(STATE):
        recover("deploy", STATE)


def converge(scenario: Scenario, root: Path) -> None:
    with chdir(root):
        assert apply_paths(["examples"], "deploy", now=NOW).ok
        assert apply_paths(["examples"], "deploy", now=NOW, check=True).stale == []
    assert scenario.which(root) == "new" and leftovers(root) == []


def test_the_commit_has_many_kill_points(scenario):
    kinds = Counter(label.split(" ")[0] for label in scenario.labels)
    assert len(scenario.labels) >= 80
    assert kinds["write"] and kinds["link"] and kinds["rename"] and kinds["unlink"] and kinds["mkdir"]
    assert kinds["rmdir"] >= 2   # the namespaces the changed inputs leave empty


def kind(label: str) -> str:
    """A kill point's kind: its label without the path (``rename``, ``unlink backup``,
    ``rename journal (commit)``, the commit point)."""
    return " ".join(word for word in label.split(" ") if "/" not in word and "." not in word)


def first_and_last_of_each_kind(labels: list[str]) -> list[int]:
    """The kill points (1-based) where the commit moves from one kind of change to the
    next: the ones a mistake in the journal's order would show at."""
    ends: dict[str, list[int]] = {}
    for n, label in enumerate(labels, start=1):
        ends.setdefault(kind(label), []).append(n)
    return sorted({n for points in ends.values() for n in (points[0], points[-1])})


def kill_sweep(scenario: Scenario, where: Path, points: list[int]) -> Counter:
    """SIGKILL a real apply at each of ``points``, recover, and check old-or-new; then
    the next run converges. The next run of a tree recovered to old is a forked
    apply too (planned once, committed in each); a tree recovered to new is byte for
    byte the reference new tree, and one of each kind also gets the whole next run
    (apply, then apply --check) in process."""
    roots = [scenario.copy(where / f"kill-{n}") for n in points]
    runs = forked_applies(scenario.copy(where / "planner"),
                          [Job(root, {"POOLC_TEST_KILL_AT": str(n)}) for n, root in zip(points, roots, strict=True)],
                          *APPLY_ARGS)
    recovered_to: dict[str, list[Path]] = {"old": [], "new": []}
    for n, root, run in zip(points, roots, runs, strict=True):
        assert run.returncode == -signal.SIGKILL, (n, run.stderr)
        recovered(root)
        state = scenario.which(root)
        assert state in ("old", "new"), f"killed at {n} ({scenario.labels[n - 1]}): {state}"
        assert leftovers(root) == [], (n, scenario.labels[n - 1])
        recovered_to[state].append(root)
    olds = recovered_to["old"]
    if olds:
        again = forked_applies(scenario.copy(where / "replanner"), [Job(root, {}) for root in olds], *APPLY_ARGS)
        for root, run in zip(olds, again, strict=True):
            assert run.returncode == 0, (root.name, run.stderr)
            assert scenario.which(root) == "new" and leftovers(root) == [], root.name
    for state in ("old", "new"):
        if recovered_to[state]:
            converge(scenario, recovered_to[state][-1])
    return Counter({state: len(found) for state, found in recovered_to.items()})


def test_sigkill_at_the_edges_of_each_kind_of_step_leaves_old_or_new(scenario, tmp_path):
    """The fast subset of the sweep below: the first and last step of each kind."""
    points = first_and_last_of_each_kind(scenario.labels)
    assert len(points) >= 20 and {kind(scenario.labels[n - 1]) for n in points} == set(map(kind, scenario.labels))
    outcomes = kill_sweep(scenario, tmp_path, points)
    assert outcomes["old"] and outcomes["new"]


@pytest.mark.slow
def test_sigkill_at_every_step_of_the_commit_leaves_old_or_new(scenario, tmp_path):
    """A real apply, SIGKILLed at step n for every n; the next run recovers."""
    total = len(scenario.labels)
    outcomes = kill_sweep(scenario, tmp_path, list(range(1, total + 1)))
    print(f"\nkill harness: {total} kill points, {outcomes['old']} recovered to old, "
          f"{outcomes['new']} to new, 0 mixed")
    assert outcomes["old"] and outcomes["new"]


@pytest.mark.slow
def test_sigkill_during_recovery_is_recovered_too(scenario, tmp_path):
    """Killed in the middle of the commit, then killed again at every step of the recovery.
    These applies die in the recovery they start with, before they plan."""
    labels = scenario.labels
    cut = [i for i, label in enumerate(labels, start=1) if label.startswith("rename kubernetes/")][3]
    killed = scenario.copy(tmp_path / "killed")
    assert run_apply(killed, {"POOLC_TEST_KILL_AT": str(cut)}).returncode == -signal.SIGKILL
    probe = tmp_path / "probe"
    shutil.copytree(killed, probe, symlinks=True)
    trace = tmp_path / "trace"
    os.environ["POOLC_TEST_TRACE"] = str(trace)
    try:
        recovered(probe)
    finally:
        del os.environ["POOLC_TEST_TRACE"]
    steps = len(trace.read_text().splitlines())
    assert steps >= 20
    roots = []
    for m in range(1, steps + 1):
        root = tmp_path / f"re-{m}"
        shutil.copytree(killed, root, symlinks=True)
        roots.append(root)
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda mr: run_apply(mr[1], {"POOLC_TEST_KILL_AT": str(mr[0])}),
                             enumerate(roots, start=1)))
    for m, (root, run) in enumerate(zip(roots, runs, strict=True), start=1):
        assert run.returncode == -signal.SIGKILL, (m, run.stderr)
        recovered(root)
        assert scenario.which(root) == "new" and leftovers(root) == [], m
    # each recovered tree is the reference new tree byte for byte; the next run of one of them
    converge(scenario, roots[-1])
    print(f"\nrecovery kill harness: killed at commit step {cut} ({labels[cut - 1]}), then at each of "
          f"the {steps} steps of its recovery: all recovered to new")


def _pending(scenario: Scenario, root: Path):
    with chdir(root):
        return apply_paths(["examples"], "deploy", now=NOW, check=True)


@pytest.mark.slow
def test_an_error_at_every_step_rolls_back_or_completes(scenario, tmp_path, monkeypatch):
    """In-process: an injected OSError at step n of write_transaction."""
    root = scenario.copy(tmp_path / "errors")
    pending = _pending(scenario, root)
    previous = {p: "sha256:" + hashlib.sha256((root / "deploy" / p).read_bytes()).hexdigest()
                for p in pending.removed}
    pristine = tmp_path / "pristine"
    shutil.copytree(root, pristine, symlinks=True)
    real, seen = transaction._point, [0]
    total = len(scenario.labels)
    outcomes: Counter = Counter()
    for n in range(1, total + 1):
        shutil.rmtree(root)
        shutil.copytree(pristine, root, symlinks=True)
        seen[0] = 0
        outcome = transaction.Outcome()

        def failing(label: str, n: int = n) -> None:
            seen[0] += 1
            if seen[0] == n:
                raise OSError(28, "No space left on device (injected)")
            real(label)

        monkeypatch.setattr(transaction, "_point", failing)
        with chdir(root):
            try:
                outcome = write_transaction("deploy", pending.files, previous, STATE, pending.state_text)
            except OSError as exc:
                assert "injected" in str(exc)
                assert scenario.which(root) == "old", n
                assert leftovers(root) == [], n
                outcomes["rolled back"] += 1
            else:   # an error while cleaning up after the commit point: applied, finished next time
                assert outcome.cleanup_error, n
                outcomes["completed"] += 1
        monkeypatch.setattr(transaction, "_point", real)
        recovered(root)
        assert scenario.which(root) == ("new" if outcome.cleanup_error else "old") and leftovers(root) == [], n
        outcome.cleanup_error = None
    converge(scenario, root)
    assert outcomes["rolled back"] >= total // 2 and outcomes["completed"]


SIGNALS = ("SIGTERM", "SIGINT")
SIGNAL_POINTS = ("write temp", "rename kueue/", "unlink kubernetes/")


@pytest.fixture(scope="module")
def signalled(scenario, tmp_path_factory) -> dict[tuple[str, str], tuple[Path, object]]:
    """Every (signal, where) case below, from one planning apply forked at its commit."""
    where = tmp_path_factory.mktemp("signals")
    cases = [(signame, point) for signame in SIGNALS for point in SIGNAL_POINTS]
    jobs = []
    for case, (signame, point) in enumerate(cases):
        n = next(i for i, label in enumerate(scenario.labels, start=1) if label.startswith(point))
        jobs.append(Job(scenario.copy(where / f"sig-{case}"),
                        {"POOLC_TEST_KILL_AT": str(n), "POOLC_TEST_SIGNAL": signame}))
    runs = forked_applies(scenario.copy(where / "planner"), jobs, *APPLY_ARGS)
    return {case: (job.root, run) for case, job, run in zip(cases, jobs, runs, strict=True)}


@pytest.mark.parametrize("signame", SIGNALS)
@pytest.mark.parametrize("where", SIGNAL_POINTS)
def test_sigterm_and_ctrl_c_roll_back_and_say_so(scenario, signalled, signame, where):
    """The signal lands while staging, or after the commit point (held back, then rolled back);
    SIGINT after the optimal solve too, although the solver resets its handler."""
    root, run = signalled[signame, where]
    assert run.returncode == (130 if signame == "SIGINT" else 143), run.stderr
    assert f"interrupted by {signame}" in run.stderr and "rolled back" in run.stderr
    assert "Traceback" not in run.stderr
    assert scenario.which(root) == "old" and leftovers(root) == []
    converge(scenario, root)


def test_ctrl_c_during_start_up_is_one_line(tmp_path):
    """From the package's first lines on (before them, Python's own start-up owns Ctrl-C):
    the delays from 0 s catch the signal while poolc.cli is still being found and
    imported, where it used to print a traceback from the import system."""
    # what the console entry point (poolc.console) does first, then the command line's imports
    go = ("import sys; from poolc.interrupts import install_hooks; install_hooks(); "
          "sys.stderr.write('go\\n'); sys.stderr.flush(); from poolc.cli import main; main()")
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    for delay in (0.0, 0.0, 0.001, 0.001, 0.005, 0.02, 0.05, 0.1, 0.2, 0.4):
        proc = subprocess.Popen([sys.executable, "-c", go, "validate", "examples"], cwd=tmp_path,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
        assert proc.stderr.readline() == "go\n"
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert "Traceback" not in err, (delay, err)
        # 0: done first; 130: interrupted; -SIGINT: the signal came while the interpreter was exiting
        assert proc.returncode in (0, 130, -signal.SIGINT), (delay, proc.returncode, err)


# A Ctrl-C at the N-th Python function call after `import poolc`: the same points on a busy
# machine as on an idle one, where the delays above land earlier or later. The signal is real
# (the process sends it to itself); Python raises it where the N-th call begins.
AT_CALL = """
import os, signal, sys
from poolc.interrupts import install_hooks
install_hooks()   # what the console entry point (poolc.console) does before the command line's imports
calls, at = 0, int(os.environ["CTRL_C_AT_CALL"])

def count(frame, event, arg):
    global calls
    if event == "call":
        calls += 1
        if calls == at:
            sys.setprofile(None)
            os.kill(os.getpid(), signal.SIGINT)

sys.setprofile(count)
if not at:
    import atexit
    atexit.register(lambda: sys.stderr.write(f"calls: {calls}\\n"))
from poolc.cli import main
main()
"""


def ctrl_c_at_calls(root: Path, points: list[int]) -> None:
    shutil.copytree(REPO / "examples", root / "examples")

    def run(at: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", AT_CALL, "validate", "examples"], cwd=root, capture_output=True,
                              text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(REPO), "CTRL_C_AT_CALL": str(at)})

    whole = run(0)
    total = int(whole.stderr.rsplit("calls: ", 1)[1])
    assert whole.returncode == 0 and max(points) < total, (total, whole.stderr)
    with ThreadPoolExecutor(max_workers=2) as pool:
        for at, ran in zip(points, pool.map(run, points), strict=True):
            assert "Traceback" not in ran.stderr, (at, ran.stderr)
            assert ran.returncode == 130 and ran.stderr.startswith("poolc: interrupted"), (at, ran.returncode,
                                                                                          ran.stderr)


def test_ctrl_c_at_the_nth_call_is_one_line(tmp_path):
    """Ten to 100,000 calls in: the imports, the command line, reading and checking."""
    ctrl_c_at_calls(tmp_path, [10 ** k for k in range(1, 6)])


@pytest.mark.slow
def test_ctrl_c_at_any_call_is_one_line(tmp_path):
    """The first call on, ever further apart (1, 2, 3, 4, 6, 8, 11 ... 100,000 calls)."""
    ctrl_c_at_calls(tmp_path, sorted({int(1.35 ** k) for k in range(39)}))


def test_check_reports_an_interrupted_apply(scenario, tmp_path):
    root = scenario.copy(tmp_path / "check")
    n = next(i for i, label in enumerate(scenario.labels, start=1) if label.startswith("rename kueue/"))
    assert run_apply(root, {"POOLC_TEST_KILL_AT": str(n)}).returncode == -signal.SIGKILL
    check = run_apply(root, {}, "--check")
    assert check.returncode == 1 and ".journal" in check.stdout
    run = run_apply(root, {})
    assert run.returncode == 0 and "completed an interrupted apply" in run.stderr
    assert scenario.which(root) == "new" and leftovers(root) == []
