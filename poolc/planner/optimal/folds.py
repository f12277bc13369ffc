"""Two tiers in one solve: a weighted objective that is exactly lexicographic.

Why: one proof for a pair of tiers is often shorter than two (docs/solver.md,
"Start rank and pool preference in one solve" and "Each preempted-at-v tier
with the next admission tier in one solve"). The weight keeps the order exact,
and the folded bound divided by the weight still bounds the first tier, so an
unproven fold loses nothing.
"""

from __future__ import annotations

from .. import cpsat as cp_model  # the CP-SAT API, without numpy and pandas (cpsat.py)
from .built import Tier, linear, most


def fold_count(tier: Tier, after: Tier | None) -> int:
    """The weight that folds a "preempted at v" tier and the "admitted at p" tier
    after it into one solve (`folded`), or 0 when they are not folded.

    Exact: the weight is one more than the most ``after`` can admit, so the folded
    objective orders solutions by the first tier, then by the second. It is solved
    on the restricted copy of ``after`` (admissions below p only in Z, victims
    below p preempted), looser than the first tier's own (below the priority
    above v; below v): loosening keeps some optimum of every tier in the copy
    (`hints.restricted`), so the lexicographic optimum of the pair is the one the
    two tiers would reach apart. Where the fold is not proven within
    `SolverSettings.count_fold_quick`, the first is solved alone on the same
    copy, hinted with what the fold found, and the second on its own copy, as if
    not folded (`retries.count_fold_fallback`)."""
    if not tier.fold_next or after is None or not tier.terms or not after.terms:
        return 0
    weight = most(after.terms) + 1
    return weight if weight * (most(tier.terms) + 1) < 2**50 else 0


def fold_weight(tier: Tier, after: Tier | None) -> int:
    """The weight that makes ``tier * weight + after`` lexicographic (``after`` lies in
    [0, its trivial bound]), or 0 when the tier is not folded or the weighted
    objective would leave exact double arithmetic (2**50)."""
    if not tier.fold_next or after is None or not tier.terms or not after.terms:
        return 0
    if not (tier.maximize and after.maximize):
        return 0
    weight = after.trivial_bound + 1
    return weight if weight * (tier.trivial_bound + 1) < 2**50 else 0


def folded(expr: cp_model.LinearExpr, tier: Tier, after: Tier, weight: int) -> cp_model.LinearExpr:
    """``tier * weight + g`` in ``tier``'s direction, g = ``after`` (same direction)
    or ``weight - 1 - after`` (opposite): g lies in [0, weight) and is better where
    ``after`` is, so the objective is lexicographic, and a bound B of it bounds
    the tier by B // weight either way (maximizing: tier * weight <= B; minimizing:
    tier * weight >= B - (weight - 1), whose ceiling over weight is B // weight)."""
    if tier.maximize == after.maximize:
        return expr * weight + linear(after.terms)
    return expr * weight + (weight - 1) - linear(after.terms)
