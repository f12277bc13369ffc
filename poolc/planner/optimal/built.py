"""The CP-SAT model of one part, with its variables, and the values read from it.

`Built` is what every later step works on: the model, the classes it decides
on, the variables per class and policy, and the tiers in order. `Values` is one
solution in the classes' terms, which the tiers' exact values and the hand-out
read. The small helpers write the linear expressions the rules and tiers share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from .. import cpsat as cp_model  # the CP-SAT API, without numpy and pandas (cpsat.py)
from .classes import RequestClass, VictimClass
from .constraints import RULES

Terms = list[tuple[cp_model.IntVar, int]]
SAFE = 2**62        # keep every linear term inside CP-SAT's int64 arithmetic


@dataclass(frozen=True)
class Values:
    """One solution in the classes' terms, read from the decision variables: what
    the tiers' exact values and the hand-out are computed from."""

    admitted: dict[tuple[int, int], int]    # (class, policy) -> members admitted through the policy
    in_share: dict[tuple[int, int], int]    # (class, policy) -> of those, admitted inside its reserved share
    preempted: dict[int, int]               # victim class -> members preempted
    total: dict[int, int]                   # class -> members admitted through any policy


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


@dataclass(frozen=True)
class Decisions:
    """The decision variables of one part; every other variable of the model is
    derived from them (the short-key flags, the tiers' prefix sums, the literals
    of the request dominance rows) and every rule is written over them."""

    admitted: dict[tuple[int, int], cp_model.IntVar]   # (class, policy): members admitted through the policy
    in_share: dict[tuple[int, int], cp_model.IntVar]   # (class, policy): of those, inside its reserved share
    #                                                    (only where one member's demand fits the reserve)
    preempted: dict[int, cp_model.IntVar]              # victim class: members preempted

    def all(self) -> list[cp_model.IntVar]:
        """Every decision variable, in the order the model's hint lists them."""
        return list(self.admitted.values()) + list(self.in_share.values()) + list(self.preempted.values())


@dataclass(frozen=True)
class ShortKeys:
    """H5's flags (`short_keys`): which (pool, key) is short in a plan, and what
    each flag is read from."""

    flag: dict[tuple[str, str], cp_model.IntVar] = field(default_factory=dict)  # (pool, key): 1 only if short
    use: dict[tuple[str, str], tuple[Terms, int, int]] = field(default_factory=dict)  # (pool, key): admitted
    #                                                  units as terms, units kept before the plan, capacity
    pools: frozenset[str] = frozenset()                # pools where some flag can be 1
    shortable: frozenset[tuple[str, str]] = frozenset()   # (pool, key) whose flag can be 1
    governed: frozenset[int] = frozenset()             # victim classes preempted only while a flag is 1


@dataclass
class Derived:
    """Variables a tier or a cut adds when it is reached, each a function of the
    decisions: a tier's prefix sums, the request dominance rows' literals."""

    fifo_credit: dict[int, cp_model.IntVar] = field(default_factory=dict)   # class: FIFO credit of its admitted
    late_credit: dict[int, cp_model.IntVar] = field(default_factory=dict)   # victim class: start-rank credit
    used: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)      # (class, policy): admits >= 1
    at_least: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)  # (class, k): admits >= k + 1


@dataclass
class Built:
    """The CP-SAT model of one part as it grows: what it decides on (`Decisions`),
    the facts about its classes the rules read, the rows each rule added
    (`constraints.RULES`), and the tiers in order."""

    model: cp_model.CpModel
    classes: list[RequestClass]
    victims: list[VictimClass]
    rank_n: int                                                # FIFO's constant: above every arrival rank
    var: Decisions = field(default_factory=lambda: Decisions({}, {}, {}))
    short: ShortKeys = field(default_factory=ShortKeys)
    aux: Derived = field(default_factory=Derived)
    all_vars: list[cp_model.IntVar] = field(default_factory=list)   # every variable the hint covers, in order
    tiers: list[Tier] = field(default_factory=list)
    count_tiers: int = 0                                            # |Z|, admissions, victims: tiers before FIFO
    reach: dict[int, int] = field(default_factory=dict)             # class -> most it can admit
    reach_via: dict[tuple[int, int], int] = field(default_factory=dict)   # (class, policy) -> most through it
    through: dict[str, list[tuple[int, int]]] = field(default_factory=dict)   # policy -> its (class, policy)
    victims_of: dict[str, list[int]] = field(default_factory=dict)  # policy -> its victim classes
    rows: dict[str, list[int]] = field(default_factory=lambda: {name: [] for name in RULES})  # rule -> its rows
    mip_work: list[tuple[int, int]] = field(default_factory=list)   # per MIP retry: nodes, LP iterations

    def requests(self) -> int:
        """How many pending requests the part holds (what its size thresholds count)."""
        return sum(len(c.members) for c in self.classes)


@contextmanager
def recording(b: Built, rule: str) -> Iterator[None]:
    """Record the rows added inside the block as ``rule``'s (a name in `RULES`)."""
    first = len(b.model.proto.constraints)
    yield
    b.rows[rule].extend(range(first, len(b.model.proto.constraints)))


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
    admitted = {k: value(x) for k, x in b.var.admitted.items()}
    return Values(admitted=admitted, in_share={k: value(x) for k, x in b.var.in_share.items()},
                  preempted={k: value(x) for k, x in b.var.preempted.items()},
                  total={ci: sum(admitted[ci, pi] for pi in range(len(cls.policies)))
                         for ci, cls in enumerate(b.classes)})


def clear_row(model: cp_model.CpModel, row: int) -> None:
    """Make row ``row`` of ``model`` empty: always true."""
    model.proto.constraints[row].clear_linear()
    model.proto.constraints[row].enforcement_literal.clear()
