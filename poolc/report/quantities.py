"""Amounts in the units people write (`4 GPU, 32 cores, 256 GiB`), for the text
plan and the pull-request comment. The plan JSON keeps its canonical integer
keys (``gpu``, ``mcpu``, ``memory_mb``); only what people read is translated.

Memory is stored in decimal megabytes, rounded up from what was written, so
``16GiB`` is 17180 MB: a value that is a whole number of GB is shown in GB/TB,
anything else in GiB/TiB, which gives back what was written in either spelling.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

# the order amounts are listed in; other keys (custom ones) follow by name
_ORDER = {"gpu": 0, "mcpu": 1, "memory_mb": 2, "step_run": 3}


def _number(value: Decimal | float, places: int = 1) -> str:
    """At most ``places`` decimals, no trailing zeros: 16, 0.5, 1.9."""
    text = f"{value:.{places}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def memory(memory_mb: int) -> str:
    """Decimal megabytes as people wrote them: ``256 GiB``, ``2 TB``, ``512 MB``."""
    if memory_mb == 0:
        return "0"
    if memory_mb % 1000 == 0 and memory_mb:
        gigabytes = memory_mb // 1000
        return f"{_number(Decimal(gigabytes) / 1000, 2)} TB" if gigabytes % 1000 == 0 and gigabytes >= 1000 \
            else f"{gigabytes} GB"
    mebibytes = Decimal(memory_mb) * 10**6 / 2**20
    if mebibytes < 1024:
        return f"{memory_mb} MB"
    gibibytes = mebibytes / 1024
    return f"{_number(gibibytes / 1024, 2)} TiB" if gibibytes >= 1024 else f"{_number(gibibytes)} GiB"


def amount(key: str, value: int) -> str:
    """One key's amount: ``4 GPU``, ``0.5 cores``, ``1 core``, ``256 GiB``, ``3 step runs``."""
    if key == "gpu":
        return f"{value} GPU"
    if key == "mcpu":
        cores = _number(Decimal(value) / 1000, 3)
        return f"{cores} core" if cores == "1" else f"{cores} cores"
    if key == "memory_mb":
        return memory(value)
    if key == "step_run":
        return f"{value} step run" if value == 1 else f"{value} step runs"
    return f"{value} {key}"


def amounts(values: Mapping[str, int], *, skip_step_run: bool = True) -> str:
    """A demand or capacity: ``4 GPU, 32 cores, 256 GiB``. A step's ``step_run: 1``
    says nothing and is left out unless asked for; zeros are left out."""
    keys = sorted((k for k, v in values.items() if v and not (skip_step_run and k == "step_run")),
                  key=lambda k: (_ORDER.get(k, len(_ORDER)), k))
    return ", ".join(amount(k, values[k]) for k in keys) or "nothing"


def key_name(key: str) -> str:
    """A canonical key as a table's row label, naming the unit of ``cell``."""
    return {"gpu": "GPU", "mcpu": "CPU cores", "memory_mb": "memory", "step_run": "step runs"}.get(key, key)


def key_word(key: str) -> str:
    """A key in a sentence: ``GPU``, ``CPU``, ``memory``, ``step runs``, a custom key as written."""
    return {"gpu": "GPU", "mcpu": "CPU", "memory_mb": "memory", "step_run": "step runs"}.get(key, key)


def cell(key: str, value: int) -> str:
    """An amount in a table whose row names the key (``key_name``): the number in
    that unit, memory with its own unit (``6``, ``0.5``, ``256 GiB``)."""
    if key == "mcpu":
        return _number(Decimal(value) / 1000, 3)
    if key == "memory_mb":
        return memory(value) if value >= 0 else "-" + memory(-value)
    return str(value)


def change(key: str, old: int | None, new: int | None) -> str:
    """``8 GPU → 4 GPU``; an absent side is ``none``."""
    return f"{'none' if old is None else amount(key, old)} → {'none' if new is None else amount(key, new)}"
