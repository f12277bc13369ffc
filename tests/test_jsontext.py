"""poolc.text.jsontext: the fast indented writer gives json.dumps's bytes, always.

Hypothesis draws nested JSON values (every scalar type, unicode and control
characters, empty containers, tuples); examples pin the hand-off to json.dumps
for what the writer does not lay out itself.
"""

from __future__ import annotations

import enum
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from poolc.text.jsontext import dumps_sorted

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(VALUES, st.booleans(), st.integers(0, 4))
def test_same_bytes_as_json_dumps(value: object, ascii_only: bool, indent: int) -> None:
    expected = json.dumps(value, indent=indent, sort_keys=True, ensure_ascii=ascii_only)
    assert dumps_sorted(value, indent=indent, ensure_ascii=ascii_only) == expected


class Level(enum.IntEnum):
    LOW = 1


@pytest.mark.parametrize("value", [
    {1: "a", 2: "b"},                       # non-string keys: json.dumps turns them into strings
    {"x": [math.inf, math.nan]},            # JSON's Infinity and NaN spellings
    {"level": Level.LOW},                   # an int subclass
    {"nested": {"deep": [{}, [], {"k": ()}]}},
    "\u2028 \U0001f600 \x00 \"quoted\"",
])
def test_unusual_values_match_json_dumps(value: object) -> None:
    for ascii_only in (True, False):
        assert dumps_sorted(value, ensure_ascii=ascii_only) == json.dumps(value, indent=2, sort_keys=True,
                                                                          ensure_ascii=ascii_only)


def test_what_json_cannot_write_fails_as_json_dumps_does() -> None:
    with pytest.raises(TypeError):
        dumps_sorted({"when": object()})


class Colour(enum.StrEnum):
    RED = "é"


def test_repeated_keys_are_written_as_json_dumps_would_each_time() -> None:
    """Key texts are remembered within one document: the same key in many objects,
    also with the other ensure_ascii next, and a str subclass equal to a seen key."""
    value = {"é": [{"é": 1, "k": None}, {"é": {"é": True}}, {Colour.RED: 2.5}], "k": ["é", Colour.RED]}
    for ascii_only in (True, False, True):
        assert dumps_sorted(value, ensure_ascii=ascii_only) == json.dumps(value, indent=2, sort_keys=True,
                                                                          ensure_ascii=ascii_only)
