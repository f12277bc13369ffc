"""What each value of a forecast may be when it is read back from a plan file.

The forecast's dataclasses (summary.py) carry these in their annotations, so the
one declaration is both what poolc writes and what `plan --base --forecast`
accepts from another job's plan file: every number bounded, every scalar strict
(no "3" for 3, no true for 1), every list a JSON list.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, GetPydanticSchema
from pydantic_core import PydanticCustomError

from ..vocabulary import LATE_OUTCOMES, LateOutcome

# every number bounded (seconds: about 31,700 years), so nothing read overflows a float,
# a datetime or a table's width later (#42: a horizon of 10^400 exited 3)
BOUND = 10**12
Seconds = Annotated[int, Field(strict=True, ge=-BOUND, le=BOUND)]
NonNegative = Annotated[int, Field(strict=True, ge=0, le=BOUND)]
Positive = Annotated[int, Field(strict=True, gt=0, le=BOUND)]
Hours = Annotated[float, Field(strict=True, ge=0, le=BOUND, allow_inf_nan=False)]
Money = Annotated[float, Field(strict=True, ge=-BOUND, le=BOUND, allow_inf_nan=False)]
Text = Annotated[str, Field(strict=True)]
Flag = Annotated[bool, Field(strict=True)]
Late = LateOutcome
LATE: tuple[str, ...] = LATE_OUTCOMES

# A start as the forecast keeps it: seconds, or the name of what happened instead
# (None: nothing waits). Python sees ``int | str | None``; a file may hold only these.
StartRead = GetPydanticSchema(lambda _source, handler: handler(Seconds | Late | None))


def _an_instant(value: str) -> str:
    try:
        datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise PydanticCustomError("instant", f"{value!r} is no instant") from None
    return value


# RFC 3339 in UTC, to the second: the only form poolc writes, and a real date
Instant = Annotated[str, Field(strict=True, pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"),
                    AfterValidator(_an_instant)]


def _a_list(value: Any) -> Any:
    if type(value) is not list:
        raise PydanticCustomError("list_type", "Input should be a valid list")
    return value


# A tuple field read from a JSON list only. Strictness cannot sit on the tuple itself:
# a strict tuple of dataclasses would take only tuples of instances.
AList = BeforeValidator(_a_list)


def named_none(*names: str) -> BeforeValidator:
    """Read one of ``names`` (what the file writes where a number is missing) as None;
    a null is refused: the file never writes one there."""

    def read(value: Any) -> Any:
        if type(value) is str and value in names:
            return None
        if value is None:
            raise PydanticCustomError("int_type", "Input should be a valid integer")
        return value

    return BeforeValidator(read)
