"""Kubernetes resource quantities as exact numbers, and Kueue's integer units.

Kueue keeps quota and usage as int64 "amounts": CPU in millicores and every
other resource in its base unit, both rounded up (``Quantity.MilliValue`` and
``Quantity.Value`` round towards +infinity). Parsing into a ``Fraction`` first
keeps "0.1", "100m" and "1e-1" exactly equal before that single rounding.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9),
    "T": Fraction(10**12), "P": Fraction(10**15), "E": Fraction(10**18),
}
# <sign><digits>[.<digits>] then one of: a binary suffix, an exponent (e/E with a
# signed integer), or a decimal suffix. "1E" is exa, "1E3" is an exponent.
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exp>[+-]?[0-9]+)|(?P<dec>[numkMGTPE]?))$"
)


def parse_quantity(text: str | int) -> Fraction:
    """The exact value of a Kubernetes ``resource.Quantity`` ("500m" -> 1/2, "1Gi", "2e3")."""
    if isinstance(text, bool):
        raise TypeError(f"not a quantity: {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if not isinstance(text, str):
        raise TypeError(f"not a quantity: {text!r}")
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise ValueError(f"not a Kubernetes quantity: {text!r}")
    number = Fraction(match["num"])
    if match["bin"] is not None:
        return number * _BINARY[match["bin"]]
    if match["exp"] is not None:
        return number * Fraction(10) ** int(match["exp"])
    return number * _DECIMAL[match["dec"] or ""]


@lru_cache(maxsize=4096)
def canonical_units(resource: str, quantity: str | int) -> int:
    """Kueue's integer amount: "cpu" in millicores, anything else in base units, rounded up
    (remembered: thousands of Jobs repeat a few quantities)."""
    value = parse_quantity(quantity)
    if resource == "cpu":
        value *= 1000
    return math.ceil(value)


def format_amount(resource: str, amount: int) -> str:
    """A short human form of an amount for messages ("1500m", "4", "2Gi")."""
    if resource == "cpu":
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if resource in ("memory", "ephemeral-storage") and amount > 0:
        for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount % factor == 0:
                return f"{amount // factor}{suffix}"
    return str(amount)
