"""Every clause of a plan message is said in the platform's units in the text plan and
the comment, the binding rules of the other pools included ("also in pool p: ..."):
a reviewer who reads "needs 32 cores" in one clause must not read "needs 32000" in the
next and take it for cores. The plan JSON keeps the canonical numbers."""

from __future__ import annotations

import re

from poolc.domain.plan import Plan, PoolUsage, SolverInfo
from poolc.domain.said import read_said
from poolc.report.plan_view import say

CAPACITY = {"gpu": 16, "mcpu": 400_000, "memory_mb": 2_048_000}


def humanize(plan: Plan, message: str) -> str:
    """A message as a saved plan's reader says it (the file holds the text)."""
    return say(plan, read_said(message))


def _plan() -> Plan:
    pools = tuple(PoolUsage(name, CAPACITY, dict.fromkeys(CAPACITY, 0), CAPACITY) for name in ("p1", "p2"))
    return Plan(solver=SolverInfo("zenml", "FEASIBLE", (), 0.0), inputs_digest="sha256:0", requests=(),
                preempted=(), pools=pools, diagnostics=())


def test_the_other_pools_clauses_are_in_units_too():
    message = ("mcpu: needs 32000, free 7000 in pool p1 (borrowers at priority 50 or above hold 568000 it may not); "
               "also in pool p2: mcpu: needs 32000, free 4000 in pool p2 (borrowers below priority 10 hold 16000 "
               "it may preempt; borrowers at priority 10 or above hold 359000 it may not); "
               "also in pool p2: gpu: needs 4, free 0 in pool p2")
    assert humanize(_plan(), message) == (
        "CPU: needs 32 cores, free 7 cores in pool p1 (borrowers at priority 50 or above hold 568 cores it may "
        "not); also in pool p2: CPU: needs 32 cores, free 4 cores in pool p2 (borrowers below priority 10 hold "
        "16 cores it may preempt; borrowers at priority 10 or above hold 359 cores it may not); "
        "also in pool p2: GPU: needs 4 GPU, free 0 GPU in pool p2")


def test_a_key_no_pool_meters_is_left_as_written():
    message = "also in pool p2: licence: needs 2, free 0 in pool p2"
    assert humanize(_plan(), message) == message


def test_the_keys_a_victim_was_preempted_on_are_named_as_people_read_them():
    plan = _plan()
    assert humanize(plan, "preempted for a/b (priority 100) on gpu, mcpu; it borrowed gpu=4, mcpu=8000 above "
                          "policy q's reserved share") == \
        "preempted for a/b (priority 100) on GPU, CPU; it borrowed 4 GPU, 8 cores above policy q's reserved share"
    assert humanize(plan, "its running allocation x-1 is preempted for a/b on memory_mb; the step waits to be "
                          "admitted again") == \
        "its running allocation x-1 is preempted for a/b on memory; the step waits to be admitted again"
    unmetered = "preempted for a/b on licence; it borrowed licence=1 above its policy's reserved share"
    assert humanize(plan, unmetered) == unmetered


def test_a_generated_platforms_comment_and_text_say_no_canonical_amount(tmp_path):
    """Every message of a 1,000-request platform (every shape the planner writes on a
    busy day: capacity, limits, shares, several pools, preemptions, Kueue's
    differences), as the comment and the text plan say it: no canonical key
    (``mcpu``, ``memory_mb``, ``step_run``) and no ``key=value`` pair is left."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(repo / "benchmarks"))
    from plan_cli import write_instance
    from plan_scale import make_problem

    write_instance(make_problem(1, n_requests=1000), tmp_path / "platform")
    for fmt in ("markdown", "text"):
        done = subprocess.run([sys.executable, "-m", "poolc", "plan", "--strategy", "zenml", "--format", fmt,
                               str(tmp_path / "platform")], capture_output=True, text=True, check=False,
                              cwd=tmp_path, env={"PYTHONPATH": str(repo), "COLUMNS": "200", "PATH": ""})
        assert done.returncode in (0, 1), done.stderr[-2000:]
        said = re.sub(r"`[^`]*`", "", done.stdout)          # names in code spans are names
        assert "needs" in said and "preempted for" in said, said[:2000]
        leaks = sorted(set(re.findall(r"\b(?:mcpu|memory_mb|step_run)\b|\b[a-z_]+=\d+", said)))
        assert not leaks, (fmt, leaks[:10])


def test_a_capacity_rejections_need_is_said_in_the_keys_unit():
    """"has 262.1 GB in all (needs 300000)" would read as 300,000 GB: the need is of
    the capacity's key, built so by the planner and read so from a saved plan."""
    from poolc.domain.eligibility import CAPACITY, Ineligibility
    from poolc.domain.problem import PolicyRule

    policy = PolicyRule("q", "c", "p1", 10, {}, {})
    short = Ineligibility(policy, CAPACITY, "memory_mb", 300_000, 262_144).sentence()
    absent = Ineligibility(policy, CAPACITY, "gpu", 4, 0).sentence()
    plan = _plan()
    for built, said_as in ((short, "pool 'p1' has 262.1 GB in all (needs 300 GB)"),
                           (absent, "pool 'p1' has no GPU (capacity 0 GPU; needs 4 GPU)")):
        assert say(plan, built) == said_as
        assert humanize(plan, built.text) == said_as
