"""spec.source and every import it leads to stay inside the repository (issue #42's
finding, the same code as the import following of #38): an absolute path, '..' above
the root, a link out of it, .git, or a file that is no Python is refused or reported
without a line of it ever reaching the output."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from support import cli

TESTS = Path(__file__).resolve().parent
CONTEXT = TESTS / "fixtures" / "context" / "platform.yaml"
SECRET = "ghp_SeCrEtToKeN0123456789"
CODE = ("from zenml import pipeline, step\nfrom zenml.config import ResourceSettings\n\n"
        "@step(settings={'resources': ResourceSettings(gpu_count=1)})\ndef train() -> int:\n    return 1\n\n"
        "@pipeline\ndef training() -> None:\n    train()\n")


def repository(tmp_path: Path, source: str) -> tuple[Path, Path]:
    """A repository (with .git) under tmp_path/work, a secret file beside it, and a
    Pipeline document naming ``source``."""
    repo = tmp_path / "work" / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(f"[credential]\n\thelper = store {SECRET}\n", encoding="utf-8")
    (tmp_path / "work" / ".git-credentials").write_text(f"https://user:{SECRET}@github.com\n", encoding="utf-8")
    shutil.copy(CONTEXT, repo / "platform.yaml")
    (repo / "training.py").write_text(CODE, encoding="utf-8")
    doc = repo / "deploy" / "p.yaml"
    doc.parent.mkdir()
    doc.write_text("apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {name: p}\nspec:\n  stack: team-stack\n"
                   f"  source: {{{source}}}\n", encoding="utf-8")
    return repo, doc


def run(repo: Path, doc: Path, output: str = "text") -> tuple[int, str]:
    result = cli("validate", "--format", output, str(repo / "platform.yaml"), str(doc))
    return result.exit_code, result.stdout + result.stderr


@pytest.mark.parametrize(("source", "why"), [
    ("python: ../../.git-credentials.py, pipeline: p", "outside the repository"),
    ("python: /etc/passwd.py, pipeline: p", "an absolute path"),
    ("flyte: ../.git/config.py", "inside .git"),
    ("python: ../.git/config, pipeline: p", "is a .py file"),
    ("zenml_config: ../../.git-credentials", "is a .yaml or .yml file"),
])
def test_a_source_path_out_of_the_repository_is_refused_before_reading(tmp_path: Path, source, why):
    repo, doc = repository(tmp_path, source)
    code, out = run(repo, doc)
    assert code == 1
    assert "p.yaml:6:" in out and "error[C006]" in out and why in out, out
    assert SECRET not in out


def test_a_link_out_of_the_repository_is_refused(tmp_path: Path):
    repo, doc = repository(tmp_path, "python: ../code/training.py, pipeline: training")
    (repo / "code").mkdir()
    os.symlink(tmp_path / "work" / ".git-credentials", repo / "code" / "training.py")
    code, out = run(repo, doc)
    assert code == 1 and "error[C006]" in out and "a link" in out, out
    assert SECRET not in out


def test_an_import_through_a_link_out_of_the_repository_is_refused_at_the_import(tmp_path: Path):
    repo, doc = repository(tmp_path, "python: ../training.py, pipeline: training")
    outside = tmp_path / "work" / "elsewhere"
    outside.mkdir()
    (outside / "__init__.py").write_text("", encoding="utf-8")
    (outside / "steps.py").write_text(f"TOKEN = '{SECRET}'\n(((\n", encoding="utf-8")
    os.symlink(outside, repo / "shared")
    (repo / "training.py").write_text("from zenml import pipeline\nfrom shared.steps import train\n\n"
                                      "@pipeline\ndef training() -> None:\n    train()\n", encoding="utf-8")
    code, out = run(repo, doc)
    assert code == 1 and "training.py:2:1: error[C006]" in out and "link" in out, out
    assert SECRET not in out


def test_a_file_that_is_no_python_is_never_quoted(tmp_path: Path):
    repo, doc = repository(tmp_path, "python: creds.py, pipeline: training")
    doc.replace(repo / "p.yaml")
    (repo / "creds.py").write_text(f"https://user:{SECRET}@github.com\n", encoding="utf-8")
    for output in ("text", "json", "github", "sarif"):
        code, out = run(repo, repo / "p.yaml", output)
        assert code == 1 and "C002" in out, out
        assert SECRET not in out, output


def test_inside_the_repository_a_parent_directory_is_fine(tmp_path: Path):
    repo, doc = repository(tmp_path, "python: ../training.py, pipeline: training")
    code, out = run(repo, doc)
    assert code == 0, out
