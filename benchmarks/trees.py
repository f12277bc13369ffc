"""Another poolc to measure beside this one (the benchmarks' --baseline): a directory
that holds a `poolc/` package (a git worktree), or a git revision of this repository,
exported with `git archive` under a scratch directory."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def poolc_tree(where: str, work: Path) -> Path:
    """``where`` itself when it holds a `poolc/` package, else the poolc of git revision
    ``where`` exported under ``work``."""
    if (Path(where) / "poolc" / "__init__.py").is_file():
        return Path(where).resolve()
    target = work / f"code-{where.replace('/', '-')}"
    target.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", where, "poolc"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def in_work_dir(keep: Path | None, prefix: str, run: Callable[[Path], None]) -> None:
    """``run`` in ``keep`` (made if missing, and kept), else in a scratch directory
    removed afterwards: a benchmark's --keep."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        run(keep)
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as scratch:
        run(Path(scratch))
