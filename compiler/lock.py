"""The lock that keeps two `poolc apply` runs from interleaving on one state file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


class StateLockError(Exception):
    """Another process holds the state lock."""

    def __init__(self, lock: str, pid: int | None) -> None:
        holder = f"process {pid}" if pid is not None else "a process that has not written its pid yet"
        super().__init__(f"the state is locked: {lock} is held by {holder}; another `poolc apply` is "
                         f"running; wait for it to finish, or delete {lock} if no poolc is running")
        self.lock, self.pid = lock, pid


def _read_pid(lock: str) -> int | None:
    try:
        with open(lock, encoding="utf-8") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    return True


def _take_over_stale(lock: str) -> bool:
    """Remove a lock whose pid is dead; True if it is gone (by us or anyone).

    Takers serialize on flock of the stale file and remove it only while the
    path still names that file, so two takers cannot remove each other's fresh lock."""
    import fcntl

    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            return True
        if not same:
            return True  # replaced meanwhile: try again from the start
        pid = _read_pid(lock)
        if pid is None or _alive(pid):
            return False
        os.unlink(lock)
        return True
    finally:
        os.close(fd)


@contextmanager
def state_lock(path: str) -> Iterator[str]:
    """Hold ``<path>.lock`` (created with O_CREAT|O_EXCL, holding our pid) for the
    duration; a live holder raises StateLockError, a dead one's lock is taken over."""
    lock = f"{path}.lock"
    directory = os.path.dirname(lock) or "."
    os.makedirs(directory, exist_ok=True)
    for _ in range(100):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _take_over_stale(lock):
                continue
            raise StateLockError(lock, _read_pid(lock)) from None
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")
        break
    else:
        raise StateLockError(lock, _read_pid(lock))
    try:
        yield lock
    finally:
        if _read_pid(lock) == os.getpid():
            os.unlink(lock)
