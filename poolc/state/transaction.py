"""Apply's commit protocol: the output files and the state change together, or
not at all, even when the process is killed with SIGKILL at any instruction.

A journal ``<state>.journal`` (beside the state, written by rename so it is
always whole) drives everything; docs/apply.md describes the protocol:

1. ``prepare``: the journal lists every change; then each new file is written
   to ``.poolc-<id>-<n>.tmp`` beside its target, and each file to be replaced
   or removed gets a hard link ``.poolc-<id>-<n>.bak`` (same inode, no copy).
2. ``commit``: the journal is renamed to phase commit. This one rename is the
   commit point. The temps are renamed over their targets, the removed files
   are unlinked, the state is renamed last.
3. the backups, emptied directories and the journal are removed.

A run that finds a journal (``recover``, under the lock, before anything else)
discards a ``prepare`` (old tree), completes a ``commit`` (new tree) and undoes
a ``rollback`` (old tree); each step is idempotent, so a kill during recovery is
recovered by the next run the same way. An error or a signal after the commit
point switches the journal to ``rollback`` and restores the backups.

Recovery never undoes a later write. The journal pins each target's generation
at prepare time (the backup link to that very inode; for the state also its
digest, ``old``):
completing moves a temp into place only while the target is still that
generation, and undoing puts a backup back only while the target is what this
transaction wrote. A `poolc state rm` that ran between the kill and the
recovery (it takes the lock, not the journal) rewrote the state into a third
generation: recovery leaves it, and the released step stays released.

Every path goes through ``writer.Tree``: nothing outside the output directory
(or the state's directory, for the state) is touched, links are never followed,
and a file is removed only while it is the very file poolc wrote.
"""

from __future__ import annotations

import os
import re
import signal
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from .. import signals
from ..writer import Tree, UnsafePath, check_replaceable, read_bytes, sha256_text, split_relative, write_new
from .journal_format import BadJournal, EntryModel, JournalModel, read_journal

MAX_JOURNAL_BYTES = 16 << 20   # a journal names each file once: far below this
_TEMP = re.compile(r"\.poolc-[0-9a-f]{16}-\d+\.(tmp|bak)")


# --- test hook: where a commit can be cut ------------------------------------------------

_points = [0]


def _point(label: str) -> None:
    """Called before every change to the disk. POOLC_TEST_KILL_AT=N sends the process
    SIGKILL (or POOLC_TEST_SIGNAL, e.g. SIGTERM) at the N-th one, POOLC_TEST_TRACE=file
    lists them: the kill harness of tests/test_kill.py."""
    _points[0] += 1
    trace = os.environ.get("POOLC_TEST_TRACE")
    if trace:
        with open(trace, "a", encoding="utf-8") as handle:
            handle.write(f"{_points[0]} {label}\n")
    if os.environ.get("POOLC_TEST_KILL_AT") == str(_points[0]):
        os.kill(os.getpid(), getattr(signal, os.environ.get("POOLC_TEST_SIGNAL", "SIGKILL")))


# --- the journal ---------------------------------------------------------------------------

# The journal's one declaration is its typed model (poolc.state.journal_format): written and read through it.
Entry = EntryModel
Journal = JournalModel


class JournalError(Exception):
    """A journal that cannot be trusted; apply refuses until it is dealt with."""


def journal_path(state_path: str) -> str:
    return f"{os.path.abspath(state_path)}.journal"


def _parse_journal(path: str, text: str) -> Journal:
    """The journal in ``text`` (read through its model, poolc.state.journal_format); JournalError
    names what is wrong at its line and column."""
    try:
        model = read_journal(text)
    except BadJournal as exc:
        line, column = exc.span[:2]
        raise JournalError(f"{path}:{line}:{column}: not a journal poolc can recover ({exc.why}); if no apply is "
                           "running, check the output directory and the state by hand, then delete it") from None
    return model


class _Files:
    """The two trees a transaction touches and the names of its temps and backups."""

    def __init__(self, output_dir: str, state_path: str, tx_id: str) -> None:
        self.trees = {"out": Tree(output_dir), "state": Tree(os.path.dirname(os.path.abspath(state_path)))}
        self.id = tx_id

    def names(self, index: int, entry: Entry) -> tuple[list[str], str, str, str]:
        """(directory parts, target name, temp name, backup name) of an entry."""
        parts = split_relative(entry.path)
        return parts[:-1], parts[-1], f".poolc-{self.id}-{index}.tmp", f".poolc-{self.id}-{index}.bak"

    @contextmanager
    def directory(self, entry: Entry, parts: list[str]) -> Iterator[int | None]:
        fd = self.trees[entry.tree].open_dir(parts)
        try:
            yield fd
        finally:
            if fd is not None:
                os.close(fd)


def _unlink(fd: int, name: str, label: str) -> None:
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    _point(label)
    os.unlink(name, dir_fd=fd)


def _same_file(fd: int, a: str, b: str) -> bool:
    try:
        sa = os.stat(a, dir_fd=fd, follow_symlinks=False)
        sb = os.stat(b, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


class Transaction:
    """One apply's change set, from the journal's first write to its removal."""

    def __init__(self, output_dir: str, state_path: str, journal: Journal) -> None:
        self.path = journal_path(state_path)
        self.journal = journal
        self.files = _Files(output_dir, state_path, journal.id)

    # -- the journal file --
    def _write_journal(self, phase: str) -> None:
        self.journal = self.journal.model_copy(update={"phase": phase})
        directory = os.path.dirname(self.path)
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            temp = os.path.basename(self.path) + ".tmp"
            _unlink(fd, temp, "unlink journal temp")
            _point(f"write journal ({phase})")
            write_new(fd, temp, self.journal.to_text())
            _point(f"rename journal ({phase})")
            os.replace(temp, os.path.basename(self.path), src_dir_fd=fd, dst_dir_fd=fd)
            os.fsync(fd)
        finally:
            os.close(fd)

    def _drop_journal(self) -> None:
        directory = os.path.dirname(self.path)
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            _unlink(fd, os.path.basename(self.path) + ".tmp", "unlink journal temp")
            _unlink(fd, os.path.basename(self.path), "unlink journal")
            os.fsync(fd)
        finally:
            os.close(fd)

    # -- phase 1 --
    def stage(self, texts: dict[tuple[str, str], str]) -> None:
        """Write the temps and link the backups (the journal, phase prepare, is on disk)."""
        for index, entry in enumerate(self.journal.entries):
            parts, name, temp, backup = self.files.names(index, entry)
            tree = self.files.trees[entry.tree]
            if entry.new is not None:
                fd = tree.open_dir(parts, create=self._made_dir if entry.tree == "out" else None)
                if fd is None:   # the state's directory: made by the caller
                    raise FileNotFoundError(2, "directory vanished", tree.show("/".join(parts)))
            else:
                fd = tree.open_dir(parts)
                if fd is None:
                    raise FileNotFoundError(2, "directory vanished", tree.show("/".join(parts)))
            try:
                if entry.new is not None:
                    _point(f"write temp {entry.path}")
                    write_new(fd, temp, texts[(entry.tree, entry.path)])
                if entry.backup:
                    _point(f"link backup {entry.path}")
                    os.link(name, backup, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
            finally:
                os.close(fd)

    def _made_dir(self, relative: str) -> None:
        if relative not in self.journal.dirs:
            self.journal = self.journal.model_copy(update={"dirs": [*self.journal.dirs, relative]})
            self._write_journal("prepare")   # listed before it exists, so a kill cannot leak it
        _point(f"mkdir {relative}")

    # -- phase 2 --
    def forward(self) -> None:
        """Move every temp into place and unlink every removed file; idempotent."""
        order = sorted(range(len(self.journal.entries)), key=lambda i: self.journal.entries[i].tree == "state")
        for index in order:
            entry = self.journal.entries[index]
            parts, name, temp, backup = self.files.names(index, entry)
            with self.files.directory(entry, parts) as fd:
                if fd is None:
                    continue
                if entry.new is not None:
                    if self.files.trees[entry.tree].lstat(fd, temp) is not None \
                            and self._generation_at_prepare(entry, fd, name, backup):
                        _point(f"rename {entry.path}")
                        os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
                elif _same_file(fd, name, backup) or self._same_bytes(entry, fd, name, backup):
                    _point(f"unlink {entry.path}")
                    os.unlink(name, dir_fd=fd)

    def _generation_at_prepare(self, entry: Entry, fd: int, name: str, backup: str) -> bool:
        """The target is still what it was when the transaction prepared: the backup's
        inode or the recorded digest, or still missing. Anything else is a later
        write (a `state rm` between a kill and this recovery), which wins."""
        tree = self.files.trees[entry.tree]
        if tree.lstat(fd, name) is None:
            return not entry.backup
        if not entry.backup:
            return False
        if _same_file(fd, name, backup):
            return True
        current = tree.digest(fd, name)
        return current is not None and (current == entry.old if entry.old is not None
                                        else current == tree.digest(fd, backup))

    def _same_bytes(self, entry: Entry, fd: int, name: str, backup: str) -> bool:
        """The file still holds its backup's bytes: the backup's link was broken by copying the
        checkout after a kill, yet the file is the one this transaction was to remove."""
        tree = self.files.trees[entry.tree]
        theirs = tree.digest(fd, backup)
        return theirs is not None and tree.digest(fd, name) == theirs

    def backward(self) -> None:
        """Put back every file as it was before; idempotent."""
        for index, entry in enumerate(self.journal.entries):
            parts, name, temp, backup = self.files.names(index, entry)
            with self.files.directory(entry, parts) as fd:
                if fd is None:
                    continue
                tree = self.files.trees[entry.tree]
                if entry.backup:
                    if tree.lstat(fd, backup) is not None and not _same_file(fd, name, backup) \
                            and self._written_by_us(entry, fd, name):
                        _point(f"restore {entry.path}")
                        os.replace(backup, name, src_dir_fd=fd, dst_dir_fd=fd)
                elif entry.new is not None and tree.digest(fd, name) == entry.new:
                    _point(f"unlink new {entry.path}")
                    os.unlink(name, dir_fd=fd)
                _unlink(fd, temp, f"unlink temp {entry.path}")

    def _written_by_us(self, entry: Entry, fd: int, name: str) -> bool:
        """The target holds what this transaction put there (or, for a removal, is gone):
        only then does undoing it put the backup back."""
        tree = self.files.trees[entry.tree]
        if tree.lstat(fd, name) is None:
            return True
        return entry.new is not None and tree.digest(fd, name) == entry.new

    def cleanup(self, *, rollback: bool) -> None:
        """Remove temps, backups and (emptied or created) directories, then the journal."""
        emptied: set[str] = set()
        for index, entry in enumerate(self.journal.entries):
            parts, _name, temp, backup = self.files.names(index, entry)
            # every ancestor of a removal, also when a recovery finds its directory already gone
            # (a kill between two rmdirs): the directories above it may still be left to remove
            if entry.tree == "out" and entry.new is None and not rollback:   # emptied by a removal
                emptied.update("/".join(parts[:n]) for n in range(1, len(parts) + 1))
            with self.files.directory(entry, parts) as fd:
                if fd is None:
                    continue
                _unlink(fd, temp, f"unlink temp {entry.path}")
                _unlink(fd, backup, f"unlink backup {entry.path}")
        if rollback:   # only what this transaction created: an empty directory of the user's stays
            emptied.update(self.journal.dirs)
        out = self.files.trees["out"]
        for relative in sorted(emptied, key=lambda p: (-p.count("/"), p)):
            parts = split_relative(relative)
            fd = out.open_dir(parts[:-1])
            if fd is None:
                continue
            try:
                st = out.lstat(fd, parts[-1])
                if st is not None and stat.S_ISDIR(st.st_mode):
                    child = os.open(parts[-1], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                    try:
                        empty = not os.listdir(child)
                    finally:
                        os.close(child)
                    if empty:
                        _point(f"rmdir {relative}")
                        os.rmdir(parts[-1], dir_fd=fd)
                os.fsync(fd)
            finally:
                os.close(fd)
        self._drop_journal()

    def rollback(self) -> None:
        """Back to the old tree from wherever the transaction stands."""
        if self.journal.phase != "prepare":
            self._write_journal("rollback")
            self.backward()
        else:
            self.backward()   # prepare: targets untouched, this only drops temps
        self.cleanup(rollback=True)


# --- recovery ------------------------------------------------------------------------------

def pending_journal(state_path: str) -> str | None:
    """The journal of an interrupted apply, if there is one."""
    path = journal_path(state_path)
    return path if os.path.lexists(path) or os.path.lexists(path + ".tmp") else None


def recover(output_dir: str, state_path: str) -> str | None:
    """Finish or undo an interrupted apply (call under the lock); what was done, or None."""
    path = journal_path(state_path)
    if not os.path.lexists(path):
        if os.path.lexists(path + ".tmp"):   # killed while writing the first journal: nothing else exists
            check_replaceable(path + ".tmp")
            _point("unlink journal temp")
            os.unlink(path + ".tmp")
        return None
    check_replaceable(path)
    text = read_bytes(path, MAX_JOURNAL_BYTES).decode("utf-8", errors="replace")
    journal = _parse_journal(path, text)
    if journal.state != os.path.basename(os.path.abspath(state_path)):
        raise JournalError(f"{path}: the journal is for the state {journal.state!r}; delete it if no apply runs")
    expected = os.path.join(os.path.dirname(os.path.abspath(state_path)), journal.output_dir)
    if os.path.realpath(expected) != os.path.realpath(output_dir):
        raise JournalError(f"{path}: an interrupted apply into {journal.output_dir} is pending; run "
                           f"`poolc apply` with --output-dir {journal.output_dir} first to finish it")
    transaction = Transaction(output_dir, state_path, journal)
    if journal.phase == "commit":
        transaction.forward()
        transaction.cleanup(rollback=False)
        return "completed an interrupted apply (it had committed)"
    transaction.rollback()
    return "rolled back an interrupted apply (it had not committed)"


# --- a new transaction ---------------------------------------------------------------------

@dataclass
class Outcome:
    kept: list[str] = field(default_factory=list)   # no longer generated, but not poolc's bytes: left alone
    cleanup_error: str | None = None                 # applied, but temps or the journal are left for next time


def write_transaction(output_dir: str, files: dict[str, str], remove: dict[str, str], state_path: str,
                      state_text: str, *, before_commit: Callable[[], None] | None = None) -> Outcome:
    """Write ``files`` ({relative path: text}) below output_dir and the state, and
    remove ``remove`` ({relative path: digest poolc wrote}), all or nothing.

    A file to remove is removed only if it is a regular file holding exactly
    the bytes poolc wrote; otherwise it is kept and listed in the outcome."""
    outcome = Outcome()
    out, state_tree = Tree(output_dir), Tree(os.path.dirname(os.path.abspath(state_path)))
    state_name = os.path.basename(os.path.abspath(state_path))
    entries: list[Entry] = []
    texts: dict[tuple[str, str], str] = {}

    def existing(tree: Tree, relative: str, *, digest: bool = False) -> str | None:
        """None when there is no file there; else its digest (its generation) when asked
        (the state: what a later `state rm` is told apart by), else "exists". The output
        files' generation is their backup link, so they are not read once more here."""
        parts = split_relative(relative)
        fd = tree.open_dir(parts[:-1])
        if fd is None:
            return None
        try:
            st = tree.lstat(fd, parts[-1])
            if st is not None and not stat.S_ISREG(st.st_mode):
                kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
                raise UnsafePath(tree.show(relative), f"it is {kind}; poolc replaces only regular files")
            if st is None:
                return None
            return (tree.digest(fd, parts[-1]) or "unreadable") if digest else "exists"
        finally:
            os.close(fd)

    for relative, text in sorted(files.items()):
        if _TEMP.fullmatch(relative.rsplit("/", 1)[-1]):
            raise UnsafePath(out.show(relative), "poolc's own temp-file names are reserved")
        entries.append(Entry(tree="out", path=relative, new=sha256_text(text),
                             backup=existing(out, relative) is not None))
        texts[("out", relative)] = text
    for relative, digest in sorted(remove.items()):
        try:
            parts = split_relative(relative)
            fd = out.open_dir(parts[:-1])
        except UnsafePath:   # through a link, or not a plain path: never removed
            outcome.kept.append(relative)
            continue
        if fd is None:
            continue
        try:
            st = out.lstat(fd, parts[-1])
            if st is None:
                continue
            if not stat.S_ISREG(st.st_mode) or out.digest(fd, parts[-1]) != digest:
                outcome.kept.append(relative)
                continue
        finally:
            os.close(fd)
        entries.append(Entry(tree="out", path=relative, new=None, backup=True, old=digest))
    os.makedirs(state_tree.root, exist_ok=True)
    os.makedirs(out.root, exist_ok=True)
    old_state = existing(state_tree, state_name, digest=True)
    entries.append(Entry(tree="state", path=state_name, new=sha256_text(state_text), backup=old_state is not None,
                         old=old_state))
    texts[("state", state_name)] = state_text

    journal = Journal(id=os.urandom(8).hex(), phase="prepare", output_dir=os.path.relpath(out.root, state_tree.root),
                      state=state_name, entries=entries)
    transaction = Transaction(output_dir, state_path, journal)
    signals.install()   # the solver may have replaced the SIGINT handler
    signals.pending()   # forget a signal held back after an earlier transaction had finished
    try:
        transaction._write_journal("prepare")
        transaction.stage(texts)
        if before_commit is not None:
            before_commit()
    except BaseException:
        with signals.deferred():
            transaction.rollback()
        raise
    with signals.deferred():
        try:
            if (signum := signals.pending()) is not None:
                raise signals.Interrupted(signum)
            transaction._write_journal("commit")           # the commit point
            transaction.forward()
            if (signum := signals.pending()) is not None:
                raise signals.Interrupted(signum)
        except BaseException:
            transaction.rollback()
            raise
        try:
            transaction.cleanup(rollback=False)
        except OSError as exc:   # committed: the journal stays and the next run finishes the cleanup
            outcome.cleanup_error = f"{exc.strerror or exc}"
    return outcome
