"""Writing files without ever following a link out of where poolc may write.

``Tree`` is a directory poolc owns the inside of (the output directory, or the
directory of the state file). Every path below it is opened one component at a
time with O_NOFOLLOW, relative to its parent's descriptor, so a symlinked
subdirectory or a path with ``..`` is refused instead of followed, and a check
cannot be raced by swapping a directory for a link afterwards.

``write_atomic`` (``plan --out``, the schemas, ``state rm``/``import``) writes a
temp file beside the target, fsyncs it and renames it over the target, and
refuses a target that is a symlink, a directory or a device rather than
replacing it. A kill between the write and the rename leaves the temp behind:
its name says whose it is (``.<target>.poolc-<pid>-<random>.tmp``), and the next
write of the same target removes it (``remove_stale_temps``).

Reading is the mirror image: ``read_bytes`` opens only a regular file, never
through a symbolic link (unless asked, for the user's own input files), never
blocks on a FIFO, and stops at a size bound; ``Tree.read_text`` reads a file
below the output directory one component at a time, so a generated file that a
pull request replaced by a link to ``.git/config`` is refused, never shown.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from collections.abc import Callable

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePath(OSError):
    """A path poolc refuses to write, read or remove (it leaves its directory)."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(errno.EPERM, f"refusing {path}: {why}")
        self.path = path
        self.why = why


class ReadRefused(OSError):
    """A file poolc will not read: a link, not a regular file, or over its size bound
    (``kind``: ``link``, ``special`` or ``size``; ``size`` the file's size when its status said it)."""

    def __init__(self, path: str, why: str, kind: str = "special", size: int | None = None) -> None:
        super().__init__(errno.EINVAL, why, path)
        self.why, self.kind, self.size = why, kind, size


def read_fd(fd: int, path: str, limit: int) -> bytes:
    """At most ``limit`` bytes of the regular file open on ``fd`` (ReadRefused otherwise)."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise ReadRefused(path, "not a regular file (a FIFO, a device or a directory); poolc reads only "
                                "regular files")
    if info.st_size > limit:
        raise ReadRefused(path, f"the file is {info.st_size} bytes; poolc reads at most {limit} bytes here", "size",
                          info.st_size)
    chunks, total = [], 0
    while total <= limit:
        chunk = os.read(fd, min(1 << 20, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:
        raise ReadRefused(path, f"the file is over {limit} bytes; poolc reads at most {limit} bytes here", "size")
    return b"".join(chunks)


def read_bytes(path: str, limit: int, *, follow: bool = False) -> bytes:
    """A regular file's bytes, at most ``limit``: the one way poolc reads a file it is
    given (inputs, the state, plan files, reports, price tables, the journal). Opened
    with O_NONBLOCK, so a FIFO is refused by ``fstat`` instead of waited on; without
    ``follow`` (only ``pyproject.toml`` is followed), a symbolic link is refused rather
    than read (OSError: missing, unreadable; ReadRefused: a link, not a regular file,
    too large)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise ReadRefused(path, "it is a symbolic link; poolc does not follow links here", "link") from None
        raise
    try:
        return read_fd(fd, path, limit)
    finally:
        os.close(fd)


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

    def read_text(self, relative: str, limit: int = 64 << 20) -> str | None:
        """The text of the regular file ``relative`` below the root, None when it is
        missing; UnsafePath when it, or a directory on the way, is a link or not a
        regular file (or is too large or not UTF-8): never read through a link."""
        parts = split_relative(relative)
        fd = self.open_dir(parts[:-1])
        if fd is None:
            return None
        try:
            try:
                file_fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                return None
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise UnsafePath(self.show(relative), "it is a symbolic link; poolc never reads or follows "
                                     "links in the output directory") from None
                raise
            try:
                raw = read_fd(file_fd, self.show(relative), limit)
            except ReadRefused as exc:
                raise UnsafePath(self.show(relative), exc.why) from None
            finally:
                os.close(file_fd)
        finally:
            os.close(fd)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UnsafePath(self.show(relative), "it is not UTF-8 text, so not a file poolc wrote") from None

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


def read_regular(path: str, limit: int = 64 << 20, *, follow: bool = False) -> str | None:
    """A regular file's text, or None: never blocks on a FIFO, reads a device forever
    or (unless ``follow``) reads through a symbolic link."""
    return read_text_or_why(path, limit, follow=follow)[0]


def read_text_or_why(path: str, limit: int = 64 << 20, *, follow: bool = False) -> tuple[str | None, str]:
    """(a regular file's UTF-8 text, "") or (None, why it was not read, in words)."""
    try:
        return read_bytes(path, limit, follow=follow).decode("utf-8"), ""
    except ReadRefused as exc:
        return None, exc.why
    except UnicodeDecodeError:
        return None, "it is not UTF-8 text"
    except OSError as exc:
        return None, str(exc.strerror or exc).lower()


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


_ATOMIC_TEMP = r"\.{name}\.poolc-(\d{{1,10}})-[0-9a-f]{{8}}\.tmp"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def remove_stale_temps(path: str, *, locked: bool = False) -> list[str]:
    """Remove the temps an earlier ``write_atomic`` of ``path`` left when it was killed
    before its rename; the names removed. Under the target's lock (``locked``) every
    such temp is stale; otherwise only those of processes that are gone."""
    directory = os.path.dirname(path) or "."
    pattern = re.compile(_ATOMIC_TEMP.format(name=re.escape(os.path.basename(path))))
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    removed = []
    for name in sorted(names):
        match = pattern.fullmatch(name)
        if match is None or (not locked and (int(match[1]) == os.getpid() or _alive(int(match[1])))):
            continue
        try:
            if stat.S_ISREG(os.lstat(os.path.join(directory, name)).st_mode):
                os.unlink(os.path.join(directory, name))
                removed.append(name)
        except OSError:
            continue
    return removed


def write_atomic(path: str, text: str, *, locked: bool = False) -> None:
    """Replace ``path`` by ``text`` all at once (temp file, fsync, rename); first remove
    the temps a killed earlier write of ``path`` left (``locked``: the caller holds
    the target's lock, so every such temp is stale)."""
    check_replaceable(path)
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    remove_stale_temps(path, locked=locked)
    temp = os.path.join(directory, f".{os.path.basename(path)}.poolc-{os.getpid()}-{os.urandom(4).hex()}.tmp")
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
