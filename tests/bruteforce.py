"""An independent, exhaustive reference for the `optimal` tiers (docs/planning.md#tiers) on tiny problems.

It shares only the data types with the planner: eligibility, borrowed parts,
the hard rules H1-H5, the in-share set and the objective vector are written
again here from docs/planning.md, so a misreading in `poolc.planner.optimal`
shows up as a disagreement instead of being copied. Everything is enumerated:
each request queued or placed through one eligible policy, every subset of
preemption candidates, and (per policy) every in-share subset.
"""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import combinations

from poolc.domain.problem import PolicyRule, Problem, Request, Running

UNBOUNDED_IF_ABSENT = ("mcpu", "memory_mb", "step_run")
EARLIEST = datetime.min.replace(tzinfo=UTC)


# ------------------------------------------------------------ static rules

def _policy(problem: Problem, subject: str, pool: str) -> PolicyRule | None:
    found = [q for q in problem.policies if q.subject == subject and q.pool == pool]
    return found[0] if found else None


def _capacity(problem: Problem, pool: str) -> dict[str, int]:
    return dict(next(p for p in problem.pools if p.name == pool).capacity)


def checked(problem: Problem, pool: str, demand) -> dict[str, int]:
    """Demand keys a pool looks at: metered ones, and custom keys it lacks (capacity 0)."""
    cap = _capacity(problem, pool)
    return {k: v for k, v in demand.items() if v > 0 and (k in cap or k not in UNBOUNDED_IF_ABSENT)}


# What a gpu_type accepts, written again from docs/format.md's table (only the rows
# the random platforms use): the exact product label value, or a family's members.
FAMILY = {
    "A100": {"NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-PCIE-40GB", "NVIDIA-A100-80GB-PCIe"},
    "A100-80GB": {"NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe"},
    "H100": {"NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-PCIe", "NVIDIA-H100-NVL"},
    "L4": {"NVIDIA-L4"},
}


def _pool(problem: Problem, name: str):
    return next(p for p in problem.pools if p.name == name)


def model_ok(gpu_type: str | None, model: str | None) -> bool:
    """A node of ``model`` (None: not said) serves a step asking ``gpu_type``."""
    return gpu_type is None or model is None or model == gpu_type or model in FAMILY.get(gpu_type, set())


def placeable(problem: Problem, pool_name: str, req: Request) -> bool:
    """The pool's nodes can run the request: its GPU model, its pool_selector, one node."""
    pool = _pool(problem, pool_name)
    gpus = req.demand.get("gpu", 0)
    wanted = req.gpu_type if gpus > 0 else None
    if wanted is not None:
        if pool.capacity.get("gpu", 0) <= 0:
            return False
        if pool.gpu_models is not None and not any(model_ok(wanted, m) for m in pool.gpu_models):
            return False
    if any(pool.labels.get(k) != v for k, v in req.pool_selector):
        return False
    if pool.nodes:
        return any(all(req.demand.get(k, 0) <= n.shape.get(k, 0) for k in ("gpu", "mcpu", "memory_mb"))
                   and model_ok(wanted, n.gpu_model) for n in pool.nodes)
    return True


def eligible(problem: Problem, req: Request) -> list[PolicyRule]:
    """Eligibility, in preference order: the pools the step names (in its order),
    then priority (desc), then pool name. A step without GPUs keeps off GPU pools it
    does not name while a pool without GPUs is eligible for it."""
    out = []
    for q in problem.policies:
        if q.subject != req.requester or not placeable(problem, q.pool, req):
            continue
        cap = _capacity(problem, q.pool)
        ok = True
        for k, d in checked(problem, q.pool, req.demand).items():
            c = cap.get(k, 0)
            if d > c or d > q.limit.get(k, c) or (not req.preemptible and d > q.reserved.get(k, 0)):
                ok = False
        if ok:
            out.append(q)

    def has_gpus(q: PolicyRule) -> bool:
        return _capacity(problem, q.pool).get("gpu", 0) > 0

    if req.demand.get("gpu", 0) <= 0 and any(not has_gpus(q) for q in out):
        out = [q for q in out if not has_gpus(q) or q.pool in req.pools]
    named = list(req.pools)
    return sorted(out, key=lambda q: (named.index(q.pool) if q.pool in named else len(named), -q.priority, q.pool))


def borrowed(problem: Problem) -> dict[str, dict[str, int]]:
    """Borrowing: per policy and key, walk its allocations consuming the reserved share."""
    out: dict[str, dict[str, int]] = {a.name: {} for a in problem.running}
    for q in problem.policies:
        mine = [a for a in problem.running if a.subject == q.subject and a.pool == q.pool]
        mine.sort(key=lambda a: (a.preemptible, a.started_at or EARLIEST, a.name))
        for k in _capacity(problem, q.pool):
            left = q.reserved.get(k, 0)
            for a in mine:
                h = a.holds.get(k, 0)
                if h > left:
                    out[a.name][k] = h - left
                left = max(0, left - h)
    return out


def candidates(problem: Problem) -> list[str]:
    """H5: the preemptible, borrowing allocations whose subject has a policy on the pool."""
    pools = {p.name for p in problem.pools}
    b = borrowed(problem)
    return sorted(a.name for a in problem.running
                  if a.pool in pools and a.preemptible and _policy(problem, a.subject, a.pool)
                  and any(v > 0 for v in b[a.name].values()))


# ------------------------------------------------------------ hard rules

def _kept(problem: Problem, preempted: set[str]) -> list[Running]:
    pools = {p.name for p in problem.pools}
    return [a for a in problem.running if a.pool in pools and a.name not in preempted]


def violations(problem: Problem, admitted: dict[str, str], preempted: set[str]) -> list[str]:
    """Broken hard rules of a plan (admitted: request id -> policy name)."""
    return _monotone_violations(problem, admitted, preempted) + _not_short(problem, admitted, preempted)


def _monotone_violations(problem: Problem, admitted: dict[str, str], preempted: set[str]) -> list[str]:
    """The rules that only get harder with more admissions (all but victims-for-short-keys)."""
    out = []
    reqs = {r.id: r for r in problem.requests}
    pols = {q.name: q for q in problem.policies}
    for rid, qname in admitted.items():
        if qname not in [q.name for q in eligible(problem, reqs[rid])]:
            out.append(f"H4: {rid} not eligible through {qname}")
    for name in sorted(preempted):
        if name not in candidates(problem):
            out.append(f"H5: {name} may not be preempted")
    kept = _kept(problem, preempted)

    def over(bound, kept_units, used, what):
        if used > 0 and kept_units + used > bound:
            out.append(f"{what}: kept {kept_units} + admitted {used} > {bound}")

    for pool in problem.pools:
        for k, cap in pool.capacity.items():
            used = sum(reqs[rid].demand.get(k, 0) for rid, qn in admitted.items()
                       if pols[qn].pool == pool.name)
            held = sum(a.holds.get(k, 0) for a in kept if a.pool == pool.name)
            over(cap, held, used, f"H1 {pool.name}/{k}")
    for q in problem.policies:
        for k, cap in _capacity(problem, q.pool).items():
            mine = [reqs[rid] for rid, qn in admitted.items() if qn == q.name]
            held = [a for a in kept if a.subject == q.subject and a.pool == q.pool]
            over(q.limit.get(k, cap), sum(a.holds.get(k, 0) for a in held),
                 sum(r.demand.get(k, 0) for r in mine), f"H2 {q.name}/{k}")
            over(q.reserved.get(k, 0), sum(a.holds.get(k, 0) for a in held if not a.preemptible),
                 sum(r.demand.get(k, 0) for r in mine if not r.preemptible), f"H3 {q.name}/{k}")
    return out


def _not_short(problem: Problem, admitted: dict[str, str], preempted: set[str]) -> list[str]:
    """H5, victims only for keys that are short: a victim borrows on a key that the
    plan's admissions in its pool need and that does not fit beside everything that
    ran before the plan."""
    reqs = {r.id: r for r in problem.requests}
    pols = {q.name: q for q in problem.policies}
    b = borrowed(problem)
    out = []
    for alloc in (a for a in problem.running if a.name in preempted):
        cap = _capacity(problem, alloc.pool)
        short = []
        for k, units in b[alloc.name].items():
            if units <= 0 or k not in cap:
                continue
            used = sum(reqs[rid].demand.get(k, 0) for rid, qn in admitted.items() if pols[qn].pool == alloc.pool)
            before = sum(a.holds.get(k, 0) for a in problem.running if a.pool == alloc.pool)
            if used > 0 and used + before > cap[k]:
                short.append(k)
        if not short:
            out.append(f"H5: {alloc.name} borrows on no key that is short")
    return out


def max_in_share(problem: Problem, admitted: dict[str, str], preempted: set[str]) -> int:
    """Largest Z: per policy, the most admitted requests fitting max(0, rsv - kept)."""
    reqs = {r.id: r for r in problem.requests}
    kept = _kept(problem, set())  # a policy's own preempted allocations do not free its reserve for Z
    total = 0
    for q in problem.policies:
        cap = _capacity(problem, q.pool)
        free = {k: max(0, q.reserved.get(k, 0) - sum(a.holds.get(k, 0) for a in kept
                                                     if a.subject == q.subject and a.pool == q.pool))
                for k in cap}
        mine = [checked(problem, q.pool, reqs[rid].demand)
                for rid, qn in sorted(admitted.items()) if qn == q.name]
        for size in range(len(mine), -1, -1):
            if any(all(sum(d.get(k, 0) for d in group) <= free[k] for k in cap)
                   for group in combinations(mine, size)):
                total += size
                break
    return total


# ------------------------------------------------------------ objective

def layout(problem: Problem) -> list[tuple[str, bool]]:
    """(tier name, maximize?) in tier order."""
    prios = sorted({q.priority for r in problem.requests for q in eligible(problem, r)}, reverse=True)
    run = {a.name: a for a in problem.running}
    vprios = sorted({_policy(problem, run[n].subject, run[n].pool).priority for n in candidates(problem)},
                    reverse=True)
    tiers = [("Z", True)]
    edges = [float("inf")] + prios + [float("-inf")]
    for j in range(len(prios) + 1):
        if j >= 1:
            tiers.append((f"admit@{prios[j - 1]}", True))
        tiers += [(f"preempt@{v}", False) for v in vprios if edges[j + 1] <= v < edges[j]]
    return tiers + [("fifo", True), ("start", True), ("pref", True)]


def vector(problem: Problem, admitted: dict[str, str], preempted: set[str]) -> list[int]:
    reqs = {r.id: r for r in problem.requests}
    pols = {q.name: q for q in problem.policies}
    run = {a.name: a for a in problem.running}
    n = max([len(problem.requests)] + [r.rank + 1 for r in problem.requests])
    values = []
    for name, _ in layout(problem):
        if name == "Z":
            values.append(max_in_share(problem, admitted, preempted))
        elif name.startswith("admit@"):
            values.append(sum(1 for qn in admitted.values() if pols[qn].priority == int(name[6:])))
        elif name.startswith("preempt@"):
            values.append(sum(1 for a in preempted
                              if _policy(problem, run[a].subject, run[a].pool).priority == int(name[8:])))
        elif name == "fifo":
            values.append(sum(n - reqs[rid].rank for rid in admitted))
        elif name == "start":
            values.append(sum(run[a].start_rank for a in preempted))
        else:
            total = 0
            for rid, qn in admitted.items():
                order = [q.name for q in eligible(problem, reqs[rid])]
                total += len(order) - order.index(qn)
            values.append(total)
    return values


def _key(problem: Problem, vec: list[int]) -> tuple[int, ...]:
    return tuple(v if up else -v for v, (_, up) in zip(vec, layout(problem), strict=True))


def optimum(problem: Problem, admitted_set: set[str] | None = None) -> list[int]:
    """The best objective vector under docs/planning.md#tiers: tiers 1-3 (the counts
    and FIFO) lexicographically best over every valid plan; tiers 4 and 5 (start rank,
    pool preference) best among the valid plans that reach those values and admit
    exactly ``admitted_set`` (the request ids a plan's FIFO solve chose; None: any
    such set, i.e. the fully lexicographic optimum). A set that is not FIFO-optimal
    has no such plan, and the assertion fails."""
    reqs = sorted(problem.requests, key=lambda r: r.rank)
    choices = [[None] + [q.name for q in eligible(problem, r)] for r in reqs]
    cands = candidates(problem)
    tail = len(layout(problem)) - 2          # start rank and pool preference
    best: list[int] | None = None
    best_key = None
    for size in range(len(cands) + 1):
        for victims in combinations(cands, size):
            preempted = set(victims)
            stack: list[tuple[int, dict[str, str]]] = [(0, {})]
            while stack:
                i, admitted = stack.pop()
                if _monotone_violations(problem, admitted, preempted):
                    continue          # these rules are monotone in the admissions: prune
                if i == len(reqs):
                    if _not_short(problem, admitted, preempted):
                        continue      # a victim for a key the admissions do not need
                    vec = vector(problem, admitted, preempted)
                    key = _key(problem, vec)
                    head = key[:tail]
                    if admitted_set is not None and set(admitted) != admitted_set:
                        key = head + tuple(-(10**18) for _ in key[tail:])   # ranks below any plan of the set
                    if best_key is None or key > best_key:
                        best, best_key = vec, key
                    continue
                for choice in choices[i]:
                    nxt = dict(admitted)
                    if choice is not None:
                        nxt[reqs[i].id] = choice
                    stack.append((i + 1, nxt))
    assert best is not None and best_key is not None
    assert admitted_set is None or best_key[tail:] != tuple(-(10**18) for _ in best_key[tail:]), \
        "no plan with the best FIFO value admits that set"
    return best
