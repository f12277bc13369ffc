"""`poolc apply` as a library call: plan (or check a saved plan), render every target,
and write the files plus the new state as one transaction under the state lock.

The state records every file poolc generated with its digest, so a later apply
removes generated files whose source is gone and never touches anything else.
`check=True` computes the same and writes nothing: the CI gate and the
`poolc-apply-check` pre-commit hook.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .diagnostics import Diagnostic
from .vocabulary import Strategy, SubmitMode
from .writer import remove_stale_temps

if TYPE_CHECKING:
    from .domain.plan import Plan




@dataclass
class ApplyResult:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    refused: str | None = None                          # why nothing can be applied
    files: dict[str, str] = field(default_factory=dict)  # relative path -> text the output should hold
    removed: list[str] = field(default_factory=list)     # generated before, no source any more
    stale: list[str] = field(default_factory=list)       # what differs from disk (missing, changed, to remove)
    state_path: str = ""
    state_text: str = ""
    written: bool = False
    plan: Plan | None = None                             # what the plan decided (for the report)
    recovered: str | None = None                         # what was done about an interrupted apply
    kept: list[str] = field(default_factory=list)        # no longer generated, but changed by hand: left alone
    cleanup_error: str | None = None                     # applied; temp files left for the next run to remove
    previous_files: dict[str, str] = field(default_factory=dict)   # generated file -> digest, as the state held

    def as_dict(self) -> dict:
        """The one JSON document `apply --format json` prints."""
        plan = self.plan
        return {
            "ok": self.ok,
            "refused": self.refused,
            "written": sorted(p for p in self.stale if p in self.files) if self.written else [],
            "removed": sorted(self.removed) if self.written else [],
            "stale": sorted(self.stale),
            "state": {"path": self.state_path, "changed": self.state_path in self.stale},
            "decided": None if plan is None else {
                "allocated": [r.id for r in plan.requests if r.status == "allocated"],
                "queued": [r.id for r in plan.requests if r.status == "queued"],
                "rejected": [r.id for r in plan.requests if r.status == "rejected"],
                "preempted": [p.id for p in plan.preempted],
            },
            "kept": sorted(self.kept),
            "recovered": self.recovered,
            "diagnostics": [x.as_dict() for x in self.diagnostics],
        }

    @property
    def ok(self) -> bool:
        return self.refused is None


# A plan of 50,000 requests is about 40 MB of JSON.
MAX_PLAN_BYTES = 256 * 1024 * 1024


def read_plan_file(plan_file: str) -> tuple[Plan | None, str | None]:
    """(the saved plan, None) or (None, why not): what `apply --plan` and `show` read.
    A regular file of at most MAX_PLAN_BYTES, never through a symbolic link, read
    through the plan file's typed model (poolc.domain.plan_file)."""
    from .domain.plan import Plan, PlanFormatError
    from .domain.plan_file import problem
    from .writer import read_bytes

    try:
        text = read_bytes(plan_file, MAX_PLAN_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else (exc.strerror or str(exc))
        return None, f"cannot read plan file {plan_file}: {why}"
    try:
        return Plan.from_json(text), None
    except PlanFormatError as exc:
        return None, problem(plan_file, exc)


def apply_paths(paths: Iterable[str], output_dir: str, *, state_file: str | None = None,
                plan_file: str | None = None, check: bool = False,
                progress: Callable[[str], None] | None = None, strategy: Strategy = "optimal",
                now: str | None = None, submit: SubmitMode = "gate") -> ApplyResult:
    """Plan, render and (unless ``check``) write; see the module docstring.
    ``now``: when the new allocations start (RFC 3339; default SOURCE_DATE_EPOCH,
    else the clock). ``submit``: "gate" (default: Jobs only for the steps the plan
    allocates, queued ones under held/kubernetes/, stop objects for its victims)
    or "all" (every Job to Kueue, which decides); a saved plan's own mode wins."""
    from .lock import state_lock
    from .state import DEFAULT_STATE
    from .transaction import pending_journal

    result = ApplyResult(state_path=state_file or DEFAULT_STATE)
    saved = None
    if plan_file is not None:
        saved, problem = read_plan_file(plan_file)
        if problem:
            result.refused = problem
            return result
    job = _Job(list(paths), output_dir, saved, progress, strategy, now, submit)
    if check:
        _compute(result, job)
        journal = pending_journal(result.state_path)
        if result.ok and journal is not None:
            result.stale.append(journal)   # an interrupted apply: the next apply finishes or undoes it
        return result
    with state_lock(result.state_path):
        _recover(result, output_dir)
        remove_stale_temps(result.state_path, locked=True)   # of a `state rm`/`import` killed at its rename
        _compute(result, job)
        if result.ok and result.stale:
            _commit(result, output_dir)
    return result


@dataclass(frozen=True)
class _Job:
    paths: list[str]
    output_dir: str
    saved: Plan | None
    progress: Callable[[str], None] | None
    strategy: Strategy
    now: str | None
    submit: SubmitMode


def _recover(result: ApplyResult, output_dir: str) -> None:
    from .transaction import recover

    done = recover(output_dir, result.state_path)
    if done:
        result.recovered = done


def _commit(result: ApplyResult, output_dir: str) -> None:
    """One transaction: the files and the state change together or not at all."""
    from .transaction import write_transaction

    previous = result.previous_files   # as the state recorded them when apply read it (under the lock)
    remove = {path: previous[path] for path in result.removed if path in previous}
    outcome = write_transaction(output_dir, result.files, remove, result.state_path, result.state_text)
    result.kept, result.cleanup_error = outcome.kept, outcome.cleanup_error
    result.written = True


def _compute(result: ApplyResult, job: _Job) -> None:
    """Validate (refusing before any planning), read the state once, plan or check
    the saved plan, and work out what is stale."""
    from .plan import SCENARIO_ONLY, load, plan_prepared, prepare, read_inputs_state

    validation = load(job.paths)
    if any(x.severity == "error" and x.rule not in SCENARIO_ONLY for x in validation.diagnostics):
        result.diagnostics = list(validation.diagnostics)
        result.refused = "the configuration has errors; fix them (poolc validate) before apply"
        return
    state = read_inputs_state(validation, result.state_path, None)
    if not state.ok:
        result.diagnostics = [*validation.diagnostics, *state.diagnostics]
        result.refused = f"the state file {result.state_path} is not valid"
        return
    prepared = prepare(validation, state, result.state_path)
    if job.saved is not None:
        planned = _saved(result, job, prepared)
        if planned is None:
            return
    else:
        planned = plan_prepared(prepared, strategy=job.strategy, solve=_solver(job.strategy, job.progress),
                                progress=job.progress, output_dir=job.output_dir, now=job.now, submit=job.submit)
    result.diagnostics = planned.plan.diagnostics_list()
    result.plan = planned.plan
    result.files = planned.files
    result.previous_files = planned.previous_state_files
    result.removed = sorted(p for p in result.previous_files if p not in result.files)
    result.state_text = planned.state_text
    for relative, text in sorted(result.files.items()):
        if planned.on_disk.get(relative) != text:   # read once, by the plan's comparison with the disk
            result.stale.append(relative)
    result.stale += [p for p in result.removed if os.path.exists(os.path.join(job.output_dir, p))]
    if planned.state.text != result.state_text:
        result.stale.append(result.state_path)


def _solver(strategy: Strategy, progress: Callable[[str], None] | None) -> Callable[..., Any]:
    from .plan import load_strategy

    return load_strategy("optimal" if strategy == "kueue" else strategy, progress)


def _saved(result: ApplyResult, job: _Job, prepared: Any) -> Any:
    """The saved plan checked against the inputs and rendered without solving
    (poolc.saved_plan); solved again only when the plan file cannot say its in-share set."""
    from . import saved_plan
    from .plan import plan_prepared

    saved = job.saved
    assert saved is not None
    result.diagnostics = list(prepared.diagnostics)
    stale = saved_plan.stale_inputs(saved, prepared)
    if stale:
        result.refused = stale
        return None
    forbidden = saved_plan.forbidden_preemptions(saved, prepared)
    if forbidden:
        result.refused = forbidden
        return None
    share = saved_plan.in_share(saved, saved_plan.new_grants(saved, prepared))
    if share is not None:
        found = saved_plan.solution_of(saved, prepared)
        if found is None:
            result.refused = saved_plan.EDITED
            return None
        solution, fresh = found
        return saved_plan.apply_saved(saved, prepared, dataclasses.replace(solution, in_share=share), fresh,
                                      output_dir=job.output_dir, now=job.now)
    strategy = saved.solver.strategy   # solve again with the plan's strategy: it must come out the same
    submit = saved.runtime.submit if saved.runtime is not None else job.submit
    planned = plan_prepared(prepared, strategy=strategy, solve=_solver(strategy, job.progress), progress=job.progress,
                            output_dir=job.output_dir, now=job.now, submit=submit)
    if _decisions(saved) != _decisions(planned.plan):
        result.refused = saved_plan.EDITED
        return None
    return planned


def _decisions(plan: Plan) -> dict:
    """The plan without ``changes``, which describe the world at planning time (files on disk)."""
    found = plan.as_dict()
    found.pop("changes", None)
    return found
