"""Seed sweeps split between the edit loop and the full run (imported as `sweep`).

A sweep runs one check over many random platforms, in blocks of seeds. The first
blocks find what a change breaks nearly always; the rest repeat the same check on
more seeds and are marked slow: the README's edit loop (`-m "not slow"`) skips them,
CI (.ci/run) runs every one.
"""

import pytest


def blocks(count: int, fast: int = 1) -> list:
    """``range(count)`` for ``@pytest.mark.parametrize``, all but the first ``fast`` marked slow."""
    return [*range(min(fast, count)), *(pytest.param(block, marks=pytest.mark.slow) for block in range(fast, count))]
