"""Semantic rules over the whole configuration (docs/planning.md#eligibility, docs/format.md).

Each rule family is one module (listed in ``MODULES``); each check is a small
generator registered with ``@check(RULE, ...)``, which names the rule ids it
emits (a test holds it to that), and whose docstring is the rule's user
documentation (docs/rules.md is generated from both). Adding a rule touches one
module and its fixture.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from ..config import Config, display_units
from ..diagnostics import Diagnostic, Rule
from ..domain.amounts import Units
from ..requests import StepRequest, build_requests

if TYPE_CHECKING:
    from ..domain.problem import Problem

CheckFn = Callable[["Context"], Iterator[Diagnostic]]


@dataclass(frozen=True)
class Check:
    """A registered check: the function, the rule ids it may emit, its user doc."""

    fn: CheckFn
    rules: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.fn.__module__.rsplit('.', 1)[-1]}.{self.fn.__name__}"

    @property
    def doc(self) -> str:
        return " ".join((self.fn.__doc__ or "").split())


CHECKS: list[Check] = []
# The rule-family modules, in report order; importing one registers its checks.
MODULES = ("pools", "stacks", "pipelines", "allocations", "limits", "names", "nodes", "scenarios")


def check(*rules: Rule) -> Callable[[CheckFn], CheckFn]:
    """Register a check that emits ``rules``; its docstring is their user documentation."""
    def register(fn: CheckFn) -> CheckFn:
        CHECKS.append(Check(fn, tuple(r.id for r in rules)))
        return fn
    return register


def registered() -> list[Check]:
    """Every check, with every rule-family module imported."""
    from importlib import import_module

    for module in MODULES:
        import_module(f"{__name__}.{module}")
    return list(CHECKS)


@dataclass
class Context:
    config: Config

    @cached_property
    def requests(self) -> list[StepRequest]:
        return build_requests(self.config)

    @cached_property
    def units(self) -> Units:
        """How diagnostics say amounts: the family the platform writes memory in."""
        return display_units(self.config)

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
    found: list[Diagnostic] = []
    for registered_check in registered():
        found.extend(registered_check.fn(ctx))
    return found
