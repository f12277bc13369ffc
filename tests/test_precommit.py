"""Our hooks driven by the real pre-commit framework.

A temporary git repository holds a valid configuration and a .pre-commit-config.yaml
whose `repo:` is this checkout and `rev:` its current HEAD: pre-commit clones that
commit and installs it into its own virtualenv (dependencies come from PyPI, so the
first run needs the network and takes a while; PRE_COMMIT_HOME is shared by the
session so it happens once). Uncommitted work in this checkout is not what runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml  # installed with pre-commit

REPO = Path(__file__).resolve().parent.parent
PRE_COMMIT = shutil.which("pre-commit", path=os.path.dirname(sys.executable)) or shutil.which("pre-commit")
INSTALL_TIMEOUT = 1800   # first run: clone + virtualenv + ortools and friends from PyPI
RUN_TIMEOUT = 600

# Builds pre-commit's own environment of this checkout (ortools included): the slow tier.
pytestmark = pytest.mark.slow


def test_pre_commit_is_installed():
    """pre-commit is a test dependency; without it the hooks would go untested."""
    assert PRE_COMMIT is not None, "pip install -e '.[test]' installs pre-commit"


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


def test_hook_definitions():
    """The published hook file says what the brief and README promise."""
    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert set(hooks) == {"poolc-validate", "poolc-validate-code", "poolc-apply-check"}
    code = hooks["poolc-validate-code"]
    assert (code["entry"], code["language"], code["pass_filenames"], code["args"], code["types_or"]) == \
        ("poolc validate", "python", False, ["."], ["python", "yaml"])
    validate, apply = hooks["poolc-validate"], hooks["poolc-apply-check"]
    assert (validate["entry"], validate["language"], validate["pass_filenames"], validate["args"]) == \
        ("poolc validate", "python", False, ["."])
    assert validate["files"] == r"\.(ya?ml)$"
    assert (apply["entry"], apply["language"], apply["pass_filenames"]) == ("poolc apply --check", "python", False)
    assert "cross" in validate["description"] or "refer to each other" in validate["description"]


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture(scope="session")
def head() -> str:
    """The commit pre-commit will clone; it must contain the hook file."""
    sha = git(REPO, "rev-parse", "HEAD").strip()
    committed = subprocess.run(["git", "cat-file", "-e", f"{sha}:.pre-commit-hooks.yaml"], cwd=REPO)
    if committed.returncode != 0:
        pytest.fail(".pre-commit-hooks.yaml is not committed at HEAD; pre-commit clones HEAD")
    return sha


def make_platform_repo(root: Path, head: str, hooks: str) -> Path:
    root.mkdir()
    shutil.copytree(REPO / "examples", root / "config", ignore=shutil.ignore_patterns("README.md"))
    (root / "README.md").write_text("platform repo\n", encoding="utf-8")
    (root / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {REPO}\n    rev: {head}\n    hooks:\n{hooks}", encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "platform config")
    return root


def pre_commit(root: Path, home: Path, *args: str, timeout: int = RUN_TIMEOUT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run([PRE_COMMIT, "run", *args], cwd=root, capture_output=True, text=True,
                          timeout=timeout, env=env)


def hook_envs(home: Path) -> list[Path]:
    """The virtualenvs pre-commit made for our hooks (one per set of additional_dependencies)."""
    return sorted(p.parent.parent for p in home.glob("repo*/py_env-*/bin/poolc"))


def has_solver(env: Path) -> bool:
    return any(env.glob("lib/python*/site-packages/ortools"))


def hook_poolc(home: Path) -> Path:
    """The poolc that pre-commit installed for apply-check (the committed HEAD, not this
    working tree), the one with the plan extra's solver."""
    found = [env / "bin" / "poolc" for env in hook_envs(home) if has_solver(env)]
    assert found, f"no poolc with OR-Tools installed under {home}"
    return found[0]


def site_packages_bytes(env: Path) -> int:
    return sum(f.stat().st_size for f in env.glob("lib/python*/site-packages/**/*") if f.is_file())


@pytest.fixture(scope="session")
def installed(pre_commit_home: Path, head: str, tmp_path_factory) -> Path:
    """Install the hook environment once (the slow part), on a clean repository."""
    root = make_platform_repo(tmp_path_factory.mktemp("install") / "repo", head, "      - id: poolc-validate\n")
    proc = pre_commit(root, pre_commit_home, "--all-files", timeout=INSTALL_TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return pre_commit_home


def test_validate_hook_environment_has_no_solver(installed: Path):
    """validate never imports the solver, so its hook environment does not install it
    (OR-Tools with numpy and pandas was about 300 MB and most of the install time)."""
    light = [env for env in hook_envs(installed) if not has_solver(env)]
    assert len(light) == 1, hook_envs(installed)
    for heavy in ("numpy", "pandas"):
        assert not any(light[0].glob(f"lib/python*/site-packages/{heavy}")), heavy
    assert site_packages_bytes(light[0]) < 100 * 2**20


def test_apply_check_hook_names_the_plan_extra_it_needs():
    """The apply-check hook installs the same solver and tables as the 'plan' extra."""
    import tomllib

    extra = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]["plan"]
    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert hooks["poolc-apply-check"]["additional_dependencies"] == extra
    assert "additional_dependencies" not in hooks["poolc-validate"]


def test_validate_hook_passes_then_fails_on_a_broken_edit(installed: Path, head: str, tmp_path: Path):
    root = make_platform_repo(tmp_path / "repo", head, "      - id: poolc-validate\n")
    proc = pre_commit(root, installed, "--all-files")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "poolc validate" in proc.stdout and "Passed" in proc.stdout

    pipeline = root / "config" / "pipelines" / "prod-training.yaml"
    text = pipeline.read_text(encoding="utf-8")
    pipeline.write_text(text.replace("      gpu_count: 4\n", "      gpu_count: 40\n", 1)
                        .replace("  stack: prod-stack", "  stack: prod-stak"), encoding="utf-8")
    git(root, "add", "-A")
    proc = pre_commit(root, installed, "--all-files")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Failed" in proc.stdout
    assert "config/pipelines/prod-training.yaml:10:10: error[N002]" in proc.stdout


def test_validate_hook_sees_cross_file_breakage(installed: Path, head: str, tmp_path: Path):
    """Only a policy file changes, but the pipelines it breaks are checked too."""
    root = make_platform_repo(tmp_path / "repo", head, "      - id: poolc-validate\n")
    policies = root / "config" / "policies" / "prod.yaml"
    policies.write_text(policies.read_text(encoding="utf-8").replace("    gpu: 6\n", "    gpu: 1\n", 1),
                        encoding="utf-8")
    git(root, "add", "-A")
    proc = pre_commit(root, installed, "--files", "config/policies/prod.yaml")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # train_model (non-preemptible, 4 GPUs) no longer fits prod-k8s-dc1's reserved share
    assert "config/pipelines/prod-training.yaml:22:22: error[R003]" in proc.stdout
    assert "reserves only 1 GPU" in proc.stdout


def test_validate_hook_is_skipped_when_no_yaml_changed(installed: Path, head: str, tmp_path: Path):
    root = make_platform_repo(tmp_path / "repo", head, "      - id: poolc-validate\n")
    proc = pre_commit(root, installed, "--files", "README.md")
    assert proc.returncode == 0
    assert "Skipped" in proc.stdout


def test_apply_check_hook(installed: Path, head: str, tmp_path: Path):
    hooks = "      - id: poolc-apply-check\n        args: [config, --output-dir, deploy]\n"
    root = make_platform_repo(tmp_path / "repo", head, hooks)
    first = pre_commit(root, installed, "--all-files", timeout=INSTALL_TIMEOUT)  # builds the hook's environment
    assert first.returncode == 1 and "out of date" in first.stdout + first.stderr, first.stdout + first.stderr
    subprocess.run([str(hook_poolc(installed)), "apply", "config", "--output-dir", "deploy"], cwd=root,
                   check=True, capture_output=True, timeout=RUN_TIMEOUT)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "generated")
    proc = pre_commit(root, installed, "--all-files")
    assert proc.returncode == 0, proc.stdout + proc.stderr

    pipeline = root / "config" / "pipelines" / "prod-training.yaml"
    pipeline.write_text(pipeline.read_text(encoding="utf-8").replace("cpu_count: 32", "cpu_count: 30"),
                        encoding="utf-8")
    git(root, "add", "-A")
    proc = pre_commit(root, installed, "--all-files")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Failed" in proc.stdout


TRAINING_PY = """from zenml import pipeline, step
from zenml.config import ResourceSettings


@step(settings={"resources": ResourceSettings(cpu_count=8, memory="64GB", gpu_count=2,
                                              reclaim_tolerance="none")})
def fine_tune() -> None:
    print("training")


@pipeline
def nightly() -> None:
    fine_tune()
"""

NIGHTLY_YAML = """apiVersion: poolc/v1
kind: Pipeline
metadata: {name: nightly}
spec:
  stack: prod-stack
  source: {python: ../../ml/training.py, pipeline: nightly}
"""


def test_validate_code_hook_catches_a_gpu_count_raised_in_a_decorator(installed: Path, head: str, tmp_path: Path):
    """An ML engineer raises gpu_count in a ZenML decorator above the reserve of the
    policy the step runs under: only a .py file changes, and the hook fails at its line."""
    root = make_platform_repo(tmp_path / "repo", head, "      - id: poolc-validate-code\n")
    (root / "ml").mkdir()
    (root / "ml" / "training.py").write_text(TRAINING_PY, encoding="utf-8")
    (root / "config" / "pipelines" / "nightly.yaml").write_text(NIGHTLY_YAML, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "nightly from code")
    proc = pre_commit(root, installed, "--files", "ml/training.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout

    code = root / "ml" / "training.py"
    code.write_text(TRAINING_PY.replace("gpu_count=2,", "gpu_count=8,"), encoding="utf-8")
    git(root, "add", "-A")
    proc = pre_commit(root, installed, "--files", "ml/training.py")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Failed" in proc.stdout
    # prod-k8s-dc1 reserves gpu=6; the step is not preemptible (reclaim_tolerance none)
    assert "ml/training.py:5:85: error[R003] step 'fine_tune' is eligible on no pool" in proc.stdout
    assert "reserves only 6 GPU on pool 'datacenter-one' (a non-preemptible step needs 8 GPU" in proc.stdout
