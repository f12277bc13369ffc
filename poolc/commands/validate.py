"""The validate stage as a library call: load -> schema -> model -> checks.

Library first, CLI on top: `poolc validate`, `plan` and `apply` all start here,
and so can any other tool that wants poolc's diagnostics. The rule options
(``disable``, ``error-on-warning``) come from the caller or from ``[tool.poolc]``
in the nearest ``pyproject.toml`` (docs/cli.md#configuration-file).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import diagnostics as d
from ..checks import Context, run_checks
from ..config import Config, ConfigBuilder
from ..diagnostics import Diagnostic, has_errors
from ..load import Document, LoadResult, PositionCache, load_paths, load_text, too_many_documents
from ..requests import StepRequest

STDIN = "-"
STDIN_NAME = "<stdin>"
# Reading and structure problems drop the document: silencing them would make a
# broken file look like an empty one, so they cannot be disabled.
_NOT_DISABLABLE = ("yaml", "structure")


class OptionsError(ValueError):
    """A bad rule option (an unknown rule id, a malformed [tool.poolc] table)."""


@dataclass(frozen=True)
class Options:
    disable: frozenset[str] = frozenset()
    error_on_warning: bool = False
    source: str | None = None  # the pyproject.toml they were read from, if any

    def merged(self, disable: Iterable[str] = (), error_on_warning: bool | None = None) -> Options:
        """These options with the command line's on top (its flags win)."""
        return Options(self.disable | check_rule_ids(disable, "--disable"),
                       self.error_on_warning if error_on_warning is None else error_on_warning, self.source)


def check_rule_ids(ids: Iterable[str], where: str) -> frozenset[str]:
    found = set()
    for rule_id in ids:
        if not isinstance(rule_id, str) or rule_id.upper() not in d.RULES:
            raise OptionsError(f"{where}: unknown rule {rule_id!r} (rule ids such as P006 are listed in "
                               "docs/rules.md)")
        rule = d.RULES[rule_id.upper()]
        if rule.family in _NOT_DISABLABLE:
            raise OptionsError(f"{where}: rule {rule.id} cannot be disabled: a document with a "
                               f"{rule.family} error is not read at all, so silencing it would hide the whole "
                               "document")
        if rule.severity == "error":   # #42: a pull request's pyproject must not pass its own check
            raise OptionsError(f"{where}: rule {rule.id} is an error and cannot be disabled (only warnings "
                               "can): the plan and apply refuse what it finds whatever validate shows")
        found.add(rule.id)
    return frozenset(found)


# A pyproject.toml is a few KiB; this bounds what a hostile one can cost.
MAX_PYPROJECT_BYTES = 1024 * 1024


def _poolc_table(path: Path) -> Any:
    """The ``tool.poolc`` value of one pyproject.toml however it is spelt (``[tool.poolc]``,
    ``[tool] poolc = {...}``, dotted keys), None without one. Only a regular file of at
    most MAX_PYPROJECT_BYTES is read (a FIFO never blocks); a file that mentions poolc
    but cannot be read (not UTF-8, not TOML, nested too deeply) is an OptionsError,
    never silently ignored."""
    from ..writer import read_bytes

    try:
        raw = read_bytes(str(path), MAX_PYPROJECT_BYTES, follow=True)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if not os.path.lexists(path):
            return None
        raise OptionsError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if b"poolc" not in raw:
        return None
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise OptionsError(f"{path}: cannot read [tool.poolc]: the file is not UTF-8 (byte {exc.start}); save it "
                           "as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise OptionsError(f"{path}: cannot read [tool.poolc]: {exc}") from None
    except RecursionError:
        raise OptionsError(f"{path}: cannot read [tool.poolc]: the TOML nests too deeply") from None
    except ValueError as exc:   # an integer of thousands of digits (Python's int limit), or the like
        raise OptionsError(f"{path}: cannot read [tool.poolc]: {str(exc)[:200]}") from None
    tool = data.get("tool")
    return tool.get("poolc") if isinstance(tool, dict) else None


def find_pyproject(start: str | None = None) -> Path | None:
    """The nearest pyproject.toml with a ``tool.poolc`` table, from ``start`` (the
    current directory) up to the root, as ruff looks for [tool.ruff]."""
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if _poolc_table(candidate) is not None:
            return candidate
    return None


def read_options(start: str | None = None) -> Options:
    """[tool.poolc] of the nearest pyproject.toml; defaults when there is none.
    A malformed file or table is an OptionsError naming the file and the key."""
    path = find_pyproject(start)
    if path is None:
        return Options()
    table = _poolc_table(path)
    if not isinstance(table, dict):
        raise OptionsError(f"{path}: [tool.poolc] must be a table")
    unknown = sorted(set(table) - {"disable", "error-on-warning"})
    if unknown:
        raise OptionsError(f"{path}: unknown key {unknown[0]!r} in [tool.poolc] (known: disable, "
                           "error-on-warning)")
    disable = table.get("disable", [])
    if not isinstance(disable, list):
        raise OptionsError(f"{path}: [tool.poolc] disable must be a list of rule ids, such as [\"P006\"]")
    error_on_warning = table.get("error-on-warning", False)
    if not isinstance(error_on_warning, bool):
        raise OptionsError(f"{path}: [tool.poolc] error-on-warning must be true or false")
    return Options(check_rule_ids(disable, f"{path}: [tool.poolc] disable"), error_on_warning, str(path))


def apply_options(diagnostics: list[Diagnostic], options: Options) -> list[Diagnostic]:
    """Drop disabled rules; with error_on_warning, show warnings as errors."""
    kept = [x for x in diagnostics if x.rule not in options.disable]
    if options.error_on_warning:
        kept = [replace(x, severity="error") if x.severity == "warning" else x for x in kept]
    return kept


@dataclass
class Validation:
    config: Config
    diagnostics: list[Diagnostic]
    context: Context
    documents: int = 0   # poolc documents read (valid or not)
    foreign: int = 0     # documents skipped as not poolc's
    files: list[str] = field(default_factory=list)

    @property
    def requests(self) -> list[StepRequest]:
        """The step requests the checks built, in arrival order (plan reuses them)."""
        return self.context.requests

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)

    def summary(self) -> str:
        """``N documents in M files: E errors, W warnings; K foreign documents skipped``."""
        errors = sum(x.severity == "error" for x in self.diagnostics)
        warnings = len(self.diagnostics) - errors
        return (f"{_count(self.documents, 'document')} in {_count(len(self.files), 'file')}: "
                f"{_count(errors, 'error')}, {_count(warnings, 'warning')}; "
                f"{_count(self.foreign, 'foreign document')} skipped")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _load(paths: list[str], stdin: bytes | None, sink: Callable[[Document], None]) -> LoadResult:
    """load_paths into ``sink``, with ``-`` read from ``stdin`` (as ``<stdin>``) at its place in the order."""
    cache = PositionCache()
    if stdin is None or STDIN not in paths:
        return load_paths(paths, sink, cache)
    from ..load import MAX_DOCUMENTS, MAX_FILE_BYTES, decode, too_large

    index = paths.index(STDIN)
    before = load_paths(paths[:index], sink, cache)
    room = MAX_DOCUMENTS - before.counts.get("documents", 0)
    text: str | None
    problem: Diagnostic | None
    if len(stdin) > MAX_FILE_BYTES:   # the same bounds as a file: 8 MiB, and the run's document budget
        text, problem = None, too_large(STDIN_NAME, len(stdin))
    else:
        text, problem = decode(STDIN_NAME, stdin)
    documents, problems = (load_text(STDIN_NAME, text, max_documents=room, counts=before.counts, cache=cache)
                           if text is not None else ([], []))
    if len(documents) > room:
        documents, problems = [], [too_many_documents(STDIN_NAME)]
    for doc in documents:
        sink(doc)
    seen = set(before.files)

    def late(doc: Document) -> None:
        if doc.file not in seen:
            sink(doc)

    after = load_paths([p for p in paths[index + 1:] if p != STDIN], late, cache)
    counts = {k: before.counts.get(k, 0) + after.counts.get(k, 0) for k in ("documents", "foreign")}
    return LoadResult([*before.files, STDIN_NAME, *(f for f in after.files if f not in seen)], [],
                      [*before.diagnostics, *([problem] if problem else []), *problems,
                       *(x for x in after.diagnostics if x.file not in seen)], counts)


def validate_paths(paths: Iterable[str], *, stdin: bytes | None = None, options: Options | None = None) -> Validation:
    """Validate files and directories (``-`` reads ``stdin`` when given). Without
    ``options``, those of [tool.poolc] in the nearest pyproject.toml apply."""
    paths = list(paths)
    if options is None:
        options = read_options()
    builder = ConfigBuilder()   # file by file: the plain data of every document never exists at once
    loaded = _load(paths, stdin, builder.add)
    config, problems = builder.finish(loaded.files)
    context = Context(config)
    problems = loaded.diagnostics + problems + run_checks(context)
    return Validation(config, sorted(set(apply_options(problems, options))), context,
                      documents=loaded.counts.get("documents", 0),
                      foreign=loaded.counts.get("foreign", 0), files=loaded.files)
