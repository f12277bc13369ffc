"""Rules on scenarios (E001): what a scenario names is in the inputs, with a
did-you-mean, so a typo fails at its line instead of an expectation that can
never be judged."""

from __future__ import annotations

from collections.abc import Iterator

from .. import diagnostics as d
from ..config import Config, Entry
from ..diagnostics import Diagnostic
from ..model import Scenario
from . import Context, check
from .suggestions import did_you_mean


def step_ids(ctx: Context) -> set[str]:
    return {r.id for r in ctx.requests}


def teams(config: Config, components: set[str]) -> set[str]:
    """Every team a step can have (docs/cli.md#teams): a pipeline's labels.team, and the components."""
    found = set(components)
    for entry in config.pipelines.values():
        team = entry.obj.metadata.labels.get("team")
        if team:
            found.add(team)
    return found


def _work(entry: Entry[Scenario], steps: set[str], allocations: set[str], broken_pipelines: set[str], from_state: bool,
          ref: str, path: tuple, *, allocation_ok: bool = True) -> Iterator[Diagnostic]:
    """A step id or an allocation name a scenario writes."""
    if "/" in ref:
        if ref not in steps and ref.partition("/")[0] not in broken_pipelines:
            yield entry.doc.diagnostic(d.E001, f"scenario {entry.name!r} names step {ref!r}, which is not "
                                       "in the inputs" + did_you_mean(ref, steps, "steps"), path)
    elif not allocation_ok:
        yield entry.doc.diagnostic(d.E001, f"scenario {entry.name!r}: {ref!r} is not a step id; write "
                                   "<pipeline>/<step>" + did_you_mean(ref, steps, "steps"), path)
    elif not from_state and ref not in allocations:
        yield entry.doc.diagnostic(d.E001, f"scenario {entry.name!r} names allocation {ref!r}, which is "
                                   "not among the inputs' Allocations (start from a state file to name "
                                   "one of its allocations)" + did_you_mean(ref, allocations | steps,
                                                                            "allocations"), path)



@check(d.E001)
def scenario_references(ctx: Context) -> Iterator[Diagnostic]:
    """E001: every step (``<pipeline>/<step>``), pipeline, team and pool a scenario
    names is in the inputs; a name without ``/`` in ``durations``, ``state``,
    ``never_preempted`` or ``no_preemption_loop`` is a running allocation, checked
    against the Allocation documents unless the scenario starts from a state file
    (whose allocations only ``poolc test`` reads)."""
    config = ctx.config
    steps = step_ids(ctx)
    allocations = set(config.names("Allocation"))
    broken_pipelines = set(config.broken.get("Pipeline", {}))
    known_teams = teams(config, ctx.component_names)
    for _, entry in sorted(config.scenarios.items()):
        spec = entry.obj.spec
        from_state = spec.start.state is not None

        known = (entry, steps, allocations, broken_pipelines, from_state)
        for key in spec.durations:
            yield from _work(*known, key, ("spec", "durations", key))
        for i, arrival in enumerate(spec.arrivals):
            if arrival.step is not None:
                yield from _work(*known, arrival.step, ("spec", "arrivals", i, "step"), allocation_ok=False)
            elif arrival.pipeline not in config.pipelines and arrival.pipeline not in broken_pipelines:
                yield entry.doc.diagnostic(d.E001, f"scenario {entry.name!r} names pipeline {arrival.pipeline!r}, "
                                           "which is not in the inputs"
                                           + did_you_mean(str(arrival.pipeline), config.names("Pipeline"),
                                                          "pipelines"), ("spec", "arrivals", i, "pipeline"))
        for i, expectation in enumerate(spec.expect):
            kind = expectation.kind
            body = getattr(expectation, kind)
            path = ("spec", "expect", i, kind)
            if getattr(body, "step", None) is not None:
                yield from _work(*known, body.step, path + ("step",),
                                 allocation_ok=kind != "starts_within")
            if kind == "gpu_hours" and body.team not in known_teams:
                yield entry.doc.diagnostic(d.E001, f"scenario {entry.name!r} names team {body.team!r}, which no "
                                           "pipeline label or component is" + did_you_mean(body.team, known_teams,
                                                                                           "teams"), path + ("team",))
            if kind == "utilisation" and body.pool not in config.pools and not config.is_broken("ResourcePool",
                                                                                                   body.pool):
                yield entry.doc.diagnostic(d.E001, f"scenario {entry.name!r} names pool {body.pool!r}, which is "
                                           "not in the inputs" + did_you_mean(body.pool, config.names("ResourcePool"),
                                                                              "pools"), path + ("pool",))
