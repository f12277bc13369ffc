"""Base against head: the pull request's scenarios against the base branch's JSON
report (`poolc test --format json` there), so the comment leads with what the
change breaks. The base report is untrusted input: read defensively, escaped."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..text import escape
from ..writer import read_text_or_why
from .bounds import Bounds, moved, read_bounds
from .command import Report
from .render import markdown


@dataclass(frozen=True)
class BaseReport:
    """What a base branch's report says: each expectation's outcome, by (scenario,
    expectation title), and the platform's bounds there (empty in a report of a
    poolc that did not record them: then the comment names no cause)."""

    verdicts: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    bounds: Bounds = field(default_factory=dict)

    def get(self, key: tuple[str, str]) -> dict[str, Any] | None:
        return self.verdicts.get(key)


def read_base(path: str) -> tuple[BaseReport, str]:
    """The base report, and a note when it is unreadable or holds no expectations."""
    text, why = read_text_or_why(path)
    if text is None:
        return BaseReport(), f"poolc: cannot read the base report {path}: {why}; every failure is shown as new"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return BaseReport(), f"poolc: the base report {path} is not JSON ({exc}): every failure is shown as new"
    found: dict[tuple[str, str], dict[str, Any]] = {}
    scenarios = data.get("scenarios") if isinstance(data, dict) else None
    for scenario in scenarios if isinstance(scenarios, list) else []:
        if not isinstance(scenario, dict) or not isinstance(scenario.get("name"), str):
            continue
        for item in scenario.get("expectations") or []:
            if isinstance(item, dict) and isinstance(item.get("title"), str) and isinstance(item.get("passed"), bool):
                found[(scenario["name"], item["title"])] = {
                    "passed": item["passed"], "measured": str(item.get("measured", "")),
                    "reason": str(item.get("reason", ""))}
    bounds = read_bounds(data.get("bounds")) if isinstance(data, dict) else {}
    if not found:
        note = f"poolc: the base report {path} holds no expectations: every failure is shown as new"
        return BaseReport({}, bounds), note
    return BaseReport(found, bounds), ""


def markdown_against(base: BaseReport, report: Report) -> str:
    """The scenarios section led by what the change breaks (held on base, fails now)
    and which of the platform's bounds the change moved, then what it fixes; the
    whole report below."""
    if report.diagnostics:
        return markdown(report)
    changes = moved(base.bounds, report.bounds, report.units) if base.bounds and report.bounds else []
    because = f", because {escape.md_inert(changes[0])}" if len(changes) == 1 else ""
    broken, fixed = [], []
    for o in report.outcomes:
        for v in o.verdicts:
            before = base.get((o.name, v.title))
            if before is None:
                continue
            if before["passed"] and not v.passed:
                was = f" (was {escape.md_inert(before['measured'])})" if before["measured"] else ""
                subject = v.title.split(" ", 1)[0] + " "
                now = v.reason.removeprefix(subject) if v.reason.startswith(subject) else v.reason
                broken.append(f"- **{escape.md_inert(o.name)}**: {escape.md_inert(_no_longer(v.title))}: now "
                              f"{escape.md_inert(now)}{was}{because}")
            elif not before["passed"] and v.passed:
                fixed.append(f"- **{escape.md_inert(o.name)}**: {escape.md_inert(v.title)} holds again")
    lines = []
    if broken:
        lines += [f"### This change breaks {len(broken)} scenario expectation{'s' if len(broken) > 1 else ''}",
                  "", *broken, ""]
        if len(changes) > 1:
            shown = [escape.md_inert(c) for c in changes[:_CHANGES_SHOWN]]
            more = len(changes) - len(shown)
            lines += ["The change moves " + "; ".join(shown) + (f"; and {more} more" if more else "") + ".", ""]
    if fixed:
        lines += [f"This change makes {len(fixed)} expectation{'s' if len(fixed) > 1 else ''} hold again:", "",
                  *fixed, ""]
    if not broken and not fixed:
        good, total = report.counts()
        lines += [f"No scenario expectation changes with this pull request ({good} of {total} hold).", ""]
    return escape.guard_lines("\n".join(lines) + "\n" + markdown(report))


_CHANGES_SHOWN = 5      # the bounds a change moved, named under what it breaks


def _no_longer(title: str) -> str:
    """'prod/train starts within 2 h' -> 'prod/train no longer starts within 2 h',
    'x is running at +1 h' -> 'x is no longer running at +1 h', 'x is never
    preempted' -> 'x is preempted now'; any other expectation -> '<it>: no longer holds'."""
    if " is never preempted" in title:
        return f"{title.partition(' is never preempted')[0]} is preempted now"
    for verb in (" starts within ", " is "):
        if verb in title:
            head, _, tail = title.partition(verb)
            return f"{head} {'is no longer' if verb == ' is ' else 'no longer starts within'} {tail}".rstrip()
    return f"{title}: no longer holds"
