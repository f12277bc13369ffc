"""Which policies may admit a request, and why not (docs/planning.md, "Eligibility").

A request is eligible through a policy of its requester when the pool can run it
(placement: the pool's nodes offer its GPU model, the pool carries the labels of
its pool_selector, and one node of the pool's node groups holds it) and, on every
key the pool meters (plus custom keys the pool lacks, which have capacity 0
there), it needs no more than the pool's capacity and the policy's limit, and,
when it is non-preemptible, no more than the policy's reserved share. A step that
asks no GPU keeps off pools with GPUs while a pool without GPUs is eligible for it
(unless it names the GPU pool in ``pools``). These are static facts: `validate`
rejects a step eligible nowhere (R003/R004/R010/R011) and the planners only ever
place a request through a policy listed here, in the order listed (the step's
``pools`` first, then policy priority, then pool name). One sentence per rule is
written here once, so validate and the plan say the same thing.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from .amounts import Units, key_word
from .gpu_models import matches
from .problem import BUILTIN_UNBOUNDED, PolicyRule, Pool, Problem, Request
from .said import Part, Said, amount_of, joined, key_named, number, pair, said

CAPACITY, LIMIT, RESERVED = "capacity", "limit", "reserved"
MODEL, SELECTOR, NODE, GPU_POOL = "model", "selector", "node", "gpu-pool"
R003, R004, R010, R011 = "R003", "R004", "R010", "R011"
# what one node holds, in request keys (a step runs on one node)
NODE_KEYS = ("gpu", "mcpu", "memory_mb")


def metered_demand(pool: Pool, demand: Mapping[str, int]) -> dict[str, int]:
    """The part of a demand a pool checks: its metered keys, plus custom keys it
    does not meter (capacity 0 there); unmetered built-in keys are ignored."""
    return {k: v for k, v in demand.items()
            if v > 0 and (pool.metered(k) or k not in BUILTIN_UNBOUNDED)}


@dataclass(frozen=True)
class Ineligibility:
    """Why a request cannot use one policy's pool: the first failing rule."""

    policy: PolicyRule
    rule: str          # CAPACITY, LIMIT, RESERVED, or a placement rule (MODEL, SELECTOR, NODE, GPU_POOL)
    key: str           # a request key, or the settings field a placement rule is about
    needs: int
    allowed: int
    detail: str = ""   # a placement rule's sentence
    # RESERVED: every key short of the reserved share at once, (key, needs, reserved), sorted
    short: tuple[tuple[str, int, int], ...] = ()
    # NODE: what the step needs of one node, and the group with the most of ``key``
    node_need: tuple[tuple[str, int], ...] = ()
    node_group: str | None = None

    def shortfall(self, units: Units | None = None) -> tuple[Said, Said]:
        """RESERVED: (``mcpu=128000, memory_mb=262144`` asked, ``mcpu=96000, memory_mb=0`` reserved),
        or in ``units`` (``128 cores, 262.1 GB``)."""
        if units is None:
            return self._canonical[1]
        return self._shortfall(units)

    def sentence(self, units: Units | None = None) -> Said:
        """A zero capacity or limit is said as such: a written 0 forbids the key,
        and "limits gpu to 0" would read like a rounding accident. ``units``: amounts
        as people read them (diagnostics; use its ``text``); None: canonical
        ``key=value``, marked (the plan's messages, which its renderers word)."""
        if units is None:
            return self._canonical[0]
        return self._sentence(units)

    @cached_property
    def _canonical(self) -> tuple[Said, tuple[Said, Said]]:
        """The plan's sentence and shortfall, built once: the answers of ``eligible_policies``
        are shared by every request of a shape, and each rejected one is said with them."""
        return self._sentence(None), self._shortfall(None)

    def _shortfall(self, units: Units | None) -> tuple[Said, Said]:
        keys = self.short or ((self.key, self.needs, self.allowed),)
        return (joined(", ", (_amount(k, needs, units) for k, needs, _ in keys)),
                joined(", ", (_amount(k, allowed, units) for k, _, allowed in keys)))

    def _sentence(self, units: Units | None) -> Said:
        if self.rule == NODE and self.node_need:
            needed = [_amount(k, v, units) for k, v in self.node_need if v > 0]
            need = joined(", ", needed) if needed else said("the step")
            where = f" (group '{self.node_group}')" if self.node_group is not None else ""
            return said(f"no node of pool '{self.policy.pool}' holds ", need, ": its largest has ",
                        _amount(self.key, self.allowed, units), f"{where}; a step runs on one node (multi-node "
                        "steps are not supported)")
        if self.detail:
            return said(self.detail)
        if self.rule == CAPACITY and self.allowed == 0:
            return said(f"pool '{self.policy.pool}' has no ", self._key(units), " (capacity ",
                        _amount(self.key, 0, units), "; needs ", self._needs(units, of_clause=False), ")")
        if self.rule == CAPACITY:
            return said(f"pool '{self.policy.pool}' has ", _amount(self.key, self.allowed, units), " in all (needs ",
                        self._needs(units, of_clause=False), ")")
        if self.rule == LIMIT and self.allowed == 0:
            return said(f"policy '{self.policy.name}' forbids ", self._key(units), f" on pool '{self.policy.pool}' "
                        "(limit ", _amount(self.key, 0, units), "; needs ", self._needs(units), ")")
        if self.rule == LIMIT:
            allowed = number(self.allowed, self.key) if units is None else units.amount(self.key, self.allowed)
            return said(f"policy '{self.policy.name}' limits ", self._key(units), " to ", allowed,
                        f" on pool '{self.policy.pool}' (needs ", self._needs(units), ")")
        asks, reserved = self._shortfall(units)
        return said(f"policy '{self.policy.name}' reserves only ", reserved, f" on pool '{self.policy.pool}' (a "
                    "non-preemptible step needs ", asks, " inside the reserved share)")

    def _key(self, units: Units | None) -> Part:
        return key_named(self.key) if units is None else key_word(self.key)

    def _needs(self, units: Units | None, *, of_clause: bool = True) -> Part:
        """What the step needs of the key: in ``units``; else a number of the key, as a
        number of the clause's key where the sentence names it first ("limits gpu to
        8 ... needs 10"), else of the key itself ("has gpu=8 in all (needs 10)")."""
        if units is not None:
            return units.amount(self.key, self.needs)
        return number(self.needs, self.key) if of_clause else amount_of(self.needs, self.key)


def check_policy(pool: Pool, policy: PolicyRule, demand: Mapping[str, int],
                 preemptible: bool) -> Ineligibility | None:
    """Eligibility of one request for one policy's pool; None if eligible. A
    non-preemptible request short of the reserved share is short on every such
    key at once (``short``): one answer names them all, not one per run."""
    needs = sorted(metered_demand(pool, demand).items())
    for key, need in needs:
        cap = pool.capacity.get(key, 0)
        if need > cap:
            return Ineligibility(policy, CAPACITY, key, need, cap)
        lim = policy.limit.get(key, cap)
        if need > lim:
            return Ineligibility(policy, LIMIT, key, need, lim)
    if preemptible:
        return None
    short = tuple((key, need, policy.rsv(key)) for key, need in needs if need > policy.rsv(key))
    if short:
        key, need, reserved = short[0]
        return Ineligibility(policy, RESERVED, key, need, reserved, short=short)
    return None


def _models(pool: Pool) -> frozenset[str] | None:
    """The GPU models a pool offers; a pool without GPUs offers none; None: not said."""
    return frozenset() if not pool.has_gpus else pool.gpu_models


def check_placement(pool: Pool, policy: PolicyRule, request: Request) -> Ineligibility | None:
    """Can the pool's nodes run the request at all (model, pool_selector, one node)?"""
    if request.pinned_pool is not None and pool.name != request.pinned_pool:
        return Ineligibility(policy, SELECTOR, "pool", 0, 0,
                             f"it ran on pool '{request.pinned_pool}' and waits for that pool again")
    models = _models(pool)
    wants_model = request.gpu_type if request.demand.get("gpu", 0) > 0 else None
    if wants_model and models is not None and not any(matches(wants_model, m) for m in models):
        offered = f"offers {', '.join(sorted(models))}, not {wants_model}" if models else "has no GPUs"
        return Ineligibility(policy, MODEL, "gpu_type", 0, 0, f"pool '{pool.name}' {offered}")
    for key, value in request.pool_selector:
        if pool.labels.get(key) != value:
            has = pool.labels.get(key)
            now = f"it has {key}={has}" if has is not None else f"it has no label {key}"
            return Ineligibility(policy, SELECTOR, "pool_selector", 0, 0,
                                 f"pool '{pool.name}' does not match pool_selector {key}={value} ({now})")
    if pool.nodes:
        return _no_node(pool, policy, request, wants_model)
    return None


def _no_node(pool: Pool, policy: PolicyRule, request: Request, model: str | None) -> Ineligibility | None:
    """None when one node of some group (of the asked model) holds the whole request."""
    nodes = [n for n in pool.nodes if model is None or n.gpu_model is None or matches(model, n.gpu_model)]
    need = {k: request.demand.get(k, 0) for k in NODE_KEYS}
    if any(all(need[k] <= n.shape.get(k, 0) for k in NODE_KEYS) for n in nodes):
        return None
    for key in NODE_KEYS:  # the first key no node of these groups holds, else the first short on the best
        most = max((n.shape.get(key, 0) for n in nodes), default=0)
        if need[key] > most:
            break
    else:
        key = next(k for k in NODE_KEYS if need[k] > 0)
        most = need[key]
    biggest = max(nodes, key=lambda n: (n.shape.get(key, 0), n.group)) if nodes else None
    where = f" (group '{biggest.group}')" if biggest is not None else ""
    return Ineligibility(policy, NODE, key, need[key], most,
                         f"no node of pool '{pool.name}' holds the step{where}",
                         node_need=tuple(need.items()), node_group=biggest.group if biggest is not None else None)


def _amount(key: str, value: int, units: Units | None) -> Part:
    """``gpu=4`` (canonical, marked; units None) or ``4 GPU`` (as people read it)."""
    return pair(key, value) if units is None else units.amount(key, value)


def _preference(request: Request, policies: list[PolicyRule]) -> list[PolicyRule]:
    """The order a request tries its pools in: the pools it names, in its order,
    then the rest by policy priority (desc) and pool name (already their order)."""
    if not request.pools:
        return policies
    rank = {name: i for i, name in enumerate(request.pools)}
    return sorted(policies, key=lambda q: rank.get(q.pool, len(rank)))


def _off_gpu_pools(problem: Problem, request: Request, ok: list[PolicyRule],
                   why: list[Ineligibility]) -> list[PolicyRule]:
    """A step that asks no GPU keeps off pools with GPUs while a pool without GPUs
    takes it, unless it names the GPU pool in ``pools`` (docs/planning.md#eligibility)."""
    if request.demand.get("gpu", 0) > 0 or not any(not problem.pool(q.pool).has_gpus for q in ok):
        return ok
    cpu_pools = sorted({q.pool for q in ok if not problem.pool(q.pool).has_gpus})
    kept = []
    for q in ok:
        if problem.pool(q.pool).has_gpus and q.pool not in request.pools:
            why.append(Ineligibility(q, GPU_POOL, "gpu_count", 0, 0,
                                     f"pool '{q.pool}' has GPUs and the step asks none: it runs on "
                                     f"{', '.join(repr(p) for p in cpu_pools)} instead (name the pool in "
                                     "pools to allow it)"))
        else:
            kept.append(q)
    return kept


# Eligibility depends only on (requester, demand, preemptible), and a plan of 10,000
# steps asks about a few hundred such shapes several times each (checks, planner,
# explanations): remember the answers per Problem, for as long as it lives.
_Shape = tuple[str, tuple[tuple[str, int], ...], bool, tuple]
_memo: dict[int, tuple[weakref.ref, dict[_Shape, tuple[list[PolicyRule], list[Ineligibility]]]]] = {}


def _answers(problem: Problem) -> dict[_Shape, tuple[list[PolicyRule], list[Ineligibility]]]:
    """The memo of one Problem (dropped with it; ids are only trusted while it lives)."""
    key = id(problem)
    found = _memo.get(key)
    if found is None or found[0]() is not problem:

        def forget(_: weakref.ref) -> None:
            _memo.pop(key, None)

        found = (weakref.ref(problem, forget), {})
        _memo[key] = found
    return found[1]


def eligible_policies(problem: Problem, request: Request) -> tuple[list[PolicyRule], list[Ineligibility]]:
    """(policies the request may be placed through, reasons for the others)."""
    memo = _answers(problem)
    shape = (request.requester, tuple(sorted(request.demand.items())), request.preemptible, request.placement)
    found = memo.get(shape)
    if found is None:
        ok: list[PolicyRule] = []
        why: list[Ineligibility] = []
        for q in problem.policies_of(request.requester):
            pool = problem.pool(q.pool)
            reason = (check_placement(pool, q, request)
                      or check_policy(pool, q, request.demand, request.preemptible))
            (why.append(reason) if reason else ok.append(q))
        ok = _preference(request, _off_gpu_pools(problem, request, ok, why))
        found = memo[shape] = (ok, why)
    return list(found[0]), list(found[1])


def rejection(step: str, reasons: list[Ineligibility], gpu_type: str | None = None,
              units: Units | None = None) -> tuple[str, Said]:
    """(rule id, sentence) for a step eligible on no pool: R004 when only the
    non-preemptible share stands in the way everywhere; R010 when no pool it may
    use offers its GPU model (naming the models on offer); R011 when no node of
    those pools holds it; else R003. ``reasons`` is not empty (a requester without
    any policy is unmanaged, not rejected)."""
    kinds = {r.rule for r in reasons}
    placement = {MODEL, SELECTOR}
    if MODEL in kinds and kinds <= placement:
        return R010, _model_rejection(step, reasons, gpu_type)
    if NODE in kinds and kinds <= placement | {NODE}:
        why = joined("; ", (r.sentence(units) for r in reasons))
        return R011, said(f"step {step!r} fits on no node of the pools it may use: ", why, "; it can never be "
                          "admitted: ask for less, or add a node group with larger nodes")
    only_share = all(r.rule == RESERVED for r in reasons)
    rule = R004 if only_share else R003
    if only_share and len(reasons) == 1:
        r = reasons[0]
        asks, reserved = r.shortfall(units)
        return rule, said(f"step {step!r} is non-preemptible and asks ", asks, f", but policy {r.policy.name!r} "
                          "reserves only ", reserved, "; it can never be admitted: ", _share_fix([r], units))
    why = joined("; ", (r.sentence(units) for r in reasons))
    shares = [r for r in reasons if r.rule == RESERVED]
    # a pool that fits the step but for its reserved share is the one to fix, not the others' capacity
    fix = _share_fix(shares, units) if shares else said("ask for less, or raise the capacity or limit")
    return rule, said(f"step {step!r} is eligible on no pool: ", why, "; it can never be admitted: ", fix)


def _share_fix(shares: list[Ineligibility], units: Units | None) -> Said:
    """The two real fixes of a non-preemptible step short of reserved shares."""
    where = joined(" or ", (said(r.shortfall(units)[0], f" in policy {r.policy.name!r}") for r in shares))
    return said("reserve more (", where, "), or make the step preemptible")


def _model_rejection(step: str, reasons: list[Ineligibility], gpu_type: str | None) -> Said:
    asked = f"gpu_type {gpu_type}" if gpu_type else "a GPU model"
    why = joined("; ", (r.sentence() for r in reasons))
    return said(f"step {step!r} asks {asked}, which no pool it may use offers: ", why, "; it can never be admitted: "
                "set gpu_type to a model on offer (see the GPU model names in docs/format.md), or give its "
                "component a policy on a pool with such nodes")
