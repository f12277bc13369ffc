"""`poolc apply` as a library call: plan (or check a saved plan), render every target,
and write the files plus the new state as one transaction under the state lock.

The state records every file poolc generated with its digest, so a later apply
removes generated files whose source is gone and never touches anything else.
`check=True` computes the same and writes nothing: the CI gate and the
`poolc-apply-check` pre-commit hook.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .diagnostics import Diagnostic
from .writer import Tree, UnsafePath, read_regular, remove_stale_temps

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
                progress: Callable[[str], None] | None = None, strategy: str = "optimal",
                now: str | None = None, submit: str = "gate") -> ApplyResult:
    """Plan, render and (unless ``check``) write; see the module docstring.
    ``now``: when the new allocations start (RFC 3339; default SOURCE_DATE_EPOCH,
    else the clock). ``submit``: "gate" (default: Jobs only for the steps the plan
    allocates, queued ones under kubernetes/queued/, stop objects for its victims)
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
    if check:
        _compute(result, paths, output_dir, saved, progress, strategy, now, submit)
        journal = pending_journal(result.state_path)
        if result.ok and journal is not None:
            result.stale.append(journal)   # an interrupted apply: the next apply finishes or undoes it
        return result
    with state_lock(result.state_path):
        _recover(result, output_dir)
        remove_stale_temps(result.state_path, locked=True)   # of a `state rm`/`import` killed at its rename
        _compute(result, paths, output_dir, saved, progress, strategy, now, submit)
        if result.ok and result.stale:
            _commit(result, output_dir)
    return result


def _recover(result: ApplyResult, output_dir: str) -> None:
    from .transaction import recover

    done = recover(output_dir, result.state_path)
    if done:
        result.recovered = done


def _commit(result: ApplyResult, output_dir: str) -> None:
    """One transaction: the files and the state change together or not at all."""
    from .state import read_state
    from .transaction import write_transaction

    previous = read_state(result.state_path).files
    remove = {path: previous[path] for path in result.removed if path in previous}
    outcome = write_transaction(output_dir, result.files, remove, result.state_path, result.state_text)
    result.kept, result.cleanup_error = outcome.kept, outcome.cleanup_error
    result.written = True


def _compute(result: ApplyResult, paths: Iterable[str], output_dir: str, saved: Plan | None,
             progress: Callable[[str], None] | None, strategy: str, now: str | None, submit: str) -> None:
    from .plan import plan_paths

    if saved is not None:
        strategy = saved.solver.strategy
        submit = saved.runtime.submit if saved.runtime is not None else submit
    planned = plan_paths(paths, state_file=result.state_path, strategy=strategy, progress=progress,
                         output_dir=output_dir, now=now, submit=submit)
    result.diagnostics = planned.plan.diagnostics_list()
    result.plan = planned.plan
    if not planned.validation.ok:
        result.refused = "the configuration has errors; fix them (poolc validate) before apply"
        return
    if not planned.state.ok:
        result.refused = f"the state file {result.state_path} is not valid"
        return
    if saved is not None:
        stale = _stale_plan(saved, planned.plan, result.state_path)
        if stale:
            result.refused = stale
            return
    result.files = planned.files
    result.removed = sorted(p for p in planned.previous_state_files if p not in result.files)
    result.state_text = planned.state_text
    tree = Tree(output_dir)
    for relative, text in sorted(result.files.items()):
        try:
            current = tree.read_text(relative)
        except UnsafePath:    # a link or a device: stale, and the transaction refuses to replace it
            current = None
        if current != text:
            result.stale.append(relative)
    result.stale += [p for p in result.removed if os.path.exists(os.path.join(output_dir, p))]
    if read_regular(result.state_path) != result.state_text:
        result.stale.append(result.state_path)


def _stale_plan(saved: Plan, fresh: Plan, state_path: str) -> str | None:
    """Why a saved plan cannot be applied now, naming what changed; None if it can.
    The decisions are compared, not ``changes`` (which describe the world at
    planning time, e.g. files on disk)."""
    if saved.inputs_digest != fresh.inputs_digest:
        what = _changed_inputs(saved.inputs or {}, fresh.inputs or {})
        return (f"the plan was made from other inputs: {what}. Run `poolc plan --out` again "
                f"(with --state {state_path})")
    mine, theirs = saved.as_dict(), fresh.as_dict()
    for plan in (mine, theirs):
        plan.pop("changes", None)
    if mine != theirs:
        return ("the plan file does not match what this poolc plans for the same inputs "
                "(edited by hand, or made by another poolc version): run `poolc plan --out` again")
    return None


def _changed_inputs(before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """``Pipeline/training changed, Policy/prod added`` (at most five, then a count)."""
    words = [f"{key} changed" for key in sorted(before) if key in after and before[key] != after[key]]
    words += [f"{key} added" for key in sorted(after) if key not in before]
    words += [f"{key} removed" for key in sorted(before) if key not in after]
    if not words:
        return "the inputs digest differs (the plan file records no per-input digests)"
    shown = ", ".join(words[:5])
    return shown + (f" and {len(words) - 5} more" if len(words) > 5 else "")
