"""Semantic rules over the whole configuration (docs/planning.md#eligibility, docs/format.md).

Each rule family is one module; each check is a small generator registered with
``@check`` that yields Diagnostics. Adding a rule touches one module and its test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from ..config import Config
from ..diagnostics import Diagnostic
from ..requests import StepRequest, build_requests

if TYPE_CHECKING:
    from ..domain.problem import Problem

CHECKS: list[Callable[[Context], Iterator[Diagnostic]]] = []


def check(fn: Callable[[Context], Iterator[Diagnostic]]) -> Callable[[Context], Iterator[Diagnostic]]:
    """Register a check; its docstring is the rule's user documentation."""
    CHECKS.append(fn)
    return fn


@dataclass
class Context:
    config: Config

    @cached_property
    def requests(self) -> list[StepRequest]:
        return build_requests(self.config)

    @cached_property
    def problem(self) -> Problem:
        from ..inputs import problem_from_config

        return problem_from_config(self.config, self.requests)

    @cached_property
    def components(self) -> dict:
        """Component name -> (component model, first stack entry listing it)."""
        found: dict = {}
        for _, entry in sorted(self.config.stacks.items()):
            spec = entry.obj.spec
            for comp in [spec.orchestrator, *spec.step_operators]:
                found.setdefault(comp.name, (comp, entry))
        return found

    @cached_property
    def component_names(self) -> set[str]:
        """Every component name written in a stack, valid or broken."""
        from .suggestions import raw_component_names

        names = set(self.components)
        for doc in self.config.broken.get("Stack", {}).values():
            names |= raw_component_names(doc.data)
        return names

    def component_is_broken(self, name: str) -> bool:
        """A component that only a broken stack defines: references to it are skipped."""
        return name not in self.components and name in self.component_names

    @cached_property
    def tainted_requesters(self) -> set[str] | None:
        """Requesters whose policies cannot be judged because a policy of theirs, or the
        pool one names, is broken (None: a broken policy names no readable subject, so
        every requester is). Their eligibility and allocation warnings would be cascades."""
        from .suggestions import raw_field

        tainted: set[str] = set()
        for entry in self.config.policies.values():
            if self.config.is_broken("ResourcePool", entry.obj.spec.pool):
                tainted.add(entry.obj.spec.subject)
        for doc in self.config.broken.get("Policy", {}).values():
            subject = raw_field(doc.data, "subject")
            if not isinstance(subject, str):
                return None
            tainted.add(subject)
        return tainted

    def is_tainted(self, requester: str | None) -> bool:
        tainted = self.tainted_requesters
        return tainted is None or (requester is not None and requester in tainted)


def run_checks(ctx: Context) -> list[Diagnostic]:
    """Every registered check over one Context (whose requests the caller may reuse)."""
    from . import allocations, limits, names, nodes, pipelines, pools, stacks  # noqa: F401  (registers the checks)

    found: list[Diagnostic] = []
    for fn in CHECKS:
        found.extend(fn(ctx))
    return found
