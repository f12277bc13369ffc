"""The lock that keeps two commands that change one state file (`poolc apply`,
`state rm`, `state import`) from interleaving.

``flock`` on ``<state>.lock``: the kernel drops the lock when its holder dies,
however it dies, so a lock file left empty by a kill, or holding the pid of a
process in another PID namespace (CI containers sharing a workspace), never
blocks or fools a later run. The pid inside is only for the message.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager


class StateLockError(Exception):
    """Another process holds the state lock, or the lock file cannot be used."""

    def __init__(self, lock: str, pid: int | None, reason: str | None = None) -> None:
        if reason is None:
            holder = f"process {pid}" if pid is not None else "another process"
            reason = (f"the state is locked: {lock} is held by {holder} (another `poolc apply`, `poolc state "
                      "rm` or `poolc state import` on this state is running); wait for it to finish")
        super().__init__(reason)
        self.lock, self.pid = lock, pid


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
        return int(text) if text.isdigit() and len(text) < 20 else None
    except (OSError, UnicodeDecodeError):
        return None


def _open(lock: str) -> int:
    """The lock file, created if missing; never through a symlink, never a FIFO or device."""
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        why = "it is a symbolic link" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        raise StateLockError(lock, None, f"cannot open the lock file {lock}: {why}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise StateLockError(lock, None, f"the lock file {lock} is not a regular file; remove it")
    return fd


@contextmanager
def state_lock(path: str) -> Iterator[str]:
    """Hold ``<path>.lock`` for the duration; a live holder raises StateLockError."""
    lock = f"{path}.lock"
    os.makedirs(os.path.dirname(lock) or ".", exist_ok=True)
    for _ in range(100):
        fd = _open(lock)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise StateLockError(lock, pid) from None
        try:
            same = os.stat(lock, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder before us removed it as we opened it: start again
    else:
        raise StateLockError(lock, None, f"cannot take the lock {lock}: it keeps being replaced")
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield lock
    finally:
        try:
            os.unlink(lock)  # still ours: whoever opened it meanwhile sees the inode change and retries
        except OSError:
            pass
        os.close(fd)
