"""The package's layers (docs/architecture.md): an import only goes down.

The layers are an import-linter contract in pyproject.toml ([tool.importlinter]):
every import in poolc/, also those inside functions, direct or through other
modules, goes to its own layer or a lower one; the stage packages (checks,
planner, targets, report) never import one another; every module is in a layer
(a new one must be placed); and poolc/__init__.py imports none of its modules.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def lint_imports(root: Path, cwd: Path) -> subprocess.CompletedProcess:
    """import-linter with the repository's contracts, on the poolc found under ``root``
    (a separate process: this one has imported the real poolc already)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    code = ("import sys; from importlinter.cli import lint_imports; "
            f"sys.exit(lint_imports(config_filename={str(REPO / 'pyproject.toml')!r}, no_cache=True))")
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_layer_contracts_are_kept(tmp_path):
    result = lint_imports(REPO, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 kept, 0 broken" in result.stdout


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """A copy of poolc to break on purpose."""
    root = tmp_path_factory.mktemp("layers")
    shutil.copytree(REPO / "poolc", root / "poolc", ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.mark.parametrize("where, line, says", [
    ("domain/problem.py", "from poolc.planner import optimal\n", "poolc.domain is not allowed to import poolc.planner"),
    ("checks/pools.py", "from ..report import text\n", "poolc.checks is not allowed to import poolc.report"),
    ("units.py", "def late():\n    from .state import records\n", "poolc.units -> poolc.state.records"),
    ("newcomer.py", "X = 1\n", "poolc.newcomer"),
    ("__init__.py", "from . import cli as _cli\n", "poolc -> poolc.cli"),
    ("planner/optimal/built.py", "from . import loop\n",
     "poolc.planner.optimal.built is not allowed to import poolc.planner.optimal.loop"),
    # a cycle no layer forbids: two siblings of one layer, each importing the other
    ("domain/naming.py", "def late():\n    from . import plan\n", "No cycles are allowed in poolc.domain"),
    ("commands/validate.py", "def late():\n    from . import planning\n", "No cycles are allowed in poolc.commands"),
])
def test_the_contracts_catch_a_wrong_import(copy, tmp_path, where, line, says):
    """The check itself can fail: an upward import (also one inside a function), a stage
    importing a stage, a module in no layer, an import from the package's __init__, and
    a cycle between siblings that may import each other."""
    target = copy / "poolc" / where
    before = target.read_text(encoding="utf-8") if target.exists() else None
    try:
        target.write_text((before or "") + "\n" + line, encoding="utf-8")
        result = lint_imports(copy, tmp_path)
    finally:
        if before is None:
            target.unlink()
        else:
            target.write_text(before, encoding="utf-8")
    assert result.returncode == 1, result.stdout + result.stderr
    assert says in result.stdout and "BROKEN" in result.stdout, result.stdout
