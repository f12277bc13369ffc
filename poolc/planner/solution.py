"""What a strategy returns: which requests are admitted through which policy,
which running allocations are preempted (and for whom), and how sure it is."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..vocabulary import Strategy


@dataclass
class Solution:
    strategy: Strategy
    admitted: dict[str, str]                        # request id -> name of the policy it is admitted through
    # allocation name -> sorted request ids it made room for
    preempted: dict[str, list[str]] = field(default_factory=dict)
    status: str = "OPTIMAL"                         # "OPTIMAL" | "FEASIBLE" (a limit stopped the solve)
    objective: list[int] = field(default_factory=list)  # tier values in order (docs/planning.md#tiers) ([] for zenml)
    gap: float = 0.0                                # largest relative gap between a tier's value and its bound
    bounds: list[int] = field(default_factory=list)     # per tier, the best bound proven ([] for zenml)
    # admitted request ids the plan counts inside their policy's free reserved share
    # (the optimal strategy's in-share set); they walk the reserved share first
    in_share: frozenset[str] = frozenset()
