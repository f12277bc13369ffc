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


def run_checks(ctx: Context) -> list[Diagnostic]:
    """Every registered check over one Context (whose requests the caller may reuse)."""
    from . import allocations, limits, names, nodes, pipelines, pools, stacks  # noqa: F401  (registers the checks)

    found: list[Diagnostic] = []
    for fn in CHECKS:
        found.extend(fn(ctx))
    return found
