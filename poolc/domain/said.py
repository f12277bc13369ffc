"""A plan message as its parts: the canonical text the plan file holds, with each
amount, key name and running allocation in it marked, so a renderer can say it in
the platform's units without reading the sentence again (``report.plan_view.say``).

The plan's messages are canonical text (``gpu: needs 4, free 0 in pool p``,
``borrowing mcpu=16000``, ``holds 336000 of 384000 mcpu``): the JSON keeps them so,
the same bytes on every run. ``read_said`` marks the parts of such a text once;
which parts are worded otherwise depends on the platform (a key no pool meters is
left as written), so each part says under what condition it changes, and the
renderer, which knows the platform, decides.

The shapes read here are the ones the planner writes (planner/explain.py,
domain/eligibility.py, the resize notes of commands/planning.py), clause by
clause: a message is clauses joined by ``; `` (a parenthesised note belongs to its
clause), and a clause's bare numbers are amounts of the key the clause is about.

The planner builds its messages from parts (``said``, ``pair``, ``number``,
``key_named``, ...) and never reads them; ``read_said`` is for text it did not
compose: a plan file read back (the file holds only the text), Kueue's own
reasons, and a diagnostic's sentence carried into the plan. Both ways must give
the same parts, wording for wording (tests/test_said.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .amounts import key_word


@dataclass(frozen=True)
class Amount:
    """An amount in the text: of ``key`` (``gpu=4``, or a number of a clause about
    gpu), or, for a bare number, of the first key of ``about`` the platform meters."""

    text: str
    value: int
    key: str | None = None
    about: tuple[str, ...] = ()

    def key_among(self, metered: frozenset[str] | set[str]) -> str | None:
        """The key this amount is of on a platform that meters ``metered``; None: keep the text."""
        if self.key is not None:
            return self.key if self.key in metered else None
        return next((k for k in self.about if k in metered), None)


@dataclass(frozen=True)
class KeyWords:
    """Words that name ``key`` (``mcpu``; ``reserved`` before a share), said as
    ``human`` when the platform meters the key and none of ``unless`` (a key the
    clause names earlier takes precedence)."""

    text: str
    key: str
    human: str
    unless: tuple[str, ...] = ()

    def worded(self, metered: frozenset[str] | set[str]) -> bool:
        return self.key in metered and not any(k in metered for k in self.unless)


@dataclass(frozen=True)
class OwnRun:
    """Words that name a running allocation, said as ``human`` when it is a step's own
    (people know the step; the allocation's name is apply's)."""

    text: str
    allocation: str
    human: str


Part = str | Amount | KeyWords | OwnRun


@dataclass(frozen=True, eq=False)
class Said:
    """A message's canonical text and its parts (their texts joined are the text).
    Two messages are equal when their texts are: the text is what a plan file holds."""

    text: str
    parts: tuple[Part, ...]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Said) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __format__(self, spec: str) -> str:
        """Refused: put in an f-string, a message would lose its parts (``said`` keeps them;
        ``.text`` is the canonical text)."""
        raise TypeError("a Said is not formatted: use said(...) to keep its parts, or .text")


def part_text(part: Part) -> str:
    return part if isinstance(part, str) else part.text


def said(*pieces: Said | Part) -> Said:
    """``pieces`` (plain text, marked parts, whole messages) as one message, each
    run of plain text merged, as ``read_said`` gives it. A message's parts are
    taken whole (the planner nests messages: a queued step's reasons, a rejection's
    sentences), so building one costs its pieces, not every part again."""
    parts: list[Part] = []
    texts: list[str] = []
    for piece in pieces:
        if isinstance(piece, Said):
            inner = piece.parts
            if not inner:
                continue
            texts.append(piece.text)
            if parts and isinstance(inner[0], str) and isinstance(parts[-1], str):
                parts[-1] += inner[0]
                parts.extend(inner[1:])
            else:
                parts.extend(inner)
        elif isinstance(piece, str):
            if not piece:
                continue
            texts.append(piece)
            if parts and isinstance(parts[-1], str):
                parts[-1] += piece
            else:
                parts.append(piece)
        else:
            texts.append(piece.text)
            parts.append(piece)
    return Said("".join(texts), tuple(parts))


def joined(separator: str, pieces: Iterable[Said | Part]) -> Said:
    """``pieces`` with ``separator`` between them."""
    found: list[Said | Part] = []
    for piece in pieces:
        if found:
            found.append(separator)
        found.append(piece)
    return said(*found)


def pair(key: str, value: int) -> Amount:
    """``gpu=4``: an amount with its key written beside it."""
    return Amount(f"{key}={value}", value, key)


def pairs(amounts: Mapping[str, int]) -> Said:
    """``gpu=2, mcpu=4000`` (keys sorted)."""
    return joined(", ", (pair(k, v) for k, v in sorted(amounts.items())))


def amount_of(value: int, key: str) -> Amount:
    """A bare number that is of ``key`` whatever the clause is about (a share's ``holds 3``)."""
    return Amount(str(value), value, key)


def number(value: int, key: str) -> Amount:
    """A bare number in a clause about ``key`` (``needs 4`` in ``gpu: needs 4, ...``)."""
    return Amount(str(value), value, None, (key,))


def key_named(key: str, unless: tuple[str, ...] = ()) -> KeyWords:
    """``gpu`` where the sentence names the key (``gpu: needs``, ``limits gpu to``)."""
    return KeyWords(key, key, key_word(key), unless)


def of_key(key: str) -> KeyWords:
    """`` gpu`` after ``holds 3 of 8``: left out once the amounts carry their unit."""
    return KeyWords(f" {key}", key, "")


def reserved_of(key: str) -> KeyWords:
    """``reserved `` before a share's amount: "the reserved" once it is worded."""
    return KeyWords("reserved ", key, "the reserved ")


def running_as(allocation: str) -> OwnRun:
    """``already running as allocation x``: "already running" when x is a step's own."""
    return OwnRun(f"already running as allocation {allocation}", allocation, "already running")


def its_allocation(allocation: str) -> OwnRun:
    """``its running allocation x`` (before "is" or "was"): "its run" when x is a step's own."""
    return OwnRun(f"its running allocation {allocation}", allocation, "its run")


# shapes of a clause that is about one key, whose bare numbers are amounts of it
_OF_KEY = re.compile(r"\bholds (-?\d+) of (-?\d+)( ([a-z][a-z0-9_]*))\b")
_OF_RESERVED = re.compile(r"\bholds (-?\d+) of (reserved )(([a-z][a-z0-9_]*)=(-?\d+)), needs (-?\d+)\b")
# "gpu: needs", also after "also " and "also in pool p: " (the other pools' binding rules)
_KEY_LEAD = re.compile(r"^(?:also )?(?:in pool \S+: )?([a-z][a-z0-9_]*): needs ")
_LIMITS = re.compile(r"\b(?:limits|forbids) ([a-z][a-z0-9_]*) ")
_BARE = re.compile(r"\b(?:needs|free|by|hold|to) (-?\d+)\b")
# a pool's capacity short of a step's need (domain/eligibility.py): the need is of that key
_HAS_NO = re.compile(r"\bhas no ([a-z][a-z0-9_]*) \(capacity \1=0; needs (-?\d+)\)")
_IN_ALL = re.compile(r"\bhas ([a-z][a-z0-9_]*)=-?\d+ in all \(needs (-?\d+)\)")
# the keys a victim was preempted on, at the end of its clause ("preempted for x on gpu, mcpu")
_KEY_LIST = re.compile(r"[a-z][a-z0-9_]*(?:, [a-z][a-z0-9_]*)*")
_PREEMPTED = re.compile(r"\bpreempted\b")
_PAIR = re.compile(r"\b([a-z][a-z0-9_]*)=(-?\d+)\b")
_KEY = re.compile(r"[a-z][a-z0-9_]*")
# a step's own allocation, named in the message
_RUNNING_AS = re.compile(r"already running as allocation ([a-z0-9][a-z0-9-]*)")
_ITS_ALLOCATION = re.compile(r"its running allocation ([a-z0-9][a-z0-9-]*)(?= (?:is|was) )")

Span = tuple[int, int, Part]


# the note of a step whose running allocation a change released (commands/planning.py)
_RELEASED = re.compile(r"^resized: its running allocation \S+ was released because (.*?); (.*)$")


def released_because(message: Said) -> tuple[Said, Said] | None:
    """A resized step's message (``resized: its running allocation x was released
    because <why>; <the step's own message>``) as (why, the step's own message),
    each with its parts; None for any other message."""
    found = _RELEASED.match(message.text)
    return (_cut(message, found.start(1), found.end(1)), _cut(message, found.start(2), found.end(2))) \
        if found else None


def _cut(message: Said, start: int, end: int) -> Said:
    """The part of ``message`` from ``start`` to ``end``: plain text is cut where it
    falls, a marked part is kept whole if it lies inside and left out if it does not."""
    kept: list[Part] = []
    at = 0
    for part in message.parts:
        text = part_text(part)
        low, high = max(start, at), min(end, at + len(text))
        if low < high:
            if isinstance(part, str):
                kept.append(part[low - at:high - at])
            elif low == at and high == at + len(text):
                kept.append(part)
            else:
                kept.append(text[low - at:high - at])   # cut through: its text, unmarked
        at += len(text)
    return said(*kept)


def read_said(text: str) -> Said:
    """``text`` with its parts marked (module doc)."""
    spans: list[Span] = []
    for start, clause in _clauses(text):
        spans += [(start + a, start + b, part) for a, b, part in _clause_spans(clause)]
    for found in _RUNNING_AS.finditer(text):
        spans.append((found.start(), found.end(), running_as(found[1])))
    for found in _ITS_ALLOCATION.finditer(text):
        spans.append((found.start(), found.end(), its_allocation(found[1])))
    parts: list[Part] = []
    at = 0
    for start, end, part in sorted(spans, key=lambda span: span[0]):
        if start < at:
            continue   # inside a span already marked
        if start > at:
            parts.append(text[at:start])
        parts.append(part)
        at = end
    if at < len(text):
        parts.append(text[at:])
    return Said(text, tuple(parts))


def _clauses(message: str) -> list[tuple[int, str]]:
    """``message`` split at each ``; `` outside parentheses, each clause with its offset."""
    found, depth, start = [], 0, 0
    for i, char in enumerate(message):
        depth += (char == "(") - (char == ")")
        if depth == 0 and message.startswith("; ", i):
            found.append((start, message[start:i]))
            start = i + 2
    return [*found, (start, message[start:])]


def _preempted_on(clause: str) -> int | None:
    """Where the keys a victim was preempted on start, when the clause ends with them
    after the word "preempted" on the same line ("preempted for x on gpu, mcpu"); else
    None. Only the last " on " can start them (a list of keys holds no " on "), so
    this is one scan: the pattern ``preempted.* on (keys)$`` tried every " on " after
    every "preempted", and a saved plan's message built of them took minutes."""
    at = clause.rfind(" on ")
    if at < 0:
        return None
    keys = _KEY_LIST.match(clause, at + 4)
    if keys is None or clause[keys.end():] not in ("", "\n"):
        return None
    line = clause.rfind("\n", 0, at) + 1
    return at + 4 if _PREEMPTED.search(clause, line, at) else None


def _clause_spans(clause: str) -> list[Span]:
    """The marked parts of one clause, by their place in it."""
    spans: list[Span] = []
    about: list[str] = []        # the keys the clause may be about, first first
    for m in _OF_RESERVED.finditer(clause):
        key = m[4]
        spans += [(m.start(1), m.end(1), Amount(m[1], int(m[1]), key)),
                  (m.start(2), m.end(2), KeyWords(m[2], key, "the reserved ")),
                  (m.start(3), m.end(3), Amount(m[3], int(m[5]), key)),
                  (m.start(6), m.end(6), Amount(m[6], int(m[6]), key))]
    first = _OF_KEY.search(clause)
    if first:
        of = first[4]
        about.append(of)
        for m in _OF_KEY.finditer(clause):
            spans += [(m.start(1), m.end(1), Amount(m[1], int(m[1]), of)),
                      (m.start(2), m.end(2), Amount(m[2], int(m[2]), of)),
                      (m.start(3), m.end(3), KeyWords(m[3], of, ""))]
    lead = _KEY_LEAD.match(clause)
    if lead:
        spans.append((lead.start(1), lead.end(1), KeyWords(lead[1], lead[1], key_word(lead[1]), tuple(about))))
        about.append(lead[1])
    limits = _LIMITS.search(clause)
    if limits:
        spans.append((limits.start(1), limits.end(1),
                       KeyWords(limits[1], limits[1], key_word(limits[1]), tuple(about))))
        about.append(limits[1])
    on = _preempted_on(clause)
    if on is not None:
        for key in _KEY.finditer(clause, on):
            spans.append((key.start(), key.end(), KeyWords(key[0], key[0], key_word(key[0]))))
    for m in _HAS_NO.finditer(clause):
        spans += [(m.start(1), m.end(1), key_named(m[1])), (m.start(2), m.end(2), amount_of(int(m[2]), m[1]))]
    for m in _IN_ALL.finditer(clause):
        spans.append((m.start(2), m.end(2), amount_of(int(m[2]), m[1])))
    for m in _PAIR.finditer(clause):
        spans.append((m.start(), m.end(), Amount(m[0], int(m[2]), m[1])))
    if about:
        for m in _BARE.finditer(clause):
            spans.append((m.start(1), m.end(1), Amount(m[1], int(m[1]), None, tuple(about))))
    return spans
