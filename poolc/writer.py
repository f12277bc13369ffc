"""Writing files without ever following a link out of where poolc may write.

``Tree`` is a directory poolc owns the inside of (the output directory, or the
directory of the state file). Every path below it is opened one component at a
time with O_NOFOLLOW, relative to its parent's descriptor, so a symlinked
subdirectory or a path with ``..`` is refused instead of followed, and a check
cannot be raced by swapping a directory for a link afterwards.

``write_atomic`` (``plan --out``, the schemas) writes a temp file beside the
target, fsyncs it and renames it over the target, and refuses a target that is
a symlink, a directory or a device rather than replacing it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePath(OSError):
    """A path poolc refuses to write, read or remove (it leaves its directory)."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(errno.EPERM, f"refusing {path}: {why}")
        self.path = path


def sha256_text(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_fd(fd: int) -> str:
    digest = hashlib.sha256()
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return "sha256:" + digest.hexdigest()
        digest.update(chunk)


def split_relative(relative: str) -> list[str]:
    """The components of a relative path; '..', '.', empty parts and absolute paths are refused."""
    parts = relative.split("/")
    if not relative or relative.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\0" in relative:
        raise UnsafePath(relative, "not a plain relative path inside the output directory")
    return parts


class Tree:
    """A directory whose inside poolc may change, and only its inside."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)

    def show(self, relative: str) -> str:
        return os.path.join(self.root, relative) if relative else self.root

    def open_root(self, create: bool = False) -> int:
        if create:
            os.makedirs(self.root, exist_ok=True)
        return os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def open_dir(self, parts: list[str], *, create: Callable[[str], None] | None = None) -> int | None:
        """A descriptor of the directory ``parts`` below the root; None when it is missing
        (unless ``create``, called with each relative directory before it is made)."""
        try:
            fd = self.open_root(create=create is not None)
        except FileNotFoundError:
            return None
        try:
            for depth, part in enumerate(parts):
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if create is None:
                        os.close(fd)
                        return None
                    create("/".join(parts[: depth + 1]))
                    os.mkdir(part, 0o755, dir_fd=fd)
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                        raise UnsafePath(self.show("/".join(parts[: depth + 1])),
                                         "it is a symbolic link or not a directory; poolc writes only "
                                         f"inside {self.root}") from None
                    raise
                os.close(fd)
                fd = child
            return fd
        except BaseException:
            os.close(fd)
            raise

    def lstat(self, dir_fd: int, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def digest(self, dir_fd: int, name: str) -> str | None:
        """sha256 of a regular file (never through a link); None for anything else."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError:
            return None
        try:
            return sha256_fd(fd) if stat.S_ISREG(os.fstat(fd).st_mode) else None
        finally:
            os.close(fd)


def write_new(dir_fd: int, name: str, text: str) -> None:
    """Create ``name`` (which must not exist) holding ``text``, fsynced."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
    try:
        data = text.encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def read_regular(path: str, limit: int = 64 << 20) -> str | None:
    """A regular file's text, or None: never blocks on a FIFO or reads a device forever."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            raw = handle.read(limit + 1)
        return raw.decode("utf-8") if len(raw) <= limit else None
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def check_replaceable(path: str) -> None:
    """Refuse to replace anything but a regular file (or nothing)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise UnsafePath(path, "it is a symbolic link; poolc does not replace links")
    if not stat.S_ISREG(mode):
        raise UnsafePath(path, "it is not a regular file")


def write_atomic(path: str, text: str) -> None:
    """Replace ``path`` by ``text`` all at once (temp file, fsync, rename)."""
    check_replaceable(path)
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    temp = os.path.join(directory, f".poolc-{os.getpid()}-{os.urandom(4).hex()}.tmp")
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            write_new(fd, os.path.basename(temp), text)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def write_files(directory: str, texts: dict[str, str]) -> None:
    for name, text in sorted(texts.items()):
        write_atomic(os.path.join(directory, name), text)
