"""`poolc plan`'s and `poolc show`'s output: the plan in the format asked for (text,
JSON, the pull-request comment with its forecast section, GitHub annotations,
SARIF), and a configuration with errors in place of a plan."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from ..diagnostics import Diagnostic
from ..vocabulary import PlanFormat
from . import diagnostics_view
from .shown import Shown


def plan_output(result: Any, fmt: PlanFormat, quiet: bool, colour: bool, plan_json: str, made: Any = None,
                before: Any = None) -> Shown:
    """The plan of ``result`` (``plan_json`` when JSON: the text --out wrote, not a second
    serialisation), its forecast ``made`` against the base's ``before`` when asked."""
    if fmt == "json":
        return Shown(plan_json)
    if fmt == "github" or fmt == "sarif":
        annotations = diagnostics_view.shown(result.plan.diagnostics_list(), fmt, quiet)
        if fmt == "sarif":
            return annotations
        from ..report.github import plan_commands
        from ..text.escape import deep
        from ..text.escape import text as _t

        return Shown(annotations.out + plan_commands(deep(result.plan, _t)), annotations.err)
    if fmt == "markdown":
        from ..report.plan_markdown import render_comment

        forecast = None
        if made is not None:
            from ..forecast.command import markdown_section

            forecast = markdown_section(made, before)
        return Shown(render_comment(result.plan, diffs=result.diffs, forecast=forecast))
    from ..report import render
    from ..report.plan_text import render_plan

    out = render_plan(result.plan, color=colour, diffs=result.diffs)
    if made is not None:
        from ..forecast.command import text_section

        out += text_section(made, before)
    listed = [x for x in result.plan.diagnostics_list() if not quiet or x.severity == "error"]
    return Shown(out, render("text", listed) if listed else "")   # on stderr, so stdout stays the plan


def saved_output(saved: Any, fmt: str, colour: bool) -> str:
    """`poolc show`: a saved plan, rendered without planning again."""
    if fmt == "json":
        from ..domain.plan import to_json

        return to_json(saved)
    if fmt == "markdown":
        from ..report.plan_markdown import render_markdown

        return render_markdown(saved)
    from ..report.plan_text import render_plan

    return render_plan(saved, color=colour)


def errors_output(diagnostics: Sequence[Diagnostic], fmt: PlanFormat, paths: tuple[str, ...], quiet: bool) -> Shown:
    """A configuration with errors: the diagnostics are the output (no plan, no
    PLANFILE), in the format asked for, and on stderr as text for the log."""
    from ..report import render, summary

    listed = [x for x in diagnostics if x.severity == "error"] if quiet else list(diagnostics)
    out = ""
    if fmt == "markdown":
        from ..report.plan_markdown import render_errors

        command = "poolc validate " + " ".join(shlex.quote(p) for p in paths)
        out = render_errors([x for x in diagnostics if x.severity == "error"], command)
    elif fmt != "text":
        out = render(fmt, listed)
    err = render("text", listed)
    if not quiet:
        err += summary(list(diagnostics)) + "\n"
    err += "poolc: the configuration has errors (not only rejected steps); no plan made\n"
    return Shown(out, err)
