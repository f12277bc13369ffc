"""`solve`: the optimal strategy from a Problem to a Solution, part by part.

Independent parts (`planner/decompose.py`): pools that no request class can
choose between are planned as separate models, one after the other, each with
the global tier list; tier values add up. Exact, and smaller models prove
faster. After the last part, what is left of the budget reopens the first tier
not proven (`reopening`), and the counts are handed out (`hand_out`).
"""

from __future__ import annotations

from ...domain.borrowing import borrowed_parts
from ...domain.problem import Problem
from ..decompose import pool_groups
from ..solution import Solution
from . import loop, reopening
from .build import build
from .built import Built, Layout
from .classes import RequestClass, VictimClass, request_classes, victim_classes
from .hand_out import hand_out
from .run import Budget, Progress, Run, SolveCost
from .settings import SolverSettings
from .tiers import layout as tier_layout

Part = tuple[list[str], list[RequestClass], list[VictimClass]]


def solve(problem: Problem, *, max_deterministic_time: float = 60.0, progress: Progress | None = None,
          decompose: bool = True, settings: SolverSettings | None = None,
          tiers_of: Problem | None = None) -> Solution:
    """Plan `problem` with the lexicographic objective (docs/planning.md#tiers); see
    the package docstring. ``decompose=False`` solves one model for all pools (for
    tests and benchmarks: same tier values, slower); ``settings``: the tuning
    (default: `SolverSettings()`). ``tiers_of``: a larger problem that ``problem``
    is some independent parts of (the forecast's re-plan of the pools a completion
    freed): the tier list is that problem's, so the parts are planned exactly as a
    plan of the whole would plan them (a priority only the other parts have still
    splits the victim tiers)."""
    settings = SolverSettings() if settings is None else settings
    layout, parts = models(problem, settings, decompose, tiers_of)
    run = Run(settings, Budget(max_deterministic_time, sum(1 for _, b in parts for t in b.tiers if t.active)),
              progress)
    results = []
    for i, (_, b) in enumerate(parts, 1):
        label = f"part {i}/{len(parts)} ({len(b.classes)} classes): " if len(parts) > 1 else ""
        results.append((b, loop.solve_part(run, b, label)))
    budget = run.budget
    while settings.reopen and budget.total - budget.spent > 1e-3:
        unproven = [(b, r, k) for b, r in results
                    for k, (v, bd) in enumerate(zip(r.values, r.bounds, strict=True), 1) if v != bd]
        if not unproven or not reopening.reopen(run, unproven[0][0], unproven[0][1], unproven[0][2]):
            break
    objective, bounds = add_up([r.values for _, r in results]), add_up([r.bounds for _, r in results])
    if not results:
        objective = bounds = [0] * (1 + len(layout.prios) + len(layout.vprios) + 3)
    gap = max([abs(bd - v) / max(1, abs(v)) for bd, v in zip(bounds, objective, strict=True)], default=0.0)
    solution = hand_out(problem, results, objective, "OPTIMAL" if gap == 0 else "FEASIBLE", gap)
    solution.bounds = bounds
    if progress is not None:
        report_costs(progress, budget.solves)
    return solution


def report_costs(progress: Progress, solves: list[SolveCost]) -> None:
    """The solves a maintainer should look at (`SolveCost.suspicious`), one line each,
    after the totals: CP-SAT's deterministic clock undercounts some work (presolve
    counts nothing), so a budget in deterministic seconds does not bound CPU."""
    cpu, det = sum(s.cpu for s in solves), sum(s.deterministic for s in solves)
    progress(f"{len(solves)} CP-SAT solves: {det:.2f} deterministic s, {cpu:.2f} CPU s")
    for s in solves:
        if s.suspicious():
            progress(f"  slow solve: {s.what}: {s.cpu:.2f} CPU s for {s.deterministic:.3f} deterministic s")


def models(problem: Problem, settings: SolverSettings, decompose: bool = True,
           tiers_of: Problem | None = None) -> tuple[Layout, list[tuple[Part, Built]]]:
    """The tier layout every part shares (``tiers_of``'s, where given), and each part
    with its model (one part for all pools when not ``decompose``)."""
    classes = request_classes(problem)
    victims = victim_classes(problem, borrowed_parts(problem))
    if tiers_of is None:
        layout = tier_layout(problem, classes, victims)
    else:
        layout = tier_layout(tiers_of, request_classes(tiers_of), victim_classes(tiers_of, borrowed_parts(tiers_of)))
    parts = (split(problem, classes, victims) if decompose
             else [(sorted(p.name for p in problem.pools), classes, victims)])
    return layout, [(part, build(problem, part[1], part[2], layout, part[0], settings)) for part in parts]


def split(problem: Problem, classes: list[RequestClass], victims: list[VictimClass]) -> list[Part]:
    """Independent parts (decompose.py), each with its classes and victim classes in
    their canonical order; parts with nothing to decide are left out."""
    groups = pool_groups((p.name for p in problem.pools), ([q.pool for q in c.policies] for c in classes))
    part_of = {pool: i for i, group in enumerate(groups) for pool in group}
    parts: list[Part] = [(g, [], []) for g in groups]
    for cls in classes:
        parts[part_of[cls.policies[0].pool]][1].append(cls)
    for vc in victims:
        parts[part_of[vc.policy.pool]][2].append(vc)
    return [part for part in parts if part[1] or part[2]]


def add_up(rows: list[list[int]]) -> list[int]:
    """Tier values (or bounds) of the whole: the sum over the parts."""
    return [sum(column) for column in zip(*rows, strict=True)]
