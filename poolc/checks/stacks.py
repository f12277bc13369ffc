"""Rules on stacks and the components pipelines use (K001-K003, N002)."""

from __future__ import annotations

from collections.abc import Iterator

from .. import diagnostics as d
from ..diagnostics import Diagnostic
from . import Context, check
from .suggestions import closest, did_you_mean


@check(d.K001)
def component_defined_once(ctx: Context) -> Iterator[Diagnostic]:
    """K001: a component may appear in several stacks only with identical settings."""
    first: dict[str, tuple] = {}
    for _, entry in sorted(ctx.config.stacks.items()):
        spec = entry.obj.spec
        paths = [(spec.orchestrator, ("spec", "orchestrator", "name"))] + [
            (op, ("spec", "step_operators", i, "name")) for i, op in enumerate(spec.step_operators)]
        for comp, path in paths:
            if comp.name not in first:
                first[comp.name] = (comp, entry)
                continue
            other, other_entry = first[comp.name]
            if other != comp:
                yield entry.doc.diagnostic(d.K001, f"component {comp.name!r} is also defined in stack "
                                           f"{other_entry.name!r} with other settings; give it the same settings "
                                           "or another name", path)


@check(d.N002, d.K002)
def pipeline_references(ctx: Context) -> Iterator[Diagnostic]:
    """N002 / K002: a pipeline's stack exists and its steps' operators belong to it."""
    for _, entry in sorted(ctx.config.pipelines.items()):
        spec = entry.obj.spec
        stack = ctx.config.stacks.get(spec.stack)
        if stack is None:
            if not ctx.config.is_broken("Stack", spec.stack):
                yield entry.doc.diagnostic(d.N002, f"pipeline {entry.name!r} uses stack {spec.stack!r}, which is "
                                           "not defined in the files given"
                                           + did_you_mean(spec.stack, ctx.config.names("Stack"), "stacks"),
                                           ("spec", "stack"))
            continue
        operators = {op.name for op in stack.obj.spec.step_operators}
        for step_name, step in spec.steps.items():
            if step.step_operator is not None and step.step_operator not in operators:
                known = ", ".join(sorted(operators)) or "none"
                match = closest(step.step_operator, operators)
                hint = f"; did you mean {match!r}?" if match else ""
                yield entry.doc.diagnostic(d.K002, f"step {step_name!r} uses step operator {step.step_operator!r}, "
                                           f"which is not in stack {spec.stack!r} (its step operators: {known})"
                                           + hint,
                                           ("spec", "steps", step_name, "step_operator"),
                                           request=f"{entry.name}/{step_name}")


@check(d.K003)
def step_has_image(ctx: Context) -> Iterator[Diagnostic]:
    """K003: every step needs a container image, from the step or from its component."""
    for request in ctx.requests:
        component = ctx.components.get(request.requester or "")
        if component is None:
            continue
        step = request.entry.obj.spec.steps[request.step]
        if step.image is None and component[0].image is None:
            yield request.entry.doc.diagnostic(d.K003, f"step {request.step!r} has no image: set image on the "
                                               f"step or on component {component[0].name!r}", request.path,
                                               key=True, request=request.id)
