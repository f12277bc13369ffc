"""Shared pytest options and fixtures."""

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files under tests/golden/ from the current output")


@pytest.fixture
def platform(tmp_path, monkeypatch) -> Path:
    """A copy of examples/ in tmp_path, which is also the working directory."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def fixed_clock():
    """One start time for every apply in a module (and its subprocesses), so trees
    written by different applies are the same bytes run after run."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", "1763866800")
        yield
