"""poolc's closed vocabularies, each declared once as a ``Literal``.

A string with a fixed set of values (a strategy, a submit mode, an output format)
is typed by its alias here, so mypy rejects a misspelt one where it is written
(`--submit gates` in a call, a comparison with "optimal " in a renderer), and the
tuples the command line offers as choices are ``get_args`` of the same alias.
Imports nothing of poolc's: the lowest layer, so any module may name them.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

# How a plan is made (docs/planning.md): CP-SAT, the ZenML reference reconciler, or Kueue's replay.
Strategy = Literal["optimal", "zenml", "kueue"]
STRATEGIES: Final[tuple[Strategy, ...]] = get_args(Strategy)

# How apply hands Jobs to Kueue (docs/apply.md#gate-mode-the-cluster-runs-the-plan): "gate" writes
# Jobs only for the steps the plan allocates and stops its victims; "all" submits every Job.
SubmitMode = Literal["gate", "all"]
SUBMIT_MODES: Final[tuple[SubmitMode, ...]] = get_args(SubmitMode)
GATE: Final = "gate"
ALL: Final = "all"

# What a plan decided for one waiting step.
RequestStatus = Literal["allocated", "queued", "rejected"]
REQUEST_STATUSES: Final[tuple[RequestStatus, ...]] = get_args(RequestStatus)

# What a change does to an input or a generated file (`plan`'s changes and `--base`), and to the state file.
ChangeAction = Literal["create", "update", "delete"]
StateAction = Literal["create", "update"]

# The optimal objective's tiers, by what they count (docs/planning.md#tiers).
TierKind = Literal["in-share", "admitted", "preempted", "arrival", "start-rank", "preference"]
TIER_KINDS: Final[tuple[TierKind, ...]] = get_args(TierKind)

# What became of a step waiting in the forecast (docs/forecast.md): it started, it starts only
# after the horizon, it never starts, or it stopped for good (preempted work of no step, whose
# Workload gate mode deactivates); and where the forecast took the step's duration from.
StepOutcome = Literal["started", "after-horizon", "never", "stopped"]
LateOutcome = Literal["after-horizon", "never", "stopped"]     # every outcome but a start
LATE_OUTCOMES: Final[tuple[LateOutcome, ...]] = get_args(LateOutcome)
DurationSource = Literal["expected_runtime", "max_runtime", "unknown", "scenario"]

# How serious a diagnostic is: an error fails the run, a warning does not.
Severity = Literal["error", "warning"]

# A step's state at an instant, as a scenario's expectation names it (docs/scenarios.md).
StepState = Literal["running", "queued", "preempted", "finished"]
STEP_STATES: Final[tuple[StepState, ...]] = get_args(StepState)

# The output formats of each command's --format.
DiagnosticFormat = Literal["text", "json", "github", "sarif"]           # validate, apply
PlanFormat = Literal["text", "json", "markdown", "github", "sarif"]     # plan
ShowFormat = Literal["text", "json", "markdown"]                        # show
TestFormat = Literal["text", "json", "junit", "sarif", "markdown"]      # test
ListFormat = Literal["text", "json"]                                    # state list
DIAGNOSTIC_FORMATS: Final[tuple[DiagnosticFormat, ...]] = get_args(DiagnosticFormat)
PLAN_FORMATS: Final[tuple[PlanFormat, ...]] = get_args(PlanFormat)
SHOW_FORMATS: Final[tuple[ShowFormat, ...]] = get_args(ShowFormat)
TEST_FORMATS: Final[tuple[TestFormat, ...]] = get_args(TestFormat)
LIST_FORMATS: Final[tuple[ListFormat, ...]] = get_args(ListFormat)
