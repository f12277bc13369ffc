"""`apply --plan` applies the reviewed plan without solving it again: each run here
is a real `poolc` process in which OR-Tools cannot be imported at all (a meta path
finder refuses it), so any solve would fail the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support import cli
from test_state_commands import STARTED, described, sagemaker_report

NOW = "2026-11-23T03:00:00Z"
# `poolc ARGS...` with every import of ortools refused
NO_SOLVER = r"""
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name == "ortools" or name.startswith("ortools."):
            raise ImportError(name + " is blocked: this run must not solve")
sys.meta_path.insert(0, Refuse())
from poolc.cli import main
main(sys.argv[1:], prog_name="poolc")
"""


def without_solver(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    return subprocess.run([sys.executable, "-c", NO_SOLVER, *args], cwd=cwd, capture_output=True, text=True,
                          env=env, check=False)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_blocked_solver_is_really_blocked(platform):
    done = without_solver("plan", "examples", cwd=platform)
    assert done.returncode != 0 and "blocked" in done.stderr


def test_a_saved_zenml_plan_applies_without_the_solver_and_writes_what_apply_writes(platform):
    assert cli("plan", "examples", "--strategy", "zenml", "--out", "plan.json").exit_code == 0
    done = without_solver("apply", "examples", "--output-dir", "deploy", "--now", NOW, "--plan", "plan.json",
                          cwd=platform)
    assert done.returncode == 0, done.stderr
    assert "wrote: kueue/datacenter-one.yaml" in done.stdout
    saved = tree(platform / "deploy"), Path("poolc.state.json").read_bytes()
    # the same inputs applied directly (planning with zenml here) write the same bytes
    os.rename("deploy", "deploy-saved")
    os.unlink("poolc.state.json")
    direct = cli("apply", "examples", "--output-dir", "deploy", "--now", NOW, "--strategy", "zenml")
    assert direct.exit_code == 0, direct.output
    assert (tree(platform / "deploy"), Path("poolc.state.json").read_bytes()) == saved
    # and the state it wrote is fresh
    assert cli("apply", "examples", "--output-dir", "deploy", "--check").exit_code == 0


def test_a_changed_input_after_plan_is_refused_without_solving(platform):
    assert cli("plan", "examples", "--strategy", "zenml", "--out", "plan.json").exit_code == 0
    path = Path("examples/stacks/prod-stack.yaml")
    path.write_text(path.read_text(encoding="utf-8").replace("train:1.4.2", "train:1.4.3"), encoding="utf-8")
    done = without_solver("apply", "examples", "--output-dir", "deploy", "--plan", "plan.json", cwd=platform)
    assert done.returncode == 1, done.stderr
    assert "poolc: nothing applied: the plan was made from other inputs: Stack/prod-stack changed" in done.stderr
    assert "blocked" not in done.stderr
    assert not Path("deploy").exists() and not Path("poolc.state.json").exists()


def test_an_optimal_plan_whose_state_changed_is_refused_without_solving(platform):
    assert cli("plan", "examples", "--out", "plan.json").exit_code == 0
    assert cli("apply", "examples", "--output-dir", "deploy", "--now", NOW).exit_code == 0
    before = tree(platform / "deploy")
    done = without_solver("apply", "examples", "--output-dir", "deploy", "--plan", "plan.json", cwd=platform)
    assert done.returncode == 1 and "state/" in done.stderr and "poolc plan --out" in done.stderr, done.stderr
    assert tree(platform / "deploy") == before


def test_a_hand_edited_saved_plan_is_refused_without_solving(platform):
    assert cli("plan", "examples", "--strategy", "zenml", "--out", "plan.json").exit_code == 0
    saved = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    queued = next(r for r in saved["requests"] if r["status"] == "queued")
    queued["status"] = "allocated"
    Path("plan.json").write_text(json.dumps(saved), encoding="utf-8")
    done = without_solver("apply", "examples", "--output-dir", "deploy", "--plan", "plan.json", cwd=platform)
    assert done.returncode == 1 and "does not match" in done.stderr, done.stderr
    assert not Path("deploy").exists()


def test_an_invalid_configuration_is_refused_before_planning(platform):
    Path("examples/stacks/broken.yaml").write_text("apiVersion: poolc/v1\nkind: Stack\nmetadata: {name: x}\n"
                                                   "spec: {orchestrator: 3}\n", encoding="utf-8")
    done = without_solver("apply", "examples", "--output-dir", "deploy", cwd=platform)
    assert done.returncode == 1 and "nothing applied: the configuration has errors" in done.stderr, done.stderr
    assert "broken.yaml:" in done.stdout and "blocked" not in done.stderr
    assert not Path("deploy").exists()


def test_state_import_never_needs_the_solver(platform):
    assert cli("apply", "examples", "--output-dir", "deploy", "--now", NOW).exit_code == 0
    bodies = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(Path("deploy/sagemaker").glob("*.json"))]
    report = sagemaker_report([described(b, "InProgress") for b in bodies])   # checked against botocore's shape
    done = without_solver("state", "import", "examples", "--sagemaker", report, cwd=platform)
    assert done.returncode == 0, done.stderr
    assert "running: llm-finetune--distill" in done.stdout
    state = json.loads(Path("poolc.state.json").read_text(encoding="utf-8"))
    starts = {a["metadata"]["name"]: a["spec"].get("started_at") for a in state["allocations"]}
    assert starts["llm-finetune--distill"] == STARTED


# `poolc ARGS...` counting, through Python's audit hook, every read-only open of a
# path (os.open and open alike), printed as JSON on stderr's last line
COUNT_READS = r"""
import collections, json, os, sys
reads = collections.Counter()
def hook(event, args):
    if event == "open" and isinstance(args[0], str):
        flags = args[2] if len(args) > 2 and isinstance(args[2], int) else os.O_RDONLY
        mode = args[1] if isinstance(args[1], str) else ""
        if flags & os.O_ACCMODE == os.O_RDONLY and "w" not in mode and "a" not in mode:
            reads[os.path.basename(args[0])] += 1
sys.addaudithook(hook)
from poolc.cli import main
try:
    main(sys.argv[1:], prog_name="poolc")
finally:
    sys.stderr.write("\n" + json.dumps(reads) + "\n")
"""


def reads_of(*args: str, cwd: Path) -> tuple[int, dict[str, int]]:
    done = subprocess.run([sys.executable, "-c", COUNT_READS, *args], cwd=cwd, capture_output=True, text=True,
                          check=False)
    return done.returncode, json.loads(done.stderr.strip().splitlines()[-1])


def test_apply_reads_the_state_and_each_generated_file_once(platform):
    assert cli("apply", "examples", "--output-dir", "deploy", "--now", NOW).exit_code == 0
    inputs = {p.name for p in Path("examples").rglob("*")}   # kueue/<pool>.yaml is also an input's name
    generated = [p for p in Path("deploy").rglob("*") if p.is_file() and p.name not in inputs]
    assert len(generated) > 10
    for args in ((), ("--check",)):
        code, reads = reads_of("apply", "examples", "--output-dir", "deploy", "--now", NOW, *args, cwd=platform)
        assert code == 0
        assert reads["poolc.state.json"] == 1
        names = [p.name for p in generated]
        assert {name: reads.get(name, 0) for name in names} == {name: names.count(name) for name in names}


NO_RESERVE = """\
apiVersion: poolc/v1
kind: ResourcePool
metadata: {name: dc}
spec: {capacity: {gpu: 8, step_run: 10}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: prod}
spec: {subject: prod-k8s, pool: dc, priority: 100}
---
apiVersion: poolc/v1
kind: Stack
metadata: {name: prod-stack}
spec:
  orchestrator: {name: prod-k8s, flavor: kubernetes, namespace: prod, image: "train:1"}
---
apiVersion: poolc/v1
kind: Pipeline
metadata: {name: train}
spec:
  stack: prod-stack
  steps:
    a: {settings: {resources: {gpu_count: 4}}}
    b: {settings: {resources: {gpu_count: 2}}}
    c: {settings: {resources: {gpu_count: 4}}}
"""


def test_an_optimal_plan_with_no_reserved_share_applies_without_the_solver(tmp_path, monkeypatch):
    """No policy reserves anything, so the plan counts no grant inside a reserved
    share (its first objective value is 0) and the file says all apply needs."""
    monkeypatch.chdir(tmp_path)
    Path("platform.yaml").write_text(NO_RESERVE, encoding="utf-8")
    assert cli("plan", "platform.yaml", "--out", "plan.json").exit_code == 0
    saved = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    assert saved["solver"]["strategy"] == "optimal" and saved["solver"]["objective"][0] == 0
    assert {r["status"] for r in saved["requests"]} == {"allocated", "queued"}
    _applies_as_a_direct_apply_without_the_solver("platform.yaml", tmp_path)


def test_an_optimal_plan_with_in_share_grants_applies_without_the_solver(platform):
    """examples/ reserves shares, and its plan counts some but not all new grants
    inside them: the plan file's `solver.in_share` says which, so apply needs no
    solve, and writes what a direct apply writes."""
    assert cli("plan", "examples", "--out", "plan.json").exit_code == 0
    saved = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    grants = {r["id"] for r in saved["requests"] if r["status"] == "allocated" and r.get("running") is None}
    recorded = saved["solver"]["in_share"]
    assert 0 < len(recorded) == saved["solver"]["objective"][0] and set(recorded) <= grants
    assert len(recorded) < len(grants)                   # neither none nor all: only the list tells
    _applies_as_a_direct_apply_without_the_solver("examples", platform)


def test_a_plan_file_whose_in_share_list_disagrees_is_solved_again_and_refused(platform):
    """An edited list (one grant left out) no longer matches the count: apply falls
    back to solving, which the blocked solver turns into a failure, never a wrong state."""
    assert cli("plan", "examples", "--out", "plan.json").exit_code == 0
    saved = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    saved["solver"]["in_share"] = saved["solver"]["in_share"][1:]
    Path("plan.json").write_text(json.dumps(saved), encoding="utf-8")
    done = without_solver("apply", "examples", "--output-dir", "deploy", "--now", NOW, "--plan", "plan.json",
                          cwd=platform)
    assert done.returncode != 0 and not (platform / "deploy").exists()


def _applies_as_a_direct_apply_without_the_solver(inputs: str, root: Path) -> None:
    """`apply --plan plan.json` with OR-Tools blocked writes the very files and state
    a direct `apply` (which plans) writes for the same inputs. Runs in ``root``."""
    done = without_solver("apply", inputs, "--output-dir", "deploy", "--now", NOW, "--plan", "plan.json", cwd=root)
    assert done.returncode == 0, done.stderr
    written = tree(root / "deploy"), Path("poolc.state.json").read_bytes()
    os.rename("deploy", "deploy-saved")
    os.unlink("poolc.state.json")
    assert cli("apply", inputs, "--output-dir", "deploy", "--now", NOW).exit_code == 0
    assert (tree(root / "deploy"), Path("poolc.state.json").read_bytes()) == written
