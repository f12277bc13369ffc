"""Planning strategy `optimal` (docs/planning.md#tiers) on OR-Tools CP-SAT.

Why it is shaped this way:

* Identical requests (same requester, demand, preemptible flag) are one *class*
  with an integer count per eligible policy, and identical victims (same policy,
  same metered holdings) one *victim class* with a preempted count. 10,000
  requests from a few dozen shapes become a few thousand integers, and the
  symmetric 0/1 choices that would stall the proof disappear.
* The lexicographic objective is solved tier by tier: each tier's value is then
  fixed as a constraint and the solution hinted into the next solve. CP-SAT
  proves small integer tiers fast; one big weighted objective would not.
* Counts are handed out afterwards: inside a class the lowest arrival ranks are
  admitted first, inside a victim class the most recently started allocation is
  preempted first. Tiers 3 and 4 are modelled as the concave prefix sums those
  hand-outs achieve, so the hand-out is exactly optimal for them.
* Two redundant, exact strengthenings keep the proofs short at scale: the convex
  hull of each "admits nothing or fits" disjunction (see `_cap_rule`), and a
  dominance cut among one policy's victims (see `_victim_dominance`). A third,
  among one policy's request classes (`_request_dominance`), is added only when
  the FIFO tier resists its first two attempts, and cleared once FIFO is fixed.
* Each count tier is solved on a restricted copy of the model: admissions below
  the tier's priority only in Z, victims below it all preempted (see
  `_restricted`). Exact, and it removes choices that cannot matter yet.
* The start-rank tier is solved with the preference tier folded in (weighted,
  exactly lexicographic; see `_fold_weight`): one proof for both. So is each
  "preempted at v" tier with the "admitted at p" tier after it (`_fold_count`),
  on the restricted copy of the second. On a large part the fold's hint is
  first polished: its objective with the admissions fixed (`_polished`).
* A count tier or FIFO that CP-SAT does not prove in a quick first attempt goes
  once to SCIP (`mip.py`, `_mip_retry`): on platforms of many shapes it proves at
  the root node tiers CP-SAT stops on after its whole share. Node and LP-iteration
  limits, one thread, and CP-SAT checks its answer before it is used.
* Independent parts (`decompose.py`): pools that no request class can choose
  between are planned as separate models, one after the other, each with the
  global tier list; tier values add up. Exact, and smaller models prove faster.
* The FIFO prefix sums get one segment per count a class can reach (bounded by
  capacity and limits), not one per member: at 50,000 requests most classes can
  admit a few dozen, not hundreds.
* Determinism: one worker, a fixed seed, a deterministic-time budget (never a
  wall clock), a model built in canonical (sorted) order, and a canonical
  hand-out. Same Problem, same Solution. Each tier gets a fair share of the
  budget left (time an easy tier leaves unused passes on); a tier stopped by
  its share keeps its best value and the Solution says FEASIBLE, with `gap` the
  largest |bound - value| / max(1, |value|) over the tiers.

Objective layout (``Solution.objective``), every value an integer:

    [ |Z|,
      for j = 0..m:  (admitted at p_j, only if j >= 1),
                     (preempted at v, for each victim priority v with
                      p_(j+1) <= v < p_j, highest first),
      FIFO sum       = sum over admitted requests of (N - arrival rank),
      start-rank sum = sum over preempted allocations of their start rank,
      preference     = sum over admitted requests of (n_i - t), where t is the
                       index of its policy among its n_i eligible policies
                       ordered by priority (desc) then pool name ]

p_1 > ... > p_m are the distinct priorities of policies through which some
request is eligible; victim priorities are those of the policies of
preemptible, borrowing running allocations. N = max(number of requests,
highest rank + 1).

Hard rules with the "already over" caveat read as: on every (pool, key),
(policy, key) and, for the non-preemptible share, (policy, key)::

    admitted_k <= max(0, bound_k - kept_k)

i.e. a key whose kept holdings exceed its bound admits nothing that needs it,
unless the plan preempts enough to bring it back under. The in-share set Z obeys
the same form with bound = reserved.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from poolc.planner.solution import Solution

from ..domain.borrowing import borrowed_parts
from ..domain.eligibility import eligible_policies, metered_demand
from ..domain.problem import PolicyRule, Pool, Problem, Request, Running
from . import cpsat as cp_model  # the CP-SAT API, without numpy and pandas (cpsat.py)
from . import mip  # SCIP for the MIP retry; imports pyscipopt only when it runs
from .decompose import pool_groups

RANDOM_SEED = 1                      # CP-SAT's own default, pinned
FIFO_QUICK = 1.0     # deterministic s for the FIFO tier without presolve before it is retried with it
FOLD_QUICK = 1.0     # deterministic s for the folded start-rank tier before it is retried with presolve
FIFO_PLAIN = 2.0     # deterministic s for the FIFO retry with presolve before the dominance rows are added
FIFO_PLAIN_LARGE = 8.0   # the same for a part of FIFO_PLAIN_FROM requests or more (`_fifo_plain`)
FIFO_PLAIN_FROM = 5_000
FOLD_COUNTS = True   # solve each "preempted at v" tier with the next "admitted at p" folded in (`_fold_count`)
COUNT_FOLD_QUICK = 0.1   # deterministic s for such a folded pair before its tiers are solved apart
FLAG_LIMIT = 32      # victim classes per part up to which `_short_keys` is exact in the model (else `_repaired`)
RANK_POLISH = 0.3    # deterministic s for the start-rank fold's polished hint (`_polished`)
POLISH_FROM = 5_000  # requests in a part from which the fold gets it (smaller parts: measured mixed)
REOPEN = True        # budget left after the last tier goes to the first tier not proven (`_reopen`)
REOPEN_MIN = 0.5     # deterministic s: less than this for a reopened tier, and it is not tried
MIP_RETRY = True     # a count tier or FIFO not proven in its quick attempt goes to SCIP once (`_mip_retry`)
COUNT_QUICK = 1.0    # deterministic s for a count tier (alone) before the MIP retry, when it runs
# When the request dominance rows (_request_dominance) are in the model: "retry" (only
# for a FIFO tier not proven in FIFO_QUICK + FIFO_PLAIN), "all" (from the first tier:
# the tests' check that they remove no optimum) or None (never: benchmarks' baseline).
REQUEST_DOMINANCE: str | None = "retry"
DROP_CUTS = True     # clear the rows once FIFO is fixed (the tests keep them to the last tier)
_SAFE = 2**62        # keep every linear term inside CP-SAT's int64 arithmetic
# CP-SAT parameters per kind of solve ("count", "fifo", "rank", "preference"), on top
# of `_solver`'s; see docs/solver.md for what each is and the figures behind it.
TUNING: dict[str, dict[str, object]] = {"count": {}, "fifo": {}, "rank": {}, "preference": {}}
Progress = Callable[[str], None]
Terms = list[tuple[cp_model.IntVar, int]]
_ClassKey = tuple[str, tuple[tuple[str, int], ...], bool, tuple]


# ---------------------------------------------------------------- aggregation

@dataclass
class _Class:
    """Identical pending requests, eligible through the same policies."""

    requester: str
    preemptible: bool
    members: list[Request]                 # by arrival rank
    policies: list[PolicyRule]             # eligible, in preference order (eligible_policies)
    demands: list[dict[str, int]]          # per policy: metered demand in its pool


@dataclass
class _VictimClass:
    """Interchangeable preemption candidates: same policy, same metered holdings."""

    policy: PolicyRule
    holds: dict[str, int]
    members: list[Running]                 # most recently started first
    borrows: tuple[str, ...] = ()          # the metered keys each member borrows on (section 3)


def _request_classes(problem: Problem) -> list[_Class]:
    groups: dict[_ClassKey, list[Request]] = {}
    for req in problem.requests:
        demand = tuple(sorted((k, v) for k, v in req.demand.items() if v > 0))
        groups.setdefault((req.requester, demand, req.preemptible, req.placement), []).append(req)
    classes = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda r: (r.rank, r.id))
        policies, _ = eligible_policies(problem, members[0])
        if not policies:
            continue  # rejected or unmanaged: never admitted
        demands = [metered_demand(problem.pool(q.pool), members[0].demand) for q in policies]
        classes.append(_Class(key[0], key[2], members, policies, demands))
    return classes


def _metered_holds(problem: Problem, alloc: Running) -> dict[str, int]:
    pool = problem.pool(alloc.pool)
    return {k: v for k, v in sorted(alloc.holds.items()) if v > 0 and pool.metered(k)}


def _victim_classes(problem: Problem, borrowed: dict[str, dict[str, int]]) -> list[_VictimClass]:
    """Preemptible, borrowing allocations grouped by policy, metered holdings and the
    keys they borrow on (a victim may only be taken for a key it borrows on, so
    members of one class must agree on those)."""
    groups: dict[tuple[str, tuple[tuple[str, int], ...], tuple[str, ...]], list[Running]] = {}
    policies: dict[str, PolicyRule] = {}
    for alloc in _known_running(problem):
        policy = problem.policy_for(alloc.subject, alloc.pool)
        if policy is None or not alloc.preemptible:
            continue
        holds = _metered_holds(problem, alloc)
        borrows = tuple(sorted(k for k, v in borrowed.get(alloc.name, {}).items() if v > 0 and k in holds))
        if not borrows:
            continue
        policies[policy.name] = policy
        groups.setdefault((policy.name, tuple(holds.items()), borrows), []).append(alloc)
    return [_VictimClass(policies[name], dict(holds),
                         sorted(groups[(name, holds, borrows)], key=lambda a: (-a.start_rank, a.name)), borrows)
            for name, holds, borrows in sorted(groups)]


def _known_running(problem: Problem) -> list[Running]:
    pools = {p.name for p in problem.pools}
    return sorted((a for a in problem.running if a.pool in pools), key=lambda a: a.name)


# ---------------------------------------------------------------- the model

@dataclass
class _Values:
    """Decision values of one solution: counts per (class, policy), in-share counts,
    preempted counts per victim class, and admitted counts per class."""

    n: dict[tuple[int, int], int]
    z: dict[tuple[int, int], int]
    v: dict[int, int]
    t: dict[int, int]


@dataclass
class _Tier:
    name: str
    maximize: bool
    terms: Terms                                 # what CP-SAT optimizes
    value: Callable[[_Values], int]              # exact value from decision values
    trivial_bound: int                           # bound with no search at all
    setup: Callable[[], None] | None = None      # adds the tier's own variables, when it is reached
    floor: float | None = None                   # admissions below this priority do not matter yet
    vfloor: float | None = None                  # victims below this priority are not minimized yet
    fold_next: bool = False                      # solve with the next tier folded into the objective
    active: bool | None = None                   # has something to optimize (default: terms given)

    def __post_init__(self) -> None:
        if self.active is None:
            self.active = bool(self.terms)


@dataclass(frozen=True)
class _Layout:
    """What every part shares: the global tier order and the FIFO constant N."""

    prios: list[int]              # admission priorities p_1 > ... > p_m
    vprios: list[int]             # victim priorities, highest first
    rank_n: int


@dataclass
class _Built:
    model: cp_model.CpModel
    classes: list[_Class]
    victims: list[_VictimClass]
    rank_n: int
    n: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)   # (class, policy idx)
    z: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    v: dict[int, cp_model.IntVar] = field(default_factory=dict)               # victim class
    short: dict[tuple[str, str], cp_model.IntVar] = field(default_factory=dict)   # (pool, key) -> is short
    short_use: dict[tuple[str, str], tuple[Terms, int, int]] = field(default_factory=dict)  # its used, kept, cap
    short_pools: set[str] = field(default_factory=set)                        # pools with a flag that can be 1
    flagged: set[int] = field(default_factory=set)                            # victim classes the flags govern
    unchecked: list[int] = field(default_factory=list)   # classes the rule is checked on after the solve instead
    forbidden: set[int] = field(default_factory=set)     # victim classes that may not be preempted
    fifo: dict[int, cp_model.IntVar] = field(default_factory=dict)            # class -> prefix var
    late: dict[int, cp_model.IntVar] = field(default_factory=dict)            # victim class -> prefix var
    all_vars: list[cp_model.IntVar] = field(default_factory=list)
    tiers: list[_Tier] = field(default_factory=list)
    reach: dict[int, int] = field(default_factory=dict)                       # class -> most it can admit
    reach_via: dict[tuple[int, int], int] = field(default_factory=dict)       # (class, policy idx) -> same
    through: dict[str, list[tuple[int, int]]] = field(default_factory=dict)   # policy -> its (class, policy idx)
    victims_of: dict[str, list[int]] = field(default_factory=dict)           # policy -> its victim classes
    count_tiers: int = 0                                                      # |Z|, admissions, victims
    used: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)    # (class, policy) -> n >= 1
    atleast: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)  # (class, k) -> t >= k + 1
    cut_rows: list[int] = field(default_factory=list)                         # request dominance rows
    link_rows: list[int] = field(default_factory=list)                        # their literals' definitions
    mip_work: list[tuple[int, int]] = field(default_factory=list)             # per MIP retry: nodes, LP iterations


def _prefix(weights: list[int]) -> list[int]:
    out = [0]
    for w in weights:
        out.append(out[-1] + w)
    return out


def _concave(model: cp_model.CpModel, count: cp_model.LinearExprT, weights: list[int], reach: int,
             name: str) -> cp_model.IntVar:
    """f <= prefix_sum(weights)[count] for weights sorted descending and count <= reach:
    the minimum of the segment lines s < reach equals the prefix sum at every integer
    count up to reach (concavity); segments beyond reach cannot bind."""
    pre = _prefix(weights)
    f = model.new_int_var(0, pre[reach], name)
    for s, w in enumerate(weights[:reach]):
        model.add(f <= pre[s] + w * (count - s))
    return f


def _linear(terms: Terms) -> cp_model.LinearExpr:
    return cp_model.LinearExpr.weighted_sum([v for v, _ in terms], [c for _, c in terms])


def _lookup(assignment: dict[int, int], default: int | None = None) -> Callable[[cp_model.IntVar], int]:
    """A variable's value in ``assignment`` (``default`` for one it lacks, if given)."""
    if default is None:
        return lambda var: assignment[var.index]
    return lambda var: assignment.get(var.index, default)


def _sum_n(keys: list[tuple[int, int]]) -> Callable[[_Values], int]:
    return lambda vals: sum(vals.n[k] for k in keys)


def _sum_v(keys: list[int]) -> Callable[[_Values], int]:
    return lambda vals: sum(vals.v[g] for g in keys)


def _cap_rule(model: cp_model.CpModel, built: _Built, used: Terms, kept_const: int, kept_terms: Terms,
              kept_min: int, bound: int, name: str) -> None:
    """used <= max(0, bound - kept), kept = kept_const - sum(kept_terms): a key whose
    kept holdings stay above the bound admits nothing that needs it."""
    if not used:
        return
    used_expr = _linear(used)
    if kept_min >= bound:           # no room even after every possible preemption
        for var, _ in used:
            model.add(var == 0)
        return
    freed = _linear(kept_terms)
    if kept_const <= bound:         # never over: the plain linear rule
        model.add(used_expr - freed <= bound - kept_const)
        return
    ok = model.new_bool_var(f"fits_{name}")
    built.all_vars.append(ok)
    model.add(used_expr - freed <= bound - kept_const).only_enforce_if(ok)
    model.add(used_expr == 0).only_enforce_if(~ok)
    # Redundant, for the LP: the convex hull of the two branches. Room for admissions
    # grows in proportion to what preemption frees, reaching bound - kept_min when
    # everything freeable is freed. Without it the relaxation ignores the "over" case.
    span, room = kept_const - kept_min, bound - kept_min
    g = math.gcd(span, room)
    span, room = span // g, room // g
    used_max = sum(int(var.proto.domain[len(var.proto.domain) - 1]) * c for var, c in used)  # no [-1] on this field
    if used_max * span < _SAFE and room * (kept_const - kept_min) < _SAFE:
        model.add(used_expr * span <= freed * room)


def _reach(cls: _Class, pools: dict[str, Pool]) -> list[int]:
    """Per eligible policy, the most members of the class it could ever admit: what
    fits the capacity and the limit (and, non-preemptible, the reserved share) of
    an empty pool. Exact upper bounds, so they remove no solution."""
    out = []
    for q, d in zip(cls.policies, cls.demands, strict=True):
        cap = pools[q.pool].capacity
        most = len(cls.members)
        for k, need in d.items():
            room = min(cap.get(k, 0), q.limit.get(k, cap.get(k, 0)))
            if not cls.preemptible:
                room = min(room, q.rsv(k))
            most = min(most, room // need)
        out.append(most)
    return out


def _build(problem: Problem, classes: list[_Class], victims: list[_VictimClass], layout: _Layout,
           pools: list[str], forbidden: frozenset[int] = frozenset()) -> _Built:
    """The model of one part: ``classes`` and ``victims`` live in ``pools`` only;
    ``forbidden``: victim classes that may not be preempted (`_repaired`)."""
    model = cp_model.CpModel()
    b = _Built(model, classes, victims, layout.rank_n)
    b.forbidden = set(forbidden)
    by_pool = {p.name: p for p in problem.pools}
    for ci, cls in enumerate(classes):
        size = len(cls.members)
        reach = _reach(cls, by_pool)
        for pi, q in enumerate(cls.policies):
            b.reach_via[ci, pi] = reach[pi]
            b.n[ci, pi] = model.new_int_var(0, size, f"n_{ci}_{pi}")
            d = cls.demands[pi]
            if all(v <= q.rsv(k) for k, v in d.items()):
                b.z[ci, pi] = model.new_int_var(0, size, f"z_{ci}_{pi}")
                model.add(b.z[ci, pi] <= b.n[ci, pi])
        b.reach[ci] = min(size, sum(reach))
        model.add(sum(b.n[ci, pi] for pi in range(len(cls.policies))) <= size)
    for gi, vc in enumerate(victims):
        b.v[gi] = model.new_int_var(0, len(vc.members), f"v_{gi}")
    b.all_vars += list(b.n.values()) + list(b.z.values()) + list(b.v.values())
    for ci, pi in b.n:                           # in class order: the rows come out the same
        b.through.setdefault(classes[ci].policies[pi].name, []).append((ci, pi))
    for gi, vc in enumerate(victims):
        b.victims_of.setdefault(vc.policy.name, []).append(gi)

    _hard_rules(problem, b, pools)
    _victim_dominance(b)
    if REQUEST_DOMINANCE == "all":
        _request_dominance(b)
    _tiers(b, layout)
    return b


def _victim_dominance(b: _Built) -> None:
    """Within one policy, a lone victim B is preempted only if every allocation of a
    class holding at least as much on every key and started after B is preempted too.

    Every lexicographic optimum obeys this: trading B for such an allocation frees
    at least as much for the same policy, leaves every count and admission as it is
    and raises the start-rank tier. So the cut removes no optimum, only search."""
    for gi, lone in enumerate(b.victims):
        if len(lone.members) != 1:
            continue
        rank = lone.members[0].start_rank
        for gj in b.victims_of[lone.policy.name]:
            if gj == gi:
                continue
            big = b.victims[gj]
            if any(big.holds.get(k, 0) < h for k, h in lone.holds.items()) or not set(lone.borrows) <= set(big.borrows):
                continue
            if gj in b.forbidden or (gj in b.flagged and gi not in b.flagged):
                continue    # a restricted copy preempts the lone one outright, the big one only when allowed
            later = sum(1 for a in big.members if a.start_rank > rank)
            if later:
                b.model.add(b.v[gj] >= later * b.v[gi])


def _dominates(a: _Class, pa: int, other: _Class, pb: int) -> bool:
    """Through one policy, a member of ``a`` can take the place of a member of
    ``other``: it needs no more of any metered key, and it is preemptible unless
    ``other`` is not (the non-preemptible share only counts those)."""
    if other.preemptible and not a.preemptible:
        return False
    mine, theirs = a.demands[pa], other.demands[pb]
    return all(theirs.get(k, 0) >= v for k, v in mine.items())


def _request_dominance(b: _Built) -> None:
    """Within one policy q, class B admits through q only members that arrived
    before every member of a dominating class A (``_dominates``) left out.

    With A's members and B's in arrival order and t_A, t_B the admitted counts:
    if B admits through q and t_A < |A|, then B's last admitted member arrived
    before A's first one left out, i.e. t_B <= c(t_A), c(k) = how many of B
    arrived before A's member k. Every lexicographic optimum obeys this:
    otherwise, admit A's member through q in place of one of B's. Every rule is
    met (A needs no more of any key, and counts against the non-preemptible share
    only if B did), |Z| and every admitted and preempted count stay as they are
    (the same policy, the in-share count moves with it: A fits the reserve when B
    does), and FIFO grows by the difference of the two arrival ranks. Repeating
    such exchanges (FIFO grows each time), together with the victim exchanges of
    `_victim_dominance` (start rank grows, admissions stay), ends in a solution
    obeying every cut with the same count tiers, so the cuts remove no
    lexicographic optimum, in any tier or restricted copy (an exchange through q
    keeps admissions through q in Z when they were).

    Since c is nondecreasing in k, t_A <= k implies t_B <= c(k): one row per
    distinct c(k) < what B can reach, at the largest such k, enforced by
    ``n_Bq >= 1`` and ``t_A <= k`` (always true when k >= what A can reach)."""
    model = b.model
    b.used.clear()       # an earlier call's literals lost their definitions with its rows
    b.atleast.clear()    # (a FIFO solved again after a reopen): each call defines its own

    def total(ci: int) -> cp_model.LinearExpr:
        return cp_model.LinearExpr.sum([b.n[ci, pi] for pi in range(len(b.classes[ci].policies))])

    def used(ci: int, pi: int) -> cp_model.IntVar:
        if (ci, pi) not in b.used:
            u = model.new_bool_var(f"used_{ci}_{pi}")
            b.link_rows += [len(model.proto.constraints), len(model.proto.constraints) + 1]
            model.add(b.n[ci, pi] >= 1).only_enforce_if(u)
            model.add(b.n[ci, pi] == 0).only_enforce_if(~u)
            b.used[ci, pi] = u
            b.all_vars.append(u)
        return b.used[ci, pi]

    def atleast(ci: int, k: int) -> cp_model.IntVar:
        if (ci, k) not in b.atleast:
            a = model.new_bool_var(f"atleast_{ci}_{k}")
            b.link_rows += [len(model.proto.constraints), len(model.proto.constraints) + 1]
            model.add(total(ci) >= k + 1).only_enforce_if(a)
            model.add(total(ci) <= k).only_enforce_if(~a)
            b.atleast[ci, k] = a
            b.all_vars.append(a)
        return b.atleast[ci, k]

    ranks = [[r.rank for r in cls.members] for cls in b.classes]
    for name in sorted(b.through):
        here = b.through[name]
        for ca, pa in here:
            A = b.classes[ca]
            for cb, pb in here:
                if ca == cb or not _dominates(A, pa, b.classes[cb], pb):
                    continue
                top = min(len(ranks[cb]), b.reach[cb])
                rows: dict[int, int] = {}                     # c -> largest k
                for k in range(min(len(ranks[ca]), b.reach[ca] + 1)):
                    c = bisect.bisect_left(ranks[cb], ranks[ca][k])
                    if c < top:
                        rows[c] = k
                for c, k in sorted(rows.items()):
                    when: list[cp_model.LiteralT] = [used(cb, pb)]
                    if k < b.reach[ca]:
                        when.append(~atleast(ca, k))
                    b.cut_rows.append(len(model.proto.constraints))
                    model.add(total(cb) <= c).only_enforce_if(when)


def _answer(b: _Built, solver: cp_model.CpSolver) -> dict[int, int]:
    """The exact assignment of ``solver``'s solution. A solver kept from before the
    request dominance rows were added knows nothing of their literals (CP-SAT then
    reads out of range): those are derived from the counts instead."""
    solution = list(solver.response_proto.solution)     # read once: one list, not a call per variable
    size = len(solution)
    out = _exact_assignment(b, lambda var: solution[var.index] if var.index < size else 0)
    _derive(b, out)
    return out


def _derive(b: _Built, hint: dict[int, int]) -> None:
    """Set the literals of `_request_dominance` and the short-key flags in ``hint``
    from its counts."""
    _short_hint(b, hint)
    for (ci, pi), u in b.used.items():
        hint[u.index] = int(hint[b.n[ci, pi].index] >= 1)
    for (ci, k), a in b.atleast.items():
        t = sum(hint[b.n[ci, pi].index] for pi in range(len(b.classes[ci].policies)))
        hint[a.index] = int(t >= k + 1)


@dataclass
class _Kept:
    """What running allocations hold per (pool, key), per (policy, key), and the
    non-preemptible part per (policy, key), before any preemption."""

    pool: dict[tuple[str, str], int] = field(default_factory=dict)
    policy: dict[tuple[str, str], int] = field(default_factory=dict)
    fixed: dict[tuple[str, str], int] = field(default_factory=dict)


def _kept(problem: Problem, pools: set[str]) -> _Kept:
    kept = _Kept()
    for alloc in _known_running(problem):
        if alloc.pool not in pools:
            continue
        policy = problem.policy_for(alloc.subject, alloc.pool)
        for k, h in _metered_holds(problem, alloc).items():
            kept.pool[alloc.pool, k] = kept.pool.get((alloc.pool, k), 0) + h
            if policy is not None:
                kept.policy[policy.name, k] = kept.policy.get((policy.name, k), 0) + h
                if not alloc.preemptible:
                    kept.fixed[policy.name, k] = kept.fixed.get((policy.name, k), 0) + h
    return kept


def _hard_rules(problem: Problem, b: _Built, pools: list[str]) -> None:
    """H1 capacity, H2 limit, H3 non-preemptible share, and the in-share set Z."""
    kept = _kept(problem, set(pools))

    by_pool: dict[str, list[int]] = {}
    for gi, vc in enumerate(b.victims):          # in class order: the rows come out the same
        by_pool.setdefault(vc.policy.pool, []).append(gi)

    def freed(classes: list[int], k: str) -> list[tuple[int, int]]:
        """(victim class, units of k each member frees) for those of ``classes`` holding k."""
        return [(gi, b.victims[gi].holds[k]) for gi in classes if b.victims[gi].holds.get(k, 0) > 0]

    def rule(used: Terms, const: int, victims: list[tuple[int, int]], bound: int, name: str) -> None:
        _cap_rule(b.model, b, used, const, [(b.v[g], h) for g, h in victims],
                  const - sum(len(b.victims[g].members) * h for g, h in victims), bound, name)

    at_pool: dict[str, list[tuple[int, int]]] = {}          # (class, policy) in class order
    for ci, pi in b.n:
        at_pool.setdefault(b.classes[ci].policies[pi].pool, []).append((ci, pi))

    for pool in (problem.pool(name) for name in pools):
        for k in sorted(pool.capacity):
            used = [(b.n[ci, pi], b.classes[ci].demands[pi][k]) for ci, pi in at_pool.get(pool.name, [])
                    if b.classes[ci].demands[pi].get(k, 0) > 0]
            rule(used, kept.pool.get((pool.name, k), 0),
                 freed(by_pool.get(pool.name, []), k), pool.capacity[k],
                 f"cap_{pool.name}_{k}")
            b.short_use[pool.name, k] = (used, kept.pool.get((pool.name, k), 0), pool.capacity[k])
    _short_keys(b, by_pool)

    inside = set(pools)
    for q in sorted(problem.policies, key=lambda q: q.name):
        found = problem.find_pool(q.pool)
        if found is None or q.pool not in inside:
            continue
        for k in sorted(found.capacity):
            mine = [(ci, pi) for ci, pi in b.through.get(q.name, []) if b.classes[ci].demands[pi].get(k, 0) > 0]
            terms = freed(b.victims_of.get(q.name, []), k)
            const = kept.policy.get((q.name, k), 0)
            rule([(b.n[ci, pi], b.classes[ci].demands[pi][k]) for ci, pi in mine], const, terms,
                 q.limit.get(k, found.capacity[k]), f"lim_{q.name}_{k}")
            rule([(b.n[ci, pi], b.classes[ci].demands[pi][k]) for ci, pi in mine
                  if not b.classes[ci].preemptible], kept.fixed.get((q.name, k), 0), [], q.rsv(k),
                 f"np_{q.name}_{k}")
            # a policy's own allocations stay counted against its reserve: preempting them
            # only to call another of its requests in-share would swap one step for another
            # (and Kueue never preempts within a policy at one priority)
            rule([(b.z[ci, pi], b.classes[ci].demands[pi][k]) for ci, pi in mine if (ci, pi) in b.z],
                 const, [], q.rsv(k), f"z_{q.name}_{k}")


def _short_keys(b: _Built, by_pool: dict[str, list[int]]) -> None:
    """H5, victims only for keys that are short: a victim class may be preempted only
    if the pool is short on a key its members borrow on, i.e. what the plan admits
    there needs that key and does not fit beside everything that ran before the
    plan. ``short[pool, k]`` may be 1 only then. So an allocation inside its
    reserve on the key the preemptor needs is never taken because it borrows on
    another key that has room (Kueue never does that either: it reclaims only from
    queues that borrow a resource the preemptor lacks).

    Only a class that holds a key without borrowing on it, where that key can be
    short at all, needs the flags: the tiers already make every victim needed
    (dropping one would lower its tier's count with every admission kept), so it
    holds a key that is short, and when every key it holds but does not borrow on
    can never be short, that key is one it borrows on. Most borrowers are such
    classes, and the flags' relaxation slows the proofs down."""
    model = b.model

    def can_be_short(pool: str, k: str) -> bool:
        if (pool, k) not in b.short_use:
            return False
        used, kept, cap = b.short_use[pool, k]
        return bool(used) and _most(used) + kept > cap

    governed = [gi for pool in sorted(by_pool) for gi in by_pool[pool]
                if any(can_be_short(pool, k) for k in b.victims[gi].holds if k not in b.victims[gi].borrows)]
    if len(governed) > FLAG_LIMIT:
        # too many for the flags to stay cheap: only the static part here (a victim whose
        # borrowed keys can never be short is never taken); `_repaired` checks the rest
        for gi in governed:
            vc = b.victims[gi]
            if not any(can_be_short(vc.policy.pool, k) for k in vc.borrows):
                b.forbidden.add(gi)
            elif gi not in b.forbidden:
                b.unchecked.append(gi)
        governed = []
    for gi in sorted(b.forbidden):
        model.add(b.v[gi] == 0)
    for gi in governed:
        pool = b.victims[gi].policy.pool
        vc = b.victims[gi]
        b.flagged.add(gi)
        flags = []
        for k in vc.borrows:
            if (pool, k) not in b.short_use:
                continue
            if (pool, k) not in b.short:
                used, kept, cap = b.short_use[pool, k]
                flag = model.new_bool_var(f"short_{pool}_{k}")
                b.short[pool, k] = flag
                b.all_vars.append(flag)
                if not can_be_short(pool, k):
                    model.add(flag == 0)      # can never be short: nothing admitted can overrun it
                else:
                    model.add(_linear(used) >= max(1, cap - kept + 1)).only_enforce_if(flag)
                    b.short_pools.add(pool)
            flags.append(b.short[pool, k])
        size = len(vc.members)
        if not flags:
            model.add(b.v[gi] == 0)
        else:
            model.add(b.v[gi] <= size * cp_model.LinearExpr.sum(flags))


def _short_hint(b: _Built, hint: dict[int, int]) -> None:
    """Set the short-key flags in ``hint`` from its admissions (1 wherever allowed)."""
    for (pool, k), flag in b.short.items():
        used, kept, cap = b.short_use[pool, k]
        total = sum(hint[var.index] * c for var, c in used)
        hint[flag.index] = int(total >= 1 and total + kept > cap)


def _allowed(b: _Built, gi: int, hint: dict[int, int]) -> bool:
    """Victim class ``gi`` may be preempted under the flags of ``hint``."""
    if gi not in b.flagged:
        return True
    pool = b.victims[gi].policy.pool
    return any(hint.get(b.short[pool, k].index, 0) for k in b.victims[gi].borrows if (pool, k) in b.short)


def _count_tier(name: str, maximize: bool, terms: Terms, value: Callable[[_Values], int],
                bound: int) -> _Tier:
    return _Tier(name, maximize, terms, value, bound)


def _priority_tiers(b: _Built, layout: _Layout) -> None:
    """|Z|, then per admission priority its admitted count and the victim counts it
    may displace (docs/planning.md#tiers, tiers 1 and 2), in the global order."""
    zkeys = sorted(b.z)
    b.tiers.append(_count_tier("in-share |Z|", True, [(b.z[k], 1) for k in zkeys],
                               lambda vals: sum(vals.z[k] for k in zkeys),
                               sum(len(b.classes[ci].members) for ci, _ in zkeys)))
    b.tiers[-1].floor = b.tiers[-1].vfloor = math.inf
    prios = layout.prios
    bounds: list[int | None] = [None, *prios, None]            # None = +inf at 0, -inf at m+1
    for j in range(len(prios) + 1):
        if j >= 1:
            keys = [(ci, pi) for ci, cls in enumerate(b.classes) for pi, q in enumerate(cls.policies)
                    if q.priority == prios[j - 1]]
            b.tiers.append(_count_tier(f"admitted at priority {prios[j - 1]}", True, [(b.n[k], 1) for k in keys],
                                       _sum_n(keys),
                                       sum(len(b.classes[ci].members) for ci, _ in keys)))
            b.tiers[-1].floor = b.tiers[-1].vfloor = prios[j - 1]
        hi, lo = bounds[j], bounds[j + 1]
        for v in layout.vprios:
            if (hi is None or v < hi) and (lo is None or v >= lo):
                vkeys = [gi for gi, vc in enumerate(b.victims) if vc.policy.priority == v]
                b.tiers.append(_count_tier(f"preempted at priority {v}", False, [(b.v[g], 1) for g in vkeys],
                                           _sum_v(vkeys), 0))
                b.tiers[-1].floor, b.tiers[-1].vfloor = (math.inf if j == 0 else prios[j - 1]), v
    for tier, after in zip(b.tiers, b.tiers[1:], strict=False):
        tier.fold_next = FOLD_COUNTS and not tier.maximize and after.maximize    # `_fold_count`


def _fifo_tier(b: _Built) -> _Tier:
    """Tier 3; its prefix-sum variables are added only when it is reached: earlier
    solves would presolve thousands of constraints that cannot matter to them."""
    weights = {ci: [b.rank_n - r.rank for r in cls.members] for ci, cls in enumerate(b.classes)}
    tier = _Tier("FIFO", True, [], lambda vals: sum(_prefix(weights[ci])[vals.t[ci]] for ci in weights),
                 sum(sum(w[:b.reach[ci]]) for ci, w in weights.items()))

    def setup() -> None:
        for ci, cls in enumerate(b.classes):
            admitted = sum(b.n[ci, pi] for pi in range(len(cls.policies)))
            b.fifo[ci] = _concave(b.model, admitted, weights[ci], b.reach[ci], f"fifo_{ci}")
        tier.terms = [(b.fifo[ci], 1) for ci in sorted(b.fifo)]
        b.all_vars.extend(f for f, _ in tier.terms)

    tier.setup, tier.active = setup, bool(b.classes)
    return tier


def _late_tier(b: _Built) -> _Tier:
    """Tier 4: preempt the most recently started, as prefix sums per victim class."""
    weights = {gi: [a.start_rank for a in vc.members] for gi, vc in enumerate(b.victims)}
    tier = _Tier("start rank", True, [], lambda vals: sum(_prefix(weights[g])[vals.v[g]] for g in weights),
                 sum(sum(w) for w in weights.values()))

    def setup() -> None:
        for gi in range(len(b.victims)):
            b.late[gi] = _concave(b.model, b.v[gi], weights[gi], len(weights[gi]), f"late_{gi}")
        tier.terms = [(b.late[gi], 1) for gi in sorted(b.late)]
        b.all_vars.extend(f for f, _ in tier.terms)

    tier.setup, tier.active, tier.fold_next = setup, bool(b.victims), True
    return tier


def _preference_tier(b: _Built) -> _Tier:
    """Tier 5: the higher-priority policy, then the pool name, for each admission.

    Its bound takes each class's best policies first, each up to what it can reach
    (an exact upper bound): the start-rank tier is folded with weight bound + 1, and
    a weight ten times larger than needed left the fold unproven after 9.7
    deterministic s at 10,000 requests, seed 5 (0.9 s with this bound)."""
    weight = {(ci, pi): len(b.classes[ci].policies) - pi for ci, pi in b.n}
    most = 0
    for ci, cls in enumerate(b.classes):     # best policies first, each up to what it can reach
        left = len(cls.members)
        for pi in range(len(cls.policies)):
            take = min(left, b.reach_via[ci, pi])
            most, left = most + take * weight[ci, pi], left - take
    return _Tier("pool preference", True, [(b.n[k], weight[k]) for k in b.n],
                 lambda vals: sum(vals.n[k] * weight[k] for k in b.n), most)


def _tiers(b: _Built, layout: _Layout) -> None:
    _priority_tiers(b, layout)
    b.count_tiers = len(b.tiers)
    b.tiers += [_fifo_tier(b), _late_tier(b), _preference_tier(b)]


# ---------------------------------------------------------------- solving

def _decisions(b: _Built, value: Callable[[cp_model.IntVar], int]) -> _Values:
    n = {k: value(x) for k, x in b.n.items()}
    return _Values(n=n, z={k: value(x) for k, x in b.z.items()}, v={k: value(x) for k, x in b.v.items()},
                   t={ci: sum(n[ci, pi] for pi in range(len(cls.policies))) for ci, cls in enumerate(b.classes)})


def _restricted(b: _Built, floor: float, vfloor: float, assignment: dict[int, int],
                base: cp_model.CpModel | None = None) -> tuple[cp_model.CpModel, dict[int, int]]:
    """The tier's model with admissions through policies of priority below ``floor``
    limited to the in-share set, every victim of priority below ``vfloor``
    preempted, and the hint moved there.

    Exact: no tier solved so far or now counts such an admission except through
    Z, nor such a victim; dropping an admission or preempting a victim only frees
    room (every rule is monotone in both), so some optimum of this tier is in the
    restricted model. Not in a pool where an admission can make a key short
    (`_short_keys`): there dropping one could forbid a victim that an admission
    counted now needs, so those admissions stay free. The plain model is kept for
    the tiers that count them. A
    lower ``floor`` or ``vfloor`` than the tier's own restricts less and stays
    exact (a folded pair of tiers is solved on the looser copy of the two).
    ``base`` (default: the part's model) is the model copied."""
    model = (b.model if base is None else base).clone()
    hint = dict(assignment)
    _short_hint(b, hint)
    for gi, var in b.v.items():
        vc = b.victims[gi]
        size, copy = len(vc.members), model.get_int_var_from_proto_index(var.index)
        if gi in b.forbidden:
            continue
        if vc.policy.priority < vfloor and gi not in b.flagged:
            model.add(copy == size)
            hint[var.index] = size
        elif vc.policy.priority < vfloor:
            # preempted whenever a key it borrows on is short (`_short_keys`): still only frees room
            for k in vc.borrows:
                if (vc.policy.pool, k) in b.short:
                    model.add(copy >= size * model.get_int_var_from_proto_index(b.short[vc.policy.pool, k].index))
            if _allowed(b, gi, hint):
                hint[var.index] = size
    for (ci, pi), var in b.n.items():
        # a pool where an admission can make a key short keeps them: dropping one
        # could take away the shortage that allows a victim (`_short_keys`)
        if b.classes[ci].policies[pi].priority < floor and b.classes[ci].policies[pi].pool not in b.short_pools:
            z = b.z.get((ci, pi))
            if z is None:
                model.add(model.get_int_var_from_proto_index(var.index) == 0)
                hint[var.index] = 0
            else:
                model.add(model.get_int_var_from_proto_index(var.index)
                          == model.get_int_var_from_proto_index(z.index))
                hint[var.index] = hint[z.index]
    _derive(b, hint)
    _hint(b, hint, model)
    return model, hint


def _hint(b: _Built, assignment: dict[int, int], model: cp_model.CpModel | None = None) -> None:
    """Hint ``assignment`` into ``model`` (default: the part's own), written straight
    into the proto: the same hint `add_hint` writes, without a Python call per variable."""
    model = b.model if model is None else model
    model.clear_hints()
    hint = model.proto.solution_hint
    hint.vars.extend([var.index for var in b.all_vars])
    hint.values.extend([assignment[var.index] for var in b.all_vars])


def _exact_assignment(b: _Built, value: Callable[[cp_model.IntVar], int]) -> dict[int, int]:
    """Values of every variable so far, with the prefix-sum variables at their exact
    value, so the assignment satisfies every later tier constraint as a hint."""
    out = {var.index: value(var) for var in b.all_vars}
    vals = _decisions(b, value)
    for ci, f in b.fifo.items():
        out[f.index] = _prefix([b.rank_n - r.rank for r in b.classes[ci].members])[vals.t[ci]]
    for gi, f in b.late.items():
        out[f.index] = _prefix([a.start_rank for a in b.victims[gi].members])[vals.v[gi]]
    return out


@dataclass
class _Budget:
    """The deterministic-time budget shared by every tier of every part."""

    total: float
    tiers_left: int
    spent: float = 0.0

    def share(self) -> float:
        """A fair share of what is left: a hard tier cannot starve the ones after
        it, and time an easy tier does not use passes on (what is left after the
        last tier goes to `_reopen`)."""
        return (self.total - self.spent) / max(1, self.tiers_left)


def _solver(limit: float, presolve: bool, kind: str) -> cp_model.CpSolver:
    """One worker, pinned seed, deterministic-time limit: the same model gives the same
    answer on every run and machine. ``presolve`` is off for the FIFO, start-rank and
    preference tiers: there the model is the count tiers' model plus thousands of
    prefix-sum segments, and presolving it again per tier cost 18 of 20 CPU s at
    50,000 requests for no gain in search (same values, proven either way)."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = RANDOM_SEED
    solver.parameters.linearization_level = 2
    solver.parameters.max_deterministic_time = limit
    solver.parameters.cp_model_presolve = presolve
    for name, value in TUNING[kind].items():
        setattr(solver.parameters, name, value)
    return solver


@dataclass
class _PartResult:
    vals: _Values
    values: list[int]
    bounds: list[int]
    label: str = ""
    assignment: dict[int, int] = field(default_factory=dict)   # every variable, as `vals`
    solved_with: set[int] = field(default_factory=set)         # tiers proven inside the tier before
    rows: dict[int, int] = field(default_factory=dict)         # tier -> the row fixing its value
    set_up: set[int] = field(default_factory=set)              # tiers whose setup has run
    spent: dict[int, float] = field(default_factory=dict)      # tier -> deterministic s its solves took


def _solve_part(b: _Built, budget: _Budget, progress: Progress | None, label: str) -> _PartResult:
    """The tiers of one part in order, each fixed at its value before the next."""
    assignment = {var.index: 0 for var in b.all_vars}    # admit nothing, preempt nothing: feasible
    st = _PartResult(_decisions(b, _lookup(assignment)), [], [], label, assignment)
    _solve_tiers(b, budget, progress, st, 1)
    return st


def _solve_tiers(b: _Built, budget: _Budget, progress: Progress | None, st: _PartResult, start: int) -> None:
    """Tiers ``start``.. of one part in order, each fixed at its value before the next;
    ``st`` holds the tiers before ``start`` (values, bounds, rows) and the answer so far."""
    assignment, vals, bounds, solved_with, label = st.assignment, st.vals, st.bounds, st.solved_with, st.label
    for i, tier in enumerate(b.tiers, 1):
        if i < start:
            continue
        if tier.setup is not None and i not in st.set_up:
            st.set_up.add(i)
            tier.setup()
            known = assignment
            assignment = _exact_assignment(b, _lookup(known, 0))
        expr = _linear(tier.terms)
        bound = tier.trivial_bound
        st.spent[i] = -budget.spent
        left = budget.share()
        if tier.active:
            budget.tiers_left -= 1
        after = b.tiers[i] if i < len(b.tiers) else None
        weight = _fold_weight(tier, after) if i > b.count_tiers else _fold_count(tier, after)
        if i in solved_with:
            bound = tier.value(vals)
        elif tier.terms and left > 0:
            b.model.clear_objective()
            objective = _folded(expr, tier, after, weight) if weight and after else expr
            (b.model.maximize if tier.maximize else b.model.minimize)(objective)
            model = b.model
            if tier.floor is not None and tier.vfloor is not None:
                floor, vfloor = tier.floor, tier.vfloor
                if weight and after and after.floor is not None and after.vfloor is not None:
                    floor, vfloor = min(floor, after.floor), min(vfloor, after.vfloor)   # exact for both
                model, assignment = _restricted(b, floor, vfloor, assignment)
            else:
                if weight and i == b.count_tiers + 2 and _requests(b) >= POLISH_FROM:
                    assignment = _polished(b, tier, objective, assignment, budget, min(left, RANK_POLISH))
                _hint(b, assignment)
            fifo = i == b.count_tiers + 1
            quick = (FIFO_QUICK if fifo else _count_quick(i <= b.count_tiers) if not weight
                     else COUNT_FOLD_QUICK if i <= b.count_tiers else FOLD_QUICK)
            spent0 = budget.spent
            note = functools.partial(_tier_note, progress, b, label, i)
            best_bound: float | None = None     # the tightest bound of several attempts
            kind = _kind(b, i)
            solver = _solver(min(left, quick), presolve=i <= b.count_tiers, kind=kind)
            status = solver.solve(model)
            budget.spent += solver.deterministic_time
            if fifo and status != cp_model.OPTIMAL and left > solver.deterministic_time:
                # not proven quickly: once more with presolve (same hint: measured faster
                # than hinting what the first attempt found), for `_fifo_plain`; still not
                # proven, with the request dominance rows for the rest of the share
                used = solver.deterministic_time
                plain = left - used if REQUEST_DOMINANCE != "retry" else min(left - used, _fifo_plain(b))
                attempts = _Attempts(tier.maximize)
                attempts.add(solver, status)
                checked = _mip_retry(b, model, solver, status, budget, note)
                if checked is not None:
                    attempts.add(checked, cp_model.OPTIMAL)
                if not attempts.proven:
                    attempts.add(*_solve_again(model, budget, plain, presolve=True, kind=kind))
                used = budget.spent - spent0
                if REQUEST_DOMINANCE == "retry" and not attempts.proven and left > used:
                    _request_dominance(b)
                    _derive(b, assignment)
                    _hint(b, assignment)
                    attempts.add(*_solve_again(model, budget, left - used, presolve=True, kind=kind))
                solver, status, best_bound = attempts.best(solver)
            elif weight and status != cp_model.OPTIMAL and left > solver.deterministic_time:
                room = left - solver.deterministic_time
                if i > b.count_tiers:
                    # the start-rank fold: once more with presolve, for the rest of the
                    # share (same hint, as for FIFO). Unproven, its weighted bound still
                    # bounds this tier and the next tier is solved on its own.
                    attempts = _Attempts(tier.maximize)
                    attempts.add(solver, status)
                    attempts.add(*_solve_again(model, budget, room, presolve=True, kind=kind))
                    solver, status, best_bound = attempts.best(solver)
                else:
                    # a count fold: the tier alone, in the same model (the looser
                    # restricted copy: exact for it too), hinted with what the fold
                    # found; the next tier is then solved on its own
                    if status == cp_model.FEASIBLE:
                        assignment = _answer(b, solver)
                    model.clear_objective()
                    (model.maximize if tier.maximize else model.minimize)(expr)
                    _hint(b, assignment, model)
                    solver, status, replaced = _second_try(model, budget, min(room, _count_quick(True)), solver,
                                                           status, presolve=True, kind=kind)
                    if replaced:
                        weight = 0
                    if replaced and status != cp_model.OPTIMAL:
                        solver, status, best_bound = _count_retry(
                            b, model, budget, left - (budget.spent - spent0), solver, status, kind,
                            note)
            elif i <= b.count_tiers and status != cp_model.OPTIMAL and left > solver.deterministic_time:
                solver, status, best_bound = _count_retry(b, model, budget, left - solver.deterministic_time, solver,
                                                          status, kind, note)
            if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                assignment = _answer(b, solver)
                vals = _decisions(b, _lookup(assignment))
                found = round(solver.best_objective_bound if best_bound is None else best_bound)   # integer objective
                if weight:       # the folded part lies in [0, weight): see `_folded`
                    found = found // weight
                    if status == cp_model.OPTIMAL:
                        solved_with.add(i + 1)
                bound = (min if tier.maximize else max)(bound, found)
            elif status != cp_model.UNKNOWN:
                raise RuntimeError(f"CP-SAT returned {solver.status_name(status)} on tier '{tier.name}'")
        st.spent[i] += budget.spent
        value = tier.value(vals)
        bounds.append(bound if tier.terms else value)
        if tier.terms:
            _fix(b, st, i, expr, value)
        if DROP_CUTS and i == b.count_tiers + 1:
            for row in b.cut_rows + b.link_rows:                # the rows, and what defines their literals
                _clear_row(b.model, row)
        if progress:
            progress(_tier_line(b, label, i, f": {value}" + ("" if bounds[-1] == value else f" (bound {bound})"),
                                budget))
    # Report the plan actually returned: a tier stopped early was fixed at its value
    # then, and a later solve may still have improved it.
    st.assignment, st.vals = assignment, vals
    st.values = [tier.value(vals) for tier in b.tiers]


def _fix(b: _Built, st: _PartResult, i: int, expr: cp_model.LinearExpr, value: int) -> None:
    """Hold tier ``i`` (1-based) at ``value`` from now on, remembering the row
    (`_reopen` clears the rows of the tiers after the one it reopens)."""
    st.rows[i] = len(b.model.proto.constraints)
    b.model.add(expr >= value if b.tiers[i - 1].maximize else expr <= value)


def _requests(b: _Built) -> int:
    """How many pending requests the part holds (what its size thresholds count)."""
    return sum(len(c.members) for c in b.classes)


def _tier_line(b: _Built, label: str, i: int, outcome: str, budget: _Budget) -> str:
    """The progress line of tier ``i`` (1-based): its name, ``outcome``, the budget spent."""
    return (f"{label}tier {i}/{len(b.tiers)} {b.tiers[i - 1].name}{outcome}"
            f" [deterministic time {budget.spent:.2f}/{budget.total:g}]")


def _clear_row(model: cp_model.CpModel, row: int) -> None:
    model.proto.constraints[row].clear_linear()    # an empty constraint: always true
    model.proto.constraints[row].enforcement_literal.clear()


def _reopen(b: _Built, budget: _Budget, progress: Progress | None, st: _PartResult, k: int) -> bool:
    """Tier ``k`` (1-based), stopped at its share before, solved again alone,
    hinted with the plan so far, with presolve, for what is left less what the
    tiers after it took the first time (they are solved again if it improves).
    Whether that proved it or improved it.

    Exact: the tiers before ``k`` keep their values (their rows stay), the rows of
    the tiers after it are left out of the copy solved. A proof at the same value
    makes the later tiers' values and bounds exact as they are (they were solved
    with tier ``k`` at that value); a better value replaces the plan, and the
    tiers after ``k`` are solved again from it with what is then left."""
    tier = b.tiers[k - 1]
    old = st.values[k - 1]
    limit = budget.total - budget.spent - sum(t for j, t in st.spent.items() if j > k)
    if limit < REOPEN_MIN:
        return False
    if k == b.count_tiers + 1 and REQUEST_DOMINANCE == "retry":
        first = len(b.model.proto.constraints)
        _request_dominance(b)
        _derive(b, st.assignment)
        added = range(first, len(b.model.proto.constraints))
    else:
        added = range(0)
    model = b.model.clone()
    for row in added:             # in the copy only
        _clear_row(b.model, row)
    for j, row in st.rows.items():
        if j > k:
            _clear_row(model, row)
    expr = _linear(tier.terms)
    model.clear_objective()
    (model.maximize if tier.maximize else model.minimize)(expr)
    if tier.floor is not None and tier.vfloor is not None:
        model, _ = _restricted(b, tier.floor, tier.vfloor, st.assignment, base=model)
    else:
        _hint(b, st.assignment, model)
    solver = _solver(limit, presolve=True, kind=_kind(b, k))
    status = solver.solve(model)
    budget.spent += solver.deterministic_time
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        if progress:
            progress(_tier_line(b, st.label, k, " reopened: nothing found", budget))
        return False
    found = round(solver.best_objective_bound)
    bound = (min if tier.maximize else max)(st.bounds[k - 1], found)
    answer = _answer(b, solver)
    vals = _decisions(b, _lookup(answer))
    value = tier.value(vals)
    better = value > old if tier.maximize else value < old
    if progress:
        progress(_tier_line(b, st.label, k, f" reopened: {value}" + ("" if bound == value else f" (bound {bound})"),
                            budget))
    if not better:
        st.bounds[k - 1] = bound
        return status == cp_model.OPTIMAL
    for j, row in st.rows.items():
        if j >= k:
            _clear_row(b.model, row)
    st.rows = {j: row for j, row in st.rows.items() if j < k}
    _fix(b, st, k, expr, value)
    st.assignment, st.vals = answer, vals
    st.bounds[k - 1:] = [bound]
    st.solved_with = {j for j in st.solved_with if j <= k}
    budget.tiers_left = sum(1 for t in b.tiers[k:] if t.active)
    _solve_tiers(b, budget, progress, st, k + 1)
    return True


def _fifo_plain(b: _Built) -> float:
    """How long the FIFO retry with presolve gets before the request dominance rows
    are added. Their number grows with the square of the classes per policy
    (282,000 rows on a 9,926-request platform with nothing running, where the
    retry proves FIFO in 3.4 deterministic s and the rows attempt took 8.3 after
    a retry of 2), so a large part gives the retry longer; at 1,000 requests the
    rows are what prove the hard seeds, and they come after FIFO_PLAIN."""
    return FIFO_PLAIN_LARGE if _requests(b) >= FIFO_PLAIN_FROM else FIFO_PLAIN


def _kind(b: _Built, i: int) -> str:
    """Which `TUNING` entry the solve of tier ``i`` (1-based) uses."""
    if i <= b.count_tiers:
        return "count"
    return ("fifo", "rank", "preference")[min(i - b.count_tiers - 1, 2)]


def _polished(b: _Built, tier: _Tier, objective: cp_model.LinearExprT, assignment: dict[int, int],
              budget: _Budget, limit: float) -> dict[int, int]:
    """A better hint for the start-rank fold of a large part: the fold's own
    objective with every admission count fixed at ``assignment``'s (the FIFO
    answer), so that only the victims move, solved for at most ``limit``.

    FIFO leaves the victims wherever the count tiers left them, and the fold then
    climbs from there one start-rank unit per solution (10,000 requests, seed 5:
    about 35 solutions). With the admissions fixed that climb is short. Any answer
    keeps every tier so far (the same admissions, the tier rows in the model), so
    it is a valid hint; the fold's result does not depend on it being optimal."""
    model = b.model.clone()
    for var in b.n.values():
        model.add(var == assignment[var.index])
    model.clear_objective()
    (model.maximize if tier.maximize else model.minimize)(objective)
    _hint(b, assignment, model)
    solver = _solver(limit, presolve=True, kind="rank")
    status = solver.solve(model)
    budget.spent += solver.deterministic_time
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return _answer(b, solver)
    return assignment


def _solve_again(model: cp_model.CpModel, budget: _Budget, room: float, *,
                 presolve: bool, kind: str) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus]:
    """One more attempt at the same objective within ``room`` deterministic seconds."""
    again = _solver(room, presolve=presolve, kind=kind)
    status = again.solve(model)
    budget.spent += again.deterministic_time
    return again, status


@dataclass
class _Attempts:
    """Several attempts at one objective (a first solve and its retries): the best
    answer any of them found and the tightest bound any of them proved.

    Each attempt's model keeps some optimum of the tier (a retry only adds
    presolve or the request dominance rows), so every bound holds for all of
    them and every answer found is a plan of the tier. A first attempt may prove
    the optimal value and a retry find it (1,000 requests, seed 9: the FIFO
    optimum 300,064 was the first attempt's bound and the presolve retry's
    answer, whose own bound was 311,726): together they prove it, and the rows
    attempt after them is not needed."""

    maximize: bool
    solver: cp_model.CpSolver | None = None
    value: int | None = None
    bound: int | None = None

    def add(self, solver: cp_model.CpSolver, status: cp_model.CpSolverStatus) -> None:
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return
        value, bound = round(solver.objective_value), round(solver.best_objective_bound)
        if self.value is None or (value >= self.value if self.maximize else value <= self.value):
            self.solver, self.value = solver, value      # a later attempt wins a tie, as before
        if self.bound is None or (bound < self.bound if self.maximize else bound > self.bound):
            self.bound = bound

    @property
    def proven(self) -> bool:
        return self.value is not None and self.value == self.bound

    def best(self, last: cp_model.CpSolver) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus, float | None]:
        """(the solver holding the best answer, its status as a whole, the tightest
        bound); ``last`` and UNKNOWN when no attempt found anything."""
        if self.solver is None:
            return last, cp_model.UNKNOWN, None
        return self.solver, cp_model.OPTIMAL if self.proven else cp_model.FEASIBLE, self.bound


def _second_try(model: cp_model.CpModel, budget: _Budget, room: float, first: cp_model.CpSolver,
                status: cp_model.CpSolverStatus, *,
                presolve: bool, kind: str) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus, bool]:
    """Solve ``model`` again within ``room`` deterministic seconds;
    (solver, status, whether this attempt's answer replaced the first one's). The
    second answer is kept unless it found nothing where the first found something."""
    again, found = _solve_again(model, budget, room, presolve=presolve, kind=kind)
    if found != cp_model.UNKNOWN or status == cp_model.UNKNOWN:
        return again, found, True
    return first, status, False


def _mip_on() -> bool:
    """Whether the MIP retry runs: switched on, and SCIP (pyscipopt) installed."""
    return MIP_RETRY and mip.available()


def _count_quick(count_tier: bool) -> float:
    """The first attempt's limit for a count tier solved alone: `COUNT_QUICK` when the
    MIP retry can take over after it, else the tier's whole share."""
    return COUNT_QUICK if count_tier and _mip_on() else math.inf


def _count_retry(b: _Built, model: cp_model.CpModel, budget: _Budget, room: float, solver: cp_model.CpSolver,
                 status: cp_model.CpSolverStatus, kind: str,
                 note: Progress) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus, float | None]:
    """A count tier CP-SAT did not prove within `COUNT_QUICK`: SCIP once
    (`_mip_retry`); not proven there either, CP-SAT again for the rest of the
    tier's share (``room``), hinted with its best answer so far. (solver, status,
    the tightest bound of the CP-SAT attempts)."""
    if not _mip_on() or status == cp_model.OPTIMAL:
        return solver, status, None
    checked = _mip_retry(b, model, solver, status, budget, note)
    if checked is not None:
        return checked, cp_model.OPTIMAL, None
    if room <= 0:
        return solver, status, None
    attempts = _Attempts(_maximizing(model))
    attempts.add(solver, status)
    if status == cp_model.FEASIBLE:
        _hint(b, _answer(b, solver), model)
    attempts.add(*_solve_again(model, budget, room, presolve=True, kind=kind))
    return attempts.best(solver)


def _maximizing(model: cp_model.CpModel) -> bool:
    """Whether ``model``'s objective is maximized (cp_model stores that as scaling factor -1)."""
    return model.proto.objective.scaling_factor < 0


def _mip_retry(b: _Built, model: cp_model.CpModel, solver: cp_model.CpSolver, status: cp_model.CpSolverStatus,
               budget: _Budget, note: Progress) -> cp_model.CpSolver | None:
    """SCIP on ``model`` as CP-SAT left it unproven (poolc/planner/mip.py: the same
    rows less the request-dominance ones, CP-SAT's best answer as the start, node
    and LP-iteration limits); when SCIP proves its answer optimal, that answer
    checked by CP-SAT against every row of the model (`_checked`), as a solver
    holding it. None when SCIP did not prove it or the check failed.

    Measured on the planner's own models (any-shape 1,000 requests, seeds 1-5):
    SCIP proves at the root node every count tier CP-SAT stopped on after its
    whole share, and FIFO on three of five seeds; it costs 0.3-0.5 CPU s a call,
    so it runs only after CP-SAT's quick attempt failed."""
    skip = set(b.cut_rows + b.link_rows)
    if not _mip_on() or not mip.translatable(model.proto, skip):
        return None
    start = list(solver.response_proto.solution) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
    found = mip.solve(model.proto, start, skip=skip)
    b.mip_work.append((found.nodes, found.lp_iterations))
    outcome = (f"proven {found.value}" if found.proven
               else f"{found.value} (bound {found.bound})" if found.value is not None else "nothing found")
    note(f" SCIP: {outcome} [{found.status}, {found.nodes} nodes, {found.lp_iterations} LP iterations]")
    if not found.proven or found.values is None:
        return None
    checked = _checked(model, found.values, skip, budget)
    if checked is None or round(checked.objective_value) != found.value:
        note(" SCIP's answer failed CP-SAT's check: not used")
        return None
    return checked


def _checked(model: cp_model.CpModel, values: list[int], skip: set[int],
             budget: _Budget) -> cp_model.CpSolver | None:
    """CP-SAT with every variable fixed at ``values``: the hard-rule check of an
    answer found elsewhere (every row of ``model`` but the redundant ``skip``
    ones), and a solver holding it, as the tier's other attempts do."""
    copy = model.clone()
    for row in skip:
        _clear_row(copy, row)
    copy.clear_hints()
    copy.proto.solution_hint.vars.extend(range(len(values)))
    copy.proto.solution_hint.values.extend(values)
    check = _solver(1.0, presolve=False, kind="count")
    check.parameters.fix_variables_to_their_hinted_value = True
    status = check.solve(copy)
    budget.spent += check.deterministic_time
    return check if status == cp_model.OPTIMAL else None


def _tier_note(progress: Progress | None, b: _Built, label: str, i: int, outcome: str) -> None:
    """A progress line about an attempt inside tier ``i`` (1-based)."""
    if progress:
        progress(f"{label}tier {i}/{len(b.tiers)} {b.tiers[i - 1].name}{outcome}")


def _fold_count(tier: _Tier, after: _Tier | None) -> int:
    """The weight that folds a "preempted at v" tier and the "admitted at p" tier
    after it into one solve (`_folded`), or 0 when they are not folded.

    Exact: the weight is one more than the most ``after`` can admit, so the folded
    objective orders solutions by the first tier, then by the second. It is solved
    on the restricted copy of ``after`` (admissions below p only in Z, victims
    below p preempted), looser than the first tier's own (below the priority
    above v; below v): loosening keeps some optimum of every tier in the copy
    (`_restricted`), so the lexicographic optimum of the pair is the one the two
    tiers would reach apart. At 1,000 requests one solve per pair proves both
    tiers with less search than two; where it does not within
    `COUNT_FOLD_QUICK`, the first is solved alone on the same copy, hinted with
    what the fold found, and the second on its own copy, as if not folded."""
    if not tier.fold_next or after is None or not tier.terms or not after.terms:
        return 0
    weight = _most(after.terms) + 1
    return weight if weight * (_most(tier.terms) + 1) < 2**50 else 0


def _most(terms: Terms) -> int:
    """The largest value of a sum of nonnegative terms: each variable at its upper bound."""
    return sum(int(var.proto.domain[len(var.proto.domain) - 1]) * c for var, c in terms)  # no [-1] on this field


def _folded(expr: cp_model.LinearExpr, tier: _Tier, after: _Tier, weight: int) -> cp_model.LinearExpr:
    """``tier * weight + g`` in ``tier``'s direction, g = ``after`` (same direction)
    or ``weight - 1 - after`` (opposite): g lies in [0, weight) and is better where
    ``after`` is, so the objective is lexicographic, and a bound B of it bounds
    the tier by B // weight either way (maximizing: tier * weight <= B; minimizing:
    tier * weight >= B - (weight - 1), whose ceiling over weight is B // weight)."""
    if tier.maximize == after.maximize:
        return expr * weight + _linear(after.terms)
    return expr * weight + (weight - 1) - _linear(after.terms)


def _fold_weight(tier: _Tier, after: _Tier | None) -> int:
    """The weight that makes ``tier * weight + after`` lexicographic (``after`` lies in
    [0, its trivial bound]), or 0 when the tier is not folded or the weighted
    objective would leave exact double arithmetic (2**50)."""
    if not tier.fold_next or after is None or not tier.terms or not after.terms:
        return 0
    if not (tier.maximize and after.maximize):
        return 0
    weight = after.trivial_bound + 1
    return weight if weight * (tier.trivial_bound + 1) < 2**50 else 0


def _layout(problem: Problem, classes: list[_Class], victims: list[_VictimClass]) -> _Layout:
    return _Layout(prios=sorted({q.priority for cls in classes for q in cls.policies}, reverse=True),
                   vprios=sorted({vc.policy.priority for vc in victims}, reverse=True),
                   rank_n=max([len(problem.requests)] + [r.rank + 1 for r in problem.requests]))


def _parts(problem: Problem, classes: list[_Class],
           victims: list[_VictimClass]) -> list[tuple[list[str], list[_Class], list[_VictimClass]]]:
    """Independent parts (decompose.py), each with its classes and victim classes in
    their canonical order; parts with nothing to decide are left out."""
    groups = pool_groups((p.name for p in problem.pools), ([q.pool for q in c.policies] for c in classes))
    part_of = {pool: i for i, group in enumerate(groups) for pool in group}
    parts: list[tuple[list[str], list[_Class], list[_VictimClass]]] = [(g, [], []) for g in groups]
    for cls in classes:
        parts[part_of[cls.policies[0].pool]][1].append(cls)
    for vc in victims:
        parts[part_of[vc.policy.pool]][2].append(vc)
    return [part for part in parts if part[1] or part[2]]


def solve(problem: Problem, *, max_deterministic_time: float = 60.0,
          progress: Progress | None = None, decompose: bool = True) -> Solution:
    """Plan `problem` with the lexicographic objective (docs/planning.md#tiers); see the module docstring.
    ``decompose=False`` solves one model for all pools (for tests and benchmarks:
    same tier values, slower)."""
    classes = _request_classes(problem)
    victims = _victim_classes(problem, borrowed_parts(problem))
    layout = _layout(problem, classes, victims)
    parts = (_parts(problem, classes, victims) if decompose
             else [(sorted(p.name for p in problem.pools), classes, victims)])
    built = [_build(problem, c, v, layout, pools) for pools, c, v in parts]
    budget = _Budget(max_deterministic_time, sum(1 for b in built for t in b.tiers if t.active))
    results = []
    for i, (b, (pools, c, v)) in enumerate(zip(built, parts, strict=True), 1):
        label = f"part {i}/{len(built)} ({len(b.classes)} classes): " if len(built) > 1 else ""
        results.append(_repaired(problem, layout, pools, c, v, b, budget, progress, label))
    while REOPEN and budget.total - budget.spent > 1e-3:
        unproven = [(b, r, k) for b, r in results
                    for k, (v, bd) in enumerate(zip(r.values, r.bounds, strict=True), 1) if v != bd]
        if not unproven or not _reopen(budget=budget, progress=progress, b=unproven[0][0],
                                       st=unproven[0][1], k=unproven[0][2]):
            break
    objective, bounds = _add_up([r.values for _, r in results]), _add_up([r.bounds for _, r in results])
    if not results:
        objective = bounds = [0] * (1 + len(layout.prios) + len(layout.vprios) + 3)
    gap = max([abs(bd - v) / max(1, abs(v)) for bd, v in zip(bounds, objective, strict=True)], default=0.0)
    solution = _hand_out(problem, results, objective, "OPTIMAL" if gap == 0 else "FEASIBLE", gap)
    solution.bounds = bounds
    return solution


REPAIR_ROUNDS = 3


def _repaired(problem: Problem, layout: _Layout, pools: list[str], classes: list[_Class],
              victims: list[_VictimClass], b: _Built, budget: _Budget, progress: Progress | None,
              label: str) -> tuple[_Built, _PartResult]:
    """Solve one part; where the part has too many victim classes for the short-key
    flags (`_short_keys`), check the rule on the answer instead: victim classes taken
    although no key they borrow on is short are forbidden and the part is planned
    again (at most REPAIR_ROUNDS times, then every unchecked class is forbidden). The
    plan then obeys the rule and is optimal among plans without those victims."""
    st = _solve_part(b, budget, progress, label)
    forbidden: set[int] = set()
    for round_ in range(REPAIR_ROUNDS + 1):
        bad = _unjustified(b, st)
        if not bad:
            break
        forbidden |= bad if round_ < REPAIR_ROUNDS else set(b.unchecked)
        b = _build(problem, classes, victims, layout, pools, frozenset(forbidden))
        budget.tiers_left += sum(1 for t in b.tiers if t.active)
        if progress is not None:
            progress(f"{label}{len(bad)} victim class(es) taken for keys that are not short: "
                     "planned again without them")
        st = _solve_part(b, budget, progress, label)
    return b, st


def _unjustified(b: _Built, st: _PartResult) -> set[int]:
    """Victim classes the answer preempts although no key they borrow on is short."""
    bad = set()
    for gi in b.unchecked:
        if st.vals.v.get(gi, 0) == 0:
            continue
        pool = b.victims[gi].policy.pool
        short = False
        for k in b.victims[gi].borrows:
            if (pool, k) in b.short_use:
                used, kept, cap = b.short_use[pool, k]
                total = sum(st.assignment[var.index] * c for var, c in used)
                short = short or (total >= 1 and total + kept > cap)
        if not short:
            bad.add(gi)
    return bad


def _add_up(rows: list[list[int]]) -> list[int]:
    """Tier values (or bounds) of the whole: the sum over the parts."""
    return [sum(column) for column in zip(*rows, strict=True)]


# ---------------------------------------------------------------- hand-out

def _hand_out(problem: Problem, results: list[tuple[_Built, _PartResult]], objective: list[int], status: str,
              gap: float) -> Solution:
    admitted: dict[str, PolicyRule] = {}
    in_share: set[str] = set()
    for b, r in results:
        for ci, cls in enumerate(b.classes):
            queue = iter(cls.members)                       # lowest arrival rank first
            for pi, q in enumerate(cls.policies):           # preferred policy first
                for j in range(r.vals.n[ci, pi]):
                    req = next(queue)
                    admitted[req.id] = q
                    if j < r.vals.z.get((ci, pi), 0):
                        in_share.add(req.id)
    demand = {r.id: r.demand for r in problem.requests}
    borrowed = borrowed_parts(problem)
    by_pool: dict[str, list[str]] = {}
    for rid in sorted(admitted):
        by_pool.setdefault(admitted[rid].pool, []).append(rid)
    preempted: dict[str, list[str]] = {}
    for b, r in results:
        for gi, vc in enumerate(b.victims):
            for alloc in vc.members[:r.vals.v[gi]]:         # most recently started first
                preempted[alloc.name] = _made_room_for(vc.policy, borrowed[alloc.name], vc.holds,
                                                       by_pool.get(alloc.pool, []), admitted, in_share, demand)
    return Solution(strategy="optimal",
                    admitted={rid: admitted[rid].name for rid in sorted(admitted)},
                    preempted={name: preempted[name] for name in sorted(preempted)},
                    status=status, objective=objective, gap=gap, in_share=frozenset(in_share))


def _made_room_for(policy: PolicyRule, borrowed: dict[str, int], holds: dict[str, int], here: list[str],
                   admitted: dict[str, PolicyRule], in_share: set[str],
                   demand: dict[str, Mapping[str, int]]) -> list[str]:
    """The admitted requests in the victim's pool (``here``, sorted) that displaced
    it: those above its priority or in Z using a key it borrowed on; else such
    requests using any key it holds; else any request in the pool using a key it holds."""
    displacing = [rid for rid in here if admitted[rid].priority > policy.priority or rid in in_share]

    def using(ids: Iterable[str], keys: dict[str, int]) -> list[str]:
        return [rid for rid in ids if any(demand[rid].get(k, 0) > 0 and v > 0 for k, v in keys.items())]

    return using(displacing, borrowed) or using(displacing, holds) or using(here, holds)
