"""`poolc apply` as a library call: plan (or check a saved plan), render every target,
and write the files plus the new state as one transaction under the state lock.

The state records every file poolc generated with its digest, so a later apply
removes generated files whose source is gone and never touches anything else.
`check=True` computes the same and writes nothing: the CI gate and the
`poolc-apply-check` pre-commit hook.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .diagnostics import Diagnostic


def default_state_path(output_dir: str) -> str:
    """CLI.md: the state file lives beside the output directory."""
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
    recovered: str | None = None                       # what was done about an interrupted apply
    kept: list[str] = field(default_factory=list)        # no longer generated, but changed by hand: left alone
    cleanup_error: str | None = None                   # applied; temp files left for the next run to remove

    @property
    def ok(self) -> bool:
        return self.refused is None


def _read(path: str, limit: int = 64 << 20) -> str | None:
    """A regular file's text, or None: never blocks on a FIFO or reads a device forever."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            raw = handle.read(limit + 1)
        return raw.decode("utf-8") if len(raw) <= limit else None
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def _bounded_int(digits: str) -> int:
    """JSON integers above 40 digits are nonsense here, and int() refuses 4,300: a stand-in."""
    return int(digits) if len(digits) <= 40 else 10**40


def _saved_plan(plan_file: str) -> tuple[dict | None, str | None]:
    text = _read(plan_file)
    if text is None:
        return None, f"cannot read plan file {plan_file}"
    try:
        saved = json.loads(text, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        return None, f"{plan_file}:{exc.lineno}:{exc.colno}: not a plan file: {exc.msg}"
    except RecursionError:
        return None, f"{plan_file}: not a plan file (nested too deeply)"
    strategy = saved.get("solver", {}).get("strategy") if isinstance(saved, dict) \
        and isinstance(saved.get("solver"), dict) else None
    if isinstance(strategy, str) and strategy not in ("optimal", "zenml"):
        return None, f"{plan_file}: the plan names an unknown strategy {strategy!r}"
    shape_ok = (isinstance(saved, dict) and saved.get("format_version") == 1
                and isinstance(saved.get("inputs_digest"), str)
                and isinstance(saved.get("solver"), dict) and isinstance(saved["solver"].get("strategy"), str)
                and isinstance(saved.get("requests"), list)
                and all(isinstance(r, dict) for r in saved["requests"]))
    if not shape_ok:
        return None, (f"{plan_file}: not a poolc plan file (format_version 1 with inputs_digest, solver and "
                      "requests, as `poolc plan --out` writes it)")
    return saved, None


def apply_paths(paths: Iterable[str], output_dir: str, *, state_file: str | None = None, plan_file: str | None = None,
                check: bool = False, progress: Callable[[str], None] | None = None) -> ApplyResult:
    """Plan, render and (unless ``check``) write; see the module docstring.

    Under the lock, an interrupted earlier apply is first finished or undone
    (compiler.transaction), so every run starts from an old-or-new tree."""
    from .lock import state_lock
    from .transaction import pending_journal

    result = ApplyResult(state_path=state_file or default_state_path(output_dir))
    saved = None
    if plan_file is not None:
        saved, problem = _saved_plan(plan_file)
        if problem:
            result.refused = problem
            return result
    if check:
        _compute(result, paths, output_dir, saved, progress)
        journal = pending_journal(result.state_path)
        if result.ok and journal is not None:
            result.stale.append(journal)   # an interrupted apply: the next apply finishes or undoes it
        return result
    with state_lock(result.state_path):
        _recover(result, output_dir)
        _compute(result, paths, output_dir, saved, progress)
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


def _compute(result: ApplyResult, paths, output_dir: str, saved: dict | None, progress) -> None:
    from .plan import plan_paths
    from .planner.plan import to_json
    from .targets import render_all
    from .targets.context import TargetContext

    strategy = (saved or {}).get("solver", {}).get("strategy", "optimal")
    if strategy not in ("optimal", "zenml"):
        result.refused = f"the plan file names an unknown strategy {strategy!r}"
        return
    planned = plan_paths(paths, state_file=result.state_path, strategy=strategy, progress=progress)
    result.diagnostics = planned.plan.diagnostics_list()
    if not planned.validation.ok:
        result.refused = "the configuration has errors; fix them (poolc validate) before apply"
        return
    if any(x.severity == "error" for x in planned.state.diagnostics):
        result.refused = f"the state file {result.state_path} is not valid"
        return
    plan_json = json.loads(to_json(planned.plan))
    if saved is not None:
        if saved["inputs_digest"] != plan_json["inputs_digest"]:
            result.refused = (f"the plan was made from other inputs ({saved['inputs_digest']}); they are now "
                              f"{plan_json['inputs_digest']} (the files or the state {result.state_path} "
                              "changed): run `poolc plan --out` again, with --state {result.state_path}")
            return
        if saved != plan_json:
            result.refused = ("the plan file does not match what this poolc plans for the same inputs "
                              "(edited by hand, or made by another poolc version): run `poolc plan --out` again")
            return
    assignment = {r["id"]: r["policy"] for r in plan_json["requests"]
                  if r["status"] == "allocated" and r["policy"]}
    result.files = render_all(TargetContext.from_validation(planned.validation, assignment))
    result.removed = sorted(p for p in planned.previous_state_files if p not in result.files)
    result.state_text = planned.state_text(result.files)
    for relative, text in sorted(result.files.items()):
        if _read(os.path.join(output_dir, relative)) != text:
            result.stale.append(relative)
    result.stale += [p for p in result.removed if os.path.exists(os.path.join(output_dir, p))]
    if _read(result.state_path) != result.state_text:
        result.stale.append(result.state_path)
