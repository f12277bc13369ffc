"""The `poolc` command line: a thin click layer over the library.

Each command parses options, calls the stages, picks a reporter and sets the
exit code (docs/cli.md). No input may produce a traceback: an unexpected exception is
one line on stderr and exit 3.
"""

from __future__ import annotations

import atexit
import functools
import gc
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast

import click

from . import __version__
from .text.escape import text as _t  # every input-derived field on stdout/stderr goes through it
from .vocabulary import (
    DIAGNOSTIC_FORMATS,
    LIST_FORMATS,
    PLAN_FORMATS,
    SHOW_FORMATS,
    STRATEGIES,
    SUBMIT_MODES,
    TEST_FORMATS,
    DiagnosticFormat,
    ListFormat,
    PlanFormat,
    ShowFormat,
    Strategy,
    SubmitMode,
    TestFormat,
)

if TYPE_CHECKING:
    from .diagnostics import Diagnostic
    from .views.shown import Shown

EXIT_OK, EXIT_FINDINGS, EXIT_CHANGES, EXIT_INTERNAL = 0, 1, 2, 3
GC_YOUNG_THRESHOLD = 50_000   # allocations between two young-generation collections (default 700)
# What `pip install 'poolc[plan]'` adds: validate (and its pre-commit hook) runs without them.
PLAN_EXTRA = frozenset({"ortools", "rich"})


F = TypeVar("F", bound=Callable[..., Any])


def _interrupted(command: str, exc: KeyboardInterrupt) -> NoReturn:
    """One line and exit 130 (SIGINT) or 143 (SIGTERM)."""
    name = getattr(exc, "name", "SIGINT")
    # only apply writes a transaction to roll back; every other file poolc writes is
    # replaced whole or not at all (#42: the line named apply for every command)
    done = ("whatever apply had begun to write was rolled back" if command == "apply" else
            "every file poolc writes is replaced whole or not at all, so none is half-written")
    click.echo(f"poolc: interrupted by {name}; {done}", err=True)
    sys.exit(130 if name == "SIGINT" else 143)


def guarded(fn: F) -> F:
    """Turn any unexpected exception into one line and exit 3 (never a traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt as exc:
            _interrupted(fn.__name__, exc)
        except Exception as exc:  # noqa: BLE001 - the contract is "never a traceback"
            from .commands.validate import OptionsError

            if isinstance(exc.__cause__, KeyboardInterrupt):   # Python 3.11 wraps one in a class's __set_name__
                _interrupted(fn.__name__, exc.__cause__)

            if isinstance(exc, ModuleNotFoundError) and (exc.name or "").partition(".")[0] in PLAN_EXTRA:
                click.echo(f"poolc: this command needs the 'plan' extra ({exc.name} is not installed): "
                           "pip install 'poolc[plan]'", err=True)
                sys.exit(EXIT_FINDINGS)

            if isinstance(exc, OptionsError):  # a bad --disable or [tool.poolc]: a usage error
                click.echo(f"poolc: {_t(exc)}", err=True)
                sys.exit(EXIT_CHANGES)
            if os.environ.get("POOLC_DEBUG"):
                raise
            click.echo(f"poolc: internal error: {type(exc).__name__}: {_t(exc)} "
                       "(please report it; set POOLC_DEBUG=1 for a traceback)", err=True)
            sys.exit(EXIT_INTERNAL)

    return cast(F, wrapper)


def emit_diagnostics(diagnostics: list[Diagnostic], fmt: DiagnosticFormat, quiet: bool,
                     summary_line: str | None = None, no_color: bool = True) -> None:
    """Diagnostics on stdout; unless quiet, a summary on stderr: ``summary_line`` in
    every format when given (validate), else the short one in text format. Text on
    a terminal shows severities in colour unless ``no_color`` (or NO_COLOR)."""
    from .views import colour, diagnostics_view

    echo(diagnostics_view.shown(diagnostics, fmt, quiet, summary_line, colour=colour.wanted(no_color)))


def echo(shown: Shown) -> None:
    """Write what a view returned: its standard output, then its standard error."""
    if shown.out:
        click.echo(shown.out, nl=False)
    if shown.err:
        click.echo(shown.err, nl=False, err=True)


paths_argument = click.argument("paths", nargs=-1, type=click.Path())
format_option = click.option("--format", "fmt", type=click.Choice(DIAGNOSTIC_FORMATS), default="text",
                             show_default=True, help="Output format for diagnostics.")
quiet_option = click.option("--quiet", "-q", is_flag=True, help="Only errors; no summary line.")
color_option = click.option("--no-color", is_flag=True, help="Never use colour (also honoured: NO_COLOR).")


class _Poolc(click.Group):
    """Ctrl-C while click parses the command line: one line and exit 130, as
    everywhere else (click's own answer is "Aborted!" and exit 1)."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt:
            click.echo("poolc: interrupted", err=True)
            sys.exit(130)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("poolc: interrupted", err=True)
            sys.exit(130)


@click.group(cls=_Poolc, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="poolc")
def main() -> None:
    """poolc: policy-as-code compiler and validator for shared ML compute pools."""
    from .signals import install

    install()   # Ctrl-C and SIGTERM become one exception that apply rolls back on
    # One short-lived run builds a few million objects that live to its end (the
    # documents, the plan, the manifests); at the default threshold (700) the
    # collector walks all of them again and again, 15-20% of a large plan's CPU.
    # Collecting 70 times less often keeps the peak memory where it was.
    gc.set_threshold(GC_YOUNG_THRESHOLD, 10, 10)


@main.command()
@paths_argument
@format_option
@click.option("--disable", "disable", multiple=True, metavar="RULE",
              help="Drop this rule's diagnostics (repeatable; adds to [tool.poolc] disable).")
@click.option("--error-on-warning/--no-error-on-warning", default=None,
              help="Report warnings as errors, so they fail the run (overrides [tool.poolc] error-on-warning).")
@quiet_option
@color_option
@guarded
def validate(paths: tuple[str, ...], fmt: DiagnosticFormat, disable: tuple[str, ...], error_on_warning: bool | None,
             quiet: bool, no_color: bool) -> None:
    """Check files against the schemas and the pool/policy rules (no solver).

    PATHS are files or directories (default: .); - reads YAML from standard input.
    Exit 0 when clean (warnings allowed), 1 when any error is found.
    """
    from .commands.validate import STDIN, read_options, validate_paths
    from .load import read_stdin

    options = read_options().merged(disable, error_on_warning)
    stdin = read_stdin(sys.stdin.buffer) if STDIN in paths else None
    result = validate_paths(paths or (".",), stdin=stdin, options=options)
    emit_diagnostics(result.diagnostics, fmt, quiet, result.summary(), no_color=no_color)
    sys.exit(EXIT_OK if result.ok else EXIT_FINDINGS)


@main.command()
@click.argument("kind", required=False)
@click.option("--output-dir", type=click.Path(file_okay=False), help="Write the schema files here.")
@guarded
def schema(kind: str | None, output_dir: str | None) -> None:
    """Print or write the JSON Schemas (KIND: resourcepool, policy, stack, pipeline, allocation, scenario, poolc).

    Without KIND, prints poolc.schema.json (any v1 document, dispatched on kind);
    --output-dir writes every schema file. The schemas are generated from the
    models, so `poolc schema --output-dir schemas` also refreshes the committed copies.
    """
    from .schema import ANY_FILE, KIND_FILES, build_schemas, dump
    from .writer import write_files

    names = sorted([*KIND_FILES.values(), ANY_FILE])
    if not kind and not output_dir:
        kind = "poolc"
    if kind:
        wanted = f"{kind.lower()}.schema.json"
        if wanted not in names:
            raise click.BadParameter(f"unknown kind {kind!r}; one of "
                                     f"{', '.join(n.split('.')[0] for n in names)}", param_hint="KIND")
        names = [wanted]
    generated = build_schemas()
    texts = {name: dump(generated[name]) for name in names}
    if output_dir:
        try:
            write_files(output_dir, texts)
        except OSError as exc:   # a read-only directory, a directory in a schema's place (#42)
            click.echo(f"poolc: cannot write the schemas to {_t(output_dir)}: {_t(exc.strerror or exc)}; "
                       "nothing was replaced", err=True)
            sys.exit(EXIT_FINDINGS)
        for name in names:
            click.echo(os.path.join(output_dir, name))
    else:
        click.echo("".join(texts.values()), nl=False)


def _progress(quiet: bool, verbose: bool = False) -> Callable[[str], None] | None:
    """Solver progress on stderr: with --verbose, or when stderr is a terminal (a
    person is waiting). Elsewhere (a CI log) only the heartbeat: once the command
    has run for 5 s, a line when its next step begins, at most one per 5 s
    (`heartbeat`), so a long plan is never a minute of silence."""
    from . import heartbeat

    def report(line: str) -> None:
        click.echo(f"poolc: {line}", err=True)

    if quiet:
        return None
    if not (verbose or sys.stderr.isatty()):
        heartbeat.enable(report, after=_seconds(os.environ.get("POOLC_HEARTBEAT_AFTER"), 5.0))
        return None
    return report


def _seconds(text: str | None, default: float) -> float:
    """A number of seconds from the environment; ``default`` when unset or not a number >= 0."""
    try:
        value = float(text) if text is not None else default
    except ValueError:
        return default
    return value if 0 <= value < float("inf") else default


def _state_note(state_file: str | None, missing: bool, quiet: bool) -> None:
    from .state.records import DEFAULT_STATE

    if missing and not quiet:
        click.echo(f"poolc: no state file {_t(state_file or DEFAULT_STATE)}; planning with nothing running",
                   err=True)


def default_strategy(strategy: Strategy | None, submit: SubmitMode) -> Strategy:
    """The strategy a plan or apply uses: the one given, else ``kueue`` under ``--submit all``
    (Kueue decides there, so that is the plan of the files written), else ``optimal``."""
    return strategy or ("kueue" if submit == "all" else "optimal")


SUBMIT_HELP = ("gate: Jobs only for the steps the plan allocates (queued ones under held/kubernetes/), and "
               "stop objects for the running work it preempts; all: every Job to Kueue, which then decides "
               "(the strategy then defaults to kueue, the plan of what it writes); see docs/apply.md.")


@main.command()
@paths_argument
@click.option("--state", "state_file", type=click.Path(dir_okay=False),
              help="State file with the running allocations (default: poolc.state.json here, as apply writes it).")
@click.option("--strategy", type=click.Choice(STRATEGIES), default=None,
              help="optimal: CP-SAT, priorities in strict order (docs/planning.md#tiers); zenml: the "
                   "reference reconciler, simulated; kueue: what Kueue will do with the generated objects. "
                   "Default: optimal; with --submit all, kueue (the plan of what the cluster will run).")
@click.option("--submit", type=click.Choice(SUBMIT_MODES), default="gate", show_default=True,
              help=SUBMIT_HELP)
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Write the plan JSON here (for apply --plan).")
@click.option("--output-dir", type=click.Path(file_okay=False),
              help="Where apply writes the files, to show their diffs (default: the state's record).")
@click.option("--observed", "observed", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="Plan against what the cluster reports (kubectl Workloads or SageMaker describe-training-job "
                   "JSON, as for state import; repeatable), without writing the state.")
@click.option("--format", "fmt", type=click.Choice(PLAN_FORMATS), default="text", show_default=True)
@click.option("--detailed-exitcode", is_flag=True,
              help="Exit 0 when nothing changes, 2 when an allocation, a generated file or the state would.")
@click.option("--base", "base_file", type=click.Path(dir_okay=False),
              help="A plan of the base branch's inputs against the same state (poolc plan --out there): "
                   "the output leads with what this change does against it.")
@click.option("--verbose", "-v", is_flag=True, help="Solver progress and timings on stderr.")
@click.option("--forecast", is_flag=True, help="Roll the plan forward: when each waiting step starts, GPU-hours "
              "and money per team (docs/forecast.md).")
@click.option("--horizon", default="7d", show_default=True, help="How far --forecast looks ahead (90m, 36h, 7d).")
@click.option("--instance-prices", type=click.Path(dir_okay=False), help="CSV (instance_type,usd_hour) over "
              "the shipped SageMaker price table, for --forecast.")
@quiet_option
@color_option
@guarded
def plan(paths: tuple[str, ...], state_file: str | None, strategy: Strategy | None, submit: SubmitMode,
         out_file: str | None, output_dir: str | None, observed: tuple[str, ...], fmt: PlanFormat,
         detailed_exitcode: bool, base_file: str | None, verbose: bool,
         forecast: bool, horizon: str, instance_prices: str | None, quiet: bool, no_color: bool) -> None:
    """Plan which requests run on which pool, which wait, and what is preempted.

    Exit 0 ok, 1 when any error diagnostic exists (a rejected step is one) or the
    state cannot be read; with --detailed-exitcode 0 means no changes and 2 means
    changes.
    """
    import time

    from .commands.planning import BaseMismatch, InvalidConfiguration, plan_paths
    from .domain.plan import to_json
    from .writer import write_atomic

    strategy = default_strategy(strategy, submit)
    base, base_data = _read_base(base_file) if base_file else (None, None)
    horizon_seconds = _horizon(horizon) if forecast else 0
    started = time.perf_counter()
    try:
        result = plan_paths(paths or (".",), state_file=state_file, strategy=strategy,
                            progress=_progress(quiet, verbose), output_dir=output_dir,
                            observed=observed or None, submit=submit, refuse_invalid=True, base=base)
    except InvalidConfiguration as invalid:
        _print_errors_only(invalid.validation.diagnostics, fmt, paths or (".",), quiet)
        if forecast:
            click.echo("poolc: no forecast: the inputs do not validate (see the errors above)", err=True)
        sys.exit(EXIT_FINDINGS)
    except BaseMismatch as exc:
        click.echo(f"poolc: {base_file}: {exc}", err=True)
        sys.exit(EXIT_FINDINGS)
    if verbose:
        click.echo(f"poolc: planned in {time.perf_counter() - started:.2f} s", err=True)
    _state_note(state_file, result.state.missing, quiet)
    if not result.state.ok:  # nothing printed, nothing written: the plan would be of another world
        from .report import render

        click.echo(render("text", result.state.diagnostics), nl=False, err=True)  # stdout stays empty: no plan
        what = "the state file or the cluster's reports" if observed else f"the state file {_t(result.state_path)}"
        click.echo(f"poolc: cannot read {what}; no plan made", err=True)
        sys.exit(EXIT_FINDINGS)
    # the base forecast first: this one starts at its instant, so the two share one clock
    before = _base_forecast(base_data) if forecast and base_data is not None else None
    made = _forecast(result, horizon_seconds, instance_prices, before.start if before else None) if forecast else None
    plan_json = to_json(result.plan) if out_file or fmt == "json" else ""   # serialised once, for both
    if made is not None and plan_json:
        from .forecast.command import with_forecast

        plan_json = with_forecast(result.plan, made, before)
    if out_file:
        try:
            write_atomic(out_file, plan_json)
        except OSError as exc:
            click.echo(f"poolc: cannot write the plan to {_t(out_file)}: {_t(exc.strerror or exc)}", err=True)
            sys.exit(EXIT_FINDINGS)
    _print_plan(result, fmt, quiet, no_color, plan_json, made, before)
    if not result.ok:
        sys.exit(EXIT_FINDINGS)
    if detailed_exitcode and result.changed:
        sys.exit(EXIT_CHANGES)
    sys.exit(EXIT_OK)


def _read_base(path: str) -> tuple[Any, Any]:
    """The base plan of `plan --base` and its parsed JSON (which may hold the base's
    forecast); exit 1 with one line when it is not one this poolc can compare with
    (unreadable, not a plan, another format version)."""
    from .commands.apply import MAX_PLAN_BYTES
    from .domain.plan import FORMAT_VERSION, PlanFormatError
    from .domain.plan_file import parse_json, problem, read_plan
    from .writer import read_bytes

    try:   # the one bounded reader: a regular file, never through a link, never a FIFO (#42)
        text = read_bytes(path, MAX_PLAN_BYTES).decode("utf-8").removeprefix("\ufeff")
        data = parse_json(text)
    except (OSError, UnicodeDecodeError) as exc:
        why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else (exc.strerror or str(exc))
        click.echo(f"poolc: cannot read the base plan {path}: {why}", err=True)
        sys.exit(EXIT_FINDINGS)
    except PlanFormatError as exc:
        click.echo(f"poolc: the base plan {problem(path, exc)}", err=True)
        sys.exit(EXIT_FINDINGS)
    version = data.get("format_version") if isinstance(data, dict) else None
    if isinstance(data, dict) and version != FORMAT_VERSION:
        click.echo(f"poolc: the base plan {path} has plan format version {version!r}, this poolc writes version "
                   f"{FORMAT_VERSION}: plan the base branch with the same poolc as this one", err=True)
        sys.exit(EXIT_FINDINGS)
    try:
        return read_plan(data, text), data
    except PlanFormatError as exc:
        click.echo(f"poolc: the base plan {problem(path, exc)}", err=True)
        sys.exit(EXIT_FINDINGS)


def _base_forecast(data: Any) -> Any:
    """The base plan's forecast, or None with a line on stderr saying why there is none."""
    from .forecast.command import base_forecast

    found, why = base_forecast(data)
    if why:
        click.echo(why, nl=False, err=True)
    return found


def _print_errors_only(diagnostics: list[Diagnostic], fmt: PlanFormat, paths: tuple[str, ...], quiet: bool) -> None:
    from .views.plan_result_view import errors_output

    echo(errors_output(diagnostics, fmt, paths, quiet))


def _horizon(text: str) -> int:
    from .forecast.durations import parse_horizon

    try:
        return parse_horizon(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--horizon") from None


def _forecast(result: Any, horizon: int, prices_file: str | None, start: str | None = None) -> Any:
    """The plan's forecast; on bad input its diagnostics on stderr and exit 1."""
    from .forecast.command import forecast_or_diagnostics

    made, problems = forecast_or_diagnostics(result, horizon, prices_file, start)
    if made is None:
        click.echo(problems, nl=False, err=True)
        sys.exit(EXIT_FINDINGS)
    if problems:
        click.echo(problems, nl=False, err=True)
    return made


def _print_plan(result: Any, fmt: PlanFormat, quiet: bool, no_color: bool, plan_json: str, made: Any = None,
                before: Any = None) -> None:
    from .views.colour import wanted
    from .views.plan_result_view import plan_output

    echo(plan_output(result, fmt, quiet, wanted(no_color), plan_json, made, before))


@main.command(name="test")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--strategy", type=click.Choice(STRATEGIES), default="optimal", show_default=True,
              help="How the scenarios roll forward: optimal (the plan's intent), zenml, kueue (what Kueue will do).")
@click.option("--format", "fmt", type=click.Choice(TEST_FORMATS), default="text",
              show_default=True)
@click.option("--scenario", "only", multiple=True, help="Run only this scenario (repeatable).")
@click.option("--base", "base_file", type=click.Path(dir_okay=False),
              help="The JSON report (--format json) of the base branch: markdown leads with what this change breaks.")
@click.option("--record", "record_file", type=click.Path(dir_okay=False),
              help="Write a scenario of today's plan and forecast (the expectations it meets) to this file.")
@click.option("--horizon", default="2d", show_default=True, help="With --record: how far the recorded scenario rolls.")
@guarded
def test_command(paths: tuple[str, ...], strategy: Strategy, fmt: TestFormat, only: tuple[str, ...],
                 base_file: str | None, record_file: str | None, horizon: str) -> None:
    """Run the scenarios (kind: Scenario) under PATHS and judge their expectations.

    Exit 0 when every expectation holds, 1 when one fails or the inputs do not
    validate, 2 on a usage error (docs/scenarios.md).
    """
    if record_file is not None:
        from .scenario.record import record_scenario

        seconds = _horizon(horizon)
        text, problems = record_scenario(paths or (".",), strategy, seconds, record_file)
        if text is None:
            click.echo(problems, err=True, nl=False)
            sys.exit(EXIT_FINDINGS)
        from .writer import write_files

        write_files(os.path.dirname(os.path.abspath(record_file)), {os.path.basename(record_file): text})
        click.echo(f"poolc: wrote {record_file}: {problems}", err=True)
        sys.exit(EXIT_OK)
    from .scenario.command import run_tests
    from .scenario.render import RENDERERS

    report = run_tests(paths or (".",), strategy, only)
    if only and not report.diagnostics:
        missing = sorted(set(only) - {o.name for o in report.outcomes})
        if missing:
            raise click.BadParameter(f"no scenario named {', '.join(map(repr, missing))}", param_hint="--scenario")
    if base_file is not None:
        from .scenario.compare import markdown_against, read_base

        base, note = read_base(base_file)
        if note:
            click.echo(note, err=True)
        shown = markdown_against(base, report) if fmt == "markdown" else RENDERERS[fmt](report)
    else:
        shown = RENDERERS[fmt](report)
    click.echo(shown, nl=False)
    if not report.outcomes and not report.diagnostics:   # nothing tested is not a pass
        click.echo("poolc: no scenarios (kind: Scenario) in the files given: nothing was tested", err=True)
        sys.exit(EXIT_FINDINGS)
    if fmt != "text":
        from .scenario.render import _summary

        click.echo(("poolc: " + _summary(report)) if not report.diagnostics else
                   "poolc: no scenarios run: the inputs do not validate", err=True)
    sys.exit(EXIT_OK if report.passed else EXIT_FINDINGS)


@main.command()
@click.argument("plan_file", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(SHOW_FORMATS), default="text", show_default=True)
@color_option
@guarded
def show(plan_file: str, fmt: ShowFormat, no_color: bool) -> None:
    """Render a saved plan (poolc plan --out) without planning again.

    Exit 0, or 1 when the file is not a plan this poolc can read.
    """
    from .commands.apply import read_plan_file
    from .views.colour import wanted
    from .views.plan_result_view import saved_output

    saved, problem = read_plan_file(plan_file)   # the same reading as apply --plan
    if saved is None:
        click.echo(f"poolc: {_t(problem)}", err=True)
        sys.exit(EXIT_FINDINGS)
    click.echo(saved_output(saved, fmt, wanted(no_color)), nl=False)
    sys.exit(EXIT_OK)


@main.command()
@paths_argument
@click.option("--output-dir", required=True, type=click.Path(file_okay=False),
              help="Where the generated kubernetes/, kueue/ and sagemaker/ files go.")
@click.option("--state", "state_file", type=click.Path(dir_okay=False),
              help="State file (default: poolc.state.json in the current directory).")
@click.option("--plan", "plan_file", type=click.Path(dir_okay=False),
              help="Apply exactly this saved plan (poolc plan --out); refused if the inputs changed since.")
@click.option("--strategy", type=click.Choice(STRATEGIES), default=None,
              help="The planning strategy (a saved --plan names its own). Default: optimal; with --submit all, "
                   "kueue, so the Jobs written are those of the plan that describes them.")
@click.option("--submit", type=click.Choice(SUBMIT_MODES), default="gate", show_default=True,
              help=SUBMIT_HELP + " A saved --plan names its own.")
@click.option("--now", help="Start time of the allocations this apply creates (RFC 3339; default "
                            "SOURCE_DATE_EPOCH, else the clock).")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if the output or the state is stale.")
@format_option
@quiet_option
@guarded
def apply(paths: tuple[str, ...], output_dir: str, state_file: str | None, plan_file: str | None,
          strategy: Strategy | None, submit: SubmitMode, now: str | None, check: bool, fmt: DiagnosticFormat,
          quiet: bool) -> None:
    """Write the generated manifests and the new state, atomically.

    Exit 0 ok; 1 when the configuration or the state is invalid, the plan file is
    stale, or (with --check) the output or state is out of date.
    """
    strategy = default_strategy(strategy, submit)
    from .commands.apply import apply_paths
    from .state.lock import StateLockError
    from .state.transaction import JournalError
    from .views import apply_view

    if now is not None:
        from .model import parse_timestamp

        try:
            parse_timestamp(now)
        except ValueError:
            raise click.BadParameter(f"{now!r} is not an RFC 3339 time such as 2026-11-20T10:00:00Z",
                                     param_hint="--now") from None
    try:
        result = apply_paths(paths or (".",), output_dir, state_file=state_file, plan_file=plan_file,
                             check=check, progress=_progress(quiet), strategy=strategy, now=now,
                             submit=submit)
    except (StateLockError, JournalError) as exc:
        click.echo(f"poolc: {_t(exc)}", err=True)
        sys.exit(EXIT_FINDINGS)
    except OSError as exc:  # disk full, permissions: the transaction has rolled back
        click.echo(f"poolc: apply failed and changed nothing: {_t(exc.strerror or exc)}"
                   + (f": {_t(exc.filename)}" if exc.filename else ""), err=True)
        sys.exit(EXIT_FINDINGS)
    if result.recovered:
        click.echo(f"poolc: {_t(result.recovered)}", err=True)
    failed = not result.ok or (check and bool(result.stale))
    if fmt == "json":
        click.echo(apply_view.as_json(result), nl=False)
        sys.exit(EXIT_FINDINGS if failed else EXIT_OK)
    emit_diagnostics(result.diagnostics, fmt, quiet)
    if not result.ok:
        click.echo(apply_view.refused(result), nl=False, err=True)
        sys.exit(EXIT_FINDINGS)
    if check:
        echo(apply_view.checked(result, quiet))
        sys.exit(EXIT_FINDINGS if result.stale else EXIT_OK)
    echo(apply_view.applied(result, quiet))
    sys.exit(EXIT_OK)


@main.command()
@paths_argument
@click.option("--output-dir", required=True, type=click.Path(file_okay=False),
              help="Where apply writes the files (kept between cycles with the state).")
@click.option("--state", "state_file", type=click.Path(dir_okay=False),
              help="State file (default: poolc.state.json in the current directory).")
@click.option("--strategy", type=click.Choice(STRATEGIES), default=None,
              help="As for apply. Default: optimal; with --submit all, kueue.")
@click.option("--submit", type=click.Choice(SUBMIT_MODES), default="gate", show_default=True, help=SUBMIT_HELP)
@click.option("--run-id", help="Appended to the names of the training jobs this cycle submits (1-20 letters and "
                               "digits; default c<the cycle's time in epoch seconds>).")
@click.option("--wait", "wait_seconds", type=click.FloatRange(min=0), default=300, show_default=True,
              help="Seconds to wait for stopped work to free its quota before giving up (nothing is admitted then).")
@click.option("--poll", "poll_seconds", type=click.FloatRange(min=0), default=2, show_default=True,
              help="Seconds between two looks at the Workloads while waiting.")
@click.option("--allow-empty", is_flag=True, help="As for state import: the cluster really runs nothing.")
@guarded
def cycle(paths: tuple[str, ...], output_dir: str, state_file: str | None, strategy: Strategy | None,
          submit: SubmitMode,
          run_id: str | None, wait_seconds: float, poll_seconds: float, allow_empty: bool) -> None:
    """One reconcile cycle: observe the cluster and SageMaker, import, apply, stop the
    victims, wait for their quota, then hand over the Kueue objects, the admitted Jobs
    (in arrival order) and each new training job once (docs/apply.md#the-reconcile-cycle).

    Runs kubectl and aws from PATH. Exit 0 done; 1 when a step failed (the cluster was
    given nothing that could run out of turn; the next cycle starts from what it reports).
    """
    import os

    from .commands.cycle import CycleError, Tools, run_cycle
    from .state.lock import StateLockError
    from .state.records import DEFAULT_STATE

    tools = Tools(kubectl=os.environ.get("POOLC_KUBECTL", "kubectl"), aws=os.environ.get("POOLC_AWS", "aws"),
                  poll_seconds=poll_seconds, wait_seconds=wait_seconds)

    def say(line: str) -> None:
        click.echo(_t(line))

    try:
        result = run_cycle(paths or (".",), output_dir, state_file=state_file or DEFAULT_STATE,
                           strategy=default_strategy(strategy, submit), submit=submit, run_id=run_id, tools=tools,
                           allow_empty=allow_empty, say=say)
    except CycleError as exc:
        emit_diagnostics(exc.diagnostics, "text", True)
        click.echo(f"poolc: cycle stopped: {_t(exc)}", err=True)
        sys.exit(EXIT_FINDINGS)
    except StateLockError as exc:
        click.echo(f"poolc: cycle stopped: {_t(exc)}", err=True)
        sys.exit(EXIT_FINDINGS)
    emit_diagnostics(result.diagnostics, "text", False)   # warnings too: the plan's runtime notes among them
    sys.exit(EXIT_OK)


@main.group()
def state() -> None:
    """Look at and change the state file (default poolc.state.json here)."""


state_file_option = click.option("--state", "state_file", type=click.Path(dir_okay=False),
                                 help="State file (default: poolc.state.json in the current directory).")


@state.command("list")
@click.argument("paths", nargs=-1)
@state_file_option
@click.option("--format", "fmt", type=click.Choice(LIST_FORMATS), default="text", show_default=True)
@guarded
def state_list(paths: tuple[str, ...], state_file: str | None, fmt: ListFormat) -> None:
    """List the allocations the state holds, amounts in the units of the configuration
    under PATHS (decimal GB without it; the JSON keeps canonical keys). Exit 0, or 1
    when the state is invalid."""
    from .commands.state_command import list_allocations
    from .commands.validate import validate_paths
    from .config import display_units
    from .domain.amounts import DEFAULT
    from .state.records import DEFAULT_STATE
    from .views import state_view

    units = display_units(validate_paths(list(paths)).config) if paths else DEFAULT

    read, rows = list_allocations(state_file or DEFAULT_STATE)
    if not read.ok:
        emit_diagnostics(read.diagnostics, "text", False)
        sys.exit(EXIT_FINDINGS)
    click.echo(state_view.listed_json(rows) if fmt == "json" else state_view.listed_text(rows, units), nl=False)
    sys.exit(EXIT_OK)


@state.command("rm")
@click.argument("names", nargs=-1, required=True)
@state_file_option
@guarded
def state_rm(names: tuple[str, ...], state_file: str | None) -> None:
    """Release finished steps (allocation names or pipeline/step ids): their capacity is
    free again, and a step is not requested again until its inputs change."""
    from .commands.state_command import remove
    from .state.records import DEFAULT_STATE

    _report_state_change(_locked(lambda: remove(state_file or DEFAULT_STATE, names)), "released")


@state.command("rerun")
@click.argument("names", nargs=-1, required=True)
@state_file_option
@guarded
def state_rerun(names: tuple[str, ...], state_file: str | None) -> None:
    """Run finished steps again (step ids pipeline/step, or pipelines): the state forgets
    that they finished, so the next plan requests them and apply writes their Jobs."""
    from .commands.state_command import rerun
    from .state.records import DEFAULT_STATE

    _report_state_change(_locked(lambda: rerun(state_file or DEFAULT_STATE, names)), "to run again")


def _report_state_change(change: Any, word: str) -> None:
    """`state rm` and `state rerun`: each name it changed as ``<word>: NAME``, exit 0;
    or the diagnostics and why nothing changed, exit 1."""
    from .views import state_view

    if not change.ok:
        emit_diagnostics(change.diagnostics, "text", False)
        click.echo(state_view.not_changed(change), nl=False, err=True)
        sys.exit(EXIT_FINDINGS)
    click.echo(state_view.changed(change, word), nl=False)
    sys.exit(EXIT_OK)


@state.command("import")
@paths_argument
@state_file_option
@click.option("--kueue", "kueue_file", type=click.Path(dir_okay=False),
              help="kubectl get workloads.kueue.x-k8s.io -A -o json")
@click.option("--sagemaker", "sagemaker_file", type=click.Path(dir_okay=False),
              help="a JSON array of aws sagemaker describe-training-job outputs")
@click.option("--allow-empty", is_flag=True,
              help="Accept a report that lists nothing although the state holds running work there.")
@guarded
def state_import(paths: tuple[str, ...], state_file: str | None, kueue_file: str | None,
                 sagemaker_file: str | None, allow_empty: bool) -> None:
    """Refresh the state from what the cluster reports.

    Admitted or running jobs stay or appear with their real start times; finished
    ones (Completed, Failed, Stopped; Finished=True) are recorded as finished, like
    `state rm`; evicted or pending ones leave and are planned again; foreign
    Workloads admitted through poolc's queues become external allocations. Exit 1,
    changing nothing, on any error.
    """
    from .commands.state_command import import_cluster
    from .state.records import DEFAULT_STATE

    if not kueue_file and not sagemaker_file:
        raise click.UsageError("give --kueue FILE, --sagemaker FILE or both")
    change = _locked(lambda: import_cluster(paths or (".",), state_file or DEFAULT_STATE, kueue=kueue_file,
                                            sagemaker=sagemaker_file, allow_empty=allow_empty))
    from .views import state_view

    emit_diagnostics(change.diagnostics, "text", False)
    if not change.ok:
        click.echo(state_view.not_imported(change), nl=False, err=True)
        sys.exit(EXIT_FINDINGS)
    click.echo(state_view.imported(change), nl=False)
    sys.exit(EXIT_OK)


def _locked(command: Callable[[], Any]) -> Any:
    """Run a state command; a held or unusable state lock is one line and exit 1."""
    from .state.lock import StateLockError

    try:
        return command()
    except StateLockError as exc:
        click.echo(f"poolc: nothing changed: {_t(exc)}", err=True)
        sys.exit(EXIT_FINDINGS)


def run() -> None:
    """The installed ``poolc`` command: ``main``, then out without Python's teardown.

    Tearing down the interpreter (freeing every object, then the modules of click,
    pydantic, ruamel.yaml and OR-Tools) costs about 0.1 CPU s after any command,
    a tenth of a pre-commit run and 5% of a 1,000-request plan, for nothing: the
    process ends anyway. Output is flushed and the atexit handlers run first, as a
    normal exit would; a stdout that cannot be flushed (a closed pipe) takes the
    normal exit, which reports it, and so does a run under a profiler, a tracer or
    a debugger (``python -m cProfile``, coverage, pdb), which write their results
    after the program returns."""
    try:
        main()
        code: str | int | None = EXIT_OK
    except SystemExit as stop:   # click's standalone mode always ends this way
        code = stop.code
    if code is None:
        code = EXIT_OK
    if not isinstance(code, int) or sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)           # a message for Python to print, or a tool still to write its results
    atexit._run_exitfuncs()      # cleared as they run: the normal exit below would not repeat them
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    run()
