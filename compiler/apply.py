"""`poolc apply` as a library call: plan (or check a saved plan), render every target,
and write the files plus the new state as one transaction under the state lock.

The state records every file poolc generated with its digest, so a later apply
removes generated files whose source is gone and never touches anything else.
`check=True` computes the same and writes nothing: the CI gate and the
`poolc-apply-check` pre-commit hook.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .diagnostics import Diagnostic

if TYPE_CHECKING:
    from .domain.plan import Plan


def default_state_path(output_dir: str) -> str:
    """The state file lives beside the output directory (docs/cli.md#poolc-apply)."""
    parent = os.path.dirname(os.path.normpath(os.path.abspath(output_dir)))
    return os.path.join(parent, "poolc.state.json")


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

    @property
    def ok(self) -> bool:
        return self.refused is None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def _saved_plan(plan_file: str) -> tuple[Plan | None, str | None]:
    from .domain.plan import Plan, PlanFormatError

    text = _read(plan_file)
    if text is None:
        return None, f"cannot read plan file {plan_file}"
    try:
        return Plan.from_json(text), None
    except PlanFormatError as exc:
        return None, f"{plan_file}: {exc}"


def apply_paths(paths: Iterable[str], output_dir: str, *, state_file: str | None = None,
                plan_file: str | None = None, check: bool = False,
                progress: Callable[[str], None] | None = None) -> ApplyResult:
    """Plan, render and (unless ``check``) write; see the module docstring."""
    from .lock import state_lock

    result = ApplyResult(state_path=state_file or default_state_path(output_dir))
    saved = None
    if plan_file is not None:
        saved, problem = _saved_plan(plan_file)
        if problem:
            result.refused = problem
            return result
    lock = nullcontext() if check else state_lock(result.state_path)
    with lock:
        _compute(result, paths, output_dir, saved, progress)
        if result.ok and not check and result.stale:
            from .transaction import write_transaction

            # one transaction: the files and the state change together or not at all
            write_transaction(output_dir, result.files, result.removed,
                              outside={os.path.abspath(result.state_path): result.state_text})
            result.written = True
    return result


def _compute(result: ApplyResult, paths: Iterable[str], output_dir: str, saved: Plan | None,
             progress: Callable[[str], None] | None) -> None:
    from .plan import plan_paths
    from .targets import render_all

    strategy = saved.solver.strategy if saved is not None else "optimal"
    planned = plan_paths(paths, state_file=result.state_path, strategy=strategy, progress=progress)
    result.diagnostics = planned.plan.diagnostics_list()
    if not planned.validation.ok:
        result.refused = "the configuration has errors; fix them (poolc validate) before apply"
        return
    if any(x.severity == "error" for x in planned.state.diagnostics):
        result.refused = f"the state file {result.state_path} is not valid"
        return
    if saved is not None:
        if saved.inputs_digest != planned.plan.inputs_digest:
            result.refused = (f"the plan was made from other inputs ({saved.inputs_digest}); they are now "
                              f"{planned.plan.inputs_digest} (the files or the state {result.state_path} "
                              f"changed): run `poolc plan --out` again, with --state {result.state_path}")
            return
        if saved.as_dict() != planned.plan.as_dict():
            result.refused = ("the plan file does not match what this poolc plans for the same inputs "
                              "(edited by hand, or made by another poolc version): run `poolc plan --out` again")
            return
    result.files = render_all(planned.validation.config, planned.plan, planned.validation.requests)
    result.removed = sorted(p for p in planned.previous_state_files if p not in result.files)
    result.state_text = planned.state_text(result.files)
    for relative, text in sorted(result.files.items()):
        if _read(os.path.join(output_dir, relative)) != text:
            result.stale.append(relative)
    result.stale += [p for p in result.removed if os.path.exists(os.path.join(output_dir, p))]
    if _read(result.state_path) != result.state_text:
        result.stale.append(result.state_path)
