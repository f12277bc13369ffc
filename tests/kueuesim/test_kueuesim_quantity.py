"""Kubernetes quantity parsing and Kueue's integer units (resource.Quantity, Kueue's resources.Amount)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolc.kueuesim import canonical_units, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)), ("1Gi", 2**30), ("1P", 10**15), ("2e3", 2000), ("1E", 10**18),
        ("1E3", 1000), ("1.5", Fraction(3, 2)), (".5", Fraction(1, 2)), ("100Mi", 100 * 2**20),
        ("12", 12), (7, 7), ("1k", 1000), ("250u", Fraction(1, 4000)), ("-1", -1), ("1e-3", Fraction(1, 1000)),
    ],
)
def test_parse_quantity_examples(text: str | int, value: Fraction | int) -> None:
    """Kubernetes quantity grammar: binary (Ki..Ei) and decimal (n..E) suffixes, or an e/E exponent."""
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1Kb", "one", "1.2.3", "1 Gi", "Gi", "1ee3"])
def test_parse_quantity_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(text)


def test_canonical_units_round_up() -> None:
    """Kueue stores cpu as MilliValue() and everything else as Value(); both round up."""
    assert canonical_units("cpu", "1") == 1000
    assert canonical_units("cpu", "0.0001") == 1
    assert canonical_units("cpu", "250m") == 250
    assert canonical_units("memory", "1Gi") == 2**30
    assert canonical_units("memory", "0.5") == 1
    assert canonical_units("nvidia.com/gpu", 4) == 4


@given(st.integers(min_value=0, max_value=10**15))
def test_integers_and_milli_suffix(n: int) -> None:
    assert parse_quantity(str(n)) == n
    assert parse_quantity(f"{n}m") == Fraction(n, 1000)
    assert canonical_units("cpu", f"{n}m") == n
    assert canonical_units("cpu", n) == 1000 * n


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]))
def test_binary_suffixes(n: int, suffix: str) -> None:
    power = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"].index(suffix) + 1
    assert parse_quantity(f"{n}{suffix}") == n * 1024**power


@given(st.fractions(min_value=0, max_value=10**6, max_denominator=1000), st.integers(min_value=-6, max_value=6))
def test_exponent_matches_decimal(frac: Fraction, exp: int) -> None:
    text = f"{frac.numerator}e{exp}"
    assert parse_quantity(text) == frac.numerator * Fraction(10) ** exp
    assert canonical_units("memory", text) == math.ceil(frac.numerator * Fraction(10) ** exp)
