"""The validate stage as a library call: load -> schema -> model -> checks.

Library first, CLI on top: `poolc validate`, `plan` and `apply` all start here,
and so can any other tool that wants poolc's diagnostics.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .checks import Context, run_checks
from .config import Config, build_config
from .diagnostics import Diagnostic, has_errors
from .load import load_paths
from .requests import StepRequest


@dataclass
class Validation:
    config: Config
    diagnostics: list[Diagnostic]
    context: Context

    @property
    def requests(self) -> list[StepRequest]:
        """The step requests the checks built, in arrival order (plan reuses them)."""
        return self.context.requests

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def validate_paths(paths: Iterable[str]) -> Validation:
    loaded = load_paths(paths)
    config, problems = build_config(loaded.files, loaded.documents)
    context = Context(config)
    problems = loaded.diagnostics + problems + run_checks(context)
    return Validation(config, sorted(set(problems)), context)
