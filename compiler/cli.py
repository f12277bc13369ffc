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

    The schemas are generated from the models, so `poolc schema --output-dir schemas`
    also refreshes the committed copies.
    """
    from .schema import ANY_FILE, KIND_FILES, build_schemas, dump
    from .writer import write_files

    names = sorted([*KIND_FILES.values(), ANY_FILE])
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
