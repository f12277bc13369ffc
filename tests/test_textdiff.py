"""Minimal unified diffs (poolc.text.textdiff): the same changed lines as `git diff
--no-index`, in its hunk format, where difflib can show hundreds of lines for a
handful of changes (its junk heuristic drops frequent lines from the matching)."""

from __future__ import annotations

import difflib
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from poolc.text.textdiff import opcodes, unified_diff

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _changed(diff: str) -> int:
    return sum(1 for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---"))


def _git_diff(tmp_path: Path, old: str, new: str) -> str:
    (tmp_path / "a").write_text(old, encoding="utf-8")
    (tmp_path / "b").write_text(new, encoding="utf-8")
    done = subprocess.run(["git", "diff", "--no-index", "--no-color", "a", "b"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def _edited(rng: random.Random, lines: int, vocabulary: int, edits: int) -> tuple[list[str], list[str]]:
    words = [f"line {i}\n" for i in range(vocabulary)]
    old = [rng.choice(words) for _ in range(lines)]
    new = list(old)
    for _ in range(edits):
        at = rng.randrange(len(new) + 1)
        if rng.random() < 0.5 and at < len(new):
            del new[at]
        else:
            new.insert(at, rng.choice(words + ["new\n"]))
    return old, new


@needs_git
def test_a_few_edits_in_a_repetitive_file_stay_a_few_lines(tmp_path):
    """A 200-400-line file of repeated lines with a few edits: git and poolc show the
    same handful of lines; difflib shows hundreds (this very case: 769 for 3)."""
    rng = random.Random(3)
    cases = [_edited(rng, rng.randint(200, 400), rng.randint(5, 60), rng.randint(1, 10)) for _ in range(165)]
    old, new = cases[164]
    mine = unified_diff("".join(old), "".join(new), "f")
    assert _changed(mine) == _changed(_git_diff(tmp_path, "".join(old), "".join(new))) == 3
    assert _changed("".join(difflib.unified_diff(old, new))) == 769


@needs_git
@pytest.mark.parametrize("seed", range(40))
def test_the_changed_lines_are_as_few_as_gits(tmp_path, seed):
    rng = random.Random(seed)
    old, new = _edited(rng, rng.randint(0, 120), rng.randint(2, 12), rng.randint(0, 12))
    a, b = "".join(old), "".join(new)
    mine = unified_diff(a, b, "kueue/pool.yaml")
    assert _changed(mine) == _changed(_git_diff(tmp_path, a, b))
    # the opcodes rebuild the new text, and the diff is empty exactly when nothing changed
    rebuilt = [line for tag, i1, i2, j1, j2 in opcodes(old, new) for line in (old[i1:i2] if tag == "equal"
                                                                                else new[j1:j2])]
    assert rebuilt == new and (mine == "") == (a == b)


@needs_git
def test_the_hunks_read_as_gits(tmp_path):
    old = "".join(f"key{i}: {i}\n" for i in range(30))
    new = old.replace("key5: 5\n", "key5: 50\n").replace("key20: 20\n", "") + "tail: 1"
    mine = unified_diff(old, new, "kueue/lab.yaml")
    theirs = _git_diff(tmp_path, old, new)
    assert mine.splitlines()[:2] == ["--- a/kueue/lab.yaml", "+++ b/kueue/lab.yaml"]
    hunks = mine[mine.index("@@"):]
    # git adds the nearest line above a hunk after its header (the "function" context); poolc does not
    assert hunks == re.sub(r"^(@@ [^@]+ @@).*$", r"\1", theirs[theirs.index("@@"):], flags=re.MULTILINE)
    assert hunks.endswith("+tail: 1\n\\ No newline at end of file\n")
