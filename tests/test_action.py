"""The repository as a GitHub Action (action.yml) and the README's workflows that
use it: valid against the schemas GitHub's own editors use (check-jsonschema's
vendored `github-actions` and `github-workflows`), and the action's shell steps
run for real, in bash as the runner starts them, with the GitHub context they
read: the check fails when `poolc plan` exits 1, 2 or 3, the comment is posted
once and then updated, a fork's pull request gets the job summary instead.

`poolc` is the real one where the test says so; `gh` (the GitHub API) and, for
exit codes poolc cannot be made to give on purpose (3), `poolc` are small stand-in
scripts that record what they were asked.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parent.parent
ACTION = REPO / "action.yml"
README = REPO / "README.md"
# GitHub's runner starts a `shell: bash` step as this command
BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]
STEPS_RUN = ("clock", "validate", "base", "plan", "comment", "result")   # the cache and pip install are not run here


def _check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
                          capture_output=True, text=True)


def _readme_workflow(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    return text.split(f"### {title}\n", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]


def test_action_yml_is_a_valid_action():
    result = _check_jsonschema("vendor.github-actions", ACTION)
    assert result.returncode == 0, result.stdout + result.stderr
    action = YAML(typ="safe").load(ACTION.read_text(encoding="utf-8"))
    assert set(action["inputs"]) == {"mode", "output-dir", "paths", "base", "state", "observed", "format",
                                     "forecast", "scenarios"}
    assert action["runs"]["using"] == "composite"
    ids = [step.get("id") for step in action["runs"]["steps"]]
    assert ids == [None, "install", "cycle", *STEPS_RUN]
    assert action["runs"]["steps"][0]["uses"].startswith("actions/cache@")     # pip's cache, pinned by commit
    install = action["runs"]["steps"][1]
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}"      # poolc from the action's own ref
    assert '"$ACTION_PATH[plan]"' in install["run"]
    # nothing that changes the caller's job: its Python, its PATH, its environment
    text = ACTION.read_text(encoding="utf-8")
    assert "setup-python" not in text.replace("No setup-python here", "")
    assert "GITHUB_PATH" not in text and "GITHUB_ENV" not in text


def test_a_broken_action_fails_the_schema_check(tmp_path):
    broken = tmp_path / "action.yml"
    broken.write_text(ACTION.read_text(encoding="utf-8").replace("using: composite", "using: compost"),
                      encoding="utf-8")
    assert _check_jsonschema("vendor.github-actions", broken).returncode == 1


@pytest.mark.parametrize("title", ["Plan on every pull request", "Apply on merge"])
def test_the_readme_workflows_are_valid_workflows(title, tmp_path):
    path = tmp_path / "workflow.yml"
    path.write_text(_readme_workflow(title), encoding="utf-8")
    result = _check_jsonschema("vendor.github-workflows", path)
    assert result.returncode == 0, result.stdout + result.stderr
    workflow = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    checkout = "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1"
    if title == "Apply on merge":
        assert workflow["on"]["push"]["branches"] == ["main"]
        assert workflow["permissions"] == {"contents": "read", "id-token": "write"}
        assert workflow["concurrency"] == {"group": "poolc-apply", "cancel-in-progress": False}
        steps = workflow["jobs"]["apply"]["steps"]
        assert [step.get("uses") for step in steps] == [checkout, None, "your-org/poolc@COMMIT", None]
        assert steps[2]["with"] == {"mode": "apply", "paths": "config/"}      # the cycle: poolc cycle
        return
    assert "pull_request" in workflow["on"]
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write", "id-token": "write"}
    assert workflow["concurrency"]["group"] == "poolc-plan-${{ github.event.pull_request.number }}"
    steps = workflow["jobs"]["plan"]["steps"]
    assert [step.get("uses") for step in steps] == [checkout, None, "your-org/poolc@COMMIT"]
    assert "tar -xzf poolc.tar.gz poolc.state.json" in steps[1]["run"]     # the apply job's state
    assert steps[1]["run"].endswith("kubectl get workloads.kueue.x-k8s.io -A -o json > workloads.json\n")
    assert steps[2]["with"] == {"paths": "config/", "observed": "workloads.json"}


def test_the_readme_pins_poolc_by_commit_everywhere():
    """No tag the repository does not have: poolc is pinned by COMMIT (the SHA a team adopts)."""
    text = README.read_text(encoding="utf-8")
    assert not re.findall(r"poolc@v\d|rev: v\d", text)
    assert set(re.findall(r"your-org/poolc@(\S+?)[\"\s]", text)) == {"COMMIT"}
    assert "rev: COMMIT" in text
    for page in (README, REPO / "docs" / "apply.md"):
        assert "pip install poolc\n" not in page.read_text(encoding="utf-8")


# --- the action's shell steps, run ---------------------------------------------------

_EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


def _fake(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def run_action(tmp_path: Path, inputs: dict[str, str], *, pull_request: int | None = 7,
               head_repository: str = "acme/platform", bin_dirs: tuple[Path, ...] = ()) -> dict:
    """Run the action's shell steps in order as the runner does (each in bash with
    its env, outputs through GITHUB_OUTPUT), stopping at the first that fails."""
    action = YAML(typ="safe").load(ACTION.read_text(encoding="utf-8"))
    defaults = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    temp = tmp_path / "runner-temp"
    temp.mkdir(exist_ok=True)
    summary = tmp_path / "summary.md"
    context = {f"inputs.{k}": v for k, v in {**defaults, **inputs}.items()}
    context.update({"github.action_path": str(REPO), "github.token": "not-a-token",
                    "github.base_ref": "", "github.event.pull_request.number": str(pull_request or ""),
                    "github.event.pull_request.head.repo.full_name": head_repository if pull_request else ""})
    outputs: dict[str, dict[str, str]] = {}
    for step in action["runs"]["steps"]:
        if step.get("id") not in (*STEPS_RUN, "cycle"):
            continue
        if "if" in step and not _condition(step["if"], context):
            continue
        output_file = tmp_path / f"output-{step['id']}"
        output_file.write_text("", encoding="utf-8")

        def value(match: re.Match, step_id: str = step["id"]) -> str:
            expression = match[1]
            if expression.startswith("steps."):
                _, other, _, key = expression.split(".")
                return outputs.get(other, {}).get(key, "")
            return context[expression]          # an expression the test does not know fails it

        env = {**os.environ, "PATH": os.pathsep.join([*map(str, bin_dirs), os.environ["PATH"]]),
               "GITHUB_OUTPUT": str(output_file), "GITHUB_STEP_SUMMARY": str(summary),
               "GITHUB_PATH": str(tmp_path / "path"), "RUNNER_TEMP": str(temp),
               "GITHUB_WORKSPACE": str(tmp_path / "work"), "GITHUB_REPOSITORY": "acme/platform"}
        env.update({k: _EXPRESSION.sub(value, str(v)) for k, v in step.get("env", {}).items()})
        assert "${{" not in step["run"], "expressions in a script are injection risks: pass them in env"
        done = subprocess.run([*BASH, "-c", step["run"]], cwd=tmp_path / "work", env=env, capture_output=True,
                              text=True)
        outputs[step["id"]] = dict(line.split("=", 1) for line in output_file.read_text("utf-8").splitlines()
                                   if "=" in line)
        if done.returncode != 0:
            return {"failed": step["id"], "code": done.returncode, "outputs": outputs, "stdout": done.stdout,
                    "summary": summary.read_text("utf-8") if summary.exists() else ""}
    return {"failed": None, "code": 0, "outputs": outputs,
            "summary": summary.read_text("utf-8") if summary.exists() else ""}


def _condition(text: str, context: dict[str, str]) -> bool:
    """The two conditions the action's steps use: ``inputs.X == 'v'`` and ``inputs.X != 'v'``."""
    match = re.fullmatch(r"(inputs\.[\w-]+) (==|!=) '([^']*)'", text.strip())
    assert match, f"a condition the test does not know: {text}"
    return (context[match[1]] == match[3]) == (match[2] == "==")


@pytest.fixture
def runner(tmp_path: Path) -> Path:
    """A checked-out platform repository and a `gh` that records its calls."""
    shutil.copytree(REPO / "tests" / "fixtures" / "change", tmp_path / "work")
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    _fake(fake, "gh", f'echo "$@" >> "{tmp_path}/gh-calls"\n'
                      f'for a in "$@"; do case "$a" in body=@*) cp "${{a#body=@}}" "{tmp_path}/posted.md";; esac; '
                      'done\n'
                      f'[ -f "{tmp_path}/existing-comment" ] && case "$*" in *--paginate*) echo 4242;; esac\n'
                      'exit 0\n')
    return tmp_path


@pytest.mark.parametrize("code", [0, 1, 2, 3])
def test_the_check_fails_unless_poolc_plan_exits_0(runner, code):
    stand_in = runner / "stand-in"
    stand_in.mkdir()
    _fake(stand_in, "poolc", f'case "$1" in plan) echo "### the comment"; echo "poolc: said on stderr" >&2; '
                             f'exit {code};; esac\nexit 0\n')
    outcome = run_action(runner, {}, bin_dirs=(runner / "fake-bin", stand_in))
    if code == 0:
        assert outcome["failed"] is None
    else:
        assert (outcome["failed"], outcome["code"]) == ("result", code)
    assert outcome["outputs"]["plan"]["exit-code"] == str(code)
    posted = (runner / "posted.md").read_text(encoding="utf-8")
    assert posted.startswith("<!-- poolc-plan -->\n")
    if code >= 2:          # a usage or internal error: the comment says so, never an empty plan
        assert f"### poolc failed (exit {code})" in posted and "poolc: said on stderr" in posted
    else:
        assert "### the comment" in posted
    assert "POST repos/acme/platform/issues/7/comments" in (runner / "gh-calls").read_text(encoding="utf-8")


def test_the_comment_is_updated_not_posted_again(runner):
    stand_in = runner / "stand-in"
    stand_in.mkdir()
    _fake(stand_in, "poolc", 'case "$1" in plan) echo "### again";; esac\nexit 0\n')
    (runner / "existing-comment").write_text("", encoding="utf-8")
    assert run_action(runner, {}, bin_dirs=(runner / "fake-bin", stand_in))["failed"] is None
    calls = (runner / "gh-calls").read_text(encoding="utf-8")
    assert "PATCH repos/acme/platform/issues/comments/4242" in calls and "POST" not in calls


def test_a_fork_gets_the_job_summary_and_no_comment(runner):
    outcome = run_action(runner, {"state": "none.json"}, head_repository="someone/fork",
                         bin_dirs=(runner / "fake-bin", Path(sys.executable).parent))
    assert outcome["failed"] is None
    assert not (runner / "gh-calls").exists()
    assert outcome["summary"].startswith("<!-- poolc-plan -->\n### poolc plan: 3 allocated, 2 queued")


def test_the_real_poolc_on_a_broken_configuration_fails_with_its_errors(runner):
    path = runner / "work" / "pipelines" / "vlm-sweep.yaml"
    path.write_text(path.read_text("utf-8").replace("stack: research", "stack: reserch"), encoding="utf-8")
    outcome = run_action(runner, {"state": "none.json"}, bin_dirs=(runner / "fake-bin", Path(sys.executable).parent))
    assert (outcome["failed"], outcome["code"]) == ("result", 1)
    posted = (runner / "posted.md").read_text(encoding="utf-8")
    assert posted.startswith("<!-- poolc-plan -->\n### poolc: 1 error, no plan\n")
    assert "**N002**" in posted
    assert not (runner / "runner-temp" / "poolc-plan.json").exists()


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True,
                   capture_output=True)


def _lower_a_limit_on_a_branch(runner: Path) -> None:
    """The platform committed on `main` (with a bare origin to fetch it from), then a
    pull request's change in the working tree: prod-gpu-east's limit 12 -> 10 GPUs."""
    work = runner / "work"
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "base")
    _git(runner, "clone", "-q", "--bare", str(work), "origin.git")
    _git(work, "remote", "add", "origin", str(runner / "origin.git"))
    policies = work / "policies.yaml"
    policies.write_text(policies.read_text("utf-8").replace("limit: {gpu: 12}", "limit: {gpu: 10}"), "utf-8")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_pull_request_is_planned_against_its_base_branch(runner):
    """The base step checks the base ref out beside the workspace and plans it
    against the head's state; the comment leads with what the change does."""
    _lower_a_limit_on_a_branch(runner)
    outcome = run_action(runner, {"base": "main", "state": "none.json"},
                         bin_dirs=(runner / "fake-bin", Path(sys.executable).parent))
    assert outcome["failed"] is None, outcome
    assert outcome["outputs"]["base"]["plan"].endswith("poolc-base.json")
    posted = (runner / "posted.md").read_text(encoding="utf-8")
    assert posted.startswith("<!-- poolc-plan -->\n### poolc: ")
    assert "| policy | `prod-gpu-east` | limit 12 GPU → 10 GPU |" in posted
    assert not (runner / "runner-temp" / "poolc-base").exists()      # the base worktree is removed again


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_with_a_forecast_horizon_the_comment_leads_with_before_and_after(runner, monkeypatch):
    """`forecast: 2d` forecasts the base plan (kept in its plan file) and the pull
    request's: the comment's before/after table says what the change does to each
    team's starts. The fixture's steps have no durations: nothing ends, so every
    waiting step starts never, before and after."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1795000000")
    _lower_a_limit_on_a_branch(runner)
    outcome = run_action(runner, {"base": "main", "state": "none.json", "forecast": "2d"},
                         bin_dirs=(runner / "fake-bin", Path(sys.executable).parent))
    assert outcome["failed"] is None, outcome
    base = json.loads((runner / "runner-temp" / "poolc-base.json").read_text("utf-8"))
    assert base["forecast"]["horizon"] == 2 * 86400
    posted = (runner / "posted.md").read_text(encoding="utf-8")
    assert "#### Forecast: before → after" in posted
    assert posted.index("| policy | `prod-gpu-east` | limit 12 GPU → 10 GPU |") < posted.index("before → after")
    head = json.loads((runner / "runner-temp" / "poolc-plan.json").read_text("utf-8"))
    assert head["base"]["forecast"] == base["forecast"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_with_scenarios_the_comment_leads_with_the_expectation_the_change_breaks(runner):
    """`scenarios: true` runs `poolc test` on the base branch and the pull request:
    with prod's limit lowered 12 -> 10, ranking-pretrain no longer starts at once
    (refresh_index holds 4 of prod's 10 GPUs until it ends at 30 min), the comment
    leads with that, and the check fails."""
    (runner / "work" / "scenario.yaml").write_text(
        "apiVersion: poolc/v1\nkind: Scenario\nmetadata: {name: pretrain-at-once}\nspec:\n"
        "  start: {time: '2026-11-20T06:00:00Z'}\n  horizon: 1d\n"
        "  durations: {ranking-serve/refresh_index: 30m, ranking-pretrain/pretrain: 4h,\n"
        "              vlm-sweep/trial_lr1e3_mixa: 5h, vlm-sweep/trial_lr1e3_mixb: 5h,\n"
        "              vlm-sweep/trial_lr3e4_mixa: 5h}\n"
        "  expect:\n    - starts_within: {step: ranking-pretrain/pretrain, within: 10m}\n", "utf-8")
    _lower_a_limit_on_a_branch(runner)
    outcome = run_action(runner, {"base": "main", "state": "none.json", "scenarios": "true"},
                         bin_dirs=(runner / "fake-bin", Path(sys.executable).parent))
    assert outcome["failed"] == "result" and outcome["code"] == 1, outcome
    base = json.loads((runner / "runner-temp" / "poolc-base-scenarios.json").read_text("utf-8"))
    assert base["passed"] is True
    posted = (runner / "posted.md").read_text(encoding="utf-8")
    assert posted.startswith("<!-- poolc-plan -->\n### This change breaks 1 scenario expectation\n\n"
                             "- **pretrain-at-once**: ranking-pretrain/pretrain no longer starts within 10 min: now "
                             "starts +30 min, 30 min after it arrived (was 0 s), because prod-gpu-east's limit "
                             "of GPU: 12 GPU → 10 GPU\n"), posted
    assert posted.index("This change breaks") < posted.index("### poolc: ")


def test_scenarios_off_by_default_leave_the_comment_as_it_was(runner):
    (runner / "work" / "scenario.yaml").write_text(
        "apiVersion: poolc/v1\nkind: Scenario\nmetadata: {name: never}\nspec:\n"
        "  expect:\n    - starts_within: {step: ranking-pretrain/pretrain, within: 1s}\n", "utf-8")
    outcome = run_action(runner, {"state": "none.json"}, bin_dirs=(runner / "fake-bin", Path(sys.executable).parent))
    assert outcome["failed"] is None, outcome
    assert "scenario" not in (runner / "posted.md").read_text(encoding="utf-8").lower()
