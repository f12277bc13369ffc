"""The CP-SAT model of one part, with its variables, and the values read from it.

`Built` is what every later step works on: the model, the classes it decides
on, the variables per class and policy, and the tiers in order. `Values` is one
solution in the classes' terms, which the tiers' exact values and the hand-out
read. The small helpers write the linear expressions the rules and tiers share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .. import cpsat as cp_model  # the CP-SAT API, without numpy and pandas (cpsat.py)
from .classes import RequestClass, VictimClass

Terms = list[tuple[cp_model.IntVar, int]]
SAFE = 2**62        # keep every linear term inside CP-SAT's int64 arithmetic


@dataclass
class Values:
    """Decision values of one solution: counts per (class, policy), in-share counts,
    preempted counts per victim class, and admitted counts per class."""

    n: dict[tuple[int, int], int]
    z: dict[tuple[int, int], int]
    v: dict[int, int]
    t: dict[int, int]


@dataclass
class Tier:
    """One value of the objective: what CP-SAT optimizes for it, its exact value
    from decision values, and how it is solved (restricted copy, fold)."""

    name: str
    maximize: bool
    terms: Terms                                 # what CP-SAT optimizes
    value: Callable[[Values], int]               # exact value from decision values
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
class Layout:
    """What every part shares: the global tier order and the FIFO constant N."""

    prios: list[int]              # admission priorities p_1 > ... > p_m
    vprios: list[int]             # victim priorities, highest first
    rank_n: int


@dataclass
class Built:
    """The CP-SAT model of one part, its variables by class, policy and victim
    class, and what the rules, cuts and tiers recorded while building it."""

    model: cp_model.CpModel
    classes: list[RequestClass]
    victims: list[VictimClass]
    rank_n: int
    n: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)   # (class, policy idx)
    z: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    v: dict[int, cp_model.IntVar] = field(default_factory=dict)               # victim class
    short: dict[tuple[str, str], cp_model.IntVar] = field(default_factory=dict)   # (pool, key) -> is short
    short_use: dict[tuple[str, str], tuple[Terms, int, int]] = field(default_factory=dict)  # its used, kept, cap
    short_pools: set[str] = field(default_factory=set)                        # pools with a flag that can be 1
    shortable: set[tuple[str, str]] = field(default_factory=set)              # (pool, key) whose flag can be 1
    flagged: set[int] = field(default_factory=set)                            # victim classes the flags govern
    fifo: dict[int, cp_model.IntVar] = field(default_factory=dict)            # class -> prefix var
    late: dict[int, cp_model.IntVar] = field(default_factory=dict)            # victim class -> prefix var
    all_vars: list[cp_model.IntVar] = field(default_factory=list)
    tiers: list[Tier] = field(default_factory=list)
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

    def requests(self) -> int:
        """How many pending requests the part holds (what its size thresholds count)."""
        return sum(len(c.members) for c in self.classes)


def prefix(weights: list[int]) -> list[int]:
    out = [0]
    for w in weights:
        out.append(out[-1] + w)
    return out


def concave(model: cp_model.CpModel, count: cp_model.LinearExprT, weights: list[int], reach: int,
            name: str) -> cp_model.IntVar:
    """f <= prefix_sum(weights)[count] for weights sorted descending and count <= reach:
    the minimum of the segment lines s < reach equals the prefix sum at every integer
    count up to reach (concavity); segments beyond reach cannot bind."""
    pre = prefix(weights)
    f = model.new_int_var(0, pre[reach], name)
    for s, w in enumerate(weights[:reach]):
        model.add(f <= pre[s] + w * (count - s))
    return f


def linear(terms: Terms) -> cp_model.LinearExpr:
    return cp_model.LinearExpr.weighted_sum([v for v, _ in terms], [c for _, c in terms])


def most(terms: Terms) -> int:
    """The largest value of a sum of nonnegative terms: each variable at its upper bound."""
    return sum(int(var.proto.domain[len(var.proto.domain) - 1]) * c for var, c in terms)  # no [-1] on this field


def lookup(assignment: dict[int, int], default: int | None = None) -> Callable[[cp_model.IntVar], int]:
    """A variable's value in ``assignment`` (``default`` for one it lacks, if given)."""
    if default is None:
        return lambda var: assignment[var.index]
    return lambda var: assignment.get(var.index, default)


def decisions(b: Built, value: Callable[[cp_model.IntVar], int]) -> Values:
    """The decision values of ``b`` under ``value``."""
    n = {k: value(x) for k, x in b.n.items()}
    return Values(n=n, z={k: value(x) for k, x in b.z.items()}, v={k: value(x) for k, x in b.v.items()},
                  t={ci: sum(n[ci, pi] for pi in range(len(cls.policies))) for ci, cls in enumerate(b.classes)})


def clear_row(model: cp_model.CpModel, row: int) -> None:
    """Make row ``row`` of ``model`` empty: always true."""
    model.proto.constraints[row].clear_linear()
    model.proto.constraints[row].enforcement_literal.clear()
