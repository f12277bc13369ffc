"""What a front end finds in a source file: settings layers and steps, each value with
the place it was written, so a diagnostic about it points into that file."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import diagnostics as d
from ..diagnostics import Diagnostic

Span = tuple[int, int, int, int]     # 1-based line, column, end line, exclusive end column
SubPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Place:
    """A span in one file."""

    file: str
    span: Span

    def diagnostic(self, rule: d.Rule, message: str, severity: d.Severity | None = None) -> Diagnostic:
        line, col, end_line, end_col = self.span
        return Diagnostic(self.file, line, col, end_line, end_col, rule.id, severity or rule.severity, message)


@dataclass
class Layer:
    """One ZenML ResourceSettings as written in one place (a decorator, with_options, a
    run configuration): its fields as plain data, where each was written (paths relative
    to the settings, ``("resources", 0, "quantity")``) and where the settings stand."""

    fields: dict[str, Any]
    places: dict[SubPath, Place]
    at: Place
    keys: dict[SubPath, Place] = field(default_factory=dict)   # where each field's name is written
    # written for ZenML (code or run configuration), so held to what ZenML accepts; False for Flyte's
    zenml: bool = True

    def place(self, path: SubPath) -> Place:
        """The nearest written place of ``path`` (its parent's when it is not there)."""
        while path:
            if path in self.places:
                return self.places[path]
            path = path[:-1]
        return self.at


@dataclass
class FoundStep:
    """A step and its own settings layers, lowest precedence first."""

    name: str
    at: Place
    layers: list[Layer] = field(default_factory=list)
    step_operator: str | None = None
    step_operator_at: Place | None = None
    # SageMaker step operator settings' instance_type, when the code or configuration names one
    instance_type: str | None = None
    instance_type_at: Place | None = None


@dataclass
class Found:
    """Everything a source gave: pipeline-level layers (lowest first), steps in order,
    and the problems met on the way."""

    pipeline_layers: list[Layer] = field(default_factory=list)
    steps: dict[str, FoundStep] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # the run configuration only configures steps: it cannot say which steps exist
    knows_steps: bool = True
    # the pipeline's SageMaker instance_type (every step's, unless the step names its own)
    instance_type: tuple[str, Place] | None = None
    # where the code names its own run configuration (with_options(config_path=...))
    config_path_at: Place | None = None


class Refused(Exception):
    """What a reader cannot read, as the diagnostic that says so at its place."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic
