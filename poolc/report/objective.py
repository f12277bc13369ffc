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


def proofs(solver: SolverInfo) -> list[str]:
    """Per tier, "proven" or its bound and gap, when some tier is not proven; []
    when every tier is (the status says so) or the plan has no bounds."""
    if not solver.tiers or len(solver.tiers) != len(solver.objective) \
            or all(t.bound is None or t.bound == v for t, v in zip(solver.tiers, solver.objective, strict=True)):
        return []
    return ["" if t.bound is None else "proven" if t.bound == v else f"bound {t.bound}, gap {t.gap(v):.3g}"
            for t, v in zip(solver.tiers, solver.objective, strict=True)]


def unproven_line(solver: SolverInfo) -> str | None:
    """One sentence naming each tier not proven, with its value, bound and gap;
    None when every tier is proven (or the plan has no bounds)."""
    if not proofs(solver):
        return None
    parts = [f"{what} {value} (bound {t.bound}, gap {t.gap(value):.3g})"
             for t, (_, what, value) in zip(solver.tiers, objective_rows(solver), strict=True)
             if t.bound is not None and t.bound != value]
    return "Not proven optimal, stopped by the solver's budget: " + "; ".join(parts) + "."
