"""Rules on running allocations (A001, A002, N002 for an allocation's pool)."""

from __future__ import annotations

from collections.abc import Iterator

from .. import diagnostics as d
from ..diagnostics import Diagnostic
from . import Context, check


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insert, delete, substitute one character)."""
    row = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        diagonal, row[0] = row[0], i
        for j, char_b in enumerate(b, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (char_a != char_b))
    return row[-1]


def did_you_mean(name: str, known: list[str]) -> str:
    """' did you mean X?' for the closest known name within a third of its length
    (at least 2 edits), else the known names; a typo should come with its fix."""
    scored = sorted((edit_distance(name, k), k) for k in known)
    if scored and scored[0][0] <= max(2, len(name) // 3):
        return f"; did you mean {scored[0][1]!r}?"
    return f" (components: {', '.join(sorted(known))})" if known else " (no stack defines any component)"


@check
def allocation_references(ctx: Context) -> Iterator[Diagnostic]:
    """N002 / A001: an allocation's pool exists and its subject is a component of some
    stack (a typo would hold capacity for nobody, so it is an error with the closest
    component name); a known subject should have a policy on that pool (otherwise it
    keeps its capacity and is never preempted: a warning)."""
    policies = {(e.obj.spec.subject, e.obj.spec.pool) for e in ctx.config.policies.values()}
    for _, entry in sorted(ctx.config.allocations.items()):
        spec = entry.obj.spec
        if spec.pool not in ctx.config.pools:
            yield entry.doc.diagnostic(d.N002, f"allocation {entry.name!r} runs on pool {spec.pool!r}, which is "
                                       "not defined in the files given", ("spec", "pool"))
        if spec.subject not in ctx.components:
            yield entry.doc.diagnostic(d.N002, f"allocation {entry.name!r} names subject {spec.subject!r}, which "
                                       "is no component of any stack given"
                                       + did_you_mean(spec.subject, list(ctx.components)), ("spec", "subject"))
        elif spec.pool in ctx.config.pools and (spec.subject, spec.pool) not in policies:
            yield entry.doc.diagnostic(d.A001, f"subject {spec.subject!r} has no policy on pool {spec.pool!r}: "
                                       "this allocation keeps its capacity and is never preempted",
                                       ("spec", "subject"))


@check
def pools_over_capacity(ctx: Context) -> Iterator[Diagnostic]:
    """A002 (warning): running allocations already hold more than a pool's capacity on
    a key; nothing that needs that key is admitted there until they finish."""
    for pool in ctx.problem.pools:
        held: dict[str, int] = {}
        for alloc in ctx.problem.running:
            if alloc.pool == pool.name:
                for key, value in alloc.holds.items():
                    held[key] = held.get(key, 0) + value
        for key, cap in pool.capacity.items():
            if held.get(key, 0) > cap:
                entry = ctx.config.pools[pool.name]
                yield entry.doc.diagnostic(d.A002, f"running allocations hold {key}={held[key]} on pool "
                                           f"{pool.name!r}, above its capacity {key}={cap}",
                                           ("spec", "capacity"), key=True)
