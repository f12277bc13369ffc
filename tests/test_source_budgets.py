"""Issue #42: source readers have byte, node and depth budgets like the YAML reader's,
and no value written in a source makes poolc exit 3."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_source_corpus import PLATFORM

from poolc.commands.validate import validate_paths

# poolc.sources.pysource's budgets, written again (a test of the old code must import)
MAX_SOURCE_BYTES, MAX_SOURCE_NODES, MAX_SOURCE_DEPTH = 2 * 1024 * 1024, 250_000, 200

FLYTEKIT = """from flytekit import Resources, task, workflow


@task(requests=Resources(gpu={gpu}))
def train() -> int:
    return 1


@workflow
def wf() -> int:
    return train()
"""

ZENML = """from zenml import pipeline, step
from zenml.config import ResourceSettings

GPUS = {expression}


@step(settings={{"resources": ResourceSettings(gpu_count=1)}})
def train() -> int:
    return 1


@pipeline
def training() -> None:
    train()
"""


def _validate(tmp_path: Path, code: str, source: str) -> list:
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".git").mkdir()
    (root / "train.py").write_text(code, encoding="utf-8")
    (root / "poolc.yaml").write_text("apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {name: budget}\n"
                                     f"spec:\n  stack: corpus-stack\n  source: {{{source}}}\n", encoding="utf-8")
    return validate_paths([str(PLATFORM), str(root / "poolc.yaml")]).diagnostics


@pytest.mark.parametrize("gpu", ['"²"', '"9" * 1', '"' + "9" * 5000 + '"', '"٣"'])
def test_a_flytekit_gpu_string_no_int_reads_is_a_diagnostic(tmp_path, gpu):
    found = _validate(tmp_path, FLYTEKIT.format(gpu=gpu), "flyte: train.py")
    if gpu == '"9" * 1':
        return   # an expression, read or refused: only that it does not crash
    errors = [x for x in found if x.severity == "error"]
    assert errors and any("gpu=" in x.message for x in errors), found


def test_a_1100_term_expression_is_refused_not_exit_3(tmp_path):
    expression = " + ".join(["1"] * 1100)
    found = _validate(tmp_path, ZENML.format(expression=expression), "python: train.py, pipeline: training")
    assert any(x.rule == "C002" and f"deeper than {MAX_SOURCE_DEPTH}" in x.message for x in found), found


def test_a_file_over_the_byte_budget_is_refused_before_it_is_parsed(tmp_path):
    code = ZENML.format(expression="1") + "#" * (MAX_SOURCE_BYTES + 1) + "\n"
    found = _validate(tmp_path, code, "python: train.py, pipeline: training")
    assert any(x.rule == "C002" and f"larger than {MAX_SOURCE_BYTES} bytes" in x.message for x in found), found


def test_a_file_over_the_node_budget_is_refused_before_its_tree_is_built(tmp_path):
    code = ZENML.format(expression="[" + "x," * MAX_SOURCE_NODES + "]")
    found = _validate(tmp_path, code, "python: train.py, pipeline: training")
    assert any(x.rule == "C002" and "tokens" in x.message for x in found), found


def test_a_5000_digit_literal_is_a_syntax_diagnostic(tmp_path):
    found = _validate(tmp_path, ZENML.format(expression="9" * 5000), "python: train.py, pipeline: training")
    assert any(x.rule == "C002" for x in found), found


def test_a_400_kb_run_configuration_is_read_in_linear_time(tmp_path):
    """The red team's 391 KB run configuration took over 84 CPU s (every span scanned once
    per step); read once per layer it takes a few seconds. The bound is 20 times that."""
    import subprocess
    import sys

    one = ("  step_{i}:\n    enable_cache: false\n    settings:\n      resources:\n"
           "        gpu_count: 1\n        cpu_count: 2\n        memory: 4GB\n")
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".git").mkdir()
    (root / "run.yaml").write_text("steps:\n" + "".join(one.format(i=i) for i in range(3500)), encoding="utf-8")
    assert (root / "run.yaml").stat().st_size > 390_000
    (root / "poolc.yaml").write_text("apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {name: big}\n"
                                     "spec:\n  stack: corpus-stack\n  source: {zenml_config: run.yaml}\n",
                                     encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "poolc", "validate", str(PLATFORM), str(root / "poolc.yaml")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
