"""The `optimal` strategy (docs/planning.md#tiers): against an exhaustive brute force on
random tiny platforms, and on hand-made scenarios with exact expected plans."""

from __future__ import annotations

import dataclasses
import os
import random
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sweep import blocks

from poolc.domain.problem import PolicyRule, Pool, Problem, Request, Running, start_ranks
from poolc.planner.decompose import pool_groups
from poolc.planner.objective import objective_tiers
from poolc.planner.optimal import SolverSettings, solve
from poolc.planner.solution import Solution

sys.path.insert(0, str(Path(__file__).parent))
import bruteforce  # noqa: E402

T0 = datetime(2024, 5, 1, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[1]


def at(minutes: int | None) -> datetime | None:
    return None if minutes is None else T0 + timedelta(minutes=minutes)


def policy(name, subject, pool, priority, reserved=None, limit=None, capacity=None) -> PolicyRule:
    """A policy whose limit map holds every metered key (default: the capacity)."""
    full = dict(capacity or {})
    full.update(limit or {})
    return PolicyRule(name, subject, pool, priority, dict(reserved or {}), full)


def problem(pools, policies, requests, running=()) -> Problem:
    return Problem(tuple(pools), tuple(policies), tuple(requests), tuple(start_ranks(list(running))))


def req(rid, requester, rank, preemptible=True, **demand) -> Request:
    demand.setdefault("step_run", 1)
    return Request(rid, requester, demand, preemptible, rank)


def run(name, subject, pool, started=0, preemptible=True, **holds) -> Running:
    return Running(name, subject, pool, preemptible, holds, at(started))


# ------------------------------------------------------------ random tiny platforms

def random_problem(seed: int) -> Problem:
    """2 pools at most, up to 3 subjects, <= 5 requests from <= 3 shapes (so identical
    requests aggregate), <= 3 running allocations that often borrow or overflow."""
    rng = random.Random(seed)
    pools = []
    for name in ("p1", "p2")[: rng.choice([1, 2, 2])]:
        cap = {"gpu": rng.randint(1, 4)}
        if rng.random() < 0.5:
            cap["mcpu"] = rng.randint(2, 6)
        if rng.random() < 0.3:
            cap["step_run"] = rng.randint(1, 3)
        if rng.random() < 0.2:
            cap["tpu"] = rng.randint(1, 2)
        pools.append(Pool(name, cap))
    subjects = ["a", "b", "c"][: rng.randint(1, 3)]
    policies = []
    for pool in pools:
        left = dict(pool.capacity)
        for s in subjects:
            if rng.random() < 0.75 or not policies:
                rsv, lim = {}, {}
                for k, c in pool.capacity.items():
                    r = rng.randint(0, left[k]) if rng.random() < 0.6 else 0
                    if r:
                        rsv[k] = r
                        left[k] -= r
                    lim[k] = rng.randint(max(r, 1), c) if rng.random() < 0.3 else c
                policies.append(PolicyRule(f"{s}-{pool.name}", s, pool.name, rng.choice([0, 5, 10]),
                                           rsv, lim))
    requesters = subjects + (["nobody"] if rng.random() < 0.1 else [])
    shapes = []
    for _ in range(rng.randint(1, 3)):
        d = {"step_run": 1}
        for k, hi, chance in (("gpu", 2, 0.7), ("mcpu", 3, 0.4), ("tpu", 1, 0.1), ("memory_mb", 5, 0.3)):
            if rng.random() < chance:
                d[k] = rng.randint(1, hi)
        shapes.append((rng.choice(requesters), d, rng.random() < 0.8))
    requests = []
    ranks = list(range(rng.randint(1, 5)))
    rng.shuffle(ranks)
    for i, rank in enumerate(ranks):
        who, d, pre = rng.choice(shapes)          # shapes repeat: identical requests aggregate
        requests.append(Request(f"pipe/s{i}", who, dict(d), pre, rank))
    running = []
    contended = rng.random() < 0.5       # the pool is full of small, preemptible borrowers
    for i in range(rng.randint(1 if contended else 0, 3)):
        pool = rng.choice(pools)
        holds = {k: rng.randint(1, max(1, c // 2) if contended else c) for k, c in pool.capacity.items()}
        started = rng.choice([None, 1, 2, 3, 5, 8])
        here = sorted((q.priority, q.subject) for q in policies if q.pool == pool.name)
        owner = here[0][1] if contended and here and rng.random() < 0.7 else rng.choice(subjects + ["ghost"])
        running.append(Running(f"run-{i}", owner, pool.name,
                               contended or rng.random() < 0.8, holds, at(started)))
    return Problem(tuple(pools), tuple(policies), tuple(requests), tuple(start_ranks(running)))


def random_contention_problem(seed: int) -> Problem:
    """One or two full pools of small borrowers: every instance is about who gets preempted."""
    rng = random.Random(seed)
    pools = [Pool(n, {"gpu": rng.randint(2, 4), "mcpu": rng.randint(2, 4)})
             for n in ("p1", "p2")[: rng.randint(1, 2)]]
    prio = {s: p for s, p in zip("abc", rng.sample([0, 3, 7, 10], 3), strict=True)}
    policies = []
    for pool in pools:
        left = dict(pool.capacity)
        for s in "abc":
            rsv = {}
            for k in pool.capacity:
                r = rng.randint(0, min(1, left[k]))
                if r:
                    rsv[k] = r
                    left[k] -= r
            policies.append(policy(f"{s}-{pool.name}", s, pool.name, prio[s], rsv, capacity=pool.capacity))
    running = []
    for pool in pools:
        for i in range(rng.randint(1, 2)):
            if len(running) < 3:
                running.append(Running(f"{pool.name}-run-{i}", rng.choice("abc"), pool.name,
                                       rng.random() < 0.85,
                                       {"gpu": rng.randint(1, 2), "mcpu": rng.randint(0, 2)},
                                       at(rng.choice([None, 1, 4, 6]))))
    shapes = [(rng.choice("abc"), {"gpu": rng.randint(1, 2), "mcpu": rng.randint(0, 1), "step_run": 1},
               rng.random() < 0.8) for _ in range(rng.randint(1, 3))]
    ranks = list(range(rng.randint(1, 5)))
    rng.shuffle(ranks)
    requests = []
    for i, rank in enumerate(ranks):
        who, d, pre = rng.choice(shapes)
        requests.append(Request(f"pipe/s{i}", who, dict(d), pre, rank))
    return Problem(tuple(pools), tuple(policies), tuple(requests), tuple(start_ranks(running)))


def check_against_bruteforce(p: Problem, settings: SolverSettings | None = None) -> None:
    sol = solve(p, settings=settings)
    assert sol.status == "OPTIMAL" and sol.gap == 0.0
    preempted = set(sol.preempted)
    assert bruteforce.violations(p, sol.admitted, preempted) == []
    assert bruteforce.vector(p, sol.admitted, preempted) == sol.objective
    assert sol.objective == bruteforce.optimum(p, set(sol.admitted))
    pools = {q.name: q.pool for q in p.policies}
    victims = {a.name: a.pool for a in p.running}
    for name, made_room_for in sol.preempted.items():
        assert made_room_for == sorted(made_room_for)
        assert all(pools[sol.admitted[rid]] == victims[name] for rid in made_room_for)


@pytest.mark.parametrize("block", blocks(8))
def test_matches_bruteforce_on_random_platforms(block: int) -> None:
    for seed in range(block * 40, block * 40 + 40):
        try:
            check_against_bruteforce(random_problem(seed))
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}: {exc}") from exc


def test_the_plan_s_tier_labels_match_the_objective_on_random_platforms() -> None:
    """The words the plan prints for each objective value (planner.objective) are
    derived apart from the solver; on 200 random platforms they name the brute
    force's tiers, one per value the solver returns."""
    words = {"in-share": "Z", "arrival": "fifo", "start-rank": "start", "preference": "pref"}
    for seed in range(200):
        p = random_problem(seed)
        labels = [words.get(t.kind) or f"{'admit' if t.kind == 'admitted' else 'preempt'}@{t.priority}"
                  for t in objective_tiers(p)]
        assert labels == [name for name, _ in bruteforce.layout(p)], seed
        assert len(labels) == len(solve(p).objective), seed


@pytest.mark.parametrize("block", blocks(4))
def test_matches_bruteforce_under_contention(block: int) -> None:
    for seed in range(block * 40, block * 40 + 40):
        try:
            check_against_bruteforce(random_contention_problem(seed))
        except AssertionError as exc:
            raise AssertionError(f"contention seed {seed}: {exc}") from exc


def random_split_problem(seed: int) -> Problem:
    """Three or four pools; each subject has policies on one or two of them, so the
    platform often falls into independent parts (and sometimes does not)."""
    rng = random.Random(seed)
    pools = [Pool(f"p{i}", {"gpu": rng.randint(1, 4), "mcpu": rng.randint(2, 6)}) for i in range(rng.randint(3, 4))]
    policies = []
    for s in "abcd":
        for pool in rng.sample(pools, rng.choice([1, 1, 2])):
            policies.append(policy(f"{s}-{pool.name}", s, pool.name, rng.choice([0, 5, 10]),
                                   {"gpu": rng.randint(0, 1)}, capacity=pool.capacity))
    running = [run(f"r{i}", rng.choice("abcd"), rng.choice(pools).name, started=rng.randint(0, 9),
                   preemptible=rng.random() < 0.85, gpu=rng.randint(1, 2), mcpu=rng.randint(0, 2))
               for i in range(rng.randint(0, 4))]
    requests = [req(f"pipe/s{i}", rng.choice("abcd"), i, rng.random() < 0.8, gpu=rng.randint(0, 2),
                    mcpu=rng.randint(1, 2)) for i in range(rng.randint(1, 9))]
    return problem(pools, policies, requests, running)


@pytest.mark.parametrize("block", blocks(4))
def test_independent_parts_agree_with_the_single_model(block: int) -> None:
    """Solving the parts one by one gives the same tier values as one model of every
    pool, and a plan that obeys every hard rule."""
    for seed in range(block * 30, block * 30 + 30):
        p = random_split_problem(seed)
        split, whole = solve(p), solve(p, decompose=False)
        assert split.status == whole.status == "OPTIMAL", f"seed {seed}"
        assert split.objective == whole.objective, f"seed {seed}"
        assert bruteforce.violations(p, split.admitted, set(split.preempted)) == [], f"seed {seed}"
        assert bruteforce.vector(p, split.admitted, set(split.preempted)) == split.objective, f"seed {seed}"


def random_crowded_problem(seed: int) -> Problem:
    """Past brute-force size: two or three pools kept busy by borrowers of several
    priorities (negative ones too), a few dozen requests of a few shapes."""
    rng = random.Random(seed)
    pools = [Pool(f"p{i}", {"gpu": rng.randint(4, 8), "mcpu": rng.randint(6, 12)}) for i in range(rng.randint(2, 3))]
    policies = []
    for s in "abcd":
        for pool in rng.sample(pools, rng.randint(1, len(pools))):
            policies.append(policy(f"{s}-{pool.name}", s, pool.name, rng.choice([-5, 0, 5, 10]),
                                   {"gpu": rng.randint(0, 2), "mcpu": rng.randint(0, 3)}, capacity=pool.capacity))
    subjects = sorted({q.subject for q in policies})
    running = [run(f"r{i}", rng.choice(subjects), rng.choice(pools).name, started=rng.randint(0, 20),
                   preemptible=rng.random() < 0.85, gpu=rng.randint(1, 2), mcpu=rng.randint(1, 3))
               for i in range(rng.randint(3, 10))]
    shapes = [{"gpu": rng.randint(0, 2), "mcpu": rng.randint(1, 3)} for _ in range(4)]
    requests = [req(f"pipe/s{i:02d}", rng.choice(subjects), i, rng.random() < 0.8, **rng.choice(shapes))
                for i in range(rng.randint(10, 40))]
    return problem(pools, policies, requests, running)


def assert_same_tiers(p: Problem, seed: int, *, checked: Solution, other: Solution) -> None:
    """Two ways of solving ``p`` reach the same proven tier values, and ``checked``
    keeps every hard rule and scores that vector under the brute force."""
    assert checked.status == other.status == "OPTIMAL", f"seed {seed}"
    assert checked.objective == other.objective, f"seed {seed}"
    assert bruteforce.violations(p, checked.admitted, set(checked.preempted)) == [], f"seed {seed}"
    assert bruteforce.vector(p, checked.admitted, set(checked.preempted)) == checked.objective, f"seed {seed}"


@pytest.mark.parametrize("block", blocks(2))
def test_restricted_count_tiers_agree_with_the_plain_model(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each count tier is solved on a copy without the admissions and victims it
    cannot count yet (hints.restricted); solving every tier on the model itself
    gives the same tier values."""
    from poolc.planner.optimal import hints

    restricted = [solve(random_crowded_problem(seed)) for seed in range(block * 25, block * 25 + 25)]

    def plain(b, floor, vfloor, assignment):  # type: ignore[no-untyped-def]
        hints.hint(b, assignment)
        return b.model, assignment

    monkeypatch.setattr(hints, "restricted", plain)
    for seed, sol in zip(range(block * 25, block * 25 + 25), restricted, strict=True):
        p = random_crowded_problem(seed)
        assert_same_tiers(p, seed, checked=sol, other=solve(p))


def agree_with(before: list[Solution], contention: int, settings: SolverSettings) -> None:
    """The crowded problems solved now with ``settings`` get every tier of
    ``before`` (solved by default, seed by seed), and the first ``contention``
    contention problems the brute force's plan."""
    for seed, sol in enumerate(before):
        p = random_crowded_problem(seed)
        assert_same_tiers(p, seed, checked=solve(p, settings=settings), other=sol)
    for seed in range(contention):
        check_against_bruteforce(random_contention_problem(seed), settings)


def count_calls(monkeypatch: pytest.MonkeyPatch, owner: object, name: str,
                counts: Callable[..., bool] = lambda *_, **__: True) -> list[int]:
    """While the test runs, counts (in the one item of the list returned) the calls
    of ``owner.name`` that ``counts`` accepts; the calls themselves go through."""
    seen = [0]
    real = getattr(owner, name)

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen[0] += bool(counts(*args, **kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return seen


def test_a_fold_not_proven_quickly_is_retried_with_presolve(monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-rank tier is solved with pool preference folded in for at most
    fold_quick deterministic seconds without presolve, then once more with it; with
    no time for the first attempt at all, every tier still gets the value of the
    quick folded solve and of the brute force, and the retry is what solved it."""
    from poolc.planner.optimal import attempts

    folded = [solve(random_crowded_problem(seed)) for seed in range(30)]
    retried = count_calls(monkeypatch, attempts, "solve_again", lambda *_, kind, presolve, **__: kind == "rank"
                          and presolve)
    agree_with(folded, contention=60, settings=SolverSettings(fold_quick=0.0))
    assert retried[0] >= 30


def test_the_polished_start_rank_hint_keeps_every_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-rank fold of a large part is hinted with its own objective solved
    with the admissions fixed (loop.polished); on every part (polish_from 0)
    the tiers are those of the plain hint and of the brute force."""
    from poolc.planner.optimal import loop

    plain = [solve(random_crowded_problem(seed)) for seed in range(30)]
    polished = count_calls(monkeypatch, loop, "polished")
    agree_with(plain, contention=60, settings=SolverSettings(polish_from=0))
    assert polished[0] >= 30


def test_the_fifo_attempts_pool_their_best_answer_and_tightest_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no time for the first FIFO attempt nor the presolve retry, FIFO goes
    through all three attempts; what they found together (the best answer of any,
    the tightest bound of any) still gives every tier the brute force's value, and
    a FIFO tier is reported proven only when that answer meets that bound."""
    from poolc.planner.optimal import attempts

    settings = SolverSettings(fifo_quick=0.0, fifo_plain=0.0)
    pooled: list[tuple[int | None, int | None]] = []
    real = attempts.Attempts.best

    def recorded(self, last):  # type: ignore[no-untyped-def]
        pooled.append((self.value, self.bound))
        return real(self, last)

    monkeypatch.setattr(attempts.Attempts, "best", recorded)
    for seed in range(60):
        check_against_bruteforce(random_contention_problem(seed), settings)
    assert len(pooled) >= 30
    assert all(value is not None and bound is not None and value <= bound for value, bound in pooled)


def count_folds(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts, while the test runs, the count-tier pairs folded into one solve
    ("folded"), and the restricted copies solved ("copies")."""
    from poolc.planner.optimal import folds, hints

    seen = {"folded": 0, "copies": 0}
    folded, restricted = folds.folded, hints.restricted

    def folding(expr, tier, after, weight):  # type: ignore[no-untyped-def]
        seen["folded"] += not tier.maximize and after.maximize
        return folded(expr, tier, after, weight)

    def copying(*args):  # type: ignore[no-untyped-def]
        seen["copies"] += 1
        return restricted(*args)

    monkeypatch.setattr(folds, "folded", folding)
    monkeypatch.setattr(hints, "restricted", copying)
    return seen


@pytest.mark.parametrize("block", blocks(2))
def test_folded_count_tiers_agree_with_the_tiers_apart(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each "preempted at v" tier is solved with the "admitted at p" tier after it
    folded in (folds.fold_count), on the second one's looser restricted copy;
    solving every count tier apart gives the same tier values, the brute force
    agrees on tiny platforms, and the folds are proven (one restricted copy per
    pair instead of two: fewer copies than count tiers solved apart)."""
    seeds, tiny = range(block * 25, block * 25 + 25), range(block * 40, block * 40 + 40)
    seen = count_folds(monkeypatch)
    apart_settings = SolverSettings(fold_counts=False)
    apart = [solve(random_crowded_problem(seed), settings=apart_settings) for seed in seeds]
    seen.update(copies=0)
    for seed in tiny:
        solve(random_contention_problem(seed), settings=apart_settings)
    assert seen["folded"] == 0
    copies_apart = seen["copies"]
    for seed, sol in zip(seeds, apart, strict=True):
        p = random_crowded_problem(seed)
        assert_same_tiers(p, seed, checked=solve(p), other=sol)
    assert seen["folded"] > 25
    seen.update(folded=0, copies=0)
    for seed in tiny:
        try:
            check_against_bruteforce(random_contention_problem(seed))
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}: {exc}") from exc
    assert seen["folded"] > 10
    assert seen["copies"] == copies_apart - seen["folded"]      # every fold proven at once


def test_a_count_fold_not_proven_quickly_falls_back_to_the_tiers_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no time for a folded pair of count tiers (count_fold_quick = 0), the
    first tier is solved alone on the pair's copy, hinted with what the fold found,
    and the second on its own copy: the tier values are those of the proven folds
    and of the brute force, and as many copies are solved as with no fold at all."""
    folded = [solve(random_crowded_problem(seed)) for seed in range(25)]
    seen = count_folds(monkeypatch)
    for seed in range(40):
        solve(random_contention_problem(seed), settings=SolverSettings(fold_counts=False))
    copies_apart = seen["copies"]
    settings = SolverSettings(count_fold_quick=0.0)
    seen.update(copies=0)
    for seed in range(40):
        check_against_bruteforce(random_contention_problem(seed), settings)
    assert seen["folded"] > 10 and seen["copies"] == copies_apart
    for seed, sol in enumerate(folded):
        p = random_crowded_problem(seed)
        assert_same_tiers(p, seed, checked=solve(p, settings=settings), other=sol)


def test_budget_left_reopens_the_tiers_not_proven(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no share at all for any tier (nothing is solved on the way), what is
    left of the budget goes to the first tier not proven, again and again
    (reopening.reopen): every tier still gets the value of the plain solve and of
    the brute force, proven, and the plan keeps every hard rule."""
    from poolc.planner.optimal import reopening, run

    plain = [solve(random_crowded_problem(seed)) for seed in range(20)]
    monkeypatch.setattr(run.Budget, "share", lambda self: 0.0)
    reopened = count_calls(monkeypatch, reopening, "reopen")
    agree_with(plain, contention=40, settings=SolverSettings())
    assert reopened[0] >= 20
    assert solve(random_crowded_problem(0), settings=SolverSettings(reopen=False)).status == "FEASIBLE"


FIRST, SECOND = [(0, 1), (1, 2)], [(1, 1), (2, 3)]      # (variable, coefficient) of two tiers on x0, x1, x2


def lexicographic_optimum(ub: list[int], cx: list[int], cap: int, least: int, first_max: bool,
                          second_max: bool) -> tuple[int, int]:
    """(first tier, second tier) at the lexicographic optimum over
    0 <= x <= ub, cx . x <= cap, x0 + x1 >= least, by enumeration."""
    def value(terms: list[tuple[int, int]], x: tuple[int, ...]) -> int:
        return sum(c * x[i] for i, c in terms)

    points = [(a, b, c) for a in range(ub[0] + 1) for b in range(ub[1] + 1) for c in range(ub[2] + 1)
              if cx[0] * a + cx[1] * b + cx[2] * c <= cap and a + b >= least]
    best = max(points, key=lambda x: ((1 if first_max else -1) * value(FIRST, x),
                                      (1 if second_max else -1) * value(SECOND, x)))
    return value(FIRST, best), value(SECOND, best)


@pytest.mark.parametrize("seed", range(6))
def test_a_folded_objective_is_lexicographic_and_bounds_the_first_tier(seed: int) -> None:
    """folds.folded on a small model, both tiers in both directions: the folded
    optimum is the lexicographic one (found by enumeration), and the solver's
    bound of it, divided by the weight, is the first tier's optimum."""
    from poolc.planner import cpsat
    from poolc.planner.optimal import attempts, built, folds

    rng = random.Random(seed)
    for first_max in (False, True):
        for second_max in (False, True):
            ub, cx = [rng.randint(1, 4) for _ in range(3)], [rng.randint(1, 3) for _ in range(3)]
            cap, least = rng.randint(3, 9), rng.randint(0, 1)          # x0 = 1 is always feasible
            model = cpsat.CpModel()
            xs = [model.new_int_var(0, u, f"x{i}") for i, u in enumerate(ub)]
            model.add(built.linear(list(zip(xs, cx, strict=True))) <= cap)
            model.add(xs[0] + xs[1] >= least)
            first = built.Tier("a", first_max, [(xs[i], c) for i, c in FIRST], lambda vals: 0, 0)
            second = built.Tier("b", second_max, [(xs[i], c) for i, c in SECOND], lambda vals: 0, 0)
            weight = built.most(second.terms) + 1
            (model.maximize if first_max else model.minimize)(
                folds.folded(built.linear(first.terms), first, second, weight))
            solver = attempts.cp_solver(SolverSettings(), 10.0, presolve=True, kind="count")
            assert solver.solve(model) == cpsat.OPTIMAL
            got = tuple(solver.value(x) for x in xs)
            want = lexicographic_optimum(ub, cx, cap, least, first_max, second_max)
            assert (sum(c * got[i] for i, c in FIRST), sum(c * got[i] for i, c in SECOND)) == want
            assert round(solver.best_objective_bound) // weight == want[0]


@pytest.mark.parametrize("block", blocks(4))
def test_request_dominance_cuts_remove_no_optimum(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The request dominance rows (dominance.request_dominance) are normally added
    only when the FIFO tier is not proven quickly, and dropped after it; here they
    are in the model from the first tier to the last, and every tier still gets
    the brute force's value (tiny platforms) or the plain model's (crowded ones,
    where many classes of one requester dominate each other)."""
    from poolc.planner.optimal import dominance

    plain = [solve(random_crowded_problem(seed)) for seed in range(block * 15, block * 15 + 15)]
    settings = SolverSettings(request_dominance="all", drop_cuts=False)
    rows = 0
    real = dominance.request_dominance

    def counted(b):  # type: ignore[no-untyped-def]
        nonlocal rows
        real(b)
        rows += len(b.rows["request dominance"])

    monkeypatch.setattr(dominance, "request_dominance", counted)
    for seed, sol in zip(range(block * 15, block * 15 + 15), plain, strict=True):
        p = random_crowded_problem(seed)
        assert_same_tiers(p, seed, checked=solve(p, settings=settings), other=sol)
    for seed in range(block * 80, block * 80 + 80):
        try:
            check_against_bruteforce(random_problem(seed), settings)
            check_against_bruteforce(random_contention_problem(seed), settings)
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}: {exc}") from exc
    assert rows > 0


def test_dropped_dominance_rows_take_their_literals_definitions_with_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once FIFO is fixed the request dominance rows are cleared, and so are the rows
    defining their literals ("n >= 1", "t >= k + 1"): those only slowed the start-rank
    tier's relaxation. With the rows in from the first tier, every tier still gets
    the plain model's value and the plan keeps every hard rule, and after the solve
    no cleared row is left with a term or an enforcement literal."""
    from poolc.planner.optimal import loop

    plain = [solve(random_crowded_problem(seed)) for seed in range(30)]
    settings = SolverSettings(request_dominance="all")
    cleared = 0
    real = loop.solve_part

    def inspected(run, b, *args):  # type: ignore[no-untyped-def]
        nonlocal cleared
        out = real(run, b, *args)
        for row in b.rows["request dominance"] + b.rows["request dominance literals"]:
            ct = b.model.proto.constraints[row]
            assert not ct.has_linear() and len(ct.enforcement_literal) == 0
        cleared += len(b.rows["request dominance literals"])
        return out

    monkeypatch.setattr(loop, "solve_part", inspected)
    for seed, sol in enumerate(plain):
        p = random_crowded_problem(seed)
        assert_same_tiers(p, seed, checked=solve(p, settings=settings), other=sol)
    assert cleared > 0


def test_independent_parts_match_bruteforce() -> None:
    for seed in range(40):
        p = random_split_problem(seed)
        if len(p.requests) <= 5:
            check_against_bruteforce(p)


def test_pool_groups_join_the_pools_a_class_can_choose_between() -> None:
    assert pool_groups(["c", "a", "b", "d"], [["b", "c"], ["d"]]) == [["a"], ["b", "c"], ["d"]]
    assert pool_groups(["a", "b", "c"], [["c", "b"], ["a", "c"]]) == [["a", "b", "c"]]
    assert pool_groups([], []) == []


def test_bruteforce_finds_what_it_should() -> None:
    """The reference itself: a known optimum (one in-share admission, one reclaim)."""
    p = scenario_reclaim()
    assert bruteforce.candidates(p) == ["big"]
    assert bruteforce.optimum(p) == [1, 1, 1, 1, 0, 1]
    assert bruteforce.violations(p, {"t/low": "low-dc"}, set()) == ["H1 dc/gpu: kept 4 + admitted 2 > 4"]


# ------------------------------------------------------------ hand-made scenarios

def test_borrowing_beyond_the_reserved_share() -> None:
    cap = {"gpu": 8}
    p = problem([Pool("dc", cap)], [policy("a-dc", "a", "dc", 10, {"gpu": 2}, capacity=cap)],
                [req(f"t/s{i}", "a", i, gpu=2) for i in range(5)])
    sol = solve(p)
    assert sol.admitted == {f"t/s{i}": "a-dc" for i in range(4)}
    assert sol.preempted == {}
    # |Z| = 1 (2 GPUs reserved), 4 admitted at 10, FIFO 5+4+3+2, preference 4 x 1
    assert sol.objective == [1, 4, 14, 0, 4]
    assert sol.status == "OPTIMAL"


def scenario_reclaim() -> Problem:
    cap = {"gpu": 4}
    return problem([Pool("dc", cap)],
                   [policy("high-dc", "high", "dc", 10, {"gpu": 2}, capacity=cap),
                    policy("low-dc", "low", "dc", 1, {"gpu": 2}, capacity=cap)],
                   [req("t/low", "low", 0, gpu=2)],
                   [run("big", "high", "dc", started=5, gpu=4)])


def test_reclaim_by_an_in_share_request_of_lower_priority() -> None:
    sol = solve(scenario_reclaim())
    assert sol.admitted == {"t/low": "low-dc"}
    assert sol.preempted == {"big": ["t/low"]}
    # [|Z|, preempted@10 (j=0: v >= p1=1), admitted@1, FIFO, start rank, preference]
    assert sol.objective == [1, 1, 1, 1, 0, 1]


def test_no_reclaim_outside_the_share_at_lower_priority() -> None:
    cap = {"gpu": 4}
    p = problem([Pool("dc", cap)],
                [policy("high-dc", "high", "dc", 10, {"gpu": 2}, capacity=cap),
                 policy("low-dc", "low", "dc", 1, {}, capacity=cap)],
                [req("t/low", "low", 0, gpu=2)],
                [run("big", "high", "dc", started=5, gpu=4)])
    sol = solve(p)
    assert sol.admitted == {} and sol.preempted == {}
    assert sol.objective == [0, 0, 0, 0, 0, 0]


def test_a_policy_never_preempts_its_own_steps_to_call_a_new_one_in_share() -> None:
    """Policy a reserves gpu=2, mcpu=2000. Its running `first` fills the mcpu reserve,
    `second` holds the other reserved GPU and borrows 1000 mcpu, so it is a borrower. A new
    request of a for 1 GPU and no CPU fits the pool as it is. Preempting `second` would
    free a reserved GPU and make the new request "in-share", but that swaps one of a's
    steps for another (and Kueue never preempts within one policy at one priority): the
    plan admits it and preempts nothing, so planning again after apply changes nothing."""
    cap = {"gpu": 4, "mcpu": 8000}
    p = problem([Pool("dc", cap)], [policy("a-dc", "a", "dc", 10, {"gpu": 2, "mcpu": 2000}, capacity=cap)],
                [req("t/new", "a", 0, gpu=1)],
                [run("first", "a", "dc", started=1, gpu=1, mcpu=2000),
                 run("second", "a", "dc", started=2, gpu=1, mcpu=1000)])
    sol = solve(p)
    assert sol.admitted == {"t/new": "a-dc"}
    assert sol.preempted == {}
    # [|Z| = 0: the reserve is held by a's own steps, preempted@10, admitted@10, FIFO, start ranks, preference]
    assert sol.objective == [0, 0, 1, 1, 0, 1]
    assert bruteforce.optimum(p, set(sol.admitted)) == sol.objective


def test_higher_priority_preempts_the_most_recent_identical_borrower() -> None:
    cap = {"gpu": 4}
    p = problem([Pool("dc", cap)],
                [policy("high-dc", "high", "dc", 10, {}, capacity=cap),
                 policy("low-dc", "low", "dc", 1, {}, capacity=cap)],
                [req("t/urgent", "high", 0, gpu=1)],
                [run(f"job-{i}", "low", "dc", started=s, gpu=1) for i, s in enumerate([3, 9, 1, 7])])
    sol = solve(p)
    assert sol.admitted == {"t/urgent": "high-dc"}
    assert sol.preempted == {"job-1": ["t/urgent"]}          # started last
    # [|Z|, admitted@10, preempted@1, FIFO, start rank of job-1 = 3, preference]
    assert sol.objective == [0, 1, 1, 1, 3, 1]


def test_a_victim_is_never_taken_for_a_key_it_does_not_borrow() -> None:
    """Victims only for keys that are short: ``wide`` holds its policy's whole mcpu
    reserve and borrows only gpu; the request needs mcpu, which is short, and no
    gpu. Taking ``wide`` would break low's guarantee on mcpu (and Kueue never
    reclaims from a queue that does not borrow what the preemptor lacks)."""
    cap = {"gpu": 2, "mcpu": 4}
    p = problem([Pool("dc", cap)],
                [policy("high-dc", "high", "dc", 10, capacity=cap),
                 policy("low-dc", "low", "dc", 1, {"gpu": 1, "mcpu": 4}, capacity=cap)],
                [req("t/cpu", "high", 0, mcpu=2)],
                [run("wide", "low", "dc", gpu=2, mcpu=4)])          # borrows gpu only
    sol = solve(p)
    assert sol.admitted == {} and sol.preempted == {}
    assert sol.objective == [0, 0, 0, 0, 0, 0]


def test_a_victim_that_borrows_the_short_key_frees_everything_it_holds() -> None:
    """The same victim when it also borrows mcpu, the short key: taken, and the
    explanation names mcpu (short), not gpu (which had room)."""
    cap = {"gpu": 2, "mcpu": 4}
    p = problem([Pool("dc", cap)],
                [policy("high-dc", "high", "dc", 10, capacity=cap),
                 policy("low-dc", "low", "dc", 1, {"gpu": 1, "mcpu": 2}, capacity=cap)],
                [req("t/cpu", "high", 0, mcpu=2)],
                [run("wide", "low", "dc", gpu=2, mcpu=4)])          # borrows gpu=1 and mcpu=2
    sol = solve(p)
    assert sol.admitted == {"t/cpu": "high-dc"}
    assert sol.preempted == {"wide": ["t/cpu"]}
    from poolc.planner.explain import FinalState, preemption_keys

    state = FinalState.of(p, sol)
    keys, needing = preemption_keys(state, p.running[0], ["t/cpu"], {"gpu": 1, "mcpu": 2})
    assert (keys, needing) == (["mcpu"], ["t/cpu"])


def test_non_preemptible_requests_stay_inside_the_share() -> None:
    cap = {"gpu": 8}
    p = problem([Pool("dc", cap)], [policy("a-dc", "a", "dc", 0, {"gpu": 3}, capacity=cap)],
                [req("t/np2", "a", 0, preemptible=False, gpu=2),
                 req("t/np1", "a", 1, preemptible=False, gpu=1),
                 req("t/np1b", "a", 2, preemptible=False, gpu=1)],
                [run("old", "a", "dc", preemptible=False, gpu=1)])
    sol = solve(p)
    # 2 GPUs of the share are free: np2 alone, or np1 + np1b; |Z| prefers two requests
    assert sol.admitted == {"t/np1": "a-dc", "t/np1b": "a-dc"}
    assert sol.objective == [2, 2, 2 + 1, 0, 2]


def test_multiple_pools_per_component() -> None:
    caps = {"one": {"gpu": 2}, "two": {"gpu": 4}}
    pools = [Pool(n, c) for n, c in caps.items()]
    pols = [policy("a-one", "a", "one", 10, capacity=caps["one"]),
            policy("a-two", "a", "two", 5, capacity=caps["two"])]
    sol = solve(problem(pools, pols, [req(f"t/s{i}", "a", i, gpu=2) for i in range(3)]))
    # one fits in the priority-10 pool, two in the other; the earliest gets the preferred pool
    assert sol.admitted == {"t/s0": "a-one", "t/s1": "a-two", "t/s2": "a-two"}
    assert sol.objective == [0, 1, 2, 3 + 2 + 1, 0, 2 + 1 + 1]
    # with room everywhere, pool preference picks the higher-priority policy
    sol = solve(problem(pools, pols, [req("t/x", "a", 0, gpu=1)]))
    assert sol.admitted == {"t/x": "a-one"}


def test_same_priority_pools_prefer_the_pool_name() -> None:
    caps = {"b-pool": {"gpu": 2}, "a-pool": {"gpu": 2}}
    pools = [Pool(n, c) for n, c in caps.items()]
    pols = [policy(f"x-{n}", "x", n, 5, capacity=c) for n, c in caps.items()]
    sol = solve(problem(pools, pols, [req("t/x", "x", 0, gpu=1)]))
    assert sol.admitted == {"t/x": "x-a-pool"}


def test_unmetered_builtin_keys_are_ignored_and_missing_custom_keys_reject() -> None:
    cap = {"gpu": 2}
    p = problem([Pool("dc", cap)], [policy("a-dc", "a", "dc", 0, capacity=cap)],
                [req("t/cpu-heavy", "a", 0, gpu=1, mcpu=10**9, memory_mb=10**9),
                 req("t/needs-tpu", "a", 1, gpu=1, tpu=1),
                 req("t/unmanaged", "nobody", 2, gpu=1)])
    sol = solve(p)
    assert sol.admitted == {"t/cpu-heavy": "a-dc"}
    assert sol.objective == [0, 1, 3, 0, 1]


def test_custom_keys_are_metered_like_any_other() -> None:
    cap = {"gpu": 8, "tensorrt_sessions": 2}
    p = problem([Pool("dc", cap)], [policy("a-dc", "a", "dc", 0, capacity=cap)],
                [req(f"t/s{i}", "a", r, tensorrt_sessions=1) for i, r in enumerate([2, 0, 1])])
    sol = solve(p)
    assert sol.admitted == {"t/s1": "a-dc", "t/s2": "a-dc"}   # ranks 0 and 1


def test_over_capacity_pool_admits_nothing_that_needs_the_key() -> None:
    cap = {"gpu": 2, "mcpu": 10}
    p = problem([Pool("dc", cap)], [policy("a-dc", "a", "dc", 0, capacity=cap)],
                [req("t/gpu", "a", 0, gpu=1, mcpu=1), req("t/cpu", "a", 1, mcpu=1)],
                [run("legacy", "a", "dc", preemptible=False, gpu=3)])
    sol = solve(p)
    assert sol.admitted == {"t/cpu": "a-dc"}
    assert sol.preempted == {}


def test_over_capacity_pool_admits_again_once_a_preemption_brings_it_under() -> None:
    cap = {"gpu": 2}
    p = problem([Pool("dc", cap)],
                [policy("a-dc", "a", "dc", 0, {"gpu": 1}, capacity=cap),
                 policy("b-dc", "b", "dc", 9, {"gpu": 1}, capacity=cap)],
                [req("t/b", "b", 0, gpu=1)],
                [run("a-np", "a", "dc", started=1, preemptible=False, gpu=1),
                 run("a-extra", "a", "dc", started=2, gpu=2)])
    sol = solve(p)
    # kept 3 > 2 until a-extra (borrowing 2) goes; then b's request sits in b's share
    assert sol.admitted == {"t/b": "b-dc"}
    assert sol.preempted == {"a-extra": ["t/b"]}
    assert sol.objective == [1, 1, 1, 1, 1, 1]


def test_identical_requests_are_handed_out_first_come_first_served() -> None:
    cap = {"gpu": 3}
    ranks = [4, 1, 3, 0, 2]
    p = problem([Pool("dc", cap)], [policy("a-dc", "a", "dc", 0, capacity=cap)],
                [req(f"t/s{r}", "a", r, gpu=1) for r in ranks])
    sol = solve(p)
    assert sol.admitted == {"t/s0": "a-dc", "t/s1": "a-dc", "t/s2": "a-dc"}
    assert sol.objective == [0, 3, 5 + 4 + 3, 0, 3]


def test_a_deterministic_time_limit_reports_feasible_with_its_gap() -> None:
    cap = {"gpu": 3}
    p = problem([Pool("dc", cap)], [policy("a-dc", "a", "dc", 0, {"gpu": 1}, capacity=cap)],
                [req(f"t/s{r}", "a", r, gpu=1) for r in range(4)])
    sol = solve(p, max_deterministic_time=0.0)
    assert sol.status == "FEASIBLE" and sol.gap > 0
    assert sol.admitted == {} and bruteforce.violations(p, sol.admitted, set()) == []
    assert solve(p).status == "OPTIMAL"


def test_progress_reports_every_tier() -> None:
    lines: list[str] = []
    sol = solve(scenario_reclaim(), progress=lines.append)
    tiers = [line for line in lines if line.startswith("tier ")]
    assert len(tiers) == len(sol.objective)
    assert lines[0].startswith("tier 1/6 in-share") and lines[0].endswith(" CPU s]")
    assert sum(" CP-SAT solves: " in line for line in lines) == 1     # then the solves worth a look, if any


# ------------------------------------------------------------ determinism

def medium_problem(seed: int = 7) -> Problem:
    rng = random.Random(seed)
    pools = [Pool(f"pool-{i}", {"gpu": rng.randint(4, 16), "mcpu": rng.randint(40, 160)}) for i in range(3)]
    pols = [policy(f"{s}-{pl.name}", s, pl.name, rng.choice([1, 5, 10]),
                   {"gpu": rng.randint(0, 2)}, capacity=pl.capacity)
            for s in ("a", "b", "c", "d") for pl in pools if rng.random() < 0.7]
    reqs = [req(f"pipe{i % 7}/step{i}", rng.choice("abcd"), i, rng.random() < 0.8,
                gpu=rng.choice([0, 1, 2]), mcpu=rng.choice([4, 8])) for i in range(200)]
    running = [run(f"r{i}", rng.choice("abcd"), rng.choice(pools).name, started=rng.randint(0, 30),
                   preemptible=rng.random() < 0.8, gpu=rng.randint(0, 2), mcpu=4) for i in range(12)]
    return problem(pools, pols, reqs, running)


def test_same_input_same_solution() -> None:
    assert repr(solve(medium_problem())) == repr(solve(medium_problem()))


def test_same_solution_under_different_hash_seeds() -> None:
    code = ("import sys; sys.path.insert(0, 'tests'); import test_planner_optimal as t; "
            "from poolc.planner.optimal import solve; print(repr(solve(t.medium_problem())))")
    outs = []
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                              text=True, check=True)
        outs.append(done.stdout)
    assert outs[0] == outs[1]
    assert "'OPTIMAL'" in outs[0]


def test_an_answer_from_before_the_dominance_rows_gets_their_literals_from_its_counts() -> None:
    """When the FIFO retry with the request dominance rows finds nothing, the solver
    kept is the one before the rows: its solution has no values for their literals
    (CP-SAT reads them out of range, and the next hint was invalid: a 50,000-request
    plan ended in an internal error). The answer derives them from the counts."""
    from poolc.planner import cpsat
    from poolc.planner.optimal import attempts, dominance, hints, parts
    from poolc.planner.optimal.built import linear

    settings = SolverSettings()
    for seed in range(40):
        p = random_crowded_problem(seed)
        _, b = parts.models(p, settings)[1][0]
        b.model.maximize(linear([(x, 1) for x in b.var.admitted.values()]))
        solver = attempts.cp_solver(settings, 5.0, presolve=True, kind="count")
        assert solver.solve(b.model) == cpsat.OPTIMAL
        dominance.request_dominance(b)
        if not b.aux.used:
            continue
        answer = hints.answer(b, solver)
        for (ci, pi), u in b.aux.used.items():
            assert answer[u.index] == int(answer[b.var.admitted[ci, pi].index] >= 1)
        for (ci, k), a in b.aux.at_least.items():
            admitted = sum(answer[b.var.admitted[ci, pi].index] for pi in range(len(b.classes[ci].policies)))
            assert answer[a.index] == int(admitted >= k + 1)
        hints.hint(b, answer)
        again = attempts.cp_solver(settings, 5.0, presolve=True, kind="count")
        assert again.solve(b.model) == cpsat.OPTIMAL      # a valid hint, a valid model
        return
    pytest.fail("no crowded platform with request dominance rows")


def test_a_large_part_gives_the_fifo_retry_longer_before_the_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no time for the first FIFO attempt, a small part's presolve retry gets
    fifo_plain (here none, so the request dominance rows are added), a large part's
    fifo_plain_large (here the whole share, so they never are); either way every
    tier is the brute force's."""
    from poolc.planner.optimal import dominance

    # CP-SAT's attempts alone (no MIP retry): SCIP would prove FIFO first
    small_part = SolverSettings(mip_retry=False, fifo_quick=0.0, fifo_plain=0.0, fifo_plain_large=1e9)
    rows = count_calls(monkeypatch, dominance, "request_dominance")
    for seed in range(30):
        check_against_bruteforce(random_contention_problem(seed), small_part)
    small = rows[0]
    large_part = dataclasses.replace(small_part, fifo_plain_from=0)
    for seed in range(30):
        check_against_bruteforce(random_contention_problem(seed), large_part)
    assert small >= 10
    assert rows[0] == small


def test_every_row_of_a_built_model_is_recorded_under_exactly_one_rule():
    """`constraints.RULES` lists the model's rows by rule name: on crowded platforms
    (with the request dominance rows in from the start) every row the build adds
    is recorded under one rule, no row under two, and every rule but the prefix
    sums (added when FIFO is reached) records some row on some platform."""
    from poolc.planner.optimal import parts
    from poolc.planner.optimal.constraints import RULES

    seen: set[str] = set()
    for seed in range(30):
        for _, b in parts.models(random_crowded_problem(seed), SolverSettings(request_dominance="all"))[1]:
            recorded = [row for rows in b.rows.values() for row in rows]
            assert sorted(recorded) == list(range(len(b.model.proto.constraints))), seed
            seen |= {rule for rule, rows in b.rows.items() if rows}
    assert seen == set(RULES) - {"prefix sums"}
