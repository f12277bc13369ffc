"""The `zenml` strategy: a simulation of ZenML Pro's reference reconciler
(docs/planning.md#zenml-the-reference-reconciler-simulated). Hand-made scenarios with results derived by hand, then a
seeded property test whose checks are written here, independently of the module."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from poolc.domain.problem import PolicyRule, Pool, Problem, Request, Running
from poolc.planner.zenml import solve

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def pool(name: str, **capacity: int) -> Pool:
    return Pool(name, capacity)


def policy(subject: str, on: Pool, priority: int = 0, reserved: dict | None = None,
           limit: dict | None = None) -> PolicyRule:
    """A policy as the loader builds it: `limit` on every metered key (default the
    capacity), `reserved` only where positive."""
    limits = {**on.capacity, **(limit or {})}
    return PolicyRule(f"{subject}@{on.name}", subject, on.name, priority,
                      {k: v for k, v in (reserved or {}).items() if v > 0}, limits)


def req(id: str, requester: str, rank: int, preemptible: bool = True, **demand: int) -> Request:
    return Request(id, requester, {"step_run": 1, **demand}, preemptible, rank)


def running(name: str, subject: str, on: Pool, minute: int | None, preemptible: bool = True,
            **holds: int) -> Running:
    started = None if minute is None else T0 + timedelta(minutes=minute)
    return Running(name, subject, on.name, preemptible, {"step_run": 1, **holds}, started)


def plan(pools, policies, requests, allocations=()):
    return solve(Problem(tuple(pools), tuple(policies), tuple(requests), tuple(allocations)))


def test_solution_shape_is_an_honest_heuristic():
    p = pool("p", gpu=1)
    s = plan([p], [policy("a", p)], [req("r0", "a", 0, gpu=1)])
    assert (s.strategy, s.status, s.objective, s.gap) == ("zenml", "HEURISTIC", [], 0.0)
    assert s.admitted == {"r0": "a@p"} and s.preempted == {}


def test_reserved_fit_goes_first():
    # gpu=4, all held by L (subject "low", prio 5, no reserve: borrows 4, preemptible).
    # r0 (a, prio 1, no reserve, gpu 3): not reserved-fit; preempting L needs budget,
    #   a has none and L's priority 5 >= 1 -> fails, r0 stays queued.
    # r1 (b, prio 0, reserves gpu 2, gpu 2): reserved-fit, so it is the head although
    #   its priority is lower and it came later. Budget min(2, 2-0)=2; L borrows 4 ->
    #   counted 2 -> L is preempted for r1; the pass restarts: r1 fits and is granted.
    #   Head r0 then needs 3 with 2 free; L is gone and r1 sits in b's reserve, so
    #   nothing borrows -> r0 stays queued.
    p = pool("p", gpu=4)
    pols = [policy("a", p, 1), policy("b", p, 0, {"gpu": 2}), policy("low", p, 5)]
    s = plan([p], pols, [req("r0", "a", 0, gpu=3), req("r1", "b", 1, gpu=2)],
             [running("L", "low", p, 0, gpu=4)])
    assert s.admitted == {"r1": "b@p"}
    assert s.preempted == {"L": ["r1"]}


def test_head_of_line_blocking_and_priority_order():
    # gpu=4; N (non-preemptible, subject u, reserve 3) holds 3 -> free 1, and N can never
    # be preempted. r0 (a, gpu 2) is blocked. r1 (a, gpu 1) would fit, but the head is
    # r0 (same key tier, earlier rank): its preemption fails and the pass ends.
    p = pool("p", gpu=4)
    pols = [policy("a", p), policy("u", p, 0, {"gpu": 3})]
    blocked = [running("N", "u", p, 0, preemptible=False, gpu=3)]
    s = plan([p], pols, [req("r0", "a", 0, gpu=2), req("r1", "a", 1, gpu=1)], blocked)
    assert s.admitted == {} and s.preempted == {}
    # The same later request through a higher-priority policy becomes the head: admitted.
    s = plan([p], pols + [policy("b", p, 1)], [req("r0", "a", 0, gpu=2), req("r1", "b", 1, gpu=1)], blocked)
    assert s.admitted == {"r1": "b@p"}


def test_non_preemptible_head_over_its_share_is_skipped_and_blocks_nothing():
    # a reserves gpu 2 and already runs a non-preemptible allocation of 2 (its share).
    # r0 (non-preemptible, gpu 1) is eligible (1 <= reserve 2) and has room (limit 4,
    # free 2), but 2 + 1 > 2 non-preemptible -> skipped. r1 (preemptible, gpu 2, later)
    # is the next head and fits.
    p = pool("p", gpu=4)
    s = plan([p], [policy("a", p, 0, {"gpu": 2})],
             [req("r0", "a", 0, preemptible=False, gpu=1), req("r1", "a", 1, gpu=2)],
             [running("N", "a", p, 0, preemptible=False, gpu=2)])
    assert s.admitted == {"r1": "a@p"}


def test_limit_filter_leaves_an_entry_out_of_the_candidates():
    # a (prio 5) may hold gpu 3 and holds 2: r0 (gpu 2) has no room -> not a candidate,
    # so it neither runs nor blocks. r1 (b, prio 0, gpu 1) fits the free 6.
    p = pool("p", gpu=8)
    s = plan([p], [policy("a", p, 5, limit={"gpu": 3}), policy("b", p)],
             [req("r0", "a", 0, gpu=2), req("r1", "b", 1, gpu=1)],
             [running("A1", "a", p, 0, gpu=2)])
    assert s.admitted == {"r1": "b@p"} and s.preempted == {}


def test_preempts_borrowing_lower_priority_most_recent_first():
    # lo (prio 1) reserves gpu 1: L1 (minute 1, gpu 1) sits in the reserve; L2 (minute 2,
    # gpu 2) and L3 (minute 3, gpu 1) borrow all they hold. Pool gpu=4 is full.
    # r0 (hi, prio 10, gpu 1): deficit 1; candidates most recent first: L3 covers it.
    # r1 (hi, gpu 2): deficit 2 (r0 took the freed unit); L2 covers it.
    # r2 (hi, gpu 1): deficit 1; L1 borrows nothing; the grants r0, r1 borrow but have
    # priority 10 >= 10 and hi has no reserve -> no victim, r2 stays queued.
    p = pool("p", gpu=4)
    s = plan([p], [policy("hi", p, 10), policy("lo", p, 1, {"gpu": 1})],
             [req("r0", "hi", 0, gpu=1), req("r1", "hi", 1, gpu=2), req("r2", "hi", 2, gpu=1)],
             [running("L1", "lo", p, 1, gpu=1), running("L2", "lo", p, 2, gpu=2),
              running("L3", "lo", p, 3, gpu=1)])
    assert s.admitted == {"r0": "hi@p", "r1": "hi@p"}
    assert s.preempted == {"L3": ["r0"], "L2": ["r1"]}


def test_never_preempts_non_borrowing_or_non_preemptible():
    # gpu=2: L (lo, reserve 1, preemptible, gpu 1) is inside its reserve; N (lo2, no
    # reserve, non-preemptible, gpu 1) borrows but is non-preemptible. hi needs 1.
    p = pool("p", gpu=2)
    s = plan([p], [policy("hi", p, 10), policy("lo", p, 0, {"gpu": 1}), policy("lo2", p, 0)],
             [req("r0", "hi", 0, gpu=1)],
             [running("L", "lo", p, 0, gpu=1), running("N", "lo2", p, 1, preemptible=False, gpu=1)])
    assert s.admitted == {} and s.preempted == {}


def test_non_preemptible_grant_makes_an_older_preemptible_allocation_borrow():
    # lo reserves gpu 2; L (preemptible, gpu 2) fills it, free 2 of 4.
    # r0 (lo, non-preemptible, gpu 2) is eligible, fits, and passes the share rule
    # (0 + 2 <= 2): granted. In borrowing order non-preemptible comes first, so r0 now uses
    # lo's reserve and L borrows 2. r1 (hi, prio 5, gpu 2) preempts L.
    p = pool("p", gpu=4)
    s = plan([p], [policy("hi", p, 5), policy("lo", p, 0, {"gpu": 2})],
             [req("r0", "lo", 0, preemptible=False, gpu=2), req("r1", "hi", 1, gpu=2)],
             [running("L", "lo", p, 0, gpu=2)])
    assert s.admitted == {"r0": "lo@p", "r1": "hi@p"}
    assert s.preempted == {"L": ["r1"]}


def test_all_or_nothing():
    # gpu=4: N (lo, non-preemptible, gpu 3) and L (lo, preemptible, gpu 1) both borrow
    # (lo reserves nothing). hi needs 2: only L can go, freeing 1 < 2 -> nobody goes.
    p = pool("p", gpu=4)
    s = plan([p], [policy("hi", p, 10), policy("lo", p)], [req("r0", "hi", 0, gpu=2)],
             [running("N", "lo", p, 0, preemptible=False, gpu=3), running("L", "lo", p, 1, gpu=1)])
    assert s.admitted == {} and s.preempted == {}


def test_candidate_holding_no_uncovered_key_is_skipped():
    # gpu=2, tpu=1, full with lo's (prio 0, no reserve) A1 (min 0, tpu 1), A2 (min 1,
    # gpu 1), A3 (min 2, gpu 1). r0 (hi, gpu 1 + tpu 1): deficit gpu 1, tpu 1. Most
    # recent first: A3 covers gpu; A2 holds only gpu, no longer uncovered -> skipped;
    # A1 covers tpu.
    p = pool("p", gpu=2, tpu=1)
    s = plan([p], [policy("hi", p, 9), policy("lo", p)], [req("r0", "hi", 0, gpu=1, tpu=1)],
             [running("A1", "lo", p, 0, tpu=1), running("A2", "lo", p, 1, gpu=1),
              running("A3", "lo", p, 2, gpu=1)])
    assert s.admitted == {"r0": "hi@p"}
    assert s.preempted == {"A1": ["r0"], "A3": ["r0"]}


@pytest.mark.parametrize("own_priority", [1, 0])
def test_in_share_request_reclaims_from_equal_or_higher_priority(own_priority):
    # own reserves gpu 2 and holds nothing; O (other, prio 1, no reserve) borrows all 4.
    # r0 (own, gpu 2) is reserved-fit; budget min(2, 2) = 2; O's priority 1 >= own's,
    # but it frees min(4, 2) = 2 borrowed units counted against the budget -> taken.
    p = pool("p", gpu=4)
    s = plan([p], [policy("own", p, own_priority, {"gpu": 2}), policy("other", p, 1)],
             [req("r0", "own", 0, gpu=2)], [running("O", "other", p, 0, gpu=4)])
    assert s.admitted == {"r0": "own@p"}
    assert s.preempted == {"O": ["r0"]}


def test_reclaim_budget_runs_out():
    # own reserves gpu 2; O1 (min 1, gpu 1), O2 (min 2, gpu 1), O3 (min 3, gpu 2) of
    # other (prio 5) borrow everything; the pool gpu=4 is full. r0 (own, prio 1, gpu 3):
    # deficit 3, budget min(3, 2) = 2. O3 (most recent): counted 2 -> taken, budget 0,
    # 1 uncovered. O2, O1: priority 5 >= 1 and the budget is spent -> skipped.
    # Not covered -> nobody is preempted.
    p = pool("p", gpu=4)
    s = plan([p], [policy("own", p, 1, {"gpu": 2}), policy("other", p, 5)],
             [req("r0", "own", 0, gpu=3)],
             [running("O1", "other", p, 1, gpu=1), running("O2", "other", p, 2, gpu=1),
              running("O3", "other", p, 3, gpu=2)])
    assert s.admitted == {} and s.preempted == {}


def test_reclaim_budget_is_capped_by_the_deficit():
    # gpu=2, tpu=1, full. own (prio 1) reserves gpu 2, holds nothing; other (prio 5)
    # reserves tpu 1. O1 (min 0, gpu 1 + tpu 1: tpu inside the reserve, gpu borrowed),
    # O2 (min 1, gpu 1 borrowed). r0 (own, gpu 1 + tpu 1): deficit gpu 1, tpu 1;
    # budget gpu min(1, 2) = 1, tpu min(1, 0) = 0. O2 counts 1 gpu -> taken, budget 0,
    # gpu covered. O1 would free the tpu but counts min(1, 0) = 0 -> skipped. tpu stays
    # uncovered -> nobody is preempted (a budget of the full free reserve, 2, would
    # have taken O1 as well).
    p = pool("p", gpu=2, tpu=1)
    s = plan([p], [policy("own", p, 1, {"gpu": 2}), policy("other", p, 5, {"tpu": 1})],
             [req("r0", "own", 0, gpu=1, tpu=1)],
             [running("O1", "other", p, 0, gpu=1, tpu=1), running("O2", "other", p, 1, gpu=1)])
    assert s.admitted == {} and s.preempted == {}


def test_lower_priority_victims_first_then_budget():
    # own (prio 3) reserves gpu 1; pool gpu=3 full: H (high, prio 9, min 1, gpu 2) and
    # W (weak, prio 0, min 0, gpu 1), both without reserve. r0 (own, gpu 3): deficit 3,
    # budget min(3, 1) = 1. Order by priority: W (0 < 3) taken, frees 1; H (9 >= 3)
    # counted min(2, 1) = 1 -> taken, frees 2. Covered: both go for r0.
    p = pool("p", gpu=3)
    s = plan([p], [policy("own", p, 3, {"gpu": 1}), policy("high", p, 9), policy("weak", p, 0)],
             [req("r0", "own", 0, gpu=3)],
             [running("H", "high", p, 1, gpu=2), running("W", "weak", p, 0, gpu=1)])
    assert s.admitted == {"r0": "own@p"}
    assert s.preempted == {"H": ["r0"], "W": ["r0"]}


def test_a_grant_preempted_later_is_withdrawn():
    # r0 (lo, gpu 2) is granted and borrows 2; r1 (hi, gpu 2) preempts that grant.
    # The grant was never a running allocation: r0 simply is not admitted in the end.
    p = pool("p", gpu=2)
    s = plan([p], [policy("hi", p, 5), policy("lo", p)],
             [req("r0", "lo", 0, gpu=2), req("r1", "hi", 1, gpu=2)])
    assert s.admitted == {"r1": "hi@p"} and s.preempted == {}


def test_falls_through_to_the_second_pool():
    # a's policy on "first" (prio 5) is tried before "second" (prio 1). "first" is full
    # with a's own non-preemptible allocation -> the pass blocks; "second" admits.
    first, second = pool("first", gpu=2), pool("second", gpu=4)
    s = plan([first, second], [policy("a", first, 5, {"gpu": 2}), policy("a", second, 1)],
             [req("r0", "a", 0, gpu=1)], [running("N", "a", first, 0, preemptible=False, gpu=2)])
    assert s.admitted == {"r0": "a@second"}
    # Equal priorities: pool name decides ("alpha" before "beta").
    alpha, beta = pool("alpha", gpu=1), pool("beta", gpu=1)
    s = plan([beta, alpha], [policy("a", beta, 1), policy("a", alpha, 1)],
             [req("r0", "a", 0, gpu=1), req("r1", "a", 1, gpu=1)])
    assert s.admitted == {"r0": "a@alpha", "r1": "a@beta"}


def test_queued_entry_is_reconsidered_by_a_later_pass():
    # gpu=4 is full with L1 (minute 0) and L2 (minute 1), 2 each, of lo (prio 5, no
    # reserve: both borrow). r0 (mid, prio 1, gpu 1) cannot preempt priority 5 without
    # a reserve: queued. r1 (top, prio 9, gpu 3): deficit 3; L2 (most recent) frees 2,
    # L1 frees 2 -> both go for r1. The pass restarts: r1 is granted (free 1), and the
    # next head, the queued r0, now fits and is granted in the same pass.
    p = pool("p", gpu=4)
    s = plan([p], [policy("top", p, 9), policy("mid", p, 1), policy("lo", p, 5)],
             [req("r0", "mid", 0, gpu=1), req("r1", "top", 1, gpu=3)],
             [running("L1", "lo", p, 0, gpu=2), running("L2", "lo", p, 1, gpu=2)])
    assert s.admitted == {"r0": "mid@p", "r1": "top@p"}
    assert s.preempted == {"L1": ["r1"], "L2": ["r1"]}


def test_unmetered_builtin_keys_are_ignored():
    # The pool meters only gpu: mcpu, memory_mb and step_run are ignored in the
    # demand and in what running allocations hold.
    p = pool("p", gpu=2)
    s = plan([p], [policy("a", p)],
             [req("r0", "a", 0, gpu=1, mcpu=10**9, memory_mb=10**9), req("r1", "a", 1, mcpu=5)],
             [running("X", "a", p, 0, gpu=1, mcpu=10**9)])
    assert s.admitted == {"r0": "a@p", "r1": "a@p"}


def test_custom_keys_are_metered_only_where_the_pool_has_them():
    # "gpus" (prio 9) has no tpu row: capacity 0 there, so r0..r2 go to "tpus";
    # tpu=2 admits two of them. r3 asks a key no pool has: rejected, never admitted.
    gpus, tpus = pool("gpus", gpu=8), pool("tpus", tpu=2)
    s = plan([gpus, tpus], [policy("a", gpus, 9), policy("a", tpus, 0)],
             [req("r0", "a", 0, tpu=1), req("r1", "a", 1, tpu=1), req("r2", "a", 2, tpu=1),
              req("r3", "a", 3, fpga=1), req("r4", "a", 4, gpu=1)])
    assert s.admitted == {"r0": "a@tpus", "r1": "a@tpus", "r4": "a@gpus"}


def test_over_capacity_pool_admits_only_what_does_not_need_the_key():
    # The state holds gpu 3 in a pool of 2 (subject "ghost" has no policy: never
    # preempted). r0 needs gpu: blocked. r1 (b, higher priority) needs none: admitted.
    p = pool("p", gpu=2, step_run=10)
    s = plan([p], [policy("a", p), policy("b", p, 1)],
             [req("r0", "a", 0, gpu=1), req("r1", "b", 1)], [running("G", "ghost", p, 0, gpu=3)])
    assert s.admitted == {"r1": "b@p"} and s.preempted == {}


def test_rejected_and_unmanaged_requests_are_never_admitted():
    p = pool("p", gpu=2)
    s = plan([p], [policy("a", p, 0, {"gpu": 1})],
             [req("too-big", "a", 0, gpu=3), req("np-over-share", "a", 1, preemptible=False, gpu=2),
              req("unmanaged", "nobody", 2, gpu=1), req("ok", "a", 3, gpu=1)])
    assert s.admitted == {"ok": "a@p"}


# --- property test: invariants checked by code written here -----------------------

BUILTIN = ("mcpu", "memory_mb", "step_run")
KEYS = ("gpu", "mcpu", "step_run", "tpu")


def random_problem(rnd: random.Random) -> Problem:
    pools = [Pool(f"P{i}", {k: rnd.randint(1, 6) for k in rnd.sample(KEYS, rnd.randint(1, 4))})
             for i in range(rnd.randint(1, 3))]
    subjects = [f"s{i}" for i in range(rnd.randint(1, 4))]
    policies = []
    for p in pools:
        left = dict(p.capacity)
        for s in subjects:
            if rnd.random() < 0.7:
                reserved = {}
                for k in p.capacity:
                    reserved[k] = rnd.randint(0, left[k] // 2)
                    left[k] -= reserved[k]
                limit = {k: rnd.randint(max(1, reserved[k]), c) for k, c in p.capacity.items()}
                policies.append(policy(s, p, rnd.randint(0, 6), reserved, limit))
    # Busy pools (sometimes over capacity) and mostly preemptible work, so that
    # preemption is common; a "ghost" subject without policies adds unmanaged load.
    allocations = [
        Running(f"run{i}", rnd.choice(subjects + ["ghost"]), rnd.choice(pools).name, rnd.random() < 0.8,
                {k: rnd.randint(0, 3) for k in rnd.sample(KEYS, rnd.randint(1, 4))},
                rnd.choice([None, T0 + timedelta(minutes=rnd.randint(0, 4))]))
        for i in range(rnd.randint(0, 8))]
    requests = [Request(f"req{i}", rnd.choice(subjects + ["ghost"]),
                        {**{k: rnd.randint(0, 3) for k in rnd.sample(KEYS, rnd.randint(1, 4))}, "step_run": 1},
                        rnd.random() < 0.7, i)
                for i in range(rnd.randint(0, 12))]
    return Problem(tuple(pools), tuple(policies), tuple(requests), tuple(allocations))


def needs(pool: Pool, demand) -> dict[str, int]:
    """Demand on the keys the pool checks (custom keys it lacks count with capacity 0)."""
    return {k: v for k, v in demand.items() if v > 0 and (k in pool.capacity or k not in BUILTIN)}


def holds_on(pool: Pool, holds) -> dict[str, int]:
    return {k: v for k, v in holds.items() if k in pool.capacity and v > 0}


def check_invariants(problem: Problem, solution) -> None:
    pools = {p.name: p for p in problem.pools}
    rules = {q.name: q for q in problem.policies}
    requests = {r.id: r for r in problem.requests}
    allocs = {a.name: a for a in problem.running}
    assert set(solution.preempted) <= set(allocs)
    kept = [a for a in problem.running if a.name not in solution.preempted and a.pool in pools]
    # What each admitted request adds, per pool and per policy.
    placed = []
    for rid, qname in solution.admitted.items():
        r, q = requests[rid], rules[qname]
        p = pools[q.pool]
        assert q.subject == r.requester
        for k, v in needs(p, r.demand).items():     # eligibility
            assert k in p.capacity and v <= p.capacity[k] and v <= q.limit[k]
            assert r.preemptible or v <= q.reserved.get(k, 0)
        placed.append((p, q, r))

    def total(items):
        out: dict[str, int] = {}
        for h in items:
            for k, v in h.items():
                out[k] = out.get(k, 0) + v
        return out

    for p in pools.values():
        before = total(holds_on(p, a.holds) for a in problem.running if a.pool == p.name)
        after = total([holds_on(p, a.holds) for a in kept if a.pool == p.name]
                      + [needs(p, r.demand) for pp, _, r in placed if pp is p])
        for k, cap in p.capacity.items():
            if after.get(k, 0) > cap:     # only a pool already over it, and nobody added it
                assert before.get(k, 0) > cap and after.get(k, 0) <= before.get(k, 0)
                assert all(needs(p, r.demand).get(k, 0) == 0 for pp, _, r in placed if pp is p)
    for q in problem.policies:
        p = pools[q.pool]
        mine = [a for a in problem.running if a.subject == q.subject and a.pool == q.pool]
        mine_kept = [a for a in mine if a.name not in solution.preempted]
        added = [r for pp, qq, r in placed if qq is q]
        for k in p.capacity:
            lim, rsv = q.limit[k], q.reserved.get(k, 0)
            before = sum(holds_on(p, a.holds).get(k, 0) for a in mine)
            after = (sum(holds_on(p, a.holds).get(k, 0) for a in mine_kept)
                     + sum(needs(p, r.demand).get(k, 0) for r in added))
            if after > lim:
                assert before > lim and all(needs(p, r.demand).get(k, 0) == 0 for r in added)
            np_before = sum(holds_on(p, a.holds).get(k, 0) for a in mine if not a.preemptible)
            np_after = np_before + sum(needs(p, r.demand).get(k, 0) for r in added if not r.preemptible)
            if np_after > rsv:
                assert all(needs(p, r.demand).get(k, 0) == 0 for r in added if not r.preemptible)
    for name, heads in solution.preempted.items():
        a = allocs[name]
        assert a.preemptible and len(heads) == 1
        q = next(q for q in problem.policies if q.subject == a.subject and q.pool == a.pool)
        head = requests[heads[0]]
        assert any(h.subject == head.requester and h.pool == a.pool for h in problem.policies)
        # Borrowing: with everything that may sit before it in borrowing order (non-preemptible
        # allocations and grants of its policy, preemptible ones started no later), it
        # holds more than the reserve on some key.
        p = pools[a.pool]
        stamp = a.started_at or datetime.min.replace(tzinfo=UTC)
        before = [b for b in problem.running if b.subject == a.subject and b.pool == a.pool and b is not a
                  and (not b.preemptible or (b.started_at or datetime.min.replace(tzinfo=UTC)) <= stamp)]
        np_grants = [needs(p, r.demand) for pp, qq, r in placed if qq is q and not r.preemptible]
        ahead = total([holds_on(p, b.holds) for b in before] + np_grants)
        mine = holds_on(p, a.holds)
        assert any(v > 0 and ahead.get(k, 0) + v > q.reserved.get(k, 0) for k, v in mine.items())


def test_random_problems_keep_every_hard_rule():
    rnd = random.Random(20240101)
    preemptions = admissions = 0
    for _ in range(200):
        problem = random_problem(rnd)
        solution = solve(problem)
        check_invariants(problem, solution)
        again = solve(Problem(problem.pools[::-1], problem.policies[::-1], problem.requests[::-1],
                              problem.running[::-1]))
        assert (again.admitted, again.preempted) == (solution.admitted, solution.preempted)
        assert list(solution.admitted) == sorted(solution.admitted)
        preemptions += len(solution.preempted)
        admissions += len(solution.admitted)
    # The sample must exercise what it checks.
    assert preemptions >= 10 and admissions >= 200
