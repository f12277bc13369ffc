"""The solver's tuning settings as one frozen value, passed down explicitly.

Why a value and not module constants: a test or a benchmark that wants another
setting builds its own `SolverSettings` and hands it to `solve`, so nothing is
patched behind the planner's back and two solves in one process never see each
other's settings. The defaults are the planner's; docs/solver.md says why each
has its value (and the measurements behind it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

KINDS = ("count", "fifo", "rank", "preference")   # the kinds of solve `tuning` is keyed by


def _no_tuning() -> Mapping[str, Mapping[str, object]]:
    return MappingProxyType({kind: MappingProxyType({}) for kind in KINDS})


@dataclass(frozen=True)
class SolverSettings:
    """How the optimal strategy spends its budget: first-attempt limits, when a
    retry starts, which exact strengthenings go into the model. Every limit is in
    CP-SAT's deterministic seconds (never a clock), so a setting changes the plan
    the same way on every machine."""

    random_seed: int = 1                  # CP-SAT's own default, pinned
    fifo_quick: float = 1.0               # FIFO without presolve, before it is retried with it
    fold_quick: float = 1.0               # the folded start-rank tier, before it is retried with presolve
    fifo_plain: float = 2.0               # the FIFO retry with presolve, before the request dominance rows
    fifo_plain_large: float = 8.0         # the same for a part of `fifo_plain_from` requests or more
    fifo_plain_from: int = 5_000
    fold_counts: bool = True              # each "preempted at v" tier with the next "admitted at p" folded in
    count_fold_quick: float = 0.1         # such a folded pair, before its tiers are solved apart
    count_quick: float = 1.0              # a count tier alone, before the MIP retry (when it runs)
    rank_polish: float = 0.3              # the start-rank fold's polished hint
    polish_from: int = 5_000              # requests in a part from which the fold gets that hint
    reopen: bool = True                   # budget left after the last tier goes to the first tier not proven
    reopen_min: float = 0.5               # less than this for a reopened tier, and it is not tried
    mip_retry: bool = True                # a count tier or FIFO not proven quickly goes to SCIP once
    mip_nodes: int = 1_000                # branch-and-bound nodes SCIP may open
    mip_lp_iterations: int = 200_000      # simplex iterations over SCIP's whole solve (checked after each LP)
    # When the request dominance rows are in the model: "retry" (only for a FIFO tier
    # not proven in fifo_quick + fifo_plain), "all" (from the first tier: the tests'
    # check that they remove no optimum) or None (never: the benchmarks' baseline).
    request_dominance: Literal["retry", "all"] | None = "retry"
    drop_cuts: bool = True                # clear those rows once FIFO is fixed (the tests keep them)
    # CP-SAT parameters per kind of solve (KINDS), on top of the pinned ones; empty:
    # no variant won across instances (docs/solver.md)
    tuning: Mapping[str, Mapping[str, object]] = field(default_factory=_no_tuning)
