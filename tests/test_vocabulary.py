"""The closed vocabularies (poolc/vocabulary.py) are each declared once and checked by mypy
(#43 item 4): a misspelt strategy, submit mode or format is a type error where it is
written, and the command line offers exactly the declared values."""

import subprocess
import sys
import typing
from pathlib import Path

import click

from poolc import vocabulary
from poolc.cli import main

REPO = Path(__file__).resolve().parents[1]

# Each call is valid but for one misspelt word; the lines mypy must flag, by their marker.
MISSPELT = '''
from poolc.commands.apply import apply_paths
from poolc.forecast.durations import StepDuration
from poolc.forecast.rollforward import Wait
from poolc.commands.planning import plan_paths
from poolc.report import render
from poolc.scenario.command import run_tests

plan_paths(["."], submit="gates")          # BAD submit
plan_paths(["."], strategy="optimum")      # BAD strategy
apply_paths(["."], "out", submit="All")    # BAD apply submit
render("txt", [])                          # BAD format
run_tests(["."], "Kueue")                  # BAD test strategy
StepDuration(60, "expected")               # BAD duration source
StepDuration(60, "max_runtime")
def decided(wait: Wait) -> None:
    wait.outcome = "after_horizon"         # BAD forecast outcome
    wait.outcome = "after-horizon"
plan_paths(["."], strategy="zenml", submit="all")
render("sarif", [])
'''


def test_mypy_rejects_a_misspelt_word_of_a_vocabulary(tmp_path):
    snippet = tmp_path / "misspelt.py"
    snippet.write_text(MISSPELT)
    ran = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--hide-error-context",
                          "--no-pretty", str(snippet)], cwd=REPO, capture_output=True, text=True, timeout=600)
    flagged = {int(line.split(":")[1]) for line in ran.stdout.splitlines() if ": error:" in line}
    bad = {n for n, line in enumerate(MISSPELT.splitlines(), start=1) if "# BAD" in line}
    assert flagged == bad, ran.stdout + ran.stderr


def _choices(command: click.Command, option: str) -> tuple[str, ...]:
    param = next(p for p in command.params if p.name == option)
    assert isinstance(param.type, click.Choice)
    return tuple(param.type.choices)


def test_the_command_line_offers_exactly_the_declared_values():
    commands = main.commands
    state = commands["state"]
    assert isinstance(state, click.Group)
    expected = {
        ("validate", "fmt"): vocabulary.DiagnosticFormat, ("apply", "fmt"): vocabulary.DiagnosticFormat,
        ("plan", "fmt"): vocabulary.PlanFormat, ("show", "fmt"): vocabulary.ShowFormat,
        ("test", "fmt"): vocabulary.TestFormat,
    }
    for name in ("plan", "apply", "cycle", "test"):
        expected[name, "strategy"] = vocabulary.Strategy
    for name in ("plan", "apply", "cycle"):
        expected[name, "submit"] = vocabulary.SubmitMode
    for (name, option), alias in expected.items():
        assert _choices(commands[name], option) == typing.get_args(alias), (name, option)
    assert _choices(state.commands["list"], "fmt") == typing.get_args(vocabulary.ListFormat)


def test_each_vocabulary_is_written_once_in_the_package():
    """The values of a vocabulary are listed in poolc/vocabulary.py and nowhere else: the
    old copies (domain/plan.py, plan_file.py, model.py, targets/context.py, cli.py) are gone."""
    lists = ['"optimal", "zenml", "kueue"', '"gate", "all"', '"in-share", "admitted", "preempted"',
             '"running", "queued", "preempted", "finished"', '"text", "json", "github", "sarif"',
             '"text", "json", "markdown"', '"text", "json", "junit"']
    copies = sorted((words, str(path.relative_to(REPO))) for path in (REPO / "poolc").rglob("*.py")
                    if path.name != "vocabulary.py" for words in lists if words in path.read_text())
    assert copies == []
    declared = (REPO / "poolc" / "vocabulary.py").read_text()
    assert all(words in declared for words in lists)
