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

from ..diagnostics import Diagnostic
from ..vocabulary import Strategy, SubmitMode
from ..writer import remove_stale_temps

if TYPE_CHECKING:
    from ..domain.plan import Plan
    from ..state.transaction import Outcome
    from .planning import PlanResult, Prepared


@dataclass(frozen=True, slots=True)
class Computed:
    """What an apply would do, worked out before anything is written (``_compute``)."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    refused: str | None = None                          # why nothing can be applied
    files: dict[str, str] = field(default_factory=dict)  # relative path -> text the output should hold
    removed: list[str] = field(default_factory=list)     # generated before, no source any more
    stale: list[str] = field(default_factory=list)       # what differs from disk (missing, changed, to remove)
    state_text: str = ""
    plan: Plan | None = None                             # what the plan decided (for the report)
    previous_files: dict[str, str] = field(default_factory=dict)   # generated file -> digest, as the state held


@dataclass(frozen=True, slots=True)
class ApplyResult(Computed):
    """One apply, built once at its end: what was computed, and what was recovered and written."""

    state_path: str = ""
    written: bool = False
    recovered: str | None = None                         # what was done about an interrupted apply
    kept: list[str] = field(default_factory=list)        # no longer generated, but changed by hand: left alone
    cleanup_error: str | None = None                     # applied; temp files left for the next run to remove

    @classmethod
    def of(cls, state_path: str, computed: Computed, *, recovered: str | None = None,
           outcome: Outcome | None = None) -> ApplyResult:
        """The result of ``computed``, after ``recovered`` and (when written) the transaction's ``outcome``."""
        return cls(**{f.name: getattr(computed, f.name) for f in dataclasses.fields(Computed)},
                   state_path=state_path, written=outcome is not None, recovered=recovered,
                   kept=outcome.kept if outcome is not None else [],
                   cleanup_error=outcome.cleanup_error if outcome is not None else None)

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
    from ..domain.plan import PlanFormatError
    from ..domain.plan_file import problem, read_plan
    from ..writer import read_bytes

    try:
        text = read_bytes(plan_file, MAX_PLAN_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else (exc.strerror or str(exc))
        return None, f"cannot read plan file {plan_file}: {why}"
    try:
        return read_plan(text), None
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
    from ..state.lock import state_lock
    from ..state.records import DEFAULT_STATE
    from ..state.transaction import pending_journal, recover

    state_path = state_file or DEFAULT_STATE
    saved = None
    if plan_file is not None:
        saved, problem = read_plan_file(plan_file)
        if problem:
            return ApplyResult.of(state_path, Computed(refused=problem))
    job = _Job(list(paths), output_dir, saved, progress, strategy, now, submit)
    if check:
        computed = _compute(state_path, job)
        journal = pending_journal(state_path)
        if computed.refused is None and journal is not None:
            # an interrupted apply: the next apply finishes or undoes it
            computed = dataclasses.replace(computed, stale=[*computed.stale, journal])
        return ApplyResult.of(state_path, computed)
    with state_lock(state_path):
        recovered = recover(output_dir, state_path)
        remove_stale_temps(state_path, locked=True)   # of a `state rm`/`import` killed at its rename
        computed = _compute(state_path, job)
        outcome = None
        if computed.refused is None and computed.stale:
            outcome = _commit(computed, output_dir, state_path)
    return ApplyResult.of(state_path, computed, recovered=recovered or None, outcome=outcome)


@dataclass(frozen=True)
class _Job:
    paths: list[str]
    output_dir: str
    saved: Plan | None
    progress: Callable[[str], None] | None
    strategy: Strategy
    now: str | None
    submit: SubmitMode


def _commit(computed: Computed, output_dir: str, state_path: str) -> Outcome:
    """One transaction: the files and the state change together or not at all."""
    from ..state.transaction import write_transaction

    previous = computed.previous_files   # as the state recorded them when apply read it (under the lock)
    remove = {path: previous[path] for path in computed.removed if path in previous}
    return write_transaction(output_dir, computed.files, remove, state_path, computed.state_text)


def _compute(state_path: str, job: _Job) -> Computed:
    """Validate (refusing before any planning), read the state once, plan or check
    the saved plan, and work out what is stale."""
    from .planning import SCENARIO_ONLY, load, plan_prepared, prepare, read_inputs_state

    validation = load(job.paths)
    if any(x.severity == "error" and x.rule not in SCENARIO_ONLY for x in validation.diagnostics):
        return Computed(list(validation.diagnostics),
                        "the configuration has errors; fix them (poolc validate) before apply")
    state = read_inputs_state(validation, state_path, None)
    if not state.ok:
        return Computed([*validation.diagnostics, *state.diagnostics], f"the state file {state_path} is not valid")
    prepared = prepare(validation, state, state_path)
    if job.saved is not None:
        planned = _saved(job, prepared)
        if isinstance(planned, Computed):
            return planned
    else:
        planned = plan_prepared(prepared, strategy=job.strategy, solve=_solver(job.strategy, job.progress),
                                progress=job.progress, output_dir=job.output_dir, now=job.now, submit=job.submit)
    previous_files = planned.previous_state_files
    removed = sorted(p for p in previous_files if p not in planned.files)
    # each file read once, by the plan's comparison with the disk
    stale = [relative for relative, text in sorted(planned.files.items()) if planned.on_disk.get(relative) != text]
    stale += [p for p in removed if os.path.exists(os.path.join(job.output_dir, p))]
    if planned.state.text != planned.state_text:
        stale.append(state_path)
    return Computed(planned.plan.diagnostics_list(), None, planned.files, removed, stale, planned.state_text,
                    planned.plan, previous_files)


def _solver(strategy: Strategy, progress: Callable[[str], None] | None) -> Callable[..., Any]:
    from .planning import load_strategy

    return load_strategy("optimal" if strategy == "kueue" else strategy, progress)


def _saved(job: _Job, prepared: Prepared) -> PlanResult | Computed:
    """The saved plan checked against the inputs and rendered without solving
    (poolc.commands.saved_plan); solved again only when the plan file cannot say its in-share set.
    What refuses it is a Computed that says why."""
    from . import saved_plan
    from .planning import plan_prepared

    saved = job.saved
    assert saved is not None
    diagnostics = list(prepared.diagnostics)
    stale = saved_plan.stale_inputs(saved, prepared)
    if stale:
        return Computed(diagnostics, stale)
    forbidden = saved_plan.forbidden_preemptions(saved, prepared)
    if forbidden:
        return Computed(diagnostics, forbidden)
    share = saved_plan.in_share(saved, saved_plan.new_grants(saved, prepared))
    if share is not None:
        found = saved_plan.solution_of(saved, prepared)
        if found is None:
            return Computed(diagnostics, saved_plan.EDITED)
        solution, fresh = found
        return saved_plan.apply_saved(saved, prepared, dataclasses.replace(solution, in_share=share), fresh,
                                      output_dir=job.output_dir, now=job.now)
    strategy = saved.solver.strategy   # solve again with the plan's strategy: it must come out the same
    submit = saved.runtime.submit if saved.runtime is not None else job.submit
    planned = plan_prepared(prepared, strategy=strategy, solve=_solver(strategy, job.progress), progress=job.progress,
                            output_dir=job.output_dir, now=job.now, submit=submit)
    if _decisions(saved) != _decisions(planned.plan):
        return Computed(diagnostics, saved_plan.EDITED)
    return planned


def _decisions(plan: Plan) -> dict:
    """The plan without ``changes``, which describe the world at planning time (files on disk)."""
    found = plan.as_dict()
    found.pop("changes", None)
    return found
