"""What a value in a plan file may be, declared once for every record the file holds
(domain/plan.py, and the `base` section in domain/change.py): a plan file may come
from anywhere, so its integers are bounded (a huge ``used`` would overflow the
comment's bars) and its strings and flags are themselves (no "3" for 3, no 1 for true).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Annotated

from pydantic import Field, PlainSerializer, PlainValidator
from pydantic_core import PydanticCustomError

from .said import Said, read_said

MAX_VALUE = 10**18
Int = Annotated[int, Field(strict=True, ge=-MAX_VALUE, le=MAX_VALUE)]
Ints = Mapping[str, Int]
Str = Annotated[str, Field(strict=True)]
Flag = Annotated[bool, Field(strict=True)]
Names = tuple[Str, ...]
# a name a file may leave out (read as null, as plan files always were); the planner passes it
OptionalStr = Annotated[Str | None, Field(default=None)]


def _read_message(value: object) -> Said:
    """A message as a file holds it: text, whose parts are marked once read (a plan
    repeats its messages, so each text is read once)."""
    if not isinstance(value, str):
        raise PydanticCustomError("string_type", "Input should be a valid string")   # as a Str field says it
    return _read_text(value)


_read_text = lru_cache(maxsize=8192)(read_said)
# a plan's message: the text in the file, its marked parts in the plan (domain.said)
Message = Annotated[Said, PlainValidator(_read_message, json_schema_input_type=str),
                    PlainSerializer(lambda message: message.text, return_type=str)]
