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
import math
import os
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from test_flyte_oracle import FLYTE_MODELS
from test_source_corpus import CASES, case_data, poolc_reading
from test_zenml_oracle import in_poolc_units

TESTS = Path(__file__).resolve().parent
ZENML = os.environ.get("POOLC_ZENML_PYTHON", "")
FLYTE = os.environ.get("POOLC_FLYTE_PYTHON", "")


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


def zenml_in_poolc_units(step: dict[str, Any]) -> tuple[dict[str, int], bool]:
    """ZenML's demand of a compiled step; a SageMaker step whose settings name its
    instance runs on all of that instance (its GPUs, vCPUs and memory, from the catalog
    of SageMaker's instance types)."""
    demand, preemptible = in_poolc_units(step)
    if step.get("instance_type"):
        from poolc.domain.catalog import load_catalog

        instance = next(t for t in load_catalog() if t.name == step["instance_type"])
        demand = {**demand, "mcpu": instance.vcpu * 1000, "memory_mb": instance.memory_mb,
                  **({"gpu": instance.gpu_count} if instance.gpu_count else {})}
    return dict(sorted(demand.items())), preemptible


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
            theirs = {step: (*zenml_in_poolc_units(value), value["step_operator"] or "corpus-k8s")
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


def flyte_in_poolc_units(task: dict[str, Any]) -> tuple[dict[str, int], bool, str, str | None]:
    """What Flyte asks Kubernetes for, as a poolc demand (the request; a limit alone is
    the request, as Kubernetes counts it), its preemptibility, requester and GPU model."""
    demand = {"step_run": 1}
    if task["cpu"] is not None:
        demand["mcpu"] = math.ceil(Decimal(task["cpu"]) * 1000)
    if task["memory"] is not None:
        demand["memory_mb"] = math.ceil(Decimal(task["memory"]) / 10**6)
    if task["gpu"] not in (None, "0"):
        demand["gpu"] = int(task["gpu"])
    model = task["gpu_model"]
    return dict(sorted(demand.items())), task["interruptible"], "corpus-k8s", FLYTE_MODELS.get(model, model)


@pytest.mark.slow
@pytest.mark.skipif(not _runs(FLYTE, "import flytekit, flyte, kubernetes"),
                    reason="flytekit/flyte not installed: set POOLC_FLYTE_PYTHON (tests/oracles/make-env.sh)")
def test_flyte_corpus_agrees_with_flyte_or_is_refused(tmp_path: Path, capsys):
    names = [n for n in CASES if case_data(n)["library"] in ("flytekit", "flyte")]
    readings = {n: poolc_reading(n, tmp_path) for n in names}
    request = {"projects": [{"project": str(readings[n][2]), "module": case_data(n)["oracle"]["module"]}
                            for n in names]}
    proc = subprocess.run([FLYTE, str(TESTS / "oracles" / "flyte_oracle.py")], input=json.dumps(request),
                          capture_output=True, text=True, timeout=1800, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answers = json.loads(proc.stdout)["projects"]
    agree, refused, library_refuses, differences = [], [], [], []
    for name, answer in zip(names, answers, strict=True):
        ours = readings[name][0]
        if not answer["accepted"]:
            library_refuses.append(f"{name} ({answer['error'][:80]})")
        if ours is None:
            refused.append(name)
            continue
        if not answer["accepted"]:
            differences.append(f"{name}: poolc reads {ours} but the library refuses it")
            continue
        mine = {step: (v["demand"], v["preemptible"], v["requester"], v["gpu_type"]) for step, v in ours.items()}
        # a task's reading is what it asks for alone, or at every workflow node that runs it
        theirs: dict[str, set[tuple]] = {}
        for node in answer["nodes"]:
            theirs.setdefault(node["task"], set()).add(repr(flyte_in_poolc_units(node)))
        for task, value in answer["tasks"].items():
            theirs.setdefault(task, {repr(flyte_in_poolc_units(value))})
        if set(mine) != set(theirs) or any(theirs[s] != {repr(v)} for s, v in mine.items()):
            differences.append(f"{name}: poolc reads {mine}, the library {theirs}")
        else:
            agree.append(name)
    with capsys.disabled():
        print(f"\nFlyte corpus vs flytekit/flyte: {len(names)} cases, {len(agree)} read alike, {len(refused)} "
              f"refused by poolc at their place (of which the library refuses {len(library_refuses)}: "
              f"{'; '.join(library_refuses)}), {len(differences)} differ")
    assert differences == []
    assert len(agree) >= 5
