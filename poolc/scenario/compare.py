"""Base against head: the pull request's scenarios against the base branch's JSON
report (`poolc test --format json` there), so the comment leads with what the
change breaks. The base report is untrusted input: read defensively, escaped."""

from __future__ import annotations

import json
from typing import Any

from .. import escape
from ..writer import read_text_or_why
from .command import Report
from .render import markdown


def read_base(path: str) -> tuple[dict[tuple[str, str], dict[str, Any]], str]:
    """(scenario, expectation title) -> {passed, measured, reason} of the base report, and a note when unreadable."""
    text, why = read_text_or_why(path)
    if text is None:
        return {}, f"poolc: cannot read the base report {path}: {why}; every failure is shown as new"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return {}, f"poolc: the base report {path} is not JSON ({exc}): every failure is shown as new"
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
    if not found:
        return {}, f"poolc: the base report {path} holds no expectations: every failure is shown as new"
    return found, ""


def markdown_against(base: dict[tuple[str, str], dict[str, Any]], report: Report) -> str:
    """The scenarios section led by what the change breaks (held on base, fails now),
    then what it fixes; the whole report below."""
    if report.diagnostics:
        return markdown(report)
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
                              f"{escape.md_inert(now)}{was}")
            elif not before["passed"] and v.passed:
                fixed.append(f"- **{escape.md_inert(o.name)}**: {escape.md_inert(v.title)} holds again")
    lines = []
    if broken:
        lines += [f"### This change breaks {len(broken)} scenario expectation{'s' if len(broken) > 1 else ''}",
                  "", *broken, ""]
    if fixed:
        lines += [f"This change makes {len(fixed)} expectation{'s' if len(fixed) > 1 else ''} hold again:", "",
                  *fixed, ""]
    if not broken and not fixed:
        good, total = report.counts()
        lines += [f"No scenario expectation changes with this pull request ({good} of {total} hold).", ""]
    return escape.guard_lines("\n".join(lines) + "\n" + markdown(report))


def _no_longer(title: str) -> str:
    """'prod/train starts within 2 h' -> 'prod/train no longer starts within 2 h';
    any other expectation -> '<it>: no longer holds'."""
    for verb in (" starts within ", " is never preempted", " is "):
        if verb in title:
            head, _, tail = title.partition(verb)
            return f"{head} no longer {verb.strip()} {tail}".rstrip() if verb != " is never preempted" \
                else f"{head} is no longer never preempted"
    return f"{title}: no longer holds"
