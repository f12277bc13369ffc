"""Many real applies for the price of one plan: the kill harness's engine.

`forked_applies` starts ONE real `poolc apply` process in a copy of the scenario's
tree. It loads, plans and renders as any apply does; at the entry of its commit
(``poolc.state.transaction.write_transaction``, after the plan, the rendered files and the
state text exist) it forks once per job. Each child moves into the job's own copy of
the same tree (relative paths: the output directory and the state resolve there),
takes that tree's lock, sets the job's environment (``POOLC_TEST_KILL_AT=N`` and
friends) and runs the rest of the apply unchanged: the real commit, killed by a real
signal at its N-th disk change, or the CLI's own handling of SIGTERM/SIGINT and its
exit status. The parent only waits for the children and never commits itself.

Planning is what made a kill point cost seconds; the commit a child runs is the one
a fresh `poolc apply` would run on that tree, because every job's tree is a byte copy
of the planned one (the callers copy them from one ``base``).

Run as a script by `forked_applies` (never imported by poolc).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STATE = "poolc.state.json"
PARALLEL = 2   # children committing at once (2 cores, shared)


@dataclass
class Job:
    root: Path               # a byte copy of the planned tree; the child commits here
    env: dict[str, str]      # e.g. {"POOLC_TEST_KILL_AT": "7"}


@dataclass
class Ran:
    """One child's end, as subprocess.run would report it."""

    returncode: int          # -N: killed by signal N
    stdout: str
    stderr: str


def forked_applies(base: Path, jobs: list[Job], *args: str, timeout: float = 300) -> list[Ran]:
    """Plan `poolc apply ARGS` once in ``base`` and commit it in every job's root."""
    spec = base.parent / f"{base.name}.jobs.json"
    spec.write_text(json.dumps([{"root": str(job.root), "env": job.env} for job in jobs]))
    run = subprocess.run([sys.executable, __file__, str(spec), *args], cwd=base, capture_output=True, text=True,
                         timeout=timeout, env={**os.environ, "PYTHONPATH": str(REPO)})
    done = spec.with_suffix(".done.json")
    assert run.returncode == 0 and done.exists(), f"the planning apply did not reach its commit:\n{run.stderr}"
    codes = json.loads(done.read_text())
    return [Ran(code, _read(job.root, "out"), _read(job.root, "err")) for job, code in zip(jobs, codes, strict=True)]


def _read(root: Path, which: str) -> str:
    return (root.parent / f"{root.name}.std{which}").read_text()


def _serve(spec: Path, argv: list[str]) -> None:
    """The planning process: a real `poolc apply`, forked at its commit."""
    from poolc.cli import main
    from poolc.state import transaction
    from poolc.state.lock import state_lock

    jobs = json.loads(spec.read_text())
    real = transaction.write_transaction

    def fork_at_commit(*args: object, **kwargs: object) -> transaction.Outcome:
        sys.stdout.flush()
        sys.stderr.flush()
        codes: dict[int, int] = {}
        running: dict[int, int] = {}   # pid -> job index
        for index, job in enumerate(jobs):
            while len(running) >= PARALLEL:
                _reap(running, codes)
            pid = os.fork()
            if pid == 0:
                root = Path(job["root"])
                for fd, which in ((1, "out"), (2, "err")):
                    out = os.open(root.parent / f"{root.name}.std{which}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                    os.dup2(out, fd)
                    os.close(out)
                os.chdir(root)
                os.environ.update(job["env"])
                state_lock(STATE).__enter__()     # held until the child ends, as apply holds it
                return real(*args, **kwargs)      # type: ignore[arg-type]
            running[pid] = index
        while running:
            _reap(running, codes)
        spec.with_suffix(".done.json").write_text(json.dumps([codes[i] for i in range(len(jobs))]))
        os._exit(0)

    transaction.write_transaction = fork_at_commit
    main(argv, prog_name="poolc")


def _reap(running: dict[int, int], codes: dict[int, int]) -> None:
    pid, status = os.wait()
    codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    _serve(Path(sys.argv[1]), ["apply", *sys.argv[2:]])
