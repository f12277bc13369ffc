"""`poolc test`: validate the inputs, roll every scenario forward with the chosen
strategy, and judge its expectations; the outcome as one value the renderers take."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..commands.planning import load
from ..config import display_units
from ..diagnostics import Diagnostic
from ..domain.amounts import DEFAULT, Units
from ..vocabulary import Strategy
from .bounds import Bounds, bounds_of
from .judge import Verdict, judge
from .run import Rolled, roll


@dataclass(frozen=True)
class Outcome:
    """One scenario: its verdicts, or why it could not be judged."""

    name: str
    file: str
    line: int
    rolled: Rolled
    verdicts: tuple[Verdict, ...]
    problems: tuple[Diagnostic, ...]    # why there are no verdicts (an unreadable state file, ...)

    @property
    def passed(self) -> bool:
        return not self.problems and all(v.passed for v in self.verdicts)

    def line_of(self, verdict: Verdict) -> int:
        doc = self.rolled.entry.doc
        return doc.span(("spec", "expect", verdict.index))[0]


@dataclass(frozen=True)
class Report:
    strategy: Strategy
    outcomes: tuple[Outcome, ...]
    diagnostics: tuple[Diagnostic, ...]   # the inputs' errors: then no scenario runs
    bounds: Bounds = field(default_factory=dict)   # the platform's bounds (bounds.py), for a base to compare
    units: Units = DEFAULT                # how the platform writes quantities

    @property
    def passed(self) -> bool:
        return not self.diagnostics and all(o.passed for o in self.outcomes)

    def counts(self) -> tuple[int, int]:
        """(expectations that pass, expectations in all); a scenario that could not run counts as one failure."""
        total = sum(len(o.verdicts) or (1 if o.problems else 0) for o in self.outcomes)
        good = sum(1 for o in self.outcomes if not o.problems for v in o.verdicts if v.passed)
        return good, total


def run_tests(paths: Iterable[str], strategy: Strategy = "optimal", only: Iterable[str] = ()) -> Report:
    """Every scenario under ``paths`` (or those named in ``only``), in name order."""
    validation = load(list(paths))
    errors = tuple(x for x in validation.diagnostics if x.severity == "error")
    if errors:
        return Report(strategy, (), errors)
    wanted = set(only)
    outcomes = []
    for name, entry in sorted(validation.config.scenarios.items()):
        if wanted and name not in wanted:
            continue
        rolled = roll(validation, entry, strategy)
        line = entry.doc.span(("metadata", "name"))[0]
        if rolled.forecast is None:
            outcomes.append(Outcome(name, entry.doc.file, line, rolled, (), rolled.diagnostics))
            continue
        outcomes.append(Outcome(name, entry.doc.file, line, rolled, tuple(judge(rolled)), ()))
    return Report(strategy, tuple(outcomes), (), bounds_of(validation.config), display_units(validation.config))
