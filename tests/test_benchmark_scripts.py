"""Every benchmark script starts: its imports resolve and `--help` exits 0.

The scripts are run by hand, not by the suite, so a script whose helper moved
(a function renamed in plan_cli, a module regrouped) would stay broken until
someone needed its figures; apply_saved.py did, after `--baseline` moved to
trees.poolc_tree. Starting each one is cheap and catches that.
"""

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
# modules the scripts import, with no command line of their own
LIBRARIES = {"trees.py", "scenario_probe.py"}
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py") if p.name not in LIBRARIES)


def test_every_script_is_listed_or_a_library():
    assert len(SCRIPTS) >= 20 and all((BENCHMARKS / name).is_file() for name in LIBRARIES)


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_script_starts_and_answers_help(script):
    ran = subprocess.run([sys.executable, str(BENCHMARKS / script), "--help"], capture_output=True, text=True,
                         timeout=300, check=False)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "usage:" in ran.stdout, ran.stdout[:500]
