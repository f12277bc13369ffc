"""`poolc plan` as a library call: validate, read the state, solve, assemble the Plan.

The CLI (`plan`, `apply`) calls ``plan_paths`` and only renders what it returns.
The strategy module is imported here, on demand, so importing this module never
imports OR-Tools.

Steps that already run: `apply` records every admitted step as an allocation
named ``allocation_name(step id)``. When such an allocation of the same subject
is running (in the state or the files), the step is that allocation, not a new
request, so planning again after `apply` changes nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import import_module

from . import diagnostics as d
from .config import Config
from .diagnostics import Diagnostic
from .domain.naming import allocation_name
from .domain.plan import STRATEGIES, Plan
from .domain.problem import Problem, Running
from .inputs import problem_from_config
from .model import Allocation
from .planner.plan import assemble, inputs_digest
from .planner.solution import Solution
from .requests import StepRequest
from .state import StateRead, changes, dump_state, read_state, state_from_plan
from .validate import Validation, validate_paths

# Errors in a step that mean it can never run as written. R003/R004 are not here:
# eligibility is decided on the Problem itself (plan.assemble).
_STEP_RULES = {d.R001.id, d.R002.id, d.R006.id, d.K002.id, d.K003.id}


@dataclass
class PlanResult:
    validation: Validation
    state: StateRead                    # what the state file held (empty without --state)
    problem: Problem
    solution: Solution
    plan: Plan
    previous: list[Allocation]          # running Allocation documents the plan started from (files win)
    new_state: dict                     # state_from_plan(plan, previous), without file digests
    changes: dict[str, list[str]]       # added / removed / unchanged allocation names

    @property
    def ok(self) -> bool:
        """No error diagnostics (a rejected step is one)."""
        return not any(x.severity == "error" for x in self.plan.diagnostics)

    @property
    def changed(self) -> bool:
        return bool(self.changes["added"] or self.changes["removed"])

    @property
    def previous_state_files(self) -> dict[str, str]:
        """Generated file -> digest, as the state file recorded them."""
        return dict(self.state.files)

    def state_with_files(self, files: Mapping[str, str]) -> dict:
        """The new state with the digests of the generated files (for `apply`)."""
        return state_from_plan(self.plan, self.previous, files=files, digest=self.new_state["inputs_digest"],
                               from_files=self.validation.config.allocations, preempted_before=self.state.preempted)

    def state_text(self, files: Mapping[str, str]) -> str:
        """The bytes of the new state file; ``files`` maps each generated file's
        relative path to its text (digested here)."""
        return dump_state(self.state_with_files({path: _sha256(text) for path, text in files.items()}))


def _sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


Strategy = Callable[[Problem], Solution]


def load_strategy(name: str | Strategy, progress: Callable[[str], None] | None = None) -> Strategy:
    """The solve function of a named strategy (imported now, not before), or a
    caller's own ``solve(problem) -> Solution`` as it is."""
    if callable(name):
        return name
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    solve = import_module(f"{__package__}.planner.{name}").solve
    if name == "optimal":
        return lambda problem: solve(problem, progress=progress)
    return solve


def step_errors(config: Config, requests: list[StepRequest],
                diagnostics: Iterable[Diagnostic]) -> dict[str, tuple[str, str]]:
    """Steps that can never run as written: request id -> (rule id, message).

    A step whose pipeline names a missing stack has no requester (N002); a step an
    error diagnostic is about (its ``request``) takes that diagnostic's rule and
    message (the first, in report order)."""
    found: dict[str, tuple[str, str]] = {}
    for x in diagnostics:
        if x.severity == "error" and x.rule in _STEP_RULES and x.request is not None:
            found.setdefault(x.request, (x.rule, x.message))
    for request in requests:
        stack = request.entry.obj.spec.stack
        if stack not in config.stacks:
            found[request.id] = (d.N002.id, f"pipeline {request.pipeline} uses stack {stack}, which is not "
                                 "defined in the files given; define the stack or fix its name")
    known = {r.id for r in requests}
    return {rid: found[rid] for rid in sorted(found) if rid in known}


def _running_steps(requests: list[StepRequest], running: Iterable[Running]) -> dict[str, Running]:
    by_name = {a.name: a for a in running}
    found = {}
    for request in requests:
        alloc = by_name.get(allocation_name(request.id))
        if alloc is not None and alloc.subject == request.requester:
            found[request.id] = alloc
    return found


def _without_allocations(config: Config, names: set[str]) -> Config:
    kept = {name: entry for name, entry in config.allocations.items() if name not in names}
    return dataclasses.replace(config, allocations=kept)


def _kueue_strategy(config: Config, problem: Problem, requests: list[StepRequest], running: Mapping[str, Running],
                    assembled: Callable[[Solution], Plan], optimal: Strategy) -> Solution:
    """What Kueue will do: every Job waits in the queue of its first eligible
    policy, the cluster decides; steps outside Kubernetes are planned as the
    optimal strategy would, since nothing but the plan gates them."""
    from .runtime import kueue_solution, replay

    waiting = assembled(Solution(strategy="kueue", admitted={}, status="SIMULATED"))
    replayed = replay(config, waiting, requests, problem, running)
    kubernetes_ids = {r.id for r in waiting.requests if r.id in {w.name for w in replayed.simulation.outcomes.values()}}
    return kueue_solution(replayed, optimal(problem), kubernetes_ids, {a.name for a in problem.running})


def plan_paths(paths: Iterable[str], *, state_file: str | None = None, strategy: str | Strategy = "optimal",
               progress: Callable[[str], None] | None = None, runtime_check: bool = True) -> PlanResult:
    """Plan the configuration under ``paths`` against the state in ``state_file``.

    ``strategy``: "optimal" (default), "zenml", "kueue", or a ``solve(problem) ->
    Solution`` function; ``progress`` receives the optimal solver's progress lines.
    ``runtime_check`` replays the plan through Kueue's scheduler (the plan's
    ``runtime`` section)."""
    solve = load_strategy("optimal" if strategy == "kueue" else strategy, progress)
    validation = validate_paths(list(paths) or ["."])
    config = validation.config
    state = read_state(state_file) if state_file else StateRead([], {}, None, [])
    if state.preempted:  # config allocations an applied plan preempted no longer run
        config = _without_allocations(config, set(state.preempted))
    previous = sorted([entry.obj for entry in config.allocations.values()]
                      + [a for a in state.allocations if a.metadata.name not in config.allocations],
                      key=lambda a: a.metadata.name)

    requests = validation.requests  # requests do not depend on allocations
    rejected = step_errors(config, requests, validation.diagnostics)
    everything = problem_from_config(config, [], state.allocations)
    running = _running_steps([r for r in requests if r.id not in rejected], everything.running)
    plannable = [r for r in requests if r.id not in rejected and r.id not in running]
    problem = problem_from_config(config, plannable, state.allocations)

    def assembled(solution: Solution) -> Plan:
        return assemble(problem, solution, requests, rejected=rejected, running=running,
                        diagnostics=[*validation.diagnostics, *state.diagnostics],
                        digest=inputs_digest(config, state.allocations))

    if strategy == "kueue":
        solution = _kueue_strategy(config, problem, requests, running, assembled, load_strategy("optimal", progress))
    else:
        solution = solve(problem)
    plan = assembled(solution)
    if runtime_check:
        from .runtime import replay, with_runtime

        plan = with_runtime(plan, replay(config, plan, requests, problem, running), requests, config)
    new_state = state_from_plan(plan, previous, digest=inputs_digest(validation.config),
                                from_files=validation.config.allocations, preempted_before=state.preempted)
    changed = changes(previous, new_state["allocations"])
    plan = dataclasses.replace(plan, changes=changed)
    return PlanResult(validation, state, problem, solution, plan, previous, new_state, changed)
