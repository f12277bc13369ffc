"""Minimal unified diffs: the lines `git diff` would show for a generated file.

``difflib.unified_diff`` matches with Ratcliff/Obershelp and, past 200 lines,
treats every line that is frequent (``- name: cpu``, ``borrowingLimit: "0"``) as
junk, so a Kueue file with one quota changed can come out as hundreds of lines
removed and added again. This module finds a shortest edit script (Myers' O(ND)
algorithm, as git does by default) and prints it with difflib's and git's hunk
format: three lines of context, ``@@ -start,count +start,count @@``, deletions
before insertions inside a change, and git's ``\\ No newline at end of file``.

Past ``MAX_EDITS`` differing lines the exact search would take quadratic
memory; such a diff is a rewrite anyway and is taken from difflib without its
junk heuristic (still a correct diff, perhaps not the shortest).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

CONTEXT = 3
MAX_EDITS = 4000
_NO_NEWLINE = "\\ No newline at end of file\n"

# one opcode: (tag, i1, i2, j1, j2) as difflib's SequenceMatcher.get_opcodes gives them
Opcode = tuple[str, int, int, int, int]


def unified_diff(old: str, new: str, path: str, *, context: int = CONTEXT) -> str:
    """The diff from ``old`` to ``new`` (``a/path`` -> ``b/path``); "" when equal."""
    if old == new:
        return ""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out = [f"--- a/{path}\n", f"+++ b/{path}\n"]
    for group in _grouped(opcodes(a, b), context):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [_line(" ", x) for x in a[i1:i2]]
                continue
            out += [_line("-", x) for x in a[i1:i2]]
            out += [_line("+", x) for x in b[j1:j2]]
    return "".join(out)


def _line(sign: str, text: str) -> str:
    return sign + text if text.endswith("\n") else sign + text + "\n" + _NO_NEWLINE


def _range(start: int, stop: int) -> str:
    """``start,count`` 1-based, git's way: the count is left out when it is 1, and an
    empty range names the line before it."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def opcodes(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """A shortest edit script from ``a`` to ``b`` as difflib-style opcodes."""
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    middle = _middle(a[head:len(a) - tail], b[head:len(b) - tail])
    found: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    found += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in middle]
    if tail:
        found.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
    return found


def _middle(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    if not a or not b:
        return [("delete" if a else "insert", 0, len(a), 0, len(b))] if a or b else []
    steps = _myers(a, b)
    if steps is None:
        return [(str(tag), i1, i2, j1, j2) for tag, i1, i2, j1, j2 in
                difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()]
    return _to_opcodes(steps, len(a), len(b))


def _myers(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]] | None:
    """The matched pairs (i, j) of a shortest edit script, in order; None past MAX_EDITS."""
    ids: dict[str, int] = {}
    xs = [ids.setdefault(line, len(ids)) for line in a]
    ys = [ids.setdefault(line, len(ids)) for line in b]
    n, m = len(xs), len(ys)
    offset = n + m
    v = [0] * (2 * offset + 2)
    trace: list[list[int]] = []
    for d in range(min(offset, MAX_EDITS) + 1):
        trace.append(v[offset - d:offset + d + 1] if d else [v[offset]])
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                x = v[offset + k + 1]                 # down: an insertion
            else:
                x = v[offset + k - 1] + 1             # right: a deletion
            y = x - k
            while x < n and y < m and xs[x] == ys[y]:
                x, y = x + 1, y + 1
            v[offset + k] = x
            if x >= n and y >= m:
                return _backtrack(trace, offset, d, n, m)
    return None


def _backtrack(trace: list[list[int]], offset: int, depth: int, n: int, m: int) -> list[tuple[int, int]]:
    """Walk the saved frontiers back from (n, m), collecting the diagonal moves.
    ``trace[d]`` is the frontier as step d began, for diagonals -d..d."""
    pairs: list[tuple[int, int]] = []
    x, y = n, m
    for d in range(depth, -1, -1):
        frontier = trace[d]
        k = x - y
        if d == 0:
            prev_k, prev_x = 0, 0
        else:
            down = k == -d or (k != d and frontier[k - 1 + d] < frontier[k + 1 + d])
            prev_k = k + 1 if down else k - 1
            prev_x = frontier[prev_k + d]
        prev_y = prev_x - prev_k
        # the snake: back along the diagonal to where step d's move ended
        start_x = prev_x if d == 0 or prev_k == k + 1 else prev_x + 1
        while x > start_x:
            x, y = x - 1, y - 1
            pairs.append((x, y))
        x, y = prev_x, prev_y
    pairs.reverse()
    return pairs


def _to_opcodes(pairs: list[tuple[int, int]], n: int, m: int) -> list[Opcode]:
    found: list[Opcode] = []
    i = j = 0
    for x, y in [*pairs, (n, m)]:
        if x > i or y > j:
            tag = "replace" if x > i and y > j else "delete" if x > i else "insert"
            found.append((tag, i, x, j, y))
        if (x, y) == (n, m):
            break
        if found and found[-1][0] == "equal" and found[-1][2] == x and found[-1][4] == y:
            found[-1] = ("equal", found[-1][1], x + 1, found[-1][3], y + 1)
        else:
            found.append(("equal", x, x + 1, y, y + 1))
        i, j = x + 1, y + 1
    return found


def _grouped(codes: list[Opcode], context: int) -> list[list[Opcode]]:
    """difflib's get_grouped_opcodes: changes with ``context`` lines around them,
    hunks closer than twice that merged."""
    codes = list(codes) or [("equal", 0, 1, 0, 1)]
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups
