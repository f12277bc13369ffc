"""Two redundant, exact cuts that keep the proofs short at scale: dominance among
one policy's victims (always in the model) and among one policy's request
classes (only when the FIFO tier resists its first attempts, and cleared once
FIFO is fixed: see `loop`). Each docstring holds the proof that the cut removes
no lexicographic optimum, only search."""

from __future__ import annotations

import bisect

from .. import cpsat as cp_model  # the CP-SAT API, without numpy and pandas (cpsat.py)
from .built import Built
from .classes import RequestClass


def victim_dominance(b: Built) -> None:
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
            if gj in b.short.governed and gi not in b.short.governed:
                continue    # a restricted copy preempts the lone one outright, the big one only when allowed
            later = sum(1 for a in big.members if a.start_rank > rank)
            if later:
                b.model.add(b.var.preempted[gj] >= later * b.var.preempted[gi])


def dominates(a: RequestClass, pa: int, other: RequestClass, pb: int,
              shortable: frozenset[str] = frozenset()) -> bool:
    """Through one policy, a member of ``a`` can take the place of a member of
    ``other``: it needs no more of any metered key, exactly as much of each key in
    ``shortable`` (the keys of that pool whose short-key flag can be 1), and it is
    preemptible unless ``other`` is not (the non-preemptible share only counts those).

    Why the equality: a victim the short-key rule governs may be taken only while
    a key it borrows on is short (`short_keys`). Needing less of such a key could
    end the shortage, and with it the victim's right to be taken, so the exchange
    below would leave the rules; with the same amount the shortage is as it was."""
    if other.preemptible and not a.preemptible:
        return False
    mine, theirs = a.demands[pa], other.demands[pb]
    return (all(theirs.get(k, 0) >= v for k, v in mine.items())
            and all(theirs.get(k, 0) == mine.get(k, 0) for k in shortable))


def request_dominance(b: Built) -> None:
    """Within one policy q, class B admits through q only members that arrived
    before every member of a dominating class A (``dominates``) left out.

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
    `victim_dominance` (start rank grows, admissions stay), ends in a solution
    obeying every cut with the same count tiers, so the cuts remove no
    lexicographic optimum, in any tier or restricted copy (an exchange through q
    keeps admissions through q in Z when they were), and no shortage the short-key
    rule counts on ends (`dominates`).

    Since c is nondecreasing in k, t_A <= k implies t_B <= c(k): one row per
    distinct c(k) < what B can reach, at the largest such k, enforced by
    ``n_Bq >= 1`` and ``t_A <= k`` (always true when k >= what A can reach)."""
    model = b.model
    b.aux.used.clear()       # an earlier call's literals lost their definitions with its rows
    b.aux.at_least.clear()    # (a FIFO solved again after a reopen): each call defines its own

    def total(ci: int) -> cp_model.LinearExpr:
        return cp_model.LinearExpr.sum([b.var.admitted[ci, pi] for pi in range(len(b.classes[ci].policies))])

    def used(ci: int, pi: int) -> cp_model.IntVar:
        if (ci, pi) not in b.aux.used:
            u = model.new_bool_var(f"used_{ci}_{pi}")
            b.rows["request dominance literals"] += [len(model.proto.constraints), len(model.proto.constraints) + 1]
            model.add(b.var.admitted[ci, pi] >= 1).only_enforce_if(u)
            model.add(b.var.admitted[ci, pi] == 0).only_enforce_if(~u)
            b.aux.used[ci, pi] = u
            b.all_vars.append(u)
        return b.aux.used[ci, pi]

    def atleast(ci: int, k: int) -> cp_model.IntVar:
        if (ci, k) not in b.aux.at_least:
            a = model.new_bool_var(f"atleast_{ci}_{k}")
            b.rows["request dominance literals"] += [len(model.proto.constraints), len(model.proto.constraints) + 1]
            model.add(total(ci) >= k + 1).only_enforce_if(a)
            model.add(total(ci) <= k).only_enforce_if(~a)
            b.aux.at_least[ci, k] = a
            b.all_vars.append(a)
        return b.aux.at_least[ci, k]

    ranks = [[r.rank for r in cls.members] for cls in b.classes]
    for name in sorted(b.through):
        here = b.through[name]
        pool = b.classes[here[0][0]].policies[here[0][1]].pool
        shortable = frozenset(k for p, k in b.short.shortable if p == pool)
        for ca, pa in here:
            A = b.classes[ca]
            for cb, pb in here:
                if ca == cb or not dominates(A, pa, b.classes[cb], pb, shortable):
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
                    b.rows["request dominance"].append(len(model.proto.constraints))
                    model.add(total(cb) <= c).only_enforce_if(when)
