"""What a value in a plan file may be, declared once for every record the file holds
(domain/plan.py, and the `base` section in domain/change.py): a plan file may come
from anywhere, so its integers are bounded (a huge ``used`` would overflow the
comment's bars) and its strings and flags are themselves (no "3" for 3, no 1 for true).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import Field

MAX_VALUE = 10**18
Int = Annotated[int, Field(strict=True, ge=-MAX_VALUE, le=MAX_VALUE)]
Ints = Mapping[str, Int]
Str = Annotated[str, Field(strict=True)]
Flag = Annotated[bool, Field(strict=True)]
Names = tuple[Str, ...]
# a name a file may leave out (read as null, as plan files always were); the planner passes it
OptionalStr = Annotated[Str | None, Field(default=None)]
