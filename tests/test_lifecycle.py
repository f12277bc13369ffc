"""The plan as trustworthy as terraform's: every change a pull request makes shows
in `poolc plan` (and its exit code), the state follows what runs, and apply says
what it decided. One test per finding of the issue, each reproducing it first.
"""

from __future__ import annotations

import json
from pathlib import Path

from support import cli

NOW = "2026-11-23T03:00:00Z"


def apply(*extra: str):
    return cli("apply", "examples", "--output-dir", "deploy", "--now", NOW, *extra)


def plan_json(*extra: str) -> dict:
    result = cli("plan", "examples", "--format", "json", *extra)
    assert result.exit_code in (0, 2), result.output
    return json.loads(result.stdout)


def edit(path: str, old: str, new: str) -> None:
    file = Path(path)
    text = file.read_text(encoding="utf-8")
    assert old in text, (path, old)
    file.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_running_step_whose_demand_changed_is_resized(platform):
    """A running step edited from 4 to 6 GPUs is not "already running": its
    allocation is released, its new request planned, and the plan says resized."""
    assert apply().exit_code == 0
    edit("examples/pipelines/prod-training.yaml", "          gpu_count: 4\n", "          gpu_count: 6\n")
    result = cli("plan", "examples", "--format", "json", "--detailed-exitcode")
    assert result.exit_code == 2, result.output
    plan = json.loads(result.stdout)
    assert plan["changes"]["allocations"]["resized"] == ["prod-training--train-model-038c490b"]
    train = next(r for r in plan["requests"] if r["id"] == "prod-training/train_model")
    assert train["demand"]["gpu"] == 6 and train["message"].startswith("resized: its running allocation")
    assert "asks gpu=6" in train["message"]
    assert apply().exit_code == 0
    state = json.loads(Path("poolc.state.json").read_text(encoding="utf-8"))
    held = [a["spec"]["holds"] for a in state["allocations"]
            if a["metadata"]["name"] == "prod-training--train-model-038c490b"]
    assert held in ([], [{"gpu": 6, "mcpu": 32000, "memory_mb": 274878, "step_run": 1}])  # released or the new one


def test_a_reservation_or_image_change_is_a_change(platform):
    """Halving a reservation or bumping an image changes generated files: plan
    lists them, with diffs, and --detailed-exitcode says 2."""
    assert apply().exit_code == 0
    assert cli("plan", "examples", "--detailed-exitcode").exit_code == 0
    edit("examples/stacks/prod-stack.yaml", "train:1.4.2", "train:1.4.3")
    result = cli("plan", "examples", "--detailed-exitcode")
    assert result.exit_code == 2
    assert "~ kubernetes/ml-prod/prod-training--train_model.job.yaml" in result.stdout
    assert "+          image: registry.example.com/ml/train:1.4.3" in result.stdout
    assert "-          image: registry.example.com/ml/train:1.4.2" in result.stdout
    files = {f["path"]: f["action"] for f in plan_json()["changes"]["files"]}
    assert files["kubernetes/ml-prod/prod-training--train_model.job.yaml"] == "update"


def test_plan_and_apply_share_one_default_state(platform):
    assert apply().exit_code == 0
    assert Path("poolc.state.json").is_file()
    assert cli("plan", "examples", "--detailed-exitcode").exit_code == 0


def test_a_missing_state_is_said_in_one_line(platform):
    result = cli("plan", "examples", "--state", "nope.json")
    assert result.exit_code == 0
    assert result.stderr.count("no state file nope.json") == 1


def test_an_unreadable_state_prints_no_plan_and_writes_no_planfile(platform):
    Path("poolc.state.json").write_text("{ not json", encoding="utf-8")
    result = cli("plan", "examples", "--out", "plan.json")
    assert result.exit_code == 1
    assert result.stdout == "" and not Path("plan.json").exists()
    assert "poolc.state.json:1:3: error[Y002]" in result.stderr and "no plan made" in result.stderr


def test_apply_records_when_allocations_start(platform, monkeypatch):
    assert apply().exit_code == 0
    state = json.loads(Path("poolc.state.json").read_text(encoding="utf-8"))
    started = [a["spec"].get("started_at") for a in state["allocations"] if "poolc.dev/step" in a["metadata"]["labels"]]
    # all in the second of the apply, a microsecond apart in the order the plan granted them
    assert NOW in started and len(set(started)) == len(started) > 1
    assert all(s == NOW or (s.startswith(NOW[:-1] + ".") and s.endswith("Z")) for s in started)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")   # 2026-01-01T00:00:00Z
    Path("poolc.state.json").unlink()
    assert cli("apply", "examples", "--output-dir", "deploy2").exit_code == 0
    state = json.loads(Path("poolc.state.json").read_text(encoding="utf-8"))
    assert {a["spec"].get("started_at")[:19] for a in state["allocations"]
            if "poolc.dev/step" in a["metadata"]["labels"]} == {"2026-01-01T00:00:00"}


def test_show_renders_a_saved_plan(platform):
    assert cli("plan", "examples", "--out", "plan.json").exit_code == 0
    saved = Path("plan.json").read_text(encoding="utf-8")
    assert cli("show", "plan.json", "--format", "json").stdout == saved
    text = cli("show", "plan.json")
    assert text.exit_code == 0 and text.stdout.startswith("Plan: strategy optimal, status OPTIMAL")
    markdown = cli("show", "plan.json", "--format", "markdown").stdout
    assert markdown.startswith("### poolc plan: 9 allocated, 5 queued, 0 rejected, 1 preempted")
    Path("bad.json").write_text("[]", encoding="utf-8")
    bad = cli("show", "bad.json")
    assert bad.exit_code == 1 and "not a poolc plan file" in bad.stderr


def test_the_markdown_comment_stays_under_githubs_limit(platform):
    comment = cli("plan", "examples", "--format", "markdown").stdout
    assert len(comment) < 65_536
    for section in ("#### Queued (5)", "#### Running work preempted (1)", "<summary>Pools: capacity and use",
                    "<summary>Policies: reserved", "<summary>What <code>poolc apply</code> would write"):
        assert section in comment
    assert "strategy `optimal` (proven optimal) · the cluster (Kueue) agrees" in comment


def test_apply_json_is_one_document_and_text_says_what_was_decided(platform):
    result = cli("apply", "examples", "--output-dir", "deploy", "--now", NOW, "--format", "json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)   # one document, nothing after it
    assert report["ok"] and "kueue/datacenter-one.yaml" in report["written"]
    assert report["decided"]["preempted"] == ["research-sweep-lr-02"]
    assert len(report["decided"]["queued"]) == 5
    Path("poolc.state.json").unlink()
    text = cli("apply", "examples", "--output-dir", "deploy", "--now", NOW, "--strategy", "zenml")
    assert text.exit_code == 0
    assert "poolc: the plan allocates 9, queues 5, preempts 1" in text.stderr
    assert "preempted: research-sweep-lr-02" in text.stderr


def test_a_stale_plan_names_the_input_that_changed(platform):
    assert cli("plan", "examples", "--out", "plan.json").exit_code == 0
    edit("examples/stacks/prod-stack.yaml", "train:1.4.2", "train:1.4.3")
    result = cli("apply", "examples", "--output-dir", "deploy", "--plan", "plan.json")
    assert result.exit_code == 1
    assert "Stack/prod-stack changed" in result.stderr and "{result" not in result.stderr
