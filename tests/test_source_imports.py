"""Edge cases of following a ZenML project's imports (the corpus, tests/test_source_corpus.py,
holds the usual layouts): circles, namespace packages, the ZenML source root, names
bound twice, a module with a syntax error, config_path problems; each read or refused
at its place, never a traceback."""

from __future__ import annotations

from pathlib import Path

from poolc.sources import zenml_code

STEP = ("from zenml import step\nfrom zenml.config import ResourceSettings\n\n"
        "@step(settings={'resources': ResourceSettings(gpu_count=2)})\ndef train() -> int:\n    return 1\n")
PIPELINE = "from zenml import pipeline\n{imports}\n\n@pipeline\ndef training() -> None:\n    train()\n"


def write(root: Path, files: dict[str, str]) -> Path:
    (root / ".git").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def reading(root: Path, entry: str) -> tuple[dict[str, dict], list[str]]:
    found = zenml_code.read(str(root / entry), "training", str(root))
    problems = [f"{Path(x.file).relative_to(root)}:{x.line}:{x.column}: {x.rule} {x.message}"
                for x in found.diagnostics]
    return {name: step.layers[0].fields if step.layers else {} for name, step in found.steps.items()}, problems


def test_a_namespace_package_and_a_circle_of_imports(tmp_path: Path):
    root = write(tmp_path, {
        "ns/steps.py": STEP + "from ns import helpers\n",
        "ns/helpers.py": "from ns.steps import train\n",
        "pipe.py": PIPELINE.format(imports="from ns.helpers import train"),
    })
    assert reading(root, "pipe.py") == ({"train": {"gpu_count": 2}}, [])


def test_the_zenml_source_root_is_searched(tmp_path: Path):
    root = write(tmp_path, {
        "projects/ml/.zen/config.yaml": "",
        "projects/ml/steps/__init__.py": "from .train import train\n",
        "projects/ml/steps/train.py": STEP,
        "projects/ml/pipelines/training.py": PIPELINE.format(imports="from steps import train"),
    })
    assert reading(root, "projects/ml/pipelines/training.py") == ({"train": {"gpu_count": 2}}, [])


def test_a_module_that_is_not_there_is_named(tmp_path: Path):
    root = write(tmp_path, {"pipelines/training.py": PIPELINE.format(imports="from .steps import train")})
    steps, problems = reading(root, "pipelines/training.py")
    assert steps == {} and len(problems) == 1
    assert problems[0].startswith("pipelines/training.py:2:1: C006 train (called in pipeline 'training') cannot be "
                                  "followed: no module .steps in the repository"), problems


def test_a_name_bound_twice_is_refused_where_it_is_bound_again(tmp_path: Path):
    root = write(tmp_path, {
        "steps.py": STEP,
        "pipe.py": PIPELINE.format(imports="from steps import train\ntry:\n    from fast import train\n"
                                   "except ImportError:\n    pass"),
    })
    steps, problems = reading(root, "pipe.py")
    assert steps == {} and len(problems) == 1 and problems[0].startswith("pipe.py:4:5: C007 train is bound more"), \
        problems


def test_a_syntax_error_in_an_imported_module_is_its_own(tmp_path: Path):
    root = write(tmp_path, {"steps.py": "def (:\n", "pipe.py": PIPELINE.format(imports="from steps import train")})
    steps, problems = reading(root, "pipe.py")
    assert steps == {} and len(problems) == 1 and problems[0].startswith("steps.py:1:5: C002 Python syntax error"), \
        problems


def test_config_path_that_is_absolute_or_missing(tmp_path: Path):
    for written, expected in (("/etc/zenml.yaml", "pipe.py:9:41: C006 config_path='/etc/zenml.yaml' is an absolute"),
                              ("configs/missing.yaml", "pipe.py:9:41: C001 config_path='configs/missing.yaml' is "
                               "not found"),
                              ("../../outside.yaml", "pipe.py:9:41: C006 config_path='../../outside.yaml': it is "
                               "outside the repository")):
        root = write(tmp_path / written.replace("/", "_"), {
            "steps.py": STEP,
            "pipe.py": PIPELINE.format(imports="from steps import train") +
            f"\n\nrun = training.with_options(config_path={written!r})\n",
        })
        found = zenml_code.read(str(root / "pipe.py"), "run", str(root))
        problems = [f"{Path(x.file).relative_to(root)}:{x.line}:{x.column}: {x.rule} {x.message}"
                    for x in found.diagnostics]
        assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_a_local_binding_of_a_step_inside_the_pipeline(tmp_path: Path):
    root = write(tmp_path, {
        "steps.py": STEP,
        "pipe.py": "from zenml import pipeline\nfrom zenml.config import ResourceSettings\nfrom steps import train\n"
                   "\n\n@pipeline\ndef training() -> None:\n"
                   "    big = train.with_options(settings={'resources': ResourceSettings(gpu_count=4)})\n"
                   "    big()\n    other = [train][0]\n    other()\n",
    })
    steps, problems = reading(root, "pipe.py")
    assert steps == {} and len(problems) == 1 and problems[0].startswith("pipe.py:10:5: C007 other is bound to a "
                                                                         "step inside the pipeline"), problems


def test_a_plan_error_caused_by_a_value_in_code_points_at_that_value(tmp_path: Path):
    """R003 of a module-level constant points at the constant's literal; R010 of a Flyte
    accelerator at the accelerator: the lines an engineer changes, not the platform's."""
    import shutil

    from poolc.commands.validate import validate_paths

    context = Path(__file__).resolve().parent / "fixtures" / "context" / "platform.yaml"
    root = write(tmp_path, {
        "training.py": "from zenml import pipeline, step\nfrom zenml.config import ResourceSettings\n\nGPUS = 12\n\n"
                       "@step(settings={'resources': ResourceSettings(gpu_count=GPUS)})\ndef train() -> int:\n"
                       "    return 1\n\n@pipeline\ndef training() -> None:\n    train()\n",
        "tasks.py": "from flytekit import Resources, task\nfrom flytekit.extras.accelerators import T4\n\n"
                    "@task(requests=Resources(gpu='1'), accelerator=T4)\ndef serve() -> int:\n    return 1\n",
        "p.yaml": "apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {name: z}\nspec:\n  stack: team-stack\n"
                  "  source: {python: training.py, pipeline: training}\n---\napiVersion: poolc/v1\nkind: Pipeline\n"
                  "metadata: {name: f}\nspec:\n  stack: team-stack\n  source: {flyte: tasks.py}\n",
    })
    shutil.copy(context, root / "platform.yaml")
    found = sorted(f"{Path(x.file).name}:{x.line}:{x.column}: {x.rule}"
                   for x in validate_paths([str(root / "platform.yaml"), str(root / "p.yaml")]).diagnostics)
    assert found == ["tasks.py:4:48: R010", "training.py:4:8: R003"]


def test_a_step_of_a_zenml_integration_is_named_not_dropped(tmp_path: Path):
    """zenml's own API (log_metadata, ...) is no step, but its integrations ship steps
    poolc cannot read: named at the import."""
    root = write(tmp_path, {
        "steps.py": STEP,
        "pipe.py": "from zenml import log_metadata, pipeline\n"
                   "from zenml.integrations.mlflow.steps import mlflow_model_deployer_step\nfrom steps import train\n"
                   "\n\n@pipeline\ndef training() -> None:\n    log_metadata({'a': 1})\n    train()\n"
                   "    mlflow_model_deployer_step()\n",
    })
    steps, problems = reading(root, "pipe.py")
    assert steps == {} and len(problems) == 1
    assert problems[0].startswith("pipe.py:2:1: C006 mlflow_model_deployer_step (called in pipeline 'training') "
                                  "comes from zenml.integrations.mlflow.steps.mlflow_model_deployer_step"), problems


def test_a_config_path_in_code_and_a_zenml_config_in_spec_source_is_refused(tmp_path: Path):
    from poolc.commands.validate import validate_paths

    root = write(tmp_path, {
        "steps.py": STEP,
        "run.yaml": "steps:\n  train:\n    settings:\n      resources: {gpu_count: 4}\n",
        "pipe.py": PIPELINE.format(imports="from steps import train") +
        "\n\nrun = training.with_options(config_path='run.yaml')\n",
        "p.yaml": "apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {name: p}\nspec:\n  stack: team-stack\n"
                  "  source: {python: pipe.py, pipeline: run, zenml_config: run.yaml}\n",
    })
    context = Path(__file__).resolve().parent / "fixtures" / "context" / "platform.yaml"
    found = [x for x in validate_paths([str(context), str(root / "p.yaml")]).diagnostics]
    assert len(found) == 1 and found[0].rule == "C005" and Path(found[0].file).name == "p.yaml", found
    assert "already names its run configuration" in found[0].message


def test_star_imports_of_the_repository_are_followed_and_others_named(tmp_path: Path):
    from poolc.sources import flyte

    root = write(tmp_path, {
        "steps.py": STEP + "\n__all__ = ['train']\n",
        "pipe.py": PIPELINE.format(imports="from steps import *"),
        "other.py": PIPELINE.format(imports="from company_steps import *"),
        "tasks.py": "from flytekit import Resources, task\n\n\n@task(requests=Resources(gpu='1'))\n"
                    "def fit() -> int:\n    return 1\n",
        "wf.py": "from tasks import *\n",
        "wf_out.py": "from company_tasks import *\n",
    })
    assert reading(root, "pipe.py") == ({"train": {"gpu_count": 2}}, [])
    steps, problems = reading(root, "other.py")
    assert steps == {} and problems[0].startswith("other.py:2:1: C006 train (called in pipeline 'training') comes "
                                                  "from company_steps.* (as train)"), problems
    assert list(flyte.read(str(root / "wf.py"), str(root)).steps) == ["fit"]
    found = flyte.read(str(root / "wf_out.py"), str(root))
    assert [x.rule for x in found.diagnostics] == ["C006"] and found.diagnostics[0].line == 1


def test_settings_bound_to_a_module_level_dict_of_another_module(tmp_path: Path):
    root = write(tmp_path, {
        "common.py": "from zenml.config import ResourceSettings\n\nGPU_SETTINGS = {'resources': "
                     "ResourceSettings(gpu_count=4), 'docker': object()}\n",
        "steps.py": "from zenml import step\n\nfrom common import GPU_SETTINGS\n\n\n@step(settings=GPU_SETTINGS)\n"
                    "def train() -> int:\n    return 1\n",
        "pipe.py": PIPELINE.format(imports="from steps import train"),
    })
    found = zenml_code.read(str(root / "pipe.py"), "training", str(root))
    assert found.diagnostics == []
    layer = found.steps["train"].layers[0]
    assert layer.fields == {"gpu_count": 4}
    assert (Path(layer.places[("gpu_count",)].file).name, layer.places[("gpu_count",)].span[0]) == ("common.py", 3)


def test_a_run_script_names_an_imported_pipeline_by_its_zenml_name(tmp_path: Path):
    root = write(tmp_path, {
        "steps.py": STEP,
        "pipelines.py": "from zenml import pipeline\nfrom steps import train\n\n\n"
                        "@pipeline(name='nightly')\ndef nightly_pipeline() -> None:\n    train()\n",
        "run.py": "from pipelines import nightly_pipeline\n\nif __name__ == '__main__':\n    nightly_pipeline()\n",
    })
    found = zenml_code.read(str(root / "run.py"), "nightly", str(root))
    assert found.diagnostics == [] and list(found.steps) == ["train"]


def test_flyte_tasks_made_by_calling_the_decorator(tmp_path: Path):
    from poolc.sources import flyte

    root = write(tmp_path, {
        "tasks.py": "import flyte\nfrom flytekit import Resources, task\n\n"
                    "env = flyte.TaskEnvironment(name='e', resources=flyte.Resources(cpu=2, memory='4Gi'))\n\n\n"
                    "def prepare() -> int:\n    return 1\n\n\ndef fit() -> int:\n    return 1\n\n\n"
                    "async def score() -> int:\n    return 1\n\n\n"
                    "prepare_task = task(prepare)\nfit_task = task(requests=Resources(gpu='2'))(fit)\n"
                    "score_task = env.task(score)\n",
    })
    found = flyte.read(str(root / "tasks.py"), str(root))
    assert found.diagnostics == []
    assert {name: step.layers[0].fields for name, step in found.steps.items()} == {
        "prepare_task": {"preemptible": False}, "fit_task": {"gpu_count": 2, "preemptible": False},
        "score_task": {"cpu_count": 2.0, "memory": "4Gi", "preemptible": False}}


def test_a_flyte_task_defined_under_a_condition_is_refused(tmp_path: Path):
    from poolc.sources import flyte

    root = write(tmp_path, {
        "tasks.py": "import os\n\nfrom flytekit import Resources, task\n\nif os.environ.get('GPU'):\n"
                    "    @task(requests=Resources(gpu='8'))\n    def train() -> int:\n        return 1\n",
    })
    found = flyte.read(str(root / "tasks.py"), str(root))
    assert [(x.rule, x.line) for x in found.diagnostics] == [("C007", 7)] and not found.steps


def test_a_monorepo_package_and_a_src_layout_are_found(tmp_path: Path):
    root = write(tmp_path, {
        "projects/team/mlproj/__init__.py": "",
        "projects/team/mlproj/steps.py": STEP,
        "projects/team/mlproj/pipelines/__init__.py": "",
        "projects/team/mlproj/pipelines/training.py": PIPELINE.format(imports="from mlproj.steps import train"),
        "src/lib/__init__.py": "",
        "src/lib/steps.py": STEP,
        "flows/training.py": PIPELINE.format(imports="from lib.steps import train"),
    })
    assert reading(root, "projects/team/mlproj/pipelines/training.py") == ({"train": {"gpu_count": 2}}, [])
    assert reading(root, "flows/training.py") == ({"train": {"gpu_count": 2}}, [])
