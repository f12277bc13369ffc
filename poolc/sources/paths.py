"""Which files a source may read: only files of the repository the Pipeline is in.

A pull request controls ``spec.source`` and every import of the code it names, so a
path that leaves the repository (absolute, ``..`` above its root, a link whose target
is outside it, anything under ``.git``) is refused before anything is opened: otherwise
a diagnostic would quote a line of ``~/.git-credentials`` into a CI log. The
repository root is the nearest directory above the Pipeline's document that holds
``.git`` (the document's own directory when there is none).
"""

from __future__ import annotations

import os

SUFFIXES = {"python": (".py",), "flyte": (".py",), "zenml_config": (".yaml", ".yml")}


def repository_root(start: str) -> str:
    """The nearest directory from ``start`` upwards that holds ``.git``; ``start`` when none does."""
    start = os.path.abspath(start)
    folder = start
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return start
        folder = parent


def _inside(root: str, path: str) -> bool:
    root = os.path.normcase(root)
    path = os.path.normcase(path)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def outside(root: str, path: str) -> str | None:
    """Why ``path`` (already joined to its base) may not be read, or None when it may:
    it must lie in ``root`` both as written and once every link is followed, and not in ``.git``."""
    absolute = os.path.abspath(path)
    if not _inside(os.path.abspath(root), absolute):
        return ("it is outside the repository (poolc reads only files of the repository the Pipeline is in: the "
                "nearest directory above it that holds .git, else the document's own directory)")
    parts = os.path.relpath(absolute, os.path.abspath(root)).split(os.sep)
    if ".git" in parts:
        return "it is inside .git, which holds no source code"
    if not _inside(os.path.realpath(root), os.path.realpath(absolute)):
        return "it is a link (or under a link) to a file outside the repository"
    return None


def written_problem(written: str, kind: str) -> str | None:
    """Why a path as written in ``spec.source`` is refused before it is joined: absolute
    paths name a file of this machine, not of the repository; a source has its suffix."""
    if os.path.isabs(written) or written.startswith(("/", "\\", "~")) or (len(written) > 1 and written[1] == ":"):
        return "an absolute path: write it relative to this file, inside the repository"
    suffixes = SUFFIXES.get(kind, ())
    if suffixes and not written.endswith(suffixes):
        return f"a {kind} source is a {' or '.join(suffixes)} file"
    return None
