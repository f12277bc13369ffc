"""Amounts as people read them (`4 GPU, 32 cores, 256 GiB`), in one unit family per
resource: the one the platform is written in. Every renderer (the text plan, the
comment, diagnostics, `state list`) says a quantity this one way; the JSON keeps
the canonical integer keys (``gpu``, ``mcpu``, ``memory_mb``).

Memory is stored in decimal megabytes. Whether people read it in GB/TB
(decimal) or GiB/TiB (binary) is decided once from how the platform writes
memory: its pools' capacities and node groups and its policies' reserved shares
and limits (``memory_family``); a tie, or no memory written at all, is decimal,
poolc's own unit. A whole run uses the one family, so no row of a table, and no
sentence, mixes them. CPU is in cores, GPUs in GPUs, other keys as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

DECIMAL, BINARY = "decimal", "binary"
# the order amounts are listed in; other keys (custom ones) follow by name
_ORDER = {"gpu": 0, "mcpu": 1, "memory_mb": 2, "step_run": 3}
_BINARY_SUFFIX = re.compile(r"(Ki|Mi|Gi|Ti|Pi|Ei)B?$")
_DECIMAL_SUFFIX = re.compile(r"([kKMGTPE]B?|[kKMGTPE])$")


def memory_family(written: Iterable[str | int]) -> str:
    """BINARY when the platform writes memory in binary units more often than in
    decimal ones (a ``memory_mb`` integer counts as decimal), else DECIMAL."""
    binary = decimal = 0
    for value in written:
        if isinstance(value, str) and _BINARY_SUFFIX.search(value.strip()):
            binary += 1
        elif isinstance(value, int) or _DECIMAL_SUFFIX.search(str(value).strip()):
            decimal += 1
    return BINARY if binary > decimal else DECIMAL


def _number(value: Decimal, places: int = 1) -> str:
    """At most ``places`` decimals, no trailing zeros: 16, 0.5, 1.9."""
    text = f"{value:.{places}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


@dataclass(frozen=True)
class Units:
    """How a run shows quantities: the memory unit family."""

    memory: str = DECIMAL

    def as_dict(self) -> dict[str, str]:
        return {"memory_mb": self.memory}

    def memory_text(self, memory_mb: int) -> str:
        """``512 MB``, ``17.2 GB``, ``2048 GB``, ``12.5 TB``; binary: ``512 MiB``,
        ``16 GiB``, ``2048 GiB``, ``12.5 TiB``. GB (GiB) up to 10,000 of them, so
        a table's column reads in one scale."""
        if memory_mb < 0:
            return "-" + self.memory_text(-memory_mb)
        if memory_mb == 0:
            return "0 GiB" if self.memory == BINARY else "0 GB"
        if self.memory == BINARY:
            mebibytes = Decimal(memory_mb) * 10**6 / 2**20
            if mebibytes < 1024:
                return f"{_number(mebibytes, 0)} MiB"
            gibibytes = mebibytes / 1024
            return f"{_number(gibibytes / 1024, 2)} TiB" if gibibytes >= 10_240 else f"{_number(gibibytes)} GiB"
        if memory_mb < 1000:
            return f"{memory_mb} MB"
        gigabytes = Decimal(memory_mb) / 1000
        return f"{_number(gigabytes / 1000, 2)} TB" if gigabytes >= 10_000 else f"{_number(gigabytes)} GB"

    def amount(self, key: str, value: int) -> str:
        """One key's amount: ``4 GPU``, ``0.5 cores``, ``1 core``, ``256 GiB``, ``3 step runs``."""
        if key == "gpu":
            return f"{value} GPU"
        if key == "mcpu":
            cores = _number(Decimal(value) / 1000, 3)
            return f"{cores} core" if cores == "1" else f"{cores} cores"
        if key == "memory_mb":
            return self.memory_text(value)
        if key == "step_run":
            return f"{value} step run" if value == 1 else f"{value} step runs"
        return f"{value} {key}"

    def amounts(self, values: Mapping[str, int], *, skip_step_run: bool = True) -> str:
        """A demand or capacity: ``4 GPU, 32 cores, 256 GiB``. A step's ``step_run: 1``
        says nothing and is left out unless asked for; zeros are left out."""
        keys = sorted((k for k, v in values.items() if v and not (skip_step_run and k == "step_run")),
                      key=lambda k: (_ORDER.get(k, len(_ORDER)), k))
        return ", ".join(self.amount(k, values[k]) for k in keys) or "nothing"

    def listing(self, values: Mapping[str, int]) -> str:
        """Every key, zeros included, in the listing order (a shortfall, a reservation)."""
        keys = sorted(values, key=lambda k: (_ORDER.get(k, len(_ORDER)), k))
        return ", ".join(self.amount(k, values[k]) for k in keys)

    def cell(self, key: str, value: int) -> str:
        """An amount in a table whose row names the key (``key_name``): the number in
        that unit, memory with its own unit (``6``, ``0.5``, ``256 GiB``)."""
        if key == "mcpu":
            return _number(Decimal(value) / 1000, 3)
        if key == "memory_mb":
            return self.memory_text(value)
        return str(value)


DEFAULT = Units()


def key_word(key: str) -> str:
    """A key in a sentence: ``GPU``, ``CPU``, ``memory``, ``step runs``, a custom key as written."""
    return {"gpu": "GPU", "mcpu": "CPU", "memory_mb": "memory", "step_run": "step runs"}.get(key, key)
