"""GitHub Actions workflow commands, which the runner shows as annotations on the diff.

The runner parses one command per line and splits properties on ``,`` and the
message on ``::``, so values are percent-escaped the way GitHub's own toolkit does.
The runner's legacy form ``##[`` is spelt ``#\\x23[`` as in the text output
(``poolc.escape``), so no runner ever reads a second command out of a message.
"""

from __future__ import annotations

from poolc.diagnostics import Diagnostic
from poolc.escape import TEXT_LIMIT, clip
from poolc.report import ordered


def escape_data(text: str) -> str:
    """Escape the message part: ``%`` first, so later escapes are not escaped again."""
    if len(text) > TEXT_LIMIT:
        text = clip(list(text), TEXT_LIMIT)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace("##[", "#\\x23[")


def escape_property(text: str) -> str:
    """Escape a property value, which additionally must not contain ``:`` or ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(d: Diagnostic) -> str:
    props = (
        ("file", d.file),
        ("line", str(d.line)),
        ("col", str(d.column)),
        ("endLine", str(d.end_line)),
        ("endColumn", str(d.end_column)),
        ("title", d.rule),
    )
    joined = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    return f"::{d.severity} {joined}::{escape_data(d.message)}"


def render(diagnostics: list[Diagnostic]) -> str:
    return "".join(command(d) + "\n" for d in ordered(diagnostics))
