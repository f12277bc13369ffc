"""The documented loop is the tested loop: the README's workflows and code blocks, and
docs/apply.md's, run as written against the cluster in a box (tests/clusterbox/), and
held to actionlint and zizmor together with action.yml.

What stands in for GitHub: the workflows' steps run in order in bash as the runner starts
them (`if:` conditions evaluated for a same-repository pull request), `uses:
your-org/poolc@COMMIT` runs this repository's action.yml steps (poolc is the one of this
test environment, so its install and cache steps are not run), `actions/checkout` is the
temporary platform repository itself, and `gh` records the comment. Your cloud's OIDC
login (a comment in the workflows) has nothing to do against the stand-ins. In the code
blocks, the line that installs poolc is the one thing not run (poolc is installed here).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

sys.path.insert(0, str(Path(__file__).resolve().parent / "clusterbox"))

from box import Box  # noqa: E402
from test_cluster_box import START, _steps_of_state  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
APPLY = REPO / "docs" / "apply.md"
ACTION = REPO / "action.yml"
BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]
BIN = Path(sys.executable).parent
_EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


def _section_block(path: Path, title: str, language: str) -> str:
    text = path.read_text(encoding="utf-8")
    return text.split(f"### {title}\n", 1)[1].split(f"```{language}\n", 1)[1].split("```", 1)[0]


def documented_workflows() -> dict[str, str]:
    """Every workflow the docs give (a fenced yaml block with `jobs:`), by where it is."""
    found = {}
    for page in (README, APPLY, REPO / "docs" / "targets.md", REPO / "docs" / "cli.md"):
        for i, block in enumerate(re.findall(r"```yaml\n(.*?)```", page.read_text(encoding="utf-8"), re.S)):
            if re.search(r"^jobs:", block, re.M):
                found[f"{page.name}-{i}"] = block
    return found


def test_the_docs_give_the_two_workflows():
    assert len(documented_workflows()) == 2


# --- actionlint and zizmor ----------------------------------------------------------------

def _lint_repository(tmp_path: Path) -> Path:
    """A repository holding the action (as `uses: ./` reads it) and every documented
    workflow, with COMMIT replaced by a full commit SHA, as a team adopting them writes."""
    root = tmp_path / "linted"
    (root / ".github" / "workflows").mkdir(parents=True)
    shutil.copy(ACTION, root / "action.yml")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    commit = commit if re.fullmatch(r"[0-9a-f]{40}", commit) else "0" * 40
    for name, text in documented_workflows().items():
        (root / ".github" / "workflows" / f"{name}.yml").write_text(text.replace("COMMIT", commit), encoding="utf-8")
        # the same workflow with the action taken from this repository: actionlint checks its inputs
        (root / ".github" / "workflows" / f"{name}-local.yml").write_text(
            text.replace("your-org/poolc@COMMIT", "./"), encoding="utf-8")
    return root


def test_actionlint_is_clean(tmp_path):
    root = _lint_repository(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    done = subprocess.run([str(BIN / "actionlint"), "-no-color"], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_finds_what_it_should(tmp_path):
    """The check can fail: an input the action does not have is an error."""
    root = _lint_repository(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    local = next((root / ".github" / "workflows").glob("*-local.yml"))
    local.write_text(local.read_text().replace("paths: config/", "pathz: config/"))
    done = subprocess.run([str(BIN / "actionlint"), "-no-color"], cwd=root, capture_output=True, text=True)
    assert done.returncode == 1 and "pathz" in done.stdout


def test_zizmor_is_clean(tmp_path):
    root = _lint_repository(tmp_path)
    done = subprocess.run([str(BIN / "zizmor"), "--offline", "--no-progress", "action.yml",
                           *sorted(str(p) for p in (root / ".github" / "workflows").glob("*.yml")
                                   if not p.name.endswith("-local.yml"))],
                          cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_zizmor_finds_what_it_should(tmp_path):
    root = _lint_repository(tmp_path)
    (root / "action.yml").write_text(re.sub(r"actions/cache@[0-9a-f]{40}", "actions/cache@v4",
                                            (root / "action.yml").read_text()))
    done = subprocess.run([str(BIN / "zizmor"), "--offline", "--no-progress", "action.yml"], cwd=root,
                          capture_output=True, text=True)
    assert done.returncode != 0 and "unpinned" in done.stdout


# --- the workflows, run -------------------------------------------------------------------

class Runner:
    """Runs a workflow's steps, and the action's, as the runner would, in one checkout."""

    def __init__(self, box: Box, work: Path, temp: Path, now: int):
        self.box, self.work, self.temp, self.now = box, work, temp, now
        self.summary = temp / "summary.md"
        fake = temp / "fake-bin"
        fake.mkdir(exist_ok=True)
        gh = fake / "gh"
        gh.write_text(f'#!/bin/sh\necho "$@" >> "{temp}/gh-calls"\n'
                      f'for a in "$@"; do case "$a" in body=@*) cp "${{a#body=@}}" "{temp}/posted.md";; esac; done\n')
        gh.chmod(0o755)
        self.path = os.pathsep.join([str(fake), str(BIN), box.env(now)["PATH"]])

    def env(self, extra: dict[str, str]) -> dict[str, str]:
        return {**self.box.env(self.now), "PATH": self.path, "GITHUB_WORKSPACE": str(self.work),
                "RUNNER_TEMP": str(self.temp), "GITHUB_STEP_SUMMARY": str(self.summary),
                "GITHUB_REPOSITORY": "acme/platform", **extra}

    def bash(self, script: str, env: dict[str, str]) -> subprocess.CompletedProcess:
        return subprocess.run([*BASH, "-c", script], cwd=self.work, env=self.env(env), capture_output=True,
                              text=True)

    def workflow(self, text: str, job: str) -> list[str]:
        """Every step of ``job``, in order; stops (failing the test) at the first that fails."""
        workflow = YAML(typ="safe").load(text)
        ran = []
        for step in workflow["jobs"][job]["steps"]:
            condition = step.get("if")
            if condition is not None and not self._workflow_condition(condition):
                continue
            uses = step.get("uses", "")
            if uses.startswith("actions/checkout@"):
                ran.append("checkout")
            elif uses == "your-org/poolc@COMMIT":
                self.action(step.get("with", {}))
                ran.append("poolc")
            else:
                done = self.bash(step["run"], {})
                assert done.returncode == 0, f"{step.get('name')}: {done.stdout}\n{done.stderr}"
                ran.append(step.get("name", "run"))
        return ran

    @staticmethod
    def _workflow_condition(text: str) -> bool:
        known = {"always()": True,
                 "github.event.pull_request.head.repo.full_name == github.repository": True}   # not a fork
        assert text in known, f"a condition the test does not know: {text}"
        return known[text]

    def action(self, given: dict[str, str]) -> dict[str, dict[str, str]]:
        action = YAML(typ="safe").load(ACTION.read_text(encoding="utf-8"))
        inputs = {name: str(given.get(name, spec.get("default", ""))) for name, spec in action["inputs"].items()}
        context = {**{f"inputs.{k}": v for k, v in inputs.items()}, "github.action_path": str(REPO),
                   "github.token": "not-a-token", "github.base_ref": "main",
                   "github.event.pull_request.number": "7",
                   "github.event.pull_request.head.repo.full_name": "acme/platform"}
        outputs: dict[str, dict[str, str]] = {}
        for step in action["runs"]["steps"]:
            if step.get("id") in (None, "install"):
                continue   # actions/cache and pip install: poolc is this environment's
            match = re.fullmatch(r"(inputs\.[\w-]+) (==|!=) '([^']*)'", step.get("if", "inputs.mode != ''"))
            assert match, step.get("if")
            if (context[match[1]] == match[3]) != (match[2] == "=="):
                continue
            output = self.temp / f"output-{step['id']}"
            output.write_text("")

            def value(found: re.Match) -> str:
                expression = found[1]
                if expression.startswith("steps."):
                    _, other, _, key = expression.split(".")
                    return outputs.get(other, {}).get(key, "")
                return context[expression]

            env = {k: _EXPRESSION.sub(value, str(v)) for k, v in step.get("env", {}).items()}
            env["GITHUB_OUTPUT"] = str(output)
            done = self.bash(step["run"], env)
            outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
            assert done.returncode == 0, f"action step {step['id']}: {done.stdout}\n{done.stderr}\n{self.box.dump()}"
        return outputs


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


@pytest.fixture
def platform(tmp_path):
    """A platform repository (examples/ as config/, without state/) pushed to an origin,
    a box with the team's bucket, and a runner."""
    import boto3

    box = Box(tmp_path / "box", clock=START)
    origin, work = tmp_path / "origin.git", tmp_path / "work"
    # without the running allocations, and the scenarios that name them
    shutil.copytree(REPO / "examples", work / "config",
                    ignore=shutil.ignore_patterns("state", "scenarios", "README.md"))
    (work / ".gitignore").write_text("poolc.state.json\npoolc.state.json.*\npoolc.tar.gz\ndeploy/\n"
                                     "workloads.json\nplan.md\ncomment.md\n")
    _git(tmp_path, "init", "-q", "--bare", str(origin))
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "platform")
    _git(work, "remote", "add", "origin", str(origin))
    _git(work, "push", "-q", "origin", "main")
    boto3.client("s3", region_name="us-east-1", endpoint_url=box.moto, aws_access_key_id="box",
                 aws_secret_access_key="box").create_bucket(Bucket="acme-poolc")
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    yield box, work, temp
    box.stop()


def _admitted_steps(box: Box) -> set[str]:
    return {f"{w['template']['metadata']['labels']['poolc.dev/pipeline']}/"
            f"{w['template']['metadata']['labels']['poolc.dev/step']}" for w in box.cluster().admitted().values()}


def test_the_readme_workflows_run_to_the_end(platform):
    """Two apply runs (a merge, then the schedule), then a pull request that resizes a step."""
    box, work, temp = platform
    apply = _section_block(README, "Apply on merge", "yaml")
    plan = _section_block(README, "Plan on every pull request", "yaml")
    for cycle in range(2):
        ran = Runner(box, work, temp, START + 600 * cycle).workflow(apply, "apply")
        assert ran == ["checkout", "Restore the state and the output directory", "poolc",
                       "Keep the state and the output directory"]
        held = _steps_of_state(work)
        sagemaker = {json.loads(p.read_text())["Environment"]["POOLC_PIPELINE"] + "/"
                     + json.loads(p.read_text())["Environment"]["POOLC_STEP"]
                     for p in (work / "deploy" / "sagemaker").glob("*.json")}
        assert _admitted_steps(box) == set(held) - sagemaker
        assert {j.training_job_name.rsplit("-", 1)[0] for j in box.training_jobs()} == {
            json.loads(p.read_text())["TrainingJobName"] for p in (work / "deploy" / "sagemaker").glob("*.json")}
    assert len(box.training_jobs()) == 4      # each body submitted once over both cycles
    stored = work / "stored.tar.gz"
    subprocess.run(["aws", "s3", "cp", "s3://acme-poolc/poolc.tar.gz", str(stored)], env=box.env(START), check=True,
                   capture_output=True)
    # a pull request, in a fresh checkout of its branch: it restores the state the apply job kept
    _git(work, "checkout", "-q", "-b", "resize")
    pipeline = work / "config" / "pipelines" / "research-sweep.yaml"
    pipeline.write_text(pipeline.read_text().replace("gpu_count: 1", "gpu_count: 2", 1))
    _git(work, "commit", "-q", "-am", "resize")
    (work / "poolc.state.json").unlink()
    ran = Runner(box, work, temp, START + 1200).workflow(plan, "plan")
    assert ran == ["checkout", "The apply job's state, and what the cluster runs (forks get no credentials)", "poolc"]
    posted = (temp / "posted.md").read_text()
    assert posted.startswith("<!-- poolc-plan -->") and "research-sweep" in posted
    assert (work / "poolc.state.json").is_file()


@pytest.mark.slow
def test_the_commands_underneath_run_to_the_end(platform):
    box, work, temp = platform
    runner = Runner(box, work, temp, START)
    done = runner.bash("poolc cycle config/ --output-dir deploy --allow-empty --poll 0", {})
    assert done.returncode == 0, done.stderr
    _git(work, "fetch", "-q", "origin")
    block = _section_block(README, "The commands underneath", "sh")
    script = "\n".join(line for line in block.splitlines() if not line.startswith("pip install"))
    done = runner.bash(script.replace("/tmp/base.json", str(temp / "base.json")), {})
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "comment.md").read_text().strip()
    assert _admitted_steps(box)


@pytest.mark.slow
def test_apply_md_blocks_run_to_the_end(platform):
    """docs/apply.md's CI flow: the apply job's commands twice, then the pull request's."""
    box, work, temp = platform
    blocks = re.findall(r"```sh\n(.*?)```", APPLY.read_text(encoding="utf-8"), re.S)
    pull_request = next(b for b in blocks if "poolc plan" in b)
    apply = next(b for b in blocks if "poolc cycle" in b)
    for cycle in range(2):
        done = Runner(box, work, temp, START + 600 * cycle).bash(apply, {})
        assert done.returncode == 0, done.stdout + done.stderr
    (work / "poolc.state.json").unlink()
    done = Runner(box, work, temp, START + 1200).bash(pull_request, {})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "poolc" in (work / "plan.md").read_text()
