"""The state design of docs/apply.md, followed in a real git repository.

Two branches from one base each change a different pipeline, following the
documented pull-request flow (validate, plan against the cluster's reports with
`--observed`, commit); both merge without a conflict, and the apply job after the
merge (observe, import, apply) leaves the working tree clean: poolc writes nothing
that is committed. The same two changes under the old flow (state and output
committed, applied on each branch) conflict, which is why the design changed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support import cli
from test_state_commands import described, workload

REPO = Path(__file__).resolve().parent.parent


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", *args], cwd=cwd, check=check, capture_output=True, text=True, env=env)


def documented_gitignore() -> str:
    """The `.gitignore` docs/apply.md tells a platform repository to keep."""
    text = (REPO / "docs" / "apply.md").read_text(encoding="utf-8")
    section = text[text.index("## The state belongs to the cluster"):]
    block = re.search(r"```\n(.*?)```", section, re.S)
    assert block is not None
    return "\n".join(line.strip() for line in block.group(1).splitlines()) + "\n"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def cluster_reports(store: Path, into: Path) -> list[str]:
    """What the cluster reports: every Job and training job the apply job handed over
    runs (Kueue admitted the Jobs of allocated steps; the others wait)."""
    state = json.loads((store / "poolc.state.json").read_text(encoding="utf-8"))
    running = {a["metadata"]["labels"].get("poolc.dev/step") for a in state["allocations"]}
    items = []
    for path in sorted((store / "deploy" / "kubernetes").rglob("*.job.yaml")):
        job = yaml.safe_load(path.read_text(encoding="utf-8"))
        labels = job["metadata"]["labels"]
        if "kueue.x-k8s.io/queue-name" not in labels:
            continue
        admitted = f"{labels['poolc.dev/pipeline']}.{labels['poolc.dev/step']}" in running
        items.append(workload(job, "QuotaReserved", "Admitted") if admitted else workload(job))
    bodies = [json.loads(p.read_text(encoding="utf-8"))
              for p in sorted((store / "deploy" / "sagemaker").glob("*.json"))]
    (into / "workloads.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}),
                                         encoding="utf-8")
    (into / "training-jobs.json").write_text(json.dumps([described(b, "InProgress") for b in bodies]),
                                             encoding="utf-8")
    return [str(into / "workloads.json"), str(into / "training-jobs.json")]


def apply_job(repo: Path, store: Path, reports: Path) -> None:
    """The apply job: restore the state and output, observe the cluster, import, apply, keep."""
    for name in ("poolc.state.json", "deploy"):
        source = store / name
        if source.is_dir():
            shutil.copytree(source, repo / name, dirs_exist_ok=True)
        elif source.exists():
            shutil.copy2(source, repo / name)
    if (repo / "poolc.state.json").exists():
        kueue, sagemaker = cluster_reports(store, reports)
        result = cli("state", "import", "config", "--kueue", kueue, "--sagemaker", sagemaker)
        assert result.exit_code == 0, result.output
    result = cli("apply", "config", "--output-dir", "deploy", "--now", "2026-11-23T03:00:00Z")
    assert result.exit_code == 0, result.output
    shutil.rmtree(store, ignore_errors=True)
    store.mkdir()
    shutil.copy2(repo / "poolc.state.json", store / "poolc.state.json")
    shutil.copytree(repo / "deploy", store / "deploy")


def pull_request(repo: Path, store: Path, reports: Path, branch: str, change: tuple[str, str, str]) -> None:
    """A pull request as docs/apply.md describes it: change, validate, plan against the
    cluster (read-only), commit."""
    git(repo, "checkout", "-q", "-b", branch, "main")
    edit(repo / change[0], change[1], change[2])
    assert cli("validate", "config").exit_code == 0
    kueue, sagemaker = cluster_reports(store, reports)
    state_before = (store / "poolc.state.json").read_bytes()
    result = cli("plan", "config", "--state", str(store / "poolc.state.json"), "--observed", kueue,
                 "--observed", sagemaker, "--format", "markdown")
    assert result.exit_code in (0, 2), result.output
    assert (store / "poolc.state.json").read_bytes() == state_before
    changed = git(repo, "status", "--porcelain").stdout.split("\n")
    assert [line for line in changed if line] == [f" M {change[0]}"]   # nothing poolc wrote shows up
    git(repo, "commit", "-q", "-am", f"{branch}: {change[0]}")


@pytest.fixture
def platform_repo(tmp_path, monkeypatch) -> tuple[Path, Path, Path]:
    repo, store, reports = tmp_path / "platform", tmp_path / "store", tmp_path / "reports"
    shutil.copytree(REPO / "examples", repo / "config")
    store.mkdir()
    reports.mkdir()
    (repo / ".gitignore").write_text(documented_gitignore(), encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    monkeypatch.chdir(repo)
    return repo, store, reports


A_CHANGE = ("config/pipelines/prod-training.yaml", "evaluate:\n",
            "evaluate:\n      image: registry.example.com/ml/eval:2\n")
B_CHANGE = ("config/pipelines/research-sweep.yaml", "summarize:\n",
            "summarize:\n      image: registry.example.com/ml/summary:3\n")


def test_two_pull_requests_on_different_pipelines_merge_without_a_conflict(platform_repo):
    repo, store, reports = platform_repo
    apply_job(repo, store, reports)        # the base is running
    assert git(repo, "status", "--porcelain").stdout == ""
    jobs_before = {p.name: yaml.safe_load(p.read_text(encoding="utf-8"))["metadata"]["name"]
                   for p in (store / "deploy" / "kubernetes").rglob("*.job.yaml")}

    pull_request(repo, store, reports, "a", A_CHANGE)
    pull_request(repo, store, reports, "b", B_CHANGE)
    git(repo, "checkout", "-q", "main")
    for branch in ("a", "b"):
        merged = git(repo, "merge", "--no-ff", "-q", "-m", f"merge {branch}", branch, check=False)
        assert merged.returncode == 0 and "CONFLICT" not in merged.stdout, merged.stdout + merged.stderr

    apply_job(repo, store, reports)        # apply on merge
    assert git(repo, "status", "--porcelain").stdout == ""
    jobs_after = {p.name: yaml.safe_load(p.read_text(encoding="utf-8"))["metadata"]["name"]
                  for p in (store / "deploy" / "kubernetes").rglob("*.job.yaml")}
    renamed = {name for name in jobs_before if jobs_before[name] != jobs_after.get(name)}
    assert renamed == {"prod-training--evaluate.job.yaml", "research-sweep--summarize.job.yaml"}
    # and the next observation of the cluster changes nothing more
    kueue, sagemaker = cluster_reports(store, reports)
    again = cli("plan", "config", "--observed", kueue, "--observed", sagemaker, "--detailed-exitcode")
    assert again.exit_code in (0, 2), again.output


def test_the_old_flow_conflicts_on_the_state(platform_repo):
    """Committing the state and applying on each branch (with each laptop's clock)
    makes the same two changes conflict."""
    repo, _, _ = platform_repo
    (repo / ".gitignore").write_text("", encoding="utf-8")
    assert cli("apply", "config", "--output-dir", "deploy", "--now", "2026-11-23T03:00:00Z").exit_code == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "committed state")
    for branch, change, laptop in (("a", A_CHANGE, "2026-11-24T09:00:00Z"), ("b", B_CHANGE, "2026-11-24T09:30:00Z")):
        git(repo, "checkout", "-q", "-b", branch, "main")
        edit(repo / change[0], change[1], change[2])
        assert cli("apply", "config", "--output-dir", "deploy", "--now", laptop).exit_code == 0
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", branch)
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "a")
    merged = git(repo, "merge", "-q", "-m", "merge b", "b", check=False)
    assert merged.returncode != 0 and "CONFLICT (content): Merge conflict in poolc.state.json" in merged.stdout
