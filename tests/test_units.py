"""poolc.units: quantities and CPU counts to integer request units (docs/format.md#resourcesettings).

Examples pin the documented conversions; hypothesis properties pin the rules
(exact decimal, ceil on the request side, floor on the supply side, units).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from poolc.units import (
    QUANTITY_PATTERN,
    duration_seconds,
    format_mcpu,
    format_memory_mb,
    gigabytes_ceil,
    mcpu_ceil,
    memory_mb_ceil,
    memory_mb_floor,
    parse_bytes,
)

DECIMAL_UNITS = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "k": 10**3, "K": 10**3,
                 "M": 10**6, "G": 10**9, "T": 10**12}
BINARY_UNITS = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
                "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
ALL_UNITS = {**DECIMAL_UNITS, **BINARY_UNITS}


# --- documented examples ---------------------------------------------------------

@pytest.mark.parametrize("text, mb", [
    ("16GiB", 17180),          # 17,179,869,184 B, rounded up
    ("16GB", 16000),
    ("16Gi", 17180),
    ("16G", 16000),
    ("900GiB", 966368),        # examples/README.md worked conversions
    ("256Gi", 274878),
    ("128GiB", 137439),
    ("96GiB", 103080),
    ("24GiB", 25770),
    ("8Gi", 8590),
    ("4GiB", 4295),
    ("512Mi", 537),
    ("48GB", 48000),
    ("1KB", 1),                # 1,000 B is still a (rounded up) megabyte of demand
    ("1Ki", 1),
    ("1000001KB", 1001),
    (".5GB", 500),
    ("1.5Ki", 1),
    ("0GB", 0),
])
def test_memory_mb_ceil_examples(text: str, mb: int):
    assert memory_mb_ceil(text) == mb


@pytest.mark.parametrize("text, mb", [("500GB", 500000), ("1Gi", 1073), ("1536GB", 1536000), ("999KB", 0),
                                      ("384Gi", 412316), ("200000M", 200000)])
def test_memory_mb_floor_examples(text: str, mb: int):
    assert memory_mb_floor(text) == mb


@pytest.mark.parametrize("text, expected", [
    ("1KB", 1000), ("1K", 1000), ("1k", 1000), ("1KiB", 1024), ("1Ki", 1024),
    ("1B", 1), ("1500000B", 1500000),   # plain bytes, ZenML 0.98's spelling
    ("1.5Ki", 1536), ("1.0001KB", 1001), ("0.0001KB", 1), ("1TiB", 2**40), ("2PB", 2 * 10**15),
])
def test_parse_bytes_examples(text: str, expected: int):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["16", "16 GB", "-1GB", "1gb", "1e3GB", "GB", "", "1.GB", "1,5GB", "16GB ",
                                  "0x10GB", "1b", "1.5iB", "１GB"])
def test_parse_bytes_rejects(text: str):
    with pytest.raises(ValueError):
        parse_bytes(text)


@pytest.mark.parametrize("cores, mcpu", [
    (16.1, 16100),     # exact decimal (ZenML's float gives 16101)
    (0.5, 500), (2, 2000), (4, 4000), (0.25, 250), (8.5, 8500), (0.0001, 1), (1e-9, 1),
    (0.001, 1), (0.0011, 2), (96.5, 96500), (10**12, 10**15),
])
def test_mcpu_ceil_examples(cores, mcpu):
    assert mcpu_ceil(cores) == mcpu


def test_binary_float_would_round_16_1_up():
    """Why exact decimal matters: the float product is just above 16100."""
    assert math.ceil(16.1 * 1000) == 16101
    assert mcpu_ceil(16.1) == 16100


@pytest.mark.parametrize("text, gb", [("1GB", 1), ("1.5GB", 2), ("1GiB", 2), ("500GB", 500), ("1KB", 1)])
def test_gigabytes_ceil(text: str, gb: int):
    assert gigabytes_ceil(text) == gb


@pytest.mark.parametrize("mcpu, text", [(2000, "2"), (500, "500m"), (16100, "16100m"), (0, "0"), (1, "1m")])
def test_format_mcpu(mcpu: int, text: str):
    assert format_mcpu(mcpu) == text


def test_format_memory_mb():
    assert format_memory_mb(17180) == "17180M"


# --- properties --------------------------------------------------------------------

counts = st.integers(min_value=0, max_value=10**9)
units = st.sampled_from(sorted(ALL_UNITS))
decimals = st.decimals(min_value=0, max_value=10**6, places=4, allow_nan=False, allow_infinity=False)


def _text(value: Decimal) -> str:
    return format(value.normalize(), "f") if value else "0"


@given(counts)
def test_n_megabytes_is_n(n: int):
    assert memory_mb_ceil(f"{n}MB") == n == memory_mb_floor(f"{n}MB") == memory_mb_ceil(f"{n}M")


@given(counts, units)
def test_integer_quantities_are_exact(n: int, unit: str):
    assert parse_bytes(f"{n}{unit}") == n * ALL_UNITS[unit]


@given(counts)
def test_kib_is_1024_and_kb_is_1000(n: int):
    assert parse_bytes(f"{n}KiB") == parse_bytes(f"{n}Ki") == 1024 * n
    assert parse_bytes(f"{n}KB") == parse_bytes(f"{n}K") == parse_bytes(f"{n}k") == 1000 * n
    assert parse_bytes(f"{n}GiB") >= parse_bytes(f"{n}GB")


@given(decimals, units)
def test_ceil_and_floor_bracket_the_exact_value(value: Decimal, unit: str):
    text = f"{_text(value)}{unit}"
    exact = value * ALL_UNITS[unit]                  # bytes, possibly fractional
    assert parse_bytes(text) == math.ceil(exact)
    ceil, floor = memory_mb_ceil(text), memory_mb_floor(text)
    assert floor * 10**6 <= math.ceil(exact) <= ceil * 10**6
    assert ceil - floor in (0, 1)
    assert (ceil - 1) * 10**6 < math.ceil(exact) or ceil == 0


@given(decimals, decimals, units)
def test_memory_is_monotonic(a: Decimal, b: Decimal, unit: str):
    low, high = sorted((a, b))
    assert memory_mb_ceil(f"{_text(low)}{unit}") <= memory_mb_ceil(f"{_text(high)}{unit}")
    assert memory_mb_floor(f"{_text(low)}{unit}") <= memory_mb_floor(f"{_text(high)}{unit}")


@given(counts, st.sampled_from(["K", "M", "G", "T"]))
def test_binary_unit_is_never_smaller_than_decimal(n: int, prefix: str):
    assert memory_mb_ceil(f"{n}{prefix}iB") >= memory_mb_ceil(f"{n}{prefix}B")


@given(st.decimals(min_value=Decimal("0.001"), max_value=10**9, places=3))
def test_mcpu_of_a_three_decimal_core_count_is_exact(cores: Decimal):
    """Whatever binary float the YAML loader produced, millicores come out exact."""
    assert mcpu_ceil(float(cores)) == int(cores * 1000)


@given(st.floats(min_value=1e-6, max_value=1e9, allow_nan=False, allow_infinity=False))
def test_mcpu_is_the_ceiling_of_the_written_value(cores: float):
    written = Decimal(repr(cores))                    # what the user wrote, as YAML gave it back
    mcpu = mcpu_ceil(cores)
    assert mcpu - 1 < written * 1000 <= mcpu


@given(st.floats(min_value=1e-6, max_value=1e9), st.floats(min_value=1e-6, max_value=1e9))
def test_mcpu_is_monotonic(a: float, b: float):
    low, high = sorted((a, b))
    assert mcpu_ceil(low) <= mcpu_ceil(high)


@settings(max_examples=300)
@given(st.from_regex(QUANTITY_PATTERN, fullmatch=True))
def test_every_string_the_pattern_accepts_parses(text: str):
    """The schema's pattern and the parser agree: what the schema lets through never crashes."""
    if text.endswith("\n"):  # Python's '$' also matches before a final newline; see test_schema
        return
    assert parse_bytes(text) >= 0


@given(st.text(max_size=12))
def test_parser_accepts_exactly_the_pattern(text: str):
    matches = re.fullmatch(QUANTITY_PATTERN.removeprefix("^").removesuffix("$"), text) is not None
    try:
        parse_bytes(text)
        parsed = True
    except ValueError:
        parsed = False
    assert parsed == matches or text.endswith("\n")


@pytest.mark.parametrize("value, seconds", [(1, 1), (5400, 5400), ("600s", 600), ("90m", 5400), ("30h", 108000),
                                            ("2d", 172800), ("28d", 2419200)])
def test_duration_seconds(value, seconds):
    assert duration_seconds(value) == seconds


@pytest.mark.parametrize("text", ["0m", "1.5h", "90", "2w", "90 m", "-5m", "1" * 16 + "d"])
def test_duration_seconds_rejects(text):
    with pytest.raises(ValueError):
        duration_seconds(text)
