"""Quantities: memory/disk strings and CPU counts to integer request units.

All arithmetic is exact decimal: ZenML multiplies cpu_count in binary floating
point (16.1 cores -> 16101 mcpu there); poolc gives 16100 (docs/format.md#resourcesettings).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

# Decimal and binary suffixes in ZenML spelling (KB, KiB, ...) and in Kubernetes
# spelling (k/K, Ki, ...), and B for plain bytes (ZenML 0.98). A unit is required: a
# bare number is ambiguous.
_UNITS: dict[str, int] = {
    "B": 1,
    "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15,
    "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50,
    "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50,
}
_UNIT_ALTERNATION = "|".join(sorted(_UNITS, key=lambda u: (-len(u), u)))
# At most 30 digits before and after the point: far past any real quantity (10^12
# units is poolc's limit, P007/R001 say so with the number), and short enough that
# reading one never meets Python's limit on long digit strings (a 5,000-digit
# quantity would otherwise crash the conversion to integers).
MAX_QUANTITY_DIGITS = 30
QUANTITY_PATTERN = (rf"^([0-9]{{1,{MAX_QUANTITY_DIGITS}}}(\.[0-9]{{1,{MAX_QUANTITY_DIGITS}}})?"
                    rf"|\.[0-9]{{1,{MAX_QUANTITY_DIGITS}}})({_UNIT_ALTERNATION})$")
_QUANTITY = re.compile(QUANTITY_PATTERN)

BYTES_PER_MB = 10**6

# A duration: whole seconds, minutes, hours or days ("90m", "30h", "2d"). At most 15
# digits, so reading it never meets Python's limit on converting long digit strings.
DURATION_PATTERN = r"^[1-9][0-9]{0,14}[smhd]$"
_DURATION = re.compile(DURATION_PATTERN)
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_bytes(text: str) -> int:
    """Bytes in a quantity string, rounded up to a whole byte ("1.5Ki" -> 1536); a
    quantity of more than MAX_QUANTITY_DIGITS digits on either side is no quantity."""
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"not a quantity: {text!r}")
    number, _, unit = match.groups()
    return math.ceil(Decimal(number) * _UNITS[unit])


def memory_mb_ceil(text: str) -> int:
    """Request side: decimal megabytes, rounded up (16GiB -> 17180)."""
    return -(-parse_bytes(text) // BYTES_PER_MB)


def memory_mb_floor(text: str) -> int:
    """Supply side (capacity, reserved, limit): decimal megabytes, rounded down."""
    return parse_bytes(text) // BYTES_PER_MB


def mcpu_ceil(cores: int | float) -> int:
    """Milli-CPU from a core count, exact decimal, rounded up (0.5 -> 500, 16.1 -> 16100)."""
    return math.ceil(Decimal(str(cores)) * 1000)


def gigabytes_ceil(text: str) -> int:
    """Whole decimal GB, rounded up (SageMaker VolumeSizeInGB)."""
    return -(-parse_bytes(text) // 10**9)


def duration_seconds(value: int | str) -> int:
    """Seconds in a duration: an integer is seconds already, a string is a number and
    a unit ("90m" -> 5400, "2d" -> 172800)."""
    if isinstance(value, int):
        return value
    if not _DURATION.match(value):
        raise ValueError(f"not a duration: {value!r}")
    return int(value[:-1]) * _SECONDS[value[-1]]


def format_mcpu(mcpu: int) -> str:
    """Kubernetes CPU quantity: whole cores as "2", otherwise milli-CPU "500m"."""
    return str(mcpu // 1000) if mcpu % 1000 == 0 else f"{mcpu}m"


def format_memory_mb(memory_mb: int) -> str:
    """Kubernetes memory quantity in decimal megabytes ("16000M")."""
    return f"{memory_mb}M"
