"""The `poolc` command line: a thin click layer over the library.

Each command parses options, calls the stages, picks a reporter and sets the
exit code (CLI.md). No input may produce a traceback: an unexpected exception is
one line on stderr and exit 3.
"""

from __future__ import annotations

import functools
import os
import sys

import click

from . import __version__

EXIT_OK, EXIT_FINDINGS, EXIT_CHANGES, EXIT_INTERNAL = 0, 1, 2, 3
FORMATS = ["text", "json", "github", "sarif"]


def guarded(fn):
    """Turn any unexpected exception into one line and exit 3 (never a traceback)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("poolc: interrupted", err=True)
            sys.exit(130)
        except Exception as exc:  # noqa: BLE001 - the contract is "never a traceback"
            if os.environ.get("POOLC_DEBUG"):
                raise
            click.echo(f"poolc: internal error: {type(exc).__name__}: {exc} "
                       "(please report it; set POOLC_DEBUG=1 for a traceback)", err=True)
            sys.exit(EXIT_INTERNAL)

    return wrapper


def emit_diagnostics(diagnostics, fmt: str, quiet: bool) -> None:
    from .report import render, summary

    shown = [x for x in diagnostics if x.severity == "error"] if quiet else diagnostics
    out = render(fmt, shown)
    if out:
        click.echo(out, nl=False)
    if fmt == "text" and diagnostics and not quiet:
        click.echo(summary(diagnostics), err=True)


paths_argument = click.argument("paths", nargs=-1, type=click.Path())
format_option = click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
                             help="Output format for diagnostics.")
quiet_option = click.option("--quiet", "-q", is_flag=True, help="Only errors; no summary line.")
color_option = click.option("--no-color", is_flag=True, help="Never use colour (also honoured: NO_COLOR).")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="poolc")
def main() -> None:
    """poolc: policy-as-code compiler and validator for shared ML compute pools."""


@main.command()
@paths_argument
@format_option
@quiet_option
@color_option
@guarded
def validate(paths, fmt, quiet, no_color):
    """Check files against the schemas and the pool/policy rules (no solver).

    Exit 0 when clean (warnings allowed), 1 when any error is found.
    """
    from .validate import validate_paths

    result = validate_paths(paths or (".",))
    emit_diagnostics(result.diagnostics, fmt, quiet)
    sys.exit(EXIT_OK if result.ok else EXIT_FINDINGS)


@main.command()
@click.argument("kind", required=False)
@click.option("--output-dir", type=click.Path(file_okay=False), help="Write the schema files here.")
@guarded
def schema(kind, output_dir):
    """Print or write the JSON Schemas (KIND: resourcepool, policy, stack, pipeline, allocation, poolc).

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
        write_files(output_dir, texts)
        for name in names:
            click.echo(os.path.join(output_dir, name))
    else:
        click.echo("".join(texts.values()), nl=False)


def _progress(quiet: bool, verbose: bool = False, after_seconds: float = 2.0):
    """Solver progress on stderr: always with --verbose, otherwise only once a
    solve has run for a while (short solves stay silent)."""
    if quiet:
        return None
    import time

    started = time.perf_counter()

    def report(line: str) -> None:
        if verbose or time.perf_counter() - started > after_seconds:
            click.echo(f"poolc: {line}", err=True)

    return report


@main.command()
@paths_argument
@click.option("--state", "state_file", type=click.Path(dir_okay=False),
              help="State file with the running allocations (written by apply).")
@click.option("--strategy", type=click.Choice(["optimal", "zenml"]), default="optimal", show_default=True,
              help="optimal: CP-SAT, SEMANTICS.md §5; zenml: the reference reconciler, simulated.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Write the plan JSON here (for apply --plan).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--detailed-exitcode", is_flag=True,
              help="Exit 0 when nothing changes, 2 when the plan changes something.")
@click.option("--verbose", "-v", is_flag=True, help="Timings on stderr.")
@quiet_option
@color_option
@guarded
def plan(paths, state_file, strategy, out_file, fmt, detailed_exitcode, verbose, quiet, no_color):
    """Plan which requests run on which pool, which wait, and what is preempted.

    Exit 0 ok, 1 when any error diagnostic exists (a rejected step is one);
    with --detailed-exitcode 0 means no changes and 2 means changes.
    """
    import time

    from .plan import plan_paths
    from .planner.plan import to_json
    from .writer import write_atomic

    started = time.perf_counter()
    result = plan_paths(paths or (".",), state_file=state_file, strategy=strategy,
                        progress=_progress(quiet, verbose))
    if verbose:
        click.echo(f"poolc: planned in {time.perf_counter() - started:.2f} s", err=True)
    plan_json = to_json(result.plan)
    if out_file:
        write_atomic(out_file, plan_json)
    if fmt == "json":
        click.echo(plan_json, nl=False)
    else:
        from .report.plan_text import render_plan

        color = not no_color and not os.environ.get("NO_COLOR") and sys.stdout.isatty()
        click.echo(render_plan(result, color=color), nl=False)
        from .report import render

        shown = [x for x in result.plan.diagnostics_list() if not quiet or x.severity == "error"]
        if shown:  # on stderr, so stdout stays the plan
            click.echo(render("text", shown), nl=False, err=True)
    if not result.ok:
        sys.exit(EXIT_FINDINGS)
    if detailed_exitcode and result.changed:
        sys.exit(EXIT_CHANGES)
    sys.exit(EXIT_OK)


@main.command()
@paths_argument
@click.option("--output-dir", required=True, type=click.Path(file_okay=False),
              help="Where the generated kubernetes/, kueue/ and sagemaker/ files go.")
@click.option("--state", "state_file", type=click.Path(dir_okay=False),
              help="State file (default: poolc.state.json beside the output directory).")
@click.option("--plan", "plan_file", type=click.Path(dir_okay=False),
              help="Apply exactly this saved plan (poolc plan --out); refused if the inputs changed since.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if the output or the state is stale.")
@format_option
@quiet_option
@color_option
@guarded
def apply(paths, output_dir, state_file, plan_file, check, fmt, quiet, no_color):
    """Write the generated manifests and the new state, atomically.

    Exit 0 ok; 1 when the configuration is invalid, the plan file is stale, or
    (with --check) the output or state is out of date.
    """
    from .apply import apply_paths
    from .lock import StateLockError

    try:
        result = apply_paths(paths or (".",), output_dir, state_file=state_file, plan_file=plan_file,
                             check=check, progress=_progress(quiet))
    except StateLockError as exc:
        click.echo(f"poolc: {exc}", err=True)
        sys.exit(EXIT_FINDINGS)
    except OSError as exc:  # disk full, permissions: the transaction has rolled back
        click.echo(f"poolc: apply failed and changed nothing: {exc.strerror or exc}"
                   + (f": {exc.filename}" if exc.filename else ""), err=True)
        sys.exit(EXIT_FINDINGS)
    emit_diagnostics(result.diagnostics, fmt, quiet)
    if not result.ok:
        click.echo(f"poolc: nothing applied: {result.refused}", err=True)
        sys.exit(EXIT_FINDINGS)
    if check:
        for path in result.stale:
            click.echo(f"stale: {path}")
        if result.stale:
            click.echo(f"poolc: {len(result.stale)} generated file(s) out of date; run poolc apply", err=True)
            sys.exit(EXIT_FINDINGS)
        if not quiet:
            click.echo(f"poolc: {len(result.files)} generated files and the state are up to date", err=True)
        sys.exit(EXIT_OK)
    if not quiet:
        for path in result.stale:
            click.echo(f"removed: {path}" if path in result.removed else f"wrote: {path}")
        click.echo(f"poolc: {len(result.stale)} change(s) applied; {len(result.files)} generated files"
                   if result.stale else "poolc: nothing to change", err=True)
    sys.exit(EXIT_OK)


if __name__ == "__main__":
    main()
