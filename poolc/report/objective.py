"""The optimal strategy's objective in words: what each tier maximised or
minimised, in the terms a platform user knows (docs/planning.md#tiers), shared by
the text plan and the pull-request comment."""

from __future__ import annotations

from ..domain.plan import SolverInfo, Tier

MAXIMISED, MINIMISED = "maximised", "minimised"


def _words(tier: Tier) -> tuple[str, str]:
    if tier.kind == "in-share":
        return MAXIMISED, "steps admitted inside their policy's free reserved share"
    if tier.kind == "admitted":
        return MAXIMISED, f"steps admitted at priority {tier.priority}"
    if tier.kind == "preempted":
        return MINIMISED, f"running allocations preempted at priority {tier.priority}"
    if tier.kind == "arrival":
        return MAXIMISED, "arrival order: sum over admitted steps of (steps - arrival rank)"
    if tier.kind == "start-rank":
        return MAXIMISED, "most recently started preempted first: sum of their start ranks"
    return MAXIMISED, "pool preference: higher-priority policy, then pool name"


def objective_rows(solver: SolverInfo) -> list[tuple[str, str, int]]:
    """(maximised | minimised, what, value) per tier, in the order they were
    optimised; [] when the plan does not say what its values count."""
    if not solver.tiers or len(solver.tiers) != len(solver.objective):
        return []
    return [(*_words(tier), value) for tier, value in zip(solver.tiers, solver.objective, strict=True)]
