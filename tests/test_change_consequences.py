"""Every consequence of a change for running and waiting work on the comment's
first screen (issue 40), as golden comments checked for their structure:

(e) a policy's limit lowered below what it runs, (f) its reserved share lowered
below what it holds, (g) a resize that stops running work, (h) a changed image
that restarts running work. Each says how much, what it holds back, and that
nothing is stopped where Kueue stops nothing; the headline counts the running
work that ends whatever the cause, and the warning names every such step, in
the text plan, the comment and the GitHub annotations alike.

The platform is tests/fixtures/change without `pipelines/training.yaml`, applied
into a state: 16 GPUs full (ranking's refresh_index holds 4, three vision trials
12). Regenerate the golden files with
``pytest tests/test_change_consequences.py --update-golden``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import cli
from test_pr_comment import FIXTURES, NOW, _edit, _golden, _well_formed, rendered

from poolc.commands.apply import apply_paths

FOURTH_TRIAL = "  trial_lr3e4_mixa: {}\n    trial_lr3e4_mixb: {}"


@pytest.fixture
def applied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The running platform applied into poolc.state.json; ``base`` and ``head`` copies of it (cwd: tmp_path)."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(FIXTURES / "change", "running")
    (tmp_path / "running" / "pipelines" / "training.yaml").unlink()
    applied = apply_paths(["running"], "deploy", state_file="poolc.state.json", now=NOW)
    assert applied.ok and len(applied.plan.by_status("allocated")) == 4
    shutil.copytree("running", "base")
    return tmp_path


def _head(root: Path) -> Path:
    shutil.copytree(root / "base", root / "head")
    return root / "head"


def _plans(fmt: str = "markdown"):
    def plan(where: str, *args: str):
        return cli("plan", where, "--state", "poolc.state.json", "--output-dir", "deploy", *args)
    assert plan("base", "--out", "base.json").exit_code == 0
    result = plan("head", "--base", "base.json", "--format", fmt, "--out", "head.json")
    assert result.exit_code == 0, result.stderr
    return result, plan


def _first_screen(markdown: str):
    """The blocks before the whole plan's heading."""
    html = rendered(markdown)
    _well_formed(html)
    end = next(i for i, (kind, text) in enumerate(html.blocks) if text.startswith("The whole plan"))
    return html, html.blocks[:end]


def test_a_limit_lowered_below_use_says_by_how_much_what_waits_and_that_nothing_stops(applied, request):
    _edit(applied / "base" / "pipelines" / "vlm-sweep.yaml", "  trial_lr3e4_mixa: {}", FOURTH_TRIAL)
    head = _head(applied)
    _edit(head / "policies.yaml", "  priority: 100\n", "  priority: 100\n  limit: {gpu: 8}\n")
    result, plan = _plans()
    _golden("limit-below-use", result.stdout, request)
    html, first = _first_screen(result.stdout)
    assert first[0] == ("h3", "poolc: policy research-gpu-east 4 GPU over its limit, nothing stopped")
    assert "blockquote" not in [kind for kind, _ in first]          # nothing running ends
    over = html.tables[1]
    assert over[0] == ["", "resource", "holds", "now", "over", "what follows"]
    assert over[1][:5] == ["policy research-gpu-east", "GPU", "12", "limit 8", "4"]
    assert over[1][5] == ("nothing is stopped: Kueue does not stop admitted work when quota shrinks; none of its "
                          "steps that need GPU can start until 4 GPU of its work ends; waiting on it now: "
                          "vlm-sweep/trial_lr3e4_mixb (vision)")
    text = plan("head", "--base", "base.json").stdout
    assert text.startswith("Change: policy research-gpu-east 4 GPU over its limit, nothing stopped\n")
    assert "policy research-gpu-east holds 12 GPU, 4 GPU over its new limit of 8 GPU (was 16 GPU)" in \
        " ".join(text.split())
    github = plan("head", "--base", "base.json", "--format", "github").stdout.splitlines()
    assert github[-1].startswith("::warning title=poolc%3A policy over its limit::policy research-gpu-east holds "
                                 "12 GPU, 4 GPU over its new limit of 8 GPU")


def test_a_reservation_lowered_below_use_says_the_work_above_it_now_borrows(applied, request):
    _edit(applied / "base" / "pipelines" / "vlm-sweep.yaml", "  trial_lr3e4_mixa: {}", FOURTH_TRIAL)
    _edit(applied / "base" / "policies.yaml", "  priority: 100\n", "  priority: 100\n  reserved: {gpu: 12}\n")
    head = _head(applied)
    _edit(head / "policies.yaml", "reserved: {gpu: 12}", "reserved: {gpu: 4}")
    result, plan = _plans()
    _golden("reservation-below-use", result.stdout, request)
    html, first = _first_screen(result.stdout)
    assert first[0] == ("h3", "poolc: policy research-gpu-east 8 GPU above its reserved share")
    over = html.tables[1]
    assert over[1][:5] == ["policy research-gpu-east", "GPU", "12", "reserved 4", "8"]
    assert over[1][5].startswith("its work above the share keeps running but now borrows, so a "
                                 "higher-priority policy's step may preempt it")
    assert over[1][5].endswith("waiting on it now: vlm-sweep/trial_lr3e4_mixb (vision)")


def test_a_resize_that_stops_running_work_is_counted_and_named(applied, request):
    head = _head(applied)
    _edit(head / "pipelines" / "vlm-sweep.yaml", "trial_lr1e3_mixa: {}",
          "trial_lr1e3_mixa: {settings: {resources: {gpu_count: 8}}}")
    result, plan = _plans()
    _golden("resize-stops", result.stdout, request)
    html, first = _first_screen(result.stdout)
    assert first[0] == ("h3", "poolc: stops 1 running step (resized)")
    assert first[1] == ("blockquote", "[!WARNING] Running work ends when this change is applied: "
                                      "stops (resized): vlm-sweep/trial_lr1e3_mixa (vision).")
    ended = html.tables[1]
    assert ended[0] == ["step", "team", "what happens", "why"]
    assert ended[1][:3] == ["vlm-sweep/trial_lr1e3_mixa", "vision", "stops (resized)"]
    assert ended[1][3].startswith("its running allocation is released because it now asks 8 GPU")
    assert "the step waits: " in ended[1][3]
    # said once: not again as a fate, and the apply section says it stops
    assert "Steps whose fate changed" not in " ".join(text for _, text in first)
    assert "| ~ | `vlm-sweep/trial_lr1e3_mixa` | stops (resized, waits) |" in result.stdout
    assert "restarts resized" not in result.stdout
    text = plan("head", "--base", "base.json").stdout
    assert text.splitlines()[:2] == ["Change: stops 1 running step (resized)",
                                     "WARNING: running work ends when this change is applied: stops (resized): "
                                     "vlm-sweep/trial_lr1e3_mixa"]


def test_an_image_change_restarts_the_running_steps_it_touches(applied, request):
    head = _head(applied)
    _edit(head / "stacks.yaml", "ml/research:7", "ml/research:8")
    result, plan = _plans()
    _golden("image-restarts", result.stdout, request)
    html, first = _first_screen(result.stdout)
    trials = ["vlm-sweep/trial_lr1e3_mixa", "vlm-sweep/trial_lr1e3_mixb", "vlm-sweep/trial_lr3e4_mixa"]
    assert first[0] == ("h3", "poolc: restarts 3 running steps (new Job)")
    assert first[1][1] == ("[!WARNING] Running work ends when this change is applied: restarts (new Job): "
                           + ", ".join(f"{t} (vision)" for t in trials) + ".")
    assert [row[:3] for row in html.tables[1][1:]] == [[t, "vision", "restarts (new Job)"] for t in trials]
    data = plan("head", "--base", "base.json", "--format", "json").stdout
    assert '"restarted": [\n        "vlm-sweep--trial-lr1e3-mixa-' in data
    # ranking's refresh_index runs on another stack: its Job is the same, it keeps running
    assert "ranking-serve" not in " ".join(text for _, text in first)


def test_a_new_step_is_one_added_row(applied):
    head = _head(applied)
    _edit(head / "pipelines" / "vlm-sweep.yaml", "  trial_lr3e4_mixa: {}", FOURTH_TRIAL)
    result, _ = _plans()
    html, first = _first_screen(result.stdout)
    assert first[0] == ("h3", "poolc: 1 new step queued")
    assert html.tables[0][1:] == [["pipeline", "vlm-sweep", "step trial_lr3e4_mixb added (4 GPU, 16 cores, 128 GiB)"]]
    assert "none →" not in result.stdout


def test_a_pool_capacity_lowered_below_use_holds_back_its_steps(applied):
    _edit(applied / "base" / "pipelines" / "vlm-sweep.yaml", "  trial_lr3e4_mixa: {}", FOURTH_TRIAL)
    head = _head(applied)
    _edit(head / "pools.yaml", "capacity: {gpu: 16,", "capacity: {gpu: 12,")
    result, _ = _plans()
    html, first = _first_screen(result.stdout)
    assert first[0] == ("h3", "poolc: pool gpu-east 4 GPU over its capacity, nothing stopped")
    over = html.tables[1]
    assert over[1][:5] == ["pool gpu-east", "GPU", "16", "capacity 12", "4"]
    assert over[1][5].endswith("none of steps on it that need GPU can start until 4 GPU of its work ends; waiting "
                               "on it now: vlm-sweep/trial_lr3e4_mixb (vision)")


def test_without_the_files_apply_wrote_a_changed_job_may_restart(applied):
    """The Job's name (a digest of its spec) is read from the file apply wrote; with
    the output directory gone poolc cannot tell, and says so instead of guessing."""
    head = _head(applied)
    _edit(head / "stacks.yaml", "ml/research:7", "ml/research:8")
    assert cli("plan", "base", "--state", "poolc.state.json", "--output-dir", "deploy", "--out", "base.json"
               ).exit_code == 0
    shutil.rmtree(applied / "deploy")
    result = cli("plan", "head", "--state", "poolc.state.json", "--base", "base.json", "--format", "markdown")
    assert result.exit_code == 0, result.stderr
    html, first = _first_screen(result.stdout)
    # ranking's file differs too (its header names head/, the state's record running/): poolc cannot tell either
    assert first[0] == ("h3", "poolc: may restart 4 running steps (Job file changed)")
    assert [row[:3] for row in html.tables[1][1:]] == [
        [step, team, "may restart (Job file changed)"] for step, team in (
            ("ranking-serve/refresh_index", "ranking"), ("vlm-sweep/trial_lr1e3_mixa", "vision"),
            ("vlm-sweep/trial_lr1e3_mixb", "vision"), ("vlm-sweep/trial_lr3e4_mixa", "vision"))]
    assert "pass --output-dir to know" in html.tables[1][1][3]
