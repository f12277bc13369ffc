"""H5, victims only for keys that are short (docs/planning.md#tiers).

A victim class may be preempted only if its pool is short on a key its members
borrow on: what the plan admits there needs that key and does not fit beside
everything that ran before the plan. So an allocation inside its reserve on the
key the preemptor needs is never taken because it borrows on another key that
has room (Kueue never does that either: it reclaims only from queues that
borrow a resource the preemptor lacks).

In the model, exactly, through one flag per (pool, key) that a governed victim
class borrows on: there is no class limit past which the rule is checked on the
answer instead. Such a check (forbid the classes that broke it, plan again) made
plans optimal only among plans without those classes while they said OPTIMAL,
and its re-plans cost more than the flags (docs/solver.md, "The short-key rule").
"""

from __future__ import annotations

from .. import cpsat as cp_model  # the CP-SAT API, without numpy and pandas (cpsat.py)
from .built import Built, ShortKeys, Terms, linear, most


def short_keys(b: Built, by_pool: dict[str, list[int]], use: dict[tuple[str, str], tuple[Terms, int, int]]
               ) -> ShortKeys:
    """The rule in ``b``'s model, for every victim class it governs; ``use`` is
    what each (pool, key)'s capacity row counts (admitted terms, kept, capacity).

    Only a class that holds a key without borrowing on it, where that key can be
    short at all, needs the flags: the tiers already make every victim needed
    (dropping one would lower its tier's count with every admission kept), so it
    holds a key that is short, and when every key it holds but does not borrow on
    can never be short, that key is one it borrows on. Most borrowers are such
    classes, and the flags' relaxation slows the proofs down."""
    model = b.model
    flag: dict[tuple[str, str], cp_model.IntVar] = {}
    pools: set[str] = set()
    shortable: set[tuple[str, str]] = set()

    def can_be_short(pool: str, k: str) -> bool:
        if (pool, k) not in use:
            return False
        used, kept, cap = use[pool, k]
        return bool(used) and most(used) + kept > cap

    governed = [gi for pool in sorted(by_pool) for gi in by_pool[pool]
                if any(can_be_short(pool, k) for k in b.victims[gi].holds if k not in b.victims[gi].borrows)]
    for gi in governed:
        pool = b.victims[gi].policy.pool
        vc = b.victims[gi]
        flags = []
        for k in vc.borrows:
            if (pool, k) not in use:
                continue
            if (pool, k) not in flag:
                used, kept, cap = use[pool, k]
                flag[pool, k] = model.new_bool_var(f"short_{pool}_{k}")
                b.all_vars.append(flag[pool, k])
                if not can_be_short(pool, k):
                    model.add(flag[pool, k] == 0)      # can never be short: nothing admitted can overrun it
                else:
                    model.add(linear(used) >= max(1, cap - kept + 1)).only_enforce_if(flag[pool, k])
                    pools.add(pool)
                    shortable.add((pool, k))
            flags.append(flag[pool, k])
        size = len(vc.members)
        if not flags:
            model.add(b.var.preempted[gi] == 0)
        else:
            model.add(b.var.preempted[gi] <= size * cp_model.LinearExpr.sum(flags))
    return ShortKeys(flag, use, frozenset(pools), frozenset(shortable), frozenset(governed))


def short_hint(b: Built, hint: dict[int, int]) -> None:
    """Set the short-key flags in ``hint`` from its admissions (1 wherever allowed)."""
    for (pool, k), flag in b.short.flag.items():
        used, kept, cap = b.short.use[pool, k]
        total = sum(hint[var.index] * c for var, c in used)
        hint[flag.index] = int(total >= 1 and total + kept > cap)


def allowed(b: Built, gi: int, hint: dict[int, int]) -> bool:
    """Victim class ``gi`` may be preempted under the flags of ``hint``."""
    if gi not in b.short.governed:
        return True
    pool = b.victims[gi].policy.pool
    return any(hint.get(b.short.flag[pool, k].index, 0) for k in b.victims[gi].borrows if (pool, k) in b.short.flag)
