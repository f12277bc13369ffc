"""One escaping layer per output channel, for every string that comes from input.

poolc prints what contributors wrote (names, messages that quote values, file
names, the state, a saved plan, generated files on disk) into places that read
more than text: a CI runner parses workflow commands out of a job's log, GitHub
renders the pull-request comment as Markdown and turns ``@name`` into a
notification, rich interprets ``[bold]`` as markup. Each channel has one function
here, and the renderers call it on each string they did not write themselves:

- ``text``: one field of text or stderr output. Control characters (line breaks
  first) become visible escapes (``\\n``, ``\\x1b``), so a field never starts a
  line of its own, and neither command form of GitHub's runner survives: a field
  starting with ``::`` (the runner trims leading blanks, then looks for ``::``)
  and ``##[`` anywhere in a line (the legacy form) are spelt ``\\x3a:`` and
  ``#\\x23[``. ``guard_lines`` applies the two runner rules to a whole rendered
  text, as a last check at the renderer's edge.
- ``md_text``, ``md_code``, ``md_html``, ``md_fence``: Markdown for the comment.
  Text has every character with a meaning in GitHub-flavoured Markdown escaped
  (HTML, links, emphasis, tables' pipes are left to the table), and a zero-width
  space after ``@`` and ``#`` before a name or number, and inside ``www.`` and
  ``://``, so no mention, issue reference or autolink appears; a code span takes
  a run of backticks longer than any inside it; a fence is longer than any run
  of backticks in its block.
- rich: the text plan's console never reads markup (``markup=False``); the
  ``text`` rules apply to its fields.

Every function bounds what it returns (``limit`` characters of output, then
``…``), so one huge field cannot blow a comment or a log line: the comment's
budget holds for every field, not only for every row.

JSON output needs nothing here: ``json.dumps`` escapes what JSON must.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

# What one field may take in a text line or the comment, after escaping.
TEXT_LIMIT = 4_000
MD_TEXT_LIMIT = 2_000
MD_CODE_LIMIT = 400
ELLIPSIS = "…"

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_LEGACY = "##["
_LEGACY_SAFE = "#\\x23["
_ZWSP = "\u200b"


def _char(char: str) -> str:
    """One character, visible: printable as it is, anything else as an escape."""
    if char.isprintable():
        return char
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def clip(pieces: list[str] | str, limit: int) -> str:
    """Pieces joined while they fit ``limit`` characters, then ``…``: never cut
    inside one piece (an escape sequence or an entity stays whole)."""
    total, kept = 0, []
    for piece in pieces:
        total += len(piece)
        if total > limit:
            kept.append(ELLIPSIS)
            break
        kept.append(piece)
    return "".join(kept)


def one_line(value: object, limit: int = TEXT_LIMIT) -> str:
    """``value`` on one line: every character that is not printable (line breaks
    of any kind included) escaped, printable text (Unicode too) kept."""
    text = str(value)
    if text.isprintable() and len(text) <= limit:
        return text
    return clip([_char(c) for c in text], limit)


def _no_command(text: str) -> str:
    """Neither of the runner's command forms: ``##[`` anywhere, ``::`` first."""
    if _LEGACY in text:
        text = text.replace(_LEGACY, _LEGACY_SAFE)
    stripped = text.lstrip()
    if stripped.startswith("::"):
        blank = len(text) - len(stripped)
        text = text[:blank] + "\\x3a" + text[blank + 1:]
    return text


def text(value: object, limit: int = TEXT_LIMIT) -> str:
    """One field of text or stderr output: one line, printable, no runner command."""
    return _no_command(one_line(value, limit))


def block(value: object, limit_per_line: int = TEXT_LIMIT) -> list[str]:
    """A multi-line text (a diff) as lines, each escaped like a field (its leading
    blanks kept, so a diff stays aligned)."""
    return [text(line, limit_per_line) for line in str(value).splitlines()]


def guard_lines(rendered: str) -> str:
    """A whole rendered text with the runner's two rules applied to every line; a
    rendering whose fields went through ``text`` passes unchanged."""
    if _LEGACY not in rendered and "::" not in rendered:
        return rendered
    return "\n".join(_no_command(line) for line in rendered.split("\n"))


# --- Markdown (GitHub-flavoured) --------------------------------------------------------

# Characters that make inline Markdown wherever they stand (code, HTML and entities,
# links and images, emphasis, strikethrough, math); CommonMark lets a backslash
# escape any ASCII punctuation. '|' is the table's to escape; '_' only counts at
# the edge of a word (GFM: no intraword emphasis with '_').
_MD_ALWAYS = {"\\": "\\\\", "`": "\\`", "*": "\\*", "[": "\\[", "~": "\\~", "$": "\\$",
              "<": "&lt;", ">": "&gt;", "&": "&amp;"}
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# At the start of a line: headings, block quotes, lists, setext underlines.
_LINE_START = re.compile(r"^(?:#{1,6}(?=\s|$)|[-+*](?=\s|$)|\d{1,9}[.)](?=\s|$)|=+(?=\s*$)|-+(?=\s*$))")
# Anything md_text would change (the fast path returns the rest as it is).
_MD_ANY = re.compile(r"[\\`*\[~$<>&@]|#[0-9]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|[Ww]{3}\.|:(?=//)|^(?:#{1,6}|[-+*]"
                     r"|\d{1,9}[.)])(?=\s|$)|^[=-]+\s*$")
_LINKISH = re.compile(r"(@)(?=[A-Za-z0-9])|(#)(?=[0-9])|(?<=[Ww]{3})(?=\.)|(?<=:)(?=//)")


def md_text(value: object, limit: int = MD_TEXT_LIMIT) -> str:
    """Text for the comment's Markdown: renders as the characters given, and is never
    HTML, a link, an autolink, a mention, an issue reference, emphasis or code,
    wherever in a line it stands."""
    raw = str(value)
    if len(raw) <= limit and raw.isprintable() and not _MD_ANY.search(raw):
        return raw      # most names and messages: nothing to escape
    marked = {m.start() for m in _EDGE_UNDERSCORE.finditer(raw)}
    if m := _LINE_START.match(raw):
        marked.add(m.end() - 1)
    pieces = []
    for index, char in enumerate(raw):
        if index in marked:
            pieces.append("\\" + char)
            continue
        shown = " " if char in _NAMED else _char(char)   # a line break reads as a space
        if len(shown) > 1:     # an escape such as \x1b: its backslash must stay a backslash
            shown = "\\" + shown
        pieces.append(_MD_ALWAYS.get(shown, shown))
    return _LINKISH.sub(lambda m: (m.group(1) or m.group(2) or "") + _ZWSP, clip(pieces, limit))


_INERT = re.compile(r"(@)(?=[A-Za-z0-9])|(#)(?=[0-9])|(<)(?=[A-Za-z/!?])|(\])(?=[(\[])|(?<=[Ww]{3})(?=\.)|(:)(?=//)")


def md_inert(value: object, limit: int = MD_TEXT_LIMIT) -> str:
    """A string the comment may put as it is either in text or in a code span (the
    renderer decides): one line, bounded, no ``##[``, and a zero-width space where
    GitHub would otherwise make HTML (``<img``), a link (``](``), a mention, an issue
    reference or an autolink. Invisible in both places; code spans themselves come
    from ``md_code``, table pipes from the table."""
    raw = str(value)
    if "\n" in raw or "\r" in raw or "\t" in raw:   # a line break reads as a space, as in md_text
        raw = raw.replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("\t", " ")
    text_ = _guard_code(one_line(raw, limit))
    if not _INERT.search(text_):
        return text_
    return _INERT.sub(lambda m: "".join(g for g in m.groups() if g) + _ZWSP, text_)


def _guard_code(text_: str) -> str:
    return text_.replace(_LEGACY, _LEGACY_SAFE) if _LEGACY in text_ else text_


def md_code(value: object, limit: int = MD_CODE_LIMIT) -> str:
    """An inline code span holding ``value`` literally (backticks included): the
    span's delimiter is one backtick longer than any run inside."""
    content = _guard_code(one_line(value, limit))
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    fence = "`" * (longest + 1)
    if content.startswith("`") or content.endswith("`") or (content[:1] == " " and content[-1:] == " "):
        content = f" {content} "
    return f"{fence}{content}{fence}"


def md_html(value: object, limit: int = MD_CODE_LIMIT) -> str:
    """Text inside an HTML element of the comment (``<summary><code>...``)."""
    content = _guard_code(one_line(value, limit))
    escaped = (content.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
               .replace('"', "&quot;").replace("'", "&#39;"))
    return re.sub(r"@(?=[A-Za-z0-9])|#(?=[0-9])", lambda m: m.group(0) + _ZWSP, escaped)


def md_fence(content: str, info: str = "") -> str:
    """A fenced code block of ``content`` (lines escaped as ``block`` does): its fence
    is longer than any run of backticks inside, so nothing inside can close it."""
    lines = block(content)
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence + info, *lines, fence])


def json_text(rendered: str) -> str:
    """JSON text with the runner's legacy ``##[`` spelt ``#\\u0023[``: the same JSON (the
    characters can only stand inside strings), but no command when a CI log shows it.
    A JSON line never starts with ``::``."""
    return rendered.replace(_LEGACY, "#\\u0023[") if _LEGACY in rendered else rendered


# --- whole values ---------------------------------------------------------------------------

T = TypeVar("T")


def deep(value: T, escape: Callable[[str], str]) -> T:
    """``value`` with ``escape`` applied to every string inside it (dataclasses,
    mappings, lists and tuples, keys included); the same object where nothing changes."""
    return _deep(value, escape)


def _deep(value: Any, escape: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return escape(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed = {}
        for item in dataclasses.fields(value):
            if not item.init:
                continue
            old = getattr(value, item.name)
            new = _deep(old, escape)
            if new is not old:
                changed[item.name] = new
        return dataclasses.replace(value, **changed) if changed else value
    if isinstance(value, Mapping):
        items = [(_deep(k, escape), _deep(v, escape)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        items_ = [_deep(v, escape) for v in value]
        if all(a is b for a, b in zip(items_, value, strict=True)):
            return value
        return type(value)(items_) if isinstance(value, list) else tuple(items_)
    return value
