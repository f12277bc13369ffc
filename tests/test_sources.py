"""Pipelines that take their steps from ZenML run configurations, ZenML decorators and
Flyte tasks (spec.source): read statically, merged with ZenML's precedence, and
diagnosed in the file where each value was written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import cli

from poolc.commands.planning import plan_paths
from poolc.commands.validate import validate_paths
from poolc.requests import build_requests
from poolc.sources import flyte, zenml_code, zenml_config

TESTS = Path(__file__).resolve().parent
CONTEXT = TESTS / "fixtures" / "context" / "platform.yaml"
SAME = TESTS / "fixtures" / "sources" / "same"
FORMS = {"poolc.yaml": "written-out", "zenml-config.yaml": "from-run-config", "zenml-code.yaml": "from-zenml-code",
         "flyte.yaml": "from-flyte"}
EXPECTED = [
    ("load_data", "team-k8s", {"mcpu": 2000, "memory_mb": 4000, "step_run": 1}, True, None),
    ("train", "team-k8s", {"gpu": 2, "mcpu": 8000, "memory_mb": 34360, "step_run": 1}, False, "A100-80GB"),
    ("evaluate", "team-gpu-op", {"gpu": 1, "mcpu": 2000, "memory_mb": 4000, "step_run": 1}, True, None),
]


def requests_of(*paths: Path) -> dict[str, list[tuple]]:
    result = validate_paths([str(p) for p in paths])
    assert [x.as_text() for x in result.diagnostics] == []
    found: dict[str, list[tuple]] = {}
    for r in build_requests(result.config):
        found.setdefault(r.pipeline, []).append((r.step, r.requester, r.demand, r.preemptible, r.gpu_product))
    return found


def test_the_same_pipeline_four_ways_gives_identical_requests():
    found = requests_of(CONTEXT, SAME)
    assert set(found) == set(FORMS.values())
    for pipeline in FORMS.values():
        assert found[pipeline] == EXPECTED, pipeline


def test_the_same_pipeline_four_ways_plans_identically():
    plans = {}
    for form in FORMS:
        result = plan_paths([str(CONTEXT), str(SAME / form)], state_file="/nonexistent/poolc.state.json",
                            runtime_check=False)
        assert result.validation.ok, [x.as_text() for x in result.validation.diagnostics]
        plans[form] = [(r.id.split("/", 1)[1], r.requester, dict(r.demand), r.preemptible, r.status, r.pool,
                        dict(r.borrowed)) for r in result.plan.requests]
    assert plans["poolc.yaml"] and all(p == plans["poolc.yaml"] for p in plans.values())
    assert {status for *_, status, _, _ in plans["poolc.yaml"]} == {"allocated"}


def copy_same(tmp_path: Path) -> Path:
    target = tmp_path / "repo"
    shutil.copytree(SAME, target)
    shutil.copy(CONTEXT, target / "platform.yaml")
    return target


def diagnostics(*paths: Path) -> list[str]:
    return [x.as_text() for x in validate_paths([str(p) for p in paths]).diagnostics]


# --- precedence --------------------------------------------------------------------

def test_run_configuration_over_step_decorator_over_pipeline_decorator_and_spec_steps_over_all(tmp_path: Path):
    (tmp_path / "code.py").write_text(
        "from zenml import pipeline, step\nfrom zenml.config import ResourceSettings\n\n"
        "@step(settings={'resources': ResourceSettings(cpu_count=4, gpu_count=1)})\n"
        "def train() -> None: ...\n\n"
        "@pipeline(settings={'resources': ResourceSettings(cpu_count=1, memory='1GB', gpu_count=3)})\n"
        "def p() -> None:\n    train()\n    train.with_options(settings={'resources': {'memory': '2GB'}})()\n",
        encoding="utf-8")
    (tmp_path / "run.yaml").write_text("steps:\n  train_2:\n    settings:\n      resources: {cpu_count: 6}\n",
                                       encoding="utf-8")
    (tmp_path / "p.yaml").write_text(
        "apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {name: p}\nspec:\n  stack: team-stack\n"
        "  source: {python: code.py, pipeline: p, zenml_config: run.yaml}\n"
        "  steps:\n    train: {settings: {resources: {gpu_count: 2}}}\n", encoding="utf-8")
    found = requests_of(CONTEXT, tmp_path / "p.yaml")["p"]
    assert [(step, demand) for step, _, demand, *_ in found] == [
        ("train", {"gpu": 2, "mcpu": 4000, "memory_mb": 1000, "step_run": 1}),      # spec.steps wins
        ("train_2", {"gpu": 1, "mcpu": 6000, "memory_mb": 2000, "step_run": 1}),    # run config, with_options
    ]


# --- diagnostics point into the source ------------------------------------------------

def test_a_gpu_count_above_the_reserve_is_reported_at_the_decorator(tmp_path: Path):
    repo = copy_same(tmp_path)
    code = repo / "training.py"
    code.write_text(code.read_text(encoding="utf-8").replace("gpu_count=2,", "gpu_count=4,"), encoding="utf-8")
    found = diagnostics(repo / "platform.yaml", repo / "zenml-code.yaml")
    assert len(found) == 1
    assert found[0].startswith(f"{repo / 'training.py'}:13:86: error[R004] step 'train' is non-preemptible and "
                               "asks 4 GPU")


def test_an_unknown_step_operator_is_reported_in_the_run_configuration(tmp_path: Path):
    repo = copy_same(tmp_path)
    run = repo / "run.yaml"
    run.write_text(run.read_text(encoding="utf-8").replace("step_operator: team-gpu-op", "step_operator: gpu-op"),
                   encoding="utf-8")
    found = diagnostics(repo / "platform.yaml", repo / "zenml-config.yaml")
    assert len(found) == 1 and found[0].startswith(f"{repo / 'run.yaml'}:20:20: error[K002]"), found


def test_an_unknown_step_operator_in_a_decorator(tmp_path: Path):
    repo = copy_same(tmp_path)
    code = repo / "training.py"
    code.write_text(code.read_text(encoding="utf-8").replace('"team-gpu-op"', '"gpu-op"'), encoding="utf-8")
    found = diagnostics(repo / "platform.yaml", repo / "zenml-code.yaml")
    assert len(found) == 1 and found[0].startswith(f"{repo / 'training.py'}:20:21: error[K002]"), found


# --- bad input: one diagnostic with file, line and column; never a traceback -------

BAD = [
    ("zenml-code.yaml", "training.py", None, "zenml-code.yaml:6:20: error[C001] cannot read training.py"),
    ("zenml-code.yaml", "training.py", "@step(\ndef x(:\n", "training.py:2:1: error[C002] Python syntax error"),
    ("zenml-code.yaml", "training.py",
     "from zenml import step, pipeline\nGPUS = len('ab')\n@step(settings={'resources': {'gpu_count': GPUS}})\n"
     "def a() -> None: ...\n@pipeline\ndef training() -> None:\n    a()\n",
     "training.py:3:44: error[C003] GPUS is not a literal"),
    ("zenml-code.yaml", "training.py",
     "from zenml import step, pipeline\n@step\ndef a() -> None: ...\n@pipeline\ndef training() -> None:\n"
     "    for _ in range(3):\n        a()\n",
     "training.py:6:5: error[C007] step 'a' is called in a loop"),
    ("zenml-code.yaml", "training.py", "from zenml import pipeline\n@pipeline\ndef other() -> None: ...\n",
     "zenml-code.yaml:6:43: error[C004] no ZenML pipeline named 'training' in "),
    ("zenml-config.yaml", "run.yaml", "steps:\n  train:\n    step_operator: true\n",
     "run.yaml:3:20: error[C005] step_operator must name a step operator"),
    ("zenml-config.yaml", "run.yaml", "steps:\n  train:\n    settings:\n      resources: {gpu_cont: 1}\n",
     "run.yaml:4:19: error[S001] gpu_cont: Extra inputs are not permitted"),
    ("zenml-config.yaml", "run.yaml", "steps: [train]\n", "run.yaml:1:8: error[C005] steps must be a mapping"),
    ("zenml-config.yaml", "run.yaml", "steps:\n  train:\n    settings:\n      resource: {gpu_count: 1}\n",
     "run.yaml:4:7: error[C005] settings key 'resource' is not one ZenML takes"),
    ("zenml-code.yaml", "training.py",
     "from zenml import step, pipeline\nfrom zenml.config import ResourceSettings\n"
     "@step(settings={'resources': ResourceSettings(gpu_cont=1)})\n"
     "def a() -> None: ...\n@pipeline\ndef training() -> None:\n    a()\n",
     "training.py:3:47: error[S001] gpu_cont: Extra inputs are not permitted: ResourceSettings has no field "
     "'gpu_cont'; did you mean 'gpu_count'?"),
    ("zenml-code.yaml", "training.py",
     "from zenml import step, pipeline\n@step(setings={'resources': {'gpu_count': 1}})\n"
     "def a() -> None: ...\n@pipeline\ndef training() -> None:\n    a()\n",
     "training.py:2:7: error[C005] setings= is not an argument of ZenML's step decorator (ZenML refuses it when the "
     "module is imported); did you mean 'settings'?"),
    ("zenml-config.yaml", "run.yaml", "steps:\n  train: {x: 1\n", "run.yaml:3:1: error[C002] YAML syntax error"),
    ("flyte.yaml", "tasks.py",
     "from flytekit import task, Resources\nCPU = str(2)\n@task(requests=Resources(cpu=CPU))\n"
     "def evaluate() -> None: ...\n",
     "tasks.py:3:30: error[C003] CPU is not a literal"),
    ("flyte.yaml", "tasks.py",
     "from flytekit import task, Resources\n@task(requests=Resources(gpu='A100:x'))\ndef evaluate() -> None: ...\n",
     "tasks.py:2:30: error[C005] gpu='A100:x'"),
    ("flyte.yaml", "tasks.py", "import os\n", "tasks.py:1:1: error[C004] no Flyte task in this file"),
]


@pytest.mark.parametrize(("pipeline", "source", "text", "expected"), BAD, ids=[e.split("] ")[0] for *_, e in BAD])
def test_bad_source_is_one_diagnostic_at_its_place(tmp_path: Path, pipeline, source, text, expected):
    repo = copy_same(tmp_path)
    if text is None:
        (repo / source).unlink()
    else:
        (repo / source).write_text(text, encoding="utf-8")
    result = cli("validate", "--format", "json", str(repo / "platform.yaml"), str(repo / pipeline))
    assert result.exit_code == 1
    found = [f"{Path(x['file']).name}:{x['line']}:{x['column']}: {x['severity']}[{x['rule']}] {x['message']}"
             for x in json.loads(result.stdout)["diagnostics"]]
    assert len(found) == 1, found
    assert found[0].startswith(expected), found
    again = cli("validate", "--format", "json", str(repo / "platform.yaml"), str(repo / pipeline))
    assert again.stdout == result.stdout      # same input, same bytes


def test_a_source_that_is_a_directory_is_unreadable(tmp_path: Path):
    repo = copy_same(tmp_path)
    (repo / "training.py").unlink()
    (repo / "training.py").mkdir()
    found = diagnostics(repo / "platform.yaml", repo / "zenml-code.yaml")
    assert len(found) == 1 and f"{repo / 'zenml-code.yaml'}:6:20: error[C001] cannot read training.py" in found[0]


def test_user_code_is_never_imported_or_run(tmp_path: Path):
    repo = copy_same(tmp_path)
    marker = tmp_path / "ran"
    for name in ("training.py", "tasks.py"):
        path = repo / name
        path.write_text(f"open({str(marker)!r}, 'w').write('ran')\nimport sys\nsys.exit(3)\n"
                        + path.read_text(encoding="utf-8"), encoding="utf-8")
    result = validate_paths([str(repo)])
    assert not marker.exists()
    assert [x.as_text() for x in result.diagnostics] == []
    assert len(result.config.pipelines) == 4


def test_a_broken_source_does_not_cascade(tmp_path: Path):
    """The pipeline whose source is broken is reported once; a reference to it is not."""
    repo = copy_same(tmp_path)
    (repo / "tasks.py").write_text("def (:\n", encoding="utf-8")
    found = diagnostics(repo)
    assert [x.split(": ", 1)[1].split("]")[0] for x in found] == ["error[C002"]


# --- the front ends ----------------------------------------------------------------

def test_flyte_resources_forms(tmp_path: Path):
    path = tmp_path / "t.py"
    path.write_text(
        "import flyte\nfrom flyte import GPU\nfrom flytekit import task, Resources\n"
        "from flytekit.extras.accelerators import T4\n"
        "env = flyte.TaskEnvironment(name='e', resources=flyte.Resources(cpu=(1, 2), memory='2Gi', "
        "gpu=GPU(device='H100', quantity=4), disk='50Gi', shm='auto'), interruptible=True)\n"
        "@task(limits=Resources(cpu='500m', mem='1024', gpu=1, ephemeral_storage='1G'), accelerator=T4)\n"
        "def a() -> None: ...\n"
        "@task(resources=Resources(cpu=('1', '4'), mem=('1Gi', '2Gi')))\n"
        "def b() -> None: ...\n"
        "@env.task\nasync def c() -> None: ...\n"
        "@env.task(interruptible=False)\ndef d() -> None: ...\n", encoding="utf-8")
    found = flyte.read(str(path))
    assert found.diagnostics == []
    fields = {name: step.layers[0].fields for name, step in found.steps.items()}
    assert fields == {
        "a": {"cpu_count": 0.5, "memory": "1024B", "gpu_count": 1, "disk": "1G", "gpu_type": "T4",
              "preemptible": False},
        "b": {"cpu_count": 1.0, "memory": "1Gi", "preemptible": False},
        "c": {"cpu_count": 1.0, "memory": "2Gi", "gpu_count": 4, "gpu_type": "H100", "disk": "50Gi", "shm": "auto",
              "preemptible": True},
        "d": {"cpu_count": 1.0, "memory": "2Gi", "gpu_count": 4, "gpu_type": "H100", "disk": "50Gi", "shm": "auto",
              "preemptible": False},
    }


def test_zenml_code_invocation_ids_and_aliases(tmp_path: Path):
    path = tmp_path / "p.py"
    path.write_text(
        "import zenml\nfrom zenml.config import ResourceSettings as RS\n"
        "@zenml.step(name='fit')\ndef train(x: int = 0) -> int: return x\n"
        "@zenml.step\ndef load() -> int: return 1\n"
        "big = train.with_options(settings={'resources': RS(gpu_count=4)})\n"
        "@zenml.pipeline(name='nightly', settings={'docker': make_docker()})\n"
        "def p() -> None:\n    train(load())\n    train()\n    big(id='huge')\n    print('not a step')\n",
        encoding="utf-8")
    found = zenml_code.read(str(path), "nightly")
    assert found.diagnostics == []
    assert list(found.steps) == ["load", "fit", "fit_2", "huge"]
    assert found.steps["huge"].layers[0].fields == {"gpu_count": 4}
    assert zenml_code.read(str(path), "p").steps.keys() == found.steps.keys()   # the function's name works too


def test_run_configuration_keys_other_than_resources_are_ignored(tmp_path: Path):
    path = tmp_path / "run.yaml"
    path.write_text("run_name: x\nenable_cache: false\nparameters: {a: 1}\nsettings:\n  docker: {x: 1}\n"
                    "  orchestrator.kubernetes: {pod_settings: {}}\nsteps:\n  a:\n    enable_cache: true\n"
                    "    experiment_tracker: mlflow\n    settings: {docker: {y: 2}}\n", encoding="utf-8")
    found = zenml_config.read(str(path))
    assert found.diagnostics == [] and found.pipeline_layers == []
    assert list(found.steps) == ["a"] and found.steps["a"].layers == []


def test_the_examples_of_format_md_give_the_demands_it_states(tmp_path: Path):
    """docs/format.md#reading-your-zenml-and-flyte-code: its code, run configuration and
    document, run through validate."""
    import re

    text = (TESTS.parent / "docs" / "format.md").read_text(encoding="utf-8")
    section = text[text.index("### Reading your ZenML and Flyte code"):text.index("## Allocation")]
    blocks = [body for _, body in re.findall(r"```(python|yaml)\n(.*?)```", section, re.S)]
    assert len(blocks) == 4
    for name, body in zip(("training.py", "run.yaml", "p.yaml", "tasks.py"), blocks, strict=True):
        (tmp_path / name).write_text(body, encoding="utf-8")
    (tmp_path / "f.yaml").write_text("apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {name: f}\nspec:\n"
                                     "  stack: team-stack\n  source: {flyte: tasks.py}\n", encoding="utf-8")
    found = requests_of(CONTEXT, tmp_path / "p.yaml", tmp_path / "f.yaml")
    assert found == {
        "training": [("train", "team-k8s", {"gpu": 2, "mcpu": 16000, "memory_mb": 34360, "step_run": 1}, False,
                      "A100"),
                     ("evaluate", "team-gpu-op", {"gpu": 1, "mcpu": 2000, "memory_mb": 4000, "step_run": 1}, True,
                      None)],
        "f": [("load_data", "team-k8s", {"mcpu": 2000, "memory_mb": 4000, "step_run": 1}, True, None),
              ("train", "team-k8s", {"gpu": 2, "mcpu": 8000, "memory_mb": 34360, "step_run": 1}, False,
               "A100-80GB")],
    }
    assert "`train` asks `gpu 2, mcpu 16000, memory_mb 34360`, not preemptible" in section


# --- ZenML 0.98 fields in the plan ------------------------------------------------------

def test_a_queued_step_with_a_wait_timeout_gets_a_note(tmp_path: Path):
    path = tmp_path / "p.yaml"
    path.write_text("apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {name: p}\nspec:\n  stack: team-stack\n"
                    "  settings:\n    resources: {gpu_count: 3, allocation_wait_timeout_seconds: 600}\n"
                    "  steps:\n    a: {}\n    b: {}\n    c: {}\n", encoding="utf-8")
    result = plan_paths([str(CONTEXT), str(path)], state_file=str(tmp_path / "state.json"), runtime_check=False)
    by_id = {r.id: r for r in result.plan.requests}
    assert [by_id[f"p/{s}"].status for s in "abc"] == ["allocated", "allocated", "queued"]
    assert by_id["p/c"].message.text.endswith("note: it sets allocation_wait_timeout_seconds=600, so ZenML gives up on "
                                         "it if it waits longer than 600 seconds for capacity")
    assert "allocation_wait_timeout_seconds" not in by_id["p/a"].message.text


def test_gpu_class_in_a_decorator_is_a_warning_at_its_line_and_no_node_selector(tmp_path: Path):
    repo = copy_same(tmp_path)
    code = repo / "training.py"
    code.write_text(code.read_text(encoding="utf-8").replace('reclaim_tolerance="none")', 'reclaim_tolerance="none", '
                                                             'gpu_class="a100-80gb")'), encoding="utf-8")
    result = validate_paths([str(repo / "platform.yaml"), str(repo / "zenml-code.yaml")])
    assert [x.as_text()[:x.as_text().index("]") + 1] for x in result.diagnostics] == [
        f"{repo / 'training.py'}:14:73: warning[R009]"]
    train = next(r for r in build_requests(result.config) if r.step == "train")
    assert (train.settings.gpu_type, train.gpu_product) == ("A100-80GB", "A100-80GB")   # spec.steps, not gpu_class
