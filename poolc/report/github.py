"""GitHub Actions workflow commands, which the runner shows as annotations on the diff.

The runner parses one command per line and splits properties on ``,`` and the
message on ``::``, so values are percent-escaped the way GitHub's own toolkit does.
The runner's legacy form ``##[`` is spelt ``#\\x23[`` as in the text output
(``poolc.text.escape``), so no runner ever reads a second command out of a message.
"""

from __future__ import annotations

from poolc.diagnostics import Diagnostic
from poolc.domain.plan import Plan
from poolc.report import ordered
from poolc.text.escape import TEXT_LIMIT, clip


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


def _annotation(level: str, title: str, message: str) -> str:
    return f"::{level} title={escape_property(title)}::{escape_data(message)}"


def plan_commands(plan: Plan) -> str:
    """The plan's consequences as annotations on the run (no file: a plan's effects
    are nowhere in the diff): with a base, the change's headline as a notice; a
    warning per running step whose work ends and per bound lowered below use."""
    from . import consequences

    base = plan.base
    lines = []
    if base is not None:
        lines.append(_annotation("notice", "poolc: the change", consequences.headline(plan, base)))
    for e in consequences.ended_work(plan, base):
        how = "is preempted" if e.how == consequences.PREEMPTED else f"{e.how} ({e.cause})"
        lines.append(_annotation("warning", "poolc: running work ends", f"{e.who.label()} {how}: {e.why}"))
    for item in consequences.over_bounds(plan, base) if base is not None else []:
        waiting = (f"; waiting on it now: {', '.join(w.label() for w in item.waiting)}" if item.waiting
                   else "; no step of it waits now")
        lines.append(_annotation("warning", f"poolc: {item.kind} over its {item.bound}",
                                 f"{consequences.over_sentence(item, plan.units)}; "
                                 f"{consequences.holds_back(item, plan.units)}{waiting}"))
    return "".join(line + "\n" for line in lines)
