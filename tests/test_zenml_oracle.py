"""poolc's reading of ZenML 0.98 against the real zenml==0.98.0 (the oracle).

zenml is never a poolc dependency: it runs in a test-only environment
(tests/oracles/make-env.sh builds one) named by POOLC_ZENML_PYTHON, through
tests/oracles/zenml_oracle.py. Without it these tests skip.

1. A corpus of ResourceSettings inputs: every input both accept gives the same demand
   (ZenML's demands in poolc's units) and the same preemptibility (reclaim tolerance
   other than none) as ZenML computes for an isolated step.
2. Pipelines in Python with decorators, with_options and run configurations: the
   settings poolc reads statically give what ZenML's compiler gives every step.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from poolc.commands.validate import validate_paths
from poolc.model import ResourceSettings
from poolc.requests import build_requests, demand_of

TESTS = Path(__file__).resolve().parent
ORACLE = TESTS / "oracles" / "zenml_oracle.py"
CASES = TESTS / "fixtures" / "sources" / "oracle"
CONTEXT = TESTS / "fixtures" / "context" / "platform.yaml"
PYTHON = os.environ.get("POOLC_ZENML_PYTHON", "")


def _zenml_available() -> bool:
    if not PYTHON or not Path(PYTHON).exists():
        return False
    probe = subprocess.run([PYTHON, "-c", "import zenml; assert zenml.__version__ == '0.98.0'"],
                           capture_output=True, timeout=300)
    return probe.returncode == 0


pytestmark = [pytest.mark.slow, pytest.mark.skipif(not _zenml_available(),
                                                 reason="zenml==0.98.0 not installed: set POOLC_ZENML_PYTHON "
                                                 "(tests/oracles/make-env.sh)")]

_BYTES = {"B": 1, "KB": 10**3, "KiB": 2**10, "MB": 10**6, "MiB": 2**20, "GB": 10**9, "GiB": 2**30,
          "TB": 10**12, "TiB": 2**40, "PB": 10**15, "PiB": 2**50}


def ask(request: dict[str, Any], tmp: Path) -> dict[str, Any]:
    env = {**os.environ, "ZENML_ANALYTICS_OPT_IN": "false", "ZENML_LOGGING_VERBOSITY": "ERROR",
           "ZENML_CONFIG_PATH": str(tmp / "zenml-config"), "AUTO_OPEN_DASHBOARD": "false"}
    proc = subprocess.run([PYTHON, str(ORACLE)], input=json.dumps(request), capture_output=True, text=True,
                          timeout=900, env=env, cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer = json.loads(proc.stdout)
    assert answer["zenml"] == "0.98.0"
    return answer


def in_poolc_units(answer: dict[str, Any]) -> tuple[dict[str, int], bool]:
    """ZenML's demands as a poolc demand vector (every request has step_run 1), and
    whether the step may be preempted."""
    demand: dict[str, int] = {"step_run": 1}
    for x in answer["demands"]:
        if x["resource"]:
            key, units = x["resource"], x["quantity"]
        elif x["kind"] == "cpu":
            key, units = "mcpu", x["quantity"] * (1000 if x["unit"] == "CPU" else 1)
        elif x["kind"] == "memory":
            key, units = "memory_mb", -(-x["quantity"] * _BYTES[x["unit"]] // 10**6)
        else:
            key, units = x["kind"], x["quantity"]
        demand[key] = demand.get(key, 0) + units
    return dict(sorted(demand.items())), answer["reclaim_tolerance"] != "none"


def poolc_reading(fields: dict[str, Any]) -> tuple[dict[str, int], bool] | None:
    try:
        settings = ResourceSettings.model_validate(fields).merged_over(None)
    except ValueError:
        return None
    return demand_of(settings), settings.preemptible is not False


CORPUS: list[dict[str, Any]] = [
    {}, {"cpu_count": 1}, {"cpu_count": 2.0}, {"cpu_count": 0.5}, {"cpu_count": 16.1}, {"cpu_count": 0.25},
    {"cpu_count": 3.75}, {"cpu_count": 96},
    {"memory": "1B"}, {"memory": "1500000B"}, {"memory": "4GB"}, {"memory": "16GiB"}, {"memory": "512MiB"},
    {"memory": "2TB"}, {"memory": "3KiB"}, {"memory": "7MB"}, {"memory": "1PiB"},
    {"gpu_count": 0}, {"gpu_count": 1}, {"gpu_count": 8},
    {"gpu_count": 2, "gpu_class": "a100-80gb"},
    {"preemptible": True}, {"preemptible": False},
    {"reclaim_tolerance": "none"}, {"reclaim_tolerance": "coordinated"}, {"reclaim_tolerance": "any"},
    {"resources": "tpu"}, {"resources": {"tpu": 2}}, {"resources": {"tpu": 2, "licence": 1}},
    {"resources": [{"name": "tpu", "quantity": 2}]},
    {"resources": [{"name": "tpu", "quantity": 2}, {"name": "tpu", "quantity": 3}]},
    {"resources": [{"kind": "fpga", "quantity": 1}]},
    {"resources": [{"name": "lic", "quantity": 1, "class": "gold"}]},
    {"resources": [{"name": "lic", "quantity": 1, "resource_selector": {"site": "a"}}]},
    {"pool_resources": {"seat": 4}},
    {"allocation_wait_timeout_seconds": 60}, {"initialization_lease_seconds": 600},
    {"allocation_wait_timeout_seconds": 60, "initialization_lease_seconds": 30, "gpu_count": 1},
    {"min_replicas": 1, "max_replicas": 3, "autoscaling_metric": "cpu", "autoscaling_target": 70.0,
     "max_concurrency": 8},
    {"cpu_count": 4, "memory": "16GB", "gpu_count": 1, "reclaim_tolerance": "none", "resources": {"lic": 1}},
    {"cpu_count": 8, "memory": "64GiB", "gpu_count": 4, "preemptible": False, "pool_resources": {"seat": 1}},
    {"cpu_count": 2, "memory": "8GB", "resources": [{"name": "tensorrt_sessions", "quantity": 1}],
     "reclaim_tolerance": "coordinated"},
    # inputs one side refuses (the figure counts them apart)
    {"memory": "1.5GB"}, {"memory": "4Gi"}, {"cpu_count": 0}, {"gpu_count": -1}, {"reclaim_tolerance": "sometimes"},
    {"gpu_count": "2"}, {"resources": []},
]


def test_resource_settings_corpus_agrees_with_zenml(tmp_path: Path, capsys):
    answers = ask({"settings": CORPUS}, tmp_path)["settings"]
    both = agree = 0
    differences = []
    only_poolc = only_zenml = 0
    for fields, answer in zip(CORPUS, answers, strict=True):
        ours = poolc_reading(fields)
        if ours is None or not answer["accepted"]:
            only_poolc += ours is not None
            only_zenml += answer["accepted"]
            continue
        both += 1
        theirs = in_poolc_units(answer)
        if ours == theirs:
            agree += 1
        else:
            differences.append(f"{fields}: poolc {ours}, zenml {theirs}")
    with capsys.disabled():
        print(f"\nResourceSettings corpus vs zenml 0.98.0: {agree}/{both} inputs both accept agree on demand and "
              f"preemptibility; {only_poolc} accepted by poolc only, {only_zenml} by zenml only "
              f"({len(CORPUS)} inputs)")
    assert differences == []
    assert both >= 40
    # written in ZenML code or a run configuration, poolc is as strict as ZenML: nothing
    # ZenML refuses is read (poolc's own documents may say memory: 4Gi)
    from poolc.sources.found import Found, Layer, Place
    from poolc.sources.resolve import _validated

    at = Place("code.py", (1, 1, 1, 1))
    from_code_only = [fields for fields, answer in zip(CORPUS, answers, strict=True)
                      if _validated(Layer(dict(fields), {}, at), Found()) and not answer["accepted"]]
    assert from_code_only == []


def poolc_steps(pipeline: str) -> dict[str, tuple[dict[str, int], bool]]:
    result = validate_paths([str(CONTEXT), str(CASES)])
    return {r.step: (r.demand, r.preemptible) for r in build_requests(result.config) if r.pipeline == pipeline}


@pytest.mark.parametrize(("pipeline", "attribute", "run_config"), [
    ("layered-code", "layered", None),
    ("layered-run", "layered", "run.yaml"),
    ("bigger-run", "bigger", "run.yaml"),
])
def test_decorators_and_run_configurations_merge_as_zenml_compiles_them(tmp_path: Path, pipeline, attribute,
                                                                      run_config, capsys):
    request = {"pipelines": [{"module": str(CASES / "precedence.py"), "pipeline": attribute,
                              "run_config": str(CASES / run_config) if run_config else None}]}
    compiled = ask(request, tmp_path)["pipelines"][0]
    theirs = {step: in_poolc_units(answer) for step, answer in compiled.items()}
    ours = poolc_steps(pipeline)
    with capsys.disabled():
        same = sum(ours.get(step) == value for step, value in theirs.items())
        print(f"\n{pipeline}: {same}/{len(theirs)} compiled steps agree with zenml 0.98.0")
    assert ours == theirs
