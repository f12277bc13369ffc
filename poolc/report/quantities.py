"""Amounts in the units people write (`4 GPU, 32 cores, 256 GiB`), for the text
plan and the pull-request comment: ``domain.amounts`` in the plan's unit family
(``Plan.units``, decided from how the platform writes memory). The plan JSON keeps
its canonical integer keys (``gpu``, ``mcpu``, ``memory_mb``); only what people
read is translated.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..domain.amounts import DEFAULT, Units, key_word

__all__ = ["amount", "amounts", "cell", "key_name", "key_word"]


def amount(key: str, value: int, units: Units = DEFAULT) -> str:
    """One key's amount: ``4 GPU``, ``0.5 cores``, ``1 core``, ``256 GiB``, ``3 step runs``."""
    return units.amount(key, value)


def amounts(values: Mapping[str, int], units: Units = DEFAULT, *, skip_step_run: bool = True) -> str:
    """A demand or capacity: ``4 GPU, 32 cores, 256 GiB``; a step's ``step_run: 1`` left out."""
    return units.amounts(values, skip_step_run=skip_step_run)


def key_name(key: str) -> str:
    """A canonical key as a table's row label, naming the unit of ``cell``."""
    return {"gpu": "GPU", "mcpu": "CPU cores", "memory_mb": "memory", "step_run": "step runs"}.get(key, key)


def cell(key: str, value: int, units: Units = DEFAULT) -> str:
    """An amount in a table whose row names the key: the number in that unit, memory with its own."""
    return units.cell(key, value)
