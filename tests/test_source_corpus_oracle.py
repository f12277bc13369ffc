"""The source corpus (tests/test_source_corpus.py) against the real libraries: for
every case, what zenml 0.98.0 compiles (tests/oracles/zenml_oracle.py) or flytekit /
flyte serialise (tests/oracles/flyte_oracle.py) in the test-only environments that
tests/oracles/make-env.sh builds (POOLC_ZENML_PYTHON, POOLC_FLYTE_PYTHON); without
them these tests skip, and test_source_corpus.py still holds poolc to the hand-written
readings.

The rule: no case is read by poolc while the library reads it otherwise. Either both
read the same steps with the same demand, preemptibility and step operator, or poolc
refuses the case at its place (a library that refuses a case must be matched by
poolc refusing it).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_source_corpus import CASES, case_data, poolc_reading
from test_zenml_oracle import in_poolc_units

TESTS = Path(__file__).resolve().parent
ZENML = os.environ.get("POOLC_ZENML_PYTHON", "")


def _runs(python: str, probe: str) -> bool:
    if not python or not Path(python).exists():
        return False
    return subprocess.run([python, "-c", probe], capture_output=True, timeout=300).returncode == 0


def ask_zenml(request: dict[str, Any], tmp: Path) -> dict[str, Any]:
    env = {**os.environ, "ZENML_ANALYTICS_OPT_IN": "false", "ZENML_LOGGING_VERBOSITY": "ERROR",
           "ZENML_CONFIG_PATH": str(tmp / "zenml-config"), "AUTO_OPEN_DASHBOARD": "false"}
    proc = subprocess.run([ZENML, str(TESTS / "oracles" / "zenml_oracle.py")], input=json.dumps(request),
                          capture_output=True, text=True, timeout=1800, env=env, cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def compare(name: str, ours: dict[str, dict[str, Any]] | None, theirs: dict[str, Any] | None) -> str:
    """'agree', 'refused' (poolc refuses: allowed either way) or what differs."""
    if ours is None:
        return "refused"
    if theirs is None:
        return f"{name}: poolc reads {ours} but the library refuses the project"
    mine = {step: (value["demand"], value["preemptible"], value["requester"]) for step, value in ours.items()}
    if mine != theirs:
        return f"{name}: poolc reads {mine}, the library {theirs}"
    return "agree"


@pytest.mark.slow
@pytest.mark.skipif(not _runs(ZENML, "import zenml; assert zenml.__version__ == '0.98.0'"),
                    reason="zenml==0.98.0 not installed: set POOLC_ZENML_PYTHON (tests/oracles/make-env.sh)")
def test_zenml_corpus_agrees_with_zenml_or_is_refused(tmp_path: Path, capsys):
    names = [n for n in CASES if case_data(n)["library"] == "zenml"]
    readings = {n: poolc_reading(n, tmp_path) for n in names}
    request = {"projects": [{"project": str(readings[n][2]), "module": case_data(n)["oracle"]["module"],
                             "expression": case_data(n)["oracle"]["expression"]} for n in names]}
    answers = ask_zenml(request, tmp_path)["projects"]
    outcomes: dict[str, list[str]] = {"agree": [], "refused": [], "library refuses": []}
    differences = []
    for name, answer in zip(names, answers, strict=True):
        theirs = None
        if answer["accepted"]:
            theirs = {step: (*in_poolc_units(value), value["step_operator"] or "corpus-k8s")
                      for step, value in answer["steps"].items()}
        else:
            outcomes["library refuses"].append(f"{name} ({answer['error'][:80]})")
        outcome = compare(name, readings[name][0], theirs)
        if outcome in outcomes:
            outcomes[outcome].append(name)
        else:
            differences.append(outcome)
    with capsys.disabled():
        print(f"\nZenML corpus vs zenml 0.98.0: {len(names)} cases, {len(outcomes['agree'])} read alike, "
              f"{len(outcomes['refused'])} refused by poolc at their place (of which zenml refuses "
              f"{len(outcomes['library refuses'])}: {'; '.join(outcomes['library refuses'])}), "
              f"{len(differences)} differ")
    assert differences == []
    assert len(outcomes["agree"]) >= 10
