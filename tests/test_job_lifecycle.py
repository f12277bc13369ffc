"""Generated Jobs fit their lifecycle: a TTL, a new name when the step changes (a
Job's pod template is immutable), and a path to run a finished step again."""

from __future__ import annotations

import json
from pathlib import Path

import kubernetes_validate
import yaml
from support import cli
from test_state_commands import workload

from poolc.targets.kubernetes import TTL_AFTER_FINISHED

K8S_VERSION = kubernetes_validate.latest_version()


def applied() -> dict[str, dict]:
    """Job file -> the Job it holds, after an apply."""
    result = cli("apply", "examples", "--output-dir", "deploy", "--now", "2026-11-23T03:00:00Z")
    assert result.exit_code == 0, result.output
    return {str(p): yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted(Path("deploy").rglob("*.job.yaml"))}


class Cluster:
    """What `kubectl apply` does with Jobs, to the extent that matters here: a Job is
    created under its name; applying another Job under an existing name may change
    only mutable fields (the API server refuses a changed pod template); `--prune`
    deletes poolc's Jobs that no applied file names."""

    def __init__(self) -> None:
        self.jobs: dict[tuple[str, str], dict] = {}

    def apply(self, jobs: list[dict], prune: bool = True) -> list[str]:
        refused = []
        for job in jobs:
            key = (job["metadata"]["namespace"], job["metadata"]["name"])
            old = self.jobs.get(key)
            if old is not None and old["spec"]["template"] != job["spec"]["template"]:
                refused.append(f"{key}: spec.template: field is immutable")
                continue
            self.jobs[key] = job
        if prune:
            named = {(j["metadata"]["namespace"], j["metadata"]["name"]) for j in jobs}
            self.jobs = {k: v for k, v in self.jobs.items() if k in named}
        return refused


def test_every_job_has_a_ttl_and_validates(platform):
    for path, job in applied().items():
        assert job["spec"]["ttlSecondsAfterFinished"] == TTL_AFTER_FINISHED, path
        kubernetes_validate.validate(job, K8S_VERSION, strict=True)


def test_an_image_bump_gives_the_changed_jobs_new_names_so_they_can_be_applied(platform):
    cluster = Cluster()
    before = applied()
    assert cluster.apply(list(before.values())) == []
    stack = Path("examples/stacks/prod-stack.yaml")
    stack.write_text(stack.read_text(encoding="utf-8").replace("ml/train:1.4.2", "ml/train:1.5.0"), encoding="utf-8")
    after = applied()
    changed = [p for p in after if after[p]["spec"] != before[p]["spec"]]
    unchanged = [p for p in after if after[p]["spec"] == before[p]["spec"]]
    assert changed and unchanged   # the prod Jobs use the bumped image, the research ones do not
    for path in changed:
        assert after[path]["metadata"]["name"] != before[path]["metadata"]["name"], path
        assert "1.5.0" in json.dumps(after[path]["spec"])
    for path in unchanged:
        assert after[path]["metadata"]["name"] == before[path]["metadata"]["name"], path
    # the same names with the new templates would be refused, one by one
    renamed = [dict(after[p], metadata=dict(after[p]["metadata"], name=before[p]["metadata"]["name"]))
               for p in changed]
    probe = Cluster()
    probe.apply(list(before.values()))
    assert len(probe.apply(renamed, prune=False)) == len(changed)
    # what poolc writes applies cleanly; prune removes the old Jobs
    assert cluster.apply(list(after.values())) == []
    assert {k[1] for k in cluster.jobs} == {j["metadata"]["name"] for j in after.values()}


def test_a_resize_is_a_new_job_too(platform):
    before = applied()
    pipeline = Path("examples/pipelines/prod-training.yaml")
    text = pipeline.read_text(encoding="utf-8")
    assert "gpu_count: 4" in text
    pipeline.write_text(text.replace("gpu_count: 4", "gpu_count: 2", 1), encoding="utf-8")
    after = applied()
    # a resize may move other steps between allocated and queued/ (gate mode): compare the Jobs kept in place
    kept = sorted(after.keys() & before.keys())
    changed = [p for p in kept if after[p]["spec"] != before[p]["spec"]]
    assert changed and all(after[p]["metadata"]["name"] != before[p]["metadata"]["name"] for p in changed)


def test_a_finished_step_runs_again_after_state_rerun(platform):
    jobs = applied()
    evaluate = next(j for j in jobs.values() if j["metadata"]["labels"]["poolc.dev/step"] == "evaluate")
    Path("kueue.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        workload(j, "QuotaReserved", "Admitted", "Finished") if j is evaluate else workload(j, "QuotaReserved",
                                                                                           "Admitted")
        for j in jobs.values() if j["metadata"]["labels"]["poolc.dev/step"] in ("evaluate", "train_model")]}),
        encoding="utf-8")
    result = cli("state", "import", "examples", "--kueue", "kueue.json")
    assert result.exit_code == 0 and "finished: prod-training/evaluate" in result.stdout, result.output
    files = applied()
    assert not any(j["metadata"]["labels"]["poolc.dev/step"] == "evaluate" for j in files.values())
    result = cli("state", "rerun", "prod-training/evaluate")
    assert result.exit_code == 0 and "to run again: prod-training.evaluate" in result.stdout, result.output
    again = applied()
    rerun = next(j for j in again.values() if j["metadata"]["labels"]["poolc.dev/step"] == "evaluate")
    assert rerun["metadata"]["name"] == evaluate["metadata"]["name"]   # pruned when it finished: created anew
    missing = cli("state", "rerun", "prod-training/evaluate")
    assert missing.exit_code == 1 and "no finished step" in missing.stderr
    assert cli("state", "rerun", "no-such-pipeline").exit_code == 1
