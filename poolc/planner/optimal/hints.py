"""Assignments and hints: reading a solver's answer exactly, writing an
assignment into a model as its hint, and the restricted copy of a count tier.

Why a hint is always complete: every tier starts from the answer of the one
before (admit nothing, preempt nothing at first, which is feasible), and an
assignment that satisfies every tier row so far lets CP-SAT start from a
solution instead of searching for one. Derived values (prefix sums, short-key
flags, the request dominance literals) are computed from the counts, never left
to the solver.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import cpsat as cp_model  # the CP-SAT API, without numpy and pandas (cpsat.py)
from .built import Built, decisions, prefix
from .short_keys import allowed, short_hint


def answer(b: Built, solver: cp_model.CpSolver) -> dict[int, int]:
    """The exact assignment of ``solver``'s solution. A solver kept from before the
    request dominance rows were added knows nothing of their literals (CP-SAT then
    reads out of range): those are derived from the counts instead."""
    solution = list(solver.response_proto.solution)     # read once: one list, not a call per variable
    size = len(solution)
    out = exact_assignment(b, lambda var: solution[var.index] if var.index < size else 0)
    derive(b, out)
    return out


def derive(b: Built, hint: dict[int, int]) -> None:
    """Set the literals of `dominance.request_dominance` and the short-key flags in
    ``hint`` from its counts."""
    short_hint(b, hint)
    for (ci, pi), u in b.aux.used.items():
        hint[u.index] = int(hint[b.var.admitted[ci, pi].index] >= 1)
    for (ci, k), a in b.aux.at_least.items():
        t = sum(hint[b.var.admitted[ci, pi].index] for pi in range(len(b.classes[ci].policies)))
        hint[a.index] = int(t >= k + 1)


def exact_assignment(b: Built, value: Callable[[cp_model.IntVar], int]) -> dict[int, int]:
    """Values of every variable so far, with the prefix-sum variables at their exact
    value, so the assignment satisfies every later tier constraint as a hint."""
    out = {var.index: value(var) for var in b.all_vars}
    vals = decisions(b, value)
    for ci, f in b.aux.fifo_credit.items():
        out[f.index] = prefix([b.rank_n - r.rank for r in b.classes[ci].members])[vals.total[ci]]
    for gi, f in b.aux.late_credit.items():
        out[f.index] = prefix([a.start_rank for a in b.victims[gi].members])[vals.preempted[gi]]
    return out


def hint(b: Built, assignment: dict[int, int], model: cp_model.CpModel | None = None) -> None:
    """Hint ``assignment`` into ``model`` (default: the part's own), written straight
    into the proto: the same hint `add_hint` writes, without a Python call per variable."""
    model = b.model if model is None else model
    model.clear_hints()
    proto_hint = model.proto.solution_hint
    proto_hint.vars.extend([var.index for var in b.all_vars])
    proto_hint.values.extend([assignment[var.index] for var in b.all_vars])


def restricted(b: Built, floor: float, vfloor: float, assignment: dict[int, int],
               base: cp_model.CpModel | None = None) -> tuple[cp_model.CpModel, dict[int, int]]:
    """The tier's model with admissions through policies of priority below ``floor``
    limited to the in-share set, every victim of priority below ``vfloor``
    preempted, and the hint moved there.

    Exact: no tier solved so far or now counts such an admission except through
    Z, nor such a victim; dropping an admission or preempting a victim only frees
    room (every rule is monotone in both), so some optimum of this tier is in the
    restricted model. Not in a pool where an admission can make a key short
    (`short_keys`): there dropping one could forbid a victim that an admission
    counted now needs, so those admissions stay free. The plain model is kept for
    the tiers that count them. A
    lower ``floor`` or ``vfloor`` than the tier's own restricts less and stays
    exact (a folded pair of tiers is solved on the looser copy of the two).
    ``base`` (default: the part's model) is the model copied."""
    model = (b.model if base is None else base).clone()
    moved = dict(assignment)
    short_hint(b, moved)
    for gi, var in b.var.preempted.items():
        vc = b.victims[gi]
        size, copy = len(vc.members), model.get_int_var_from_proto_index(var.index)
        if vc.policy.priority < vfloor and gi not in b.short.governed:
            model.add(copy == size)
            moved[var.index] = size
        elif vc.policy.priority < vfloor:
            # preempted whenever a key it borrows on is short (`short_keys`): still only frees room
            for k in vc.borrows:
                if (vc.policy.pool, k) in b.short.flag:
                    model.add(copy >= size * model.get_int_var_from_proto_index(b.short.flag[vc.policy.pool, k].index))
            if allowed(b, gi, moved):
                moved[var.index] = size
    for (ci, pi), var in b.var.admitted.items():
        # a pool where an admission can make a key short keeps them: dropping one
        # could take away the shortage that allows a victim (`short_keys`)
        if b.classes[ci].policies[pi].priority < floor and b.classes[ci].policies[pi].pool not in b.short.pools:
            z = b.var.in_share.get((ci, pi))
            if z is None:
                model.add(model.get_int_var_from_proto_index(var.index) == 0)
                moved[var.index] = 0
            else:
                model.add(model.get_int_var_from_proto_index(var.index)
                          == model.get_int_var_from_proto_index(z.index))
                moved[var.index] = moved[z.index]
    derive(b, moved)
    hint(b, moved, model)
    return model, moved
