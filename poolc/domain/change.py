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

ABSENT = "absent"        # a step's status in a plan that does not have it


@dataclass(frozen=True)
class InputChange:
    kind: str
    name: str
    change: str                                   # create | update | delete
    fields: Mapping[str, tuple[Any, Any]]         # dotted path -> (old, new); None for a side without it

    def as_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "change": self.change,
                "fields": {k: list(v) for k, v in self.fields.items()}}


@dataclass(frozen=True)
class StepChange:
    id: str
    base: str             # allocated | queued | rejected | absent
    head: str

    def as_dict(self) -> dict:
        return {"id": self.id, "base": self.base, "head": self.head}


@dataclass(frozen=True)
class PolicyChange:
    name: str
    admitted: tuple[int, int]
    queued: tuple[int, int]
    preempted: tuple[int, int]

    def as_dict(self) -> dict:
        return {"name": self.name, "admitted": list(self.admitted), "queued": list(self.queued),
                "preempted": list(self.preempted)}


@dataclass(frozen=True)
class BaseComparison:
    """The plan's ``base`` section."""

    inputs_digest: str                            # the base plan's
    inputs: tuple[InputChange, ...] = ()          # sorted by kind, name
    steps: tuple[StepChange, ...] = ()            # sorted by id
    preempted_added: tuple[str, ...] = ()         # running allocations this change preempts
    preempted_removed: tuple[str, ...] = ()       # ... the base preempted and this change does not
    policies: tuple[PolicyChange, ...] = ()       # sorted by name
    ends_added: tuple[str, ...] = ()              # running allocations this change stops or restarts otherwise
    ends_removed: tuple[str, ...] = ()            # ... the base stopped or restarted and this change does not

    @property
    def no_effect(self) -> bool:
        """The change leaves the plan as the base branch's: nothing to review."""
        return not (self.inputs or self.steps or self.preempted_added or self.preempted_removed or self.policies
                    or self.ends_added or self.ends_removed)

    def as_dict(self) -> dict:
        found = {"inputs_digest": self.inputs_digest, "inputs": [x.as_dict() for x in self.inputs],
                 "steps": [x.as_dict() for x in self.steps],
                 "preempted": {"added": list(self.preempted_added), "removed": list(self.preempted_removed)},
                 "policies": [x.as_dict() for x in self.policies]}
        if self.ends_added or self.ends_removed:
            found["ends"] = {"added": list(self.ends_added), "removed": list(self.ends_removed)}
        return found


def from_dict(data: Any) -> BaseComparison | None:
    """Read a saved plan's ``base`` back; None when it is not one."""
    if not isinstance(data, dict) or not isinstance(data.get("inputs_digest"), str):
        return None
    try:
        preempted = data.get("preempted") or {}
        return BaseComparison(
            inputs_digest=data["inputs_digest"],
            inputs=tuple(InputChange(str(x["kind"]), str(x["name"]), str(x["change"]),
                                     {str(k): (v[0], v[1]) for k, v in dict(x.get("fields") or {}).items()})
                         for x in data.get("inputs") or []),
            steps=tuple(StepChange(str(x["id"]), str(x["base"]), str(x["head"])) for x in data.get("steps") or []),
            preempted_added=tuple(str(x) for x in preempted.get("added") or []),
            preempted_removed=tuple(str(x) for x in preempted.get("removed") or []),
            policies=tuple(PolicyChange(str(x["name"]), _pair(x["admitted"]), _pair(x["queued"]),
                                        _pair(x["preempted"])) for x in data.get("policies") or []),
            ends_added=tuple(str(x) for x in (data.get("ends") or {}).get("added") or []),
            ends_removed=tuple(str(x) for x in (data.get("ends") or {}).get("removed") or []))
    except (KeyError, TypeError, IndexError, ValueError, AttributeError, OverflowError):
        return None


def _pair(value: Any) -> tuple[int, int]:
    old, new = value
    return int(old), int(new)
