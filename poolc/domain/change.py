"""What a change does: the plan of a pull request's inputs against the plan of
its base branch's inputs, both made against the same state (`plan --base`).

A reviewer asks what the change does, not what the platform is: which inputs
changed (and, where the plans record them, which fields: a policy's priority,
reserved share and limit, a pool's capacity, a step's demand), which steps'
fate changed, which running work it preempts or no longer preempts, and how
each policy's counts move. Only what differs is kept; an empty comparison is a
change with no effect on the plan.

Fields come from the plans themselves (a PLANFILE holds no documents): a
change the plans do not record (an image, a stack's namespace) is an update
with no fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import SerializerFunctionWrapHandler, model_serializer

from ..vocabulary import ChangeAction
from .file_values import Int, Names, Str

ABSENT = "absent"        # a step's status in a plan that does not have it



@dataclass(frozen=True)
class InputChange:
    kind: Str
    name: Str
    change: ChangeAction
    fields: Mapping[Str, tuple[Any, Any]]         # dotted path -> (old, new); None for a side without it


@dataclass(frozen=True)
class StepChange:
    id: Str
    base: Str             # allocated | queued | rejected | absent
    head: Str


@dataclass(frozen=True)
class PolicyChange:
    name: Str
    admitted: tuple[Int, Int]
    queued: tuple[Int, Int]
    preempted: tuple[Int, Int]


@dataclass(frozen=True)
class Moves:
    """Running allocations a change adds to a list the base plan has, and takes from it."""

    added: Names = ()
    removed: Names = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed)


@dataclass(frozen=True)
class BaseComparison:
    """The plan's ``base`` section (declared once: the plan file's adapter writes and
    reads it, domain/plan.py)."""

    inputs_digest: Str                            # the base plan's
    inputs: tuple[InputChange, ...] = ()          # sorted by kind, name
    steps: tuple[StepChange, ...] = ()            # sorted by id
    preempted: Moves = Moves()                    # running allocations this change preempts, or no longer does
    policies: tuple[PolicyChange, ...] = ()       # sorted by name
    ends: Moves = Moves()                         # running allocations this change stops or restarts otherwise

    @property
    def no_effect(self) -> bool:
        """The change leaves the plan as the base branch's: nothing to review."""
        return not (self.inputs or self.steps or self.preempted or self.policies or self.ends)

    @model_serializer(mode="wrap")
    def _written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        found = handler(self)
        if not self.ends:    # a base plan file from before the section reads the same
            del found["ends"]
        return found
