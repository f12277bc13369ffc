"""`poolc test` output: text (pass/fail per expectation, the deciding timeline
under each failure), JSON, JUnit XML (for CI test reports), SARIF (a failed
expectation at its line) and Markdown (the pull-request comment). Strings from
the inputs are escaped per channel; the same report gives the same bytes."""

from __future__ import annotations

import json
from collections.abc import Callable
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

from .. import __version__
from ..report import render as render_diagnostics
from ..text import escape
from ..vocabulary import TestFormat
from .command import Outcome, Report


def _summary(report: Report) -> str:
    good, total = report.counts()
    scenarios = len(report.outcomes)
    failed = total - good
    return (f"{scenarios} scenario{'s' if scenarios != 1 else ''}, {total} expectation{'s' if total != 1 else ''}: "
            f"{good} passed, {failed} failed (strategy {report.strategy})")


def text(report: Report) -> str:
    if report.diagnostics:
        return render_diagnostics("text", list(report.diagnostics)) + "poolc: no scenarios run: the inputs do not " \
            "validate (see the errors above)\n"
    out = []
    for o in report.outcomes:
        name = escape.text(o.name)
        out.append(f"{'PASS' if o.passed else 'FAIL'} {name} ({escape.text(o.file)}:{o.line})")
        for x in o.problems:
            out.append(f"  ERROR {escape.text(x.file)}:{x.line}:{x.column}: {escape.text(x.message)}")
        for v in o.verdicts:
            out.append(f"  {'ok  ' if v.passed else 'FAIL'} {escape.text(v.title)}: {escape.text(v.reason)}")
            if not v.passed:
                out.extend(f"         {escape.text(line)}" for line in v.timeline)
    out.append(_summary(report))
    return escape.guard_lines("\n".join(out) + "\n")


def as_dict(report: Report) -> dict:
    return {"strategy": report.strategy, "passed": report.passed, "bounds": report.bounds,
            "diagnostics": [x.__dict__ for x in report.diagnostics],
            "scenarios": [{"name": o.name, "file": o.file, "line": o.line, "passed": o.passed,
                           "problems": [x.__dict__ for x in o.problems],
                           "expectations": [{"index": v.index, "line": o.line_of(v), "title": v.title,
                                             "passed": v.passed, "reason": v.reason, "measured": v.measured,
                                             "timeline": list(v.timeline)} for v in o.verdicts],
                           "schedule": [r.as_dict() for r in o.rolled.forecast.schedule]
                           if o.rolled.forecast is not None else []}
                          for o in report.outcomes]}


def as_json(report: Report) -> str:
    return json.dumps(as_dict(report), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def junit(report: Report) -> str:
    """JUnit XML: one testsuite per scenario, one testcase per expectation (a
    scenario that could not run is one testcase in error)."""
    good, total = report.counts()
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites name="poolc test" tests="{total or 1 if report.diagnostics else total}" '
             f'failures="{total - good}" errors="{1 if report.diagnostics else 0}" time="0">']
    if report.diagnostics:   # no scenario ran: one test in error, so no report reads as a pass
        message = "; ".join(f"{x.file}:{x.line}:{x.column}: {x.rule} {x.message}" for x in report.diagnostics)
        lines += ['  <testsuite name="inputs" tests="1" failures="0" errors="1" skipped="0" time="0">',
                  '    <testcase name="the inputs validate" classname="inputs" time="0">',
                  f'      <error message={quoteattr("the inputs do not validate: no scenario ran")} '
                  f'type="validate">{xml_escape(message)}</error>',
                  "    </testcase>", "  </testsuite>"]
    for o in report.outcomes:
        failures = sum(1 for v in o.verdicts if not v.passed)
        tests = len(o.verdicts) or 1
        lines.append(f'  <testsuite name={quoteattr(o.name)} tests="{tests}" failures="{failures}" '
                     f'errors="{1 if o.problems else 0}" skipped="0" time="0" file={quoteattr(o.file)}>')
        if o.problems:
            message = "; ".join(f"{x.file}:{x.line}:{x.column}: {x.message}" for x in o.problems)
            lines.append(f'    <testcase name="start" classname={quoteattr(o.name)} time="0">')
            lines.append(f'      <error message={quoteattr(message)} type="scenario"/>')
            lines.append("    </testcase>")
        for v in o.verdicts:
            lines.append(f'    <testcase name={quoteattr(v.title)} classname={quoteattr(o.name)} time="0" '
                         f'file={quoteattr(o.file)} line="{o.line_of(v)}">')
            if not v.passed:
                lines.append(f'      <failure message={quoteattr(v.reason)} type="expectation">'
                             f'{xml_escape(chr(10).join(v.timeline))}</failure>')
            lines.append("    </testcase>")
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    return "\n".join(lines) + "\n"


def _location(uri: str, line: int, column: int = 1) -> dict:
    return {"physicalLocation": {"artifactLocation": {"uri": uri},
                                 "region": {"startLine": line, "startColumn": column}}}


def sarif(report: Report) -> str:
    """SARIF 2.1.0: each failed expectation at its line, rule POOLC-TEST."""
    results = []
    for o in report.outcomes:
        for v in o.verdicts:
            if v.passed:
                continue
            results.append({"ruleId": "POOLC-TEST", "level": "error",
                            "message": {"text": f"{o.name}: {v.title}: {v.reason}"},
                            "locations": [_location(o.file, o.line_of(v))]})
        for x in o.problems:
            results.append({"ruleId": x.rule, "level": "error", "message": {"text": f"{o.name}: {x.message}"},
                            "locations": [_location(x.file, x.line, x.column)]})
    for x in report.diagnostics:
        results.append({"ruleId": x.rule, "level": "error" if x.severity == "error" else "warning",
                        "message": {"text": x.message},
                        "locations": [_location(x.file, x.line, x.column)]})
    log = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
           "runs": [{"tool": {"driver": {"name": "poolc test", "version": __version__, "rules": [
               {"id": "POOLC-TEST", "shortDescription": {"text": "a scenario's expectation does not hold"}}]}},
               "results": results}]}
    return json.dumps(log, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _md_failure(o: Outcome, title: str, reason: str, timeline: tuple[str, ...]) -> list[str]:
    lines = [f"- **{escape.md_inert(o.name)}**: {escape.md_inert(title)}: {escape.md_inert(reason)}"]
    if timeline:
        lines.append("  <details><summary>timeline</summary>")
        lines.append("")
        lines.extend(f"  {escape.md_code(line)}  " for line in timeline)
        lines.append("")
        lines.append("  </details>")
    return lines


def markdown(report: Report) -> str:
    """The scenarios for the comment: failures first, each with its timeline folded."""
    good, total = report.counts()
    if report.diagnostics:
        return "### Scenarios\n\nNot run: the inputs do not validate.\n"
    lines = ["### Scenarios", ""]
    failed = [(o, v) for o in report.outcomes for v in o.verdicts if not v.passed]
    if not failed and not any(o.problems for o in report.outcomes):
        lines.append(f"All {total} expectations of {len(report.outcomes)} scenarios hold "
                     f"(strategy `{report.strategy}`).")
        return "\n".join(lines) + "\n"
    lines.append(f"**{total - good} of {total} expectations fail** (strategy `{report.strategy}`):")
    lines.append("")
    for o, v in failed:
        lines.extend(_md_failure(o, v.title, v.reason, v.timeline))
    for o in report.outcomes:
        for x in o.problems:
            lines.append(f"- **{escape.md_inert(o.name)}** could not run: {escape.md_inert(x.message)}")
    return escape.guard_lines("\n".join(lines) + "\n")


RENDERERS: dict[TestFormat, Callable[[Report], str]] = {"text": text, "json": as_json, "junit": junit, "sarif": sarif,
                                                         "markdown": markdown}
