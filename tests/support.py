"""Helpers shared by the CLI tests (imported as `support`: tests/ is on sys.path)."""

from click.testing import CliRunner

from poolc.cli import main


def cli(*args: str):
    """Run `poolc ARGS...` in-process; it may exit, but never with a traceback."""
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result
