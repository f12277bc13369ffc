"""Split a planning problem into independent parts: groups of pools that no request
class can choose between.

Why it is exact: every hard rule of the optimal strategy (docs/planning.md#tiers) is
per pool or per policy (and a policy lives on one pool), a running allocation stays in its pool, and a request
class is placed in one of its eligible pools. So when no class is eligible on pools
of two groups, the groups share no decision and no constraint. Every objective tier
is a sum over requests or allocations, hence a sum over parts; optimizing each part
tier by tier, in the global tier order, gives each tier's global optimum, and their
sum is the lexicographic optimum of the whole. Smaller models also prove faster:
CP-SAT's effort grows faster than linearly with the model.
"""

from __future__ import annotations

from collections.abc import Iterable


def pool_groups(pools: Iterable[str], links: Iterable[Iterable[str]]) -> list[list[str]]:
    """Connected groups of ``pools``, where each item of ``links`` (the eligible
    pools of one request class) joins its pools. Each group is sorted, and the
    groups are in the order of their first pool name: a canonical order."""
    parent = {p: p for p in pools}

    def root(p: str) -> str:
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    for link in links:
        ends = sorted({root(p) for p in link})
        for other in ends[1:]:
            parent[other] = ends[0]
    groups: dict[str, list[str]] = {}
    for p in sorted(parent):
        groups.setdefault(root(p), []).append(p)
    return sorted(groups.values(), key=lambda g: g[0])
