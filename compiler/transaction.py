"""Write a set of generated files as one transaction.

Every new file is first written to a temp file beside its target (and fsynced);
only when all of them are on disk are they renamed into place. If anything fails
before or during the renames, the renames already done are undone from backups,
so the output directory is byte-for-byte what it was. Files that no longer have
a source are removed last, the same way.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field


@dataclass
class _Staged:
    target: str
    temp: str | None                 # None: the target is to be removed
    backup: str | None = None
    done: bool = False


@dataclass
class Transaction:
    root: str
    staged: list[_Staged] = field(default_factory=list)

    created_dirs: list[str] = field(default_factory=list)

    def _path(self, relative: str) -> str:
        path = os.path.normpath(os.path.join(self.root, relative))
        if os.path.isabs(relative) or not path.startswith(os.path.normpath(self.root) + os.sep):
            raise ValueError(f"refusing to touch a path outside {self.root}: {relative}")
        return path

    def _makedirs(self, directory: str) -> None:
        missing = []
        while directory and not os.path.isdir(directory):
            missing.append(directory)
            directory = os.path.dirname(directory)
        for path in reversed(missing):
            os.mkdir(path)
            self.created_dirs.append(path)

    def stage_write(self, relative: str, text: str, *, absolute: bool = False) -> None:
        target = os.path.abspath(relative) if absolute else self._path(relative)
        directory = os.path.dirname(target)
        self._makedirs(directory)
        fd, temp = tempfile.mkstemp(dir=directory, prefix=".poolc-", suffix=".tmp")
        self.staged.append(_Staged(target, temp))
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())

    def stage_remove(self, relative: str) -> None:
        target = self._path(relative)
        if os.path.exists(target):
            self.staged.append(_Staged(target, None))

    def commit(self) -> None:
        try:
            for item in self.staged:
                if os.path.exists(item.target):
                    fd, item.backup = tempfile.mkstemp(dir=os.path.dirname(item.target),
                                                       prefix=".poolc-", suffix=".bak")
                    os.close(fd)
                    shutil.copy2(item.target, item.backup)
                if item.temp is None:
                    os.unlink(item.target)
                else:
                    os.replace(item.temp, item.target)
                item.done = True
        except BaseException:
            self.rollback()
            raise
        self._discard_backups()
        _remove_empty_dirs(self.root, {os.path.dirname(i.target) for i in self.staged if i.temp is None})

    def rollback(self) -> None:
        """Put back every file touched so far and drop every temp file."""
        for item in reversed(self.staged):
            if item.done:
                if item.backup is not None:
                    os.replace(item.backup, item.target)
                    item.backup = None
                elif os.path.exists(item.target):
                    os.unlink(item.target)
            if item.temp is not None and os.path.exists(item.temp):
                os.unlink(item.temp)
        self._discard_backups()
        for directory in reversed(self.created_dirs):
            if os.path.isdir(directory) and not os.listdir(directory):
                os.rmdir(directory)

    def _discard_backups(self) -> None:
        for item in self.staged:
            if item.backup is not None and os.path.exists(item.backup):
                os.unlink(item.backup)
            item.backup = None


def _remove_empty_dirs(root: str, directories: set[str]) -> None:
    root = os.path.normpath(root)
    for directory in sorted(directories, key=len, reverse=True):
        while os.path.normpath(directory) != root and os.path.isdir(directory) and not os.listdir(directory):
            os.rmdir(directory)
            directory = os.path.dirname(directory)


def write_transaction(root: str, files: dict[str, str], remove: list[str] = (),
                      outside: dict[str, str] | None = None) -> None:
    """Write ``files`` ({relative path: text}) under root, write ``outside``
    ({absolute path: text}, e.g. the state file) and remove ``remove``, all or nothing."""
    transaction = Transaction(root)
    try:
        for relative, text in sorted(files.items()):
            transaction.stage_write(relative, text)
        for absolute, text in sorted((outside or {}).items()):
            transaction.stage_write(absolute, text, absolute=True)
        for relative in sorted(remove):
            transaction.stage_remove(relative)
    except BaseException:
        transaction.rollback()
        raise
    transaction.commit()
