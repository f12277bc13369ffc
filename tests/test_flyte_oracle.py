"""poolc's static reading of Flyte tasks against flytekit 1.x and flyte 2 themselves.

flytekit and flyte are never poolc dependencies: they run in a test-only environment
(tests/oracles/make-env.sh) named by POOLC_FLYTE_PYTHON, through
tests/oracles/flyte_oracle.py, which imports the fixture and serialises every task's
resources as Flyte does. Without it this test skips.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

from poolc.commands.validate import validate_paths
from poolc.requests import build_requests
from poolc.units import parse_bytes

TESTS = Path(__file__).resolve().parent
ORACLE = TESTS / "oracles" / "flyte_oracle.py"
CASES = TESTS / "fixtures" / "sources" / "oracle"
CONTEXT = TESTS / "fixtures" / "context" / "platform.yaml"
PYTHON = os.environ.get("POOLC_FLYTE_PYTHON", "")


FLYTE_MODELS = {"nvidia-tesla-t4": "T4", "nvidia-tesla-a100": "A100-40GB", "nvidia-a100-80gb": "A100-80GB",
                "nvidia-h100": "H100", "A100": "A100-40GB", "A100_80G": "A100-80GB", "H100": "H100", "T4": "T4"}


def _flyte_available() -> bool:
    if not PYTHON or not Path(PYTHON).exists():
        return False
    probe = subprocess.run([PYTHON, "-c", "import flytekit, flyte, kubernetes"], capture_output=True, timeout=300)
    return probe.returncode == 0


pytestmark = [pytest.mark.slow, pytest.mark.skipif(not _flyte_available(),
                                                 reason="flytekit/flyte not installed: set POOLC_FLYTE_PYTHON "
                                                 "(tests/oracles/make-env.sh)")]


def test_flyte_tasks_read_statically_ask_what_flyte_asks(tmp_path: Path, capsys):
    source = CASES / "flyte_tasks.py"
    proc = subprocess.run([PYTHON, str(ORACLE)], input=json.dumps({"files": [str(source)]}), capture_output=True,
                          text=True, timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout)[str(source)]
    result = validate_paths([str(CONTEXT), str(CASES / "flyte.yaml")])
    ours = {r.step: r for r in build_requests(result.config) if r.pipeline == "flyte-forms"}
    assert list(ours) == list(theirs)
    agree = 0
    for name, task in theirs.items():
        request = ours[name]
        expected = {"step_run": 1}
        if task["cpu"] is not None:
            expected["mcpu"] = math.ceil(Decimal(task["cpu"]) * 1000)
        if task["memory"] is not None:
            expected["memory_mb"] = math.ceil(Decimal(task["memory"]) / 10**6)
        if task["gpu"] not in (None, "0"):
            expected["gpu"] = int(task["gpu"])
        disk = request.settings.disk
        model = task["gpu_model"]
        # flytekit's constants carry GKE device names, flyte 2 its own: the poolc model each is
        # (docs/format.md#flyte-accelerators), written here by hand
        same_model = request.settings.gpu_type == FLYTE_MODELS.get(model, model)
        checks = (request.demand == dict(sorted(expected.items())), request.preemptible == task["interruptible"],
                  (parse_bytes(disk) if disk else None) == (int(Decimal(task["disk"])) if task["disk"] else None),
                  same_model)
        assert all(checks), (name, task, request.demand, request.preemptible, request.settings)
        agree += 1
    with capsys.disabled():
        print(f"\nFlyte tasks vs flytekit/flyte: {agree}/{len(theirs)} tasks agree on demand, disk, GPU model and "
              "preemptibility")
