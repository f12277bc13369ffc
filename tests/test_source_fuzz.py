"""The source readers never raise and always answer alike, whatever a project's
modules hold: random projects of a few modules, each a random sequence of the
statements real ZenML and Flyte code is made of (imports between the modules, star
imports, decorators, aliases, configure calls, constants, loops, conditions) and some
that are not (a name bound twice, a circle of imports, broken syntax)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from poolc.sources import flyte, zenml_code

HEAD = ("from zenml import pipeline, step\nfrom zenml.config import ResourceSettings\n"
        "from flytekit import Resources, task, workflow\nimport flyte\n")
STATEMENTS = [
    "from a import *", "from b import train", "from .c import helper", "import a", "import b as bee",
    "from a import G", "from ...far import x", "G = 4", "G = G + 1", "N = G * 2 if G else 1",
    "M = f'{G}GB'", "@step(settings={'resources': ResourceSettings(gpu_count=G)})\ndef train() -> int:\n    return 1",
    "@step\ndef load() -> int:\n    return 1", "train = step(load)", "big = step(settings={})(helper)",
    "train.configure(settings={'resources': {'cpu_count': 2}})",
    "if G:\n    train.configure(settings={})",
    "@pipeline\ndef training() -> None:\n    d = load()\n    train(d)",
    "@pipeline\ndef training() -> None:\n    for i in range(2):\n        train()",
    "@pipeline\ndef training() -> None:\n    if G:\n        train()\n    bee.train()\n    a.load()",
    "tuned = training.with_options(config_path='run.yaml', steps={'train': {'settings': {}}})",
    "tuned2 = tuned.with_options(settings={'resource': 1})",
    "def helper() -> int:\n    train()\n    return 1",
    "env = flyte.TaskEnvironment(name='e', resources=flyte.Resources(cpu=G, memory=M, gpu='A100:1'))",
    "env2 = env.clone_with(name='f', resources=flyte.Resources(gpu='H100:9'))",
    "@env.task\nasync def fit() -> int:\n    return 1", "fit2 = fit.override(resources=flyte.Resources(cpu=1))",
    "@task(requests=Resources(mem='2GB', gpu=G))\ndef t() -> int:\n    return 1",
    "@workflow\ndef wf() -> None:\n    t().with_overrides(requests=Resources(gpu='2'))\n    t()",
    "def (:", "x = ((((((((((1))))))))))", "del G",
]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(STATEMENTS), max_size=8), min_size=1, max_size=3), st.booleans())
def test_the_readers_never_raise_and_answer_alike(tmp_path_factory, modules, package):
    root = tmp_path_factory.mktemp("project")
    (root / ".git").mkdir()
    (root / "run.yaml").write_text("steps:\n  train:\n    settings:\n      resources: {gpu_count: 1}\n",
                                   encoding="utf-8")
    folder = root / "pkg" if package else root
    folder.mkdir(exist_ok=True)
    if package:
        (folder / "__init__.py").write_text("from .a import *\n", encoding="utf-8")
    for name, statements in zip(("a", "b", "c"), modules, strict=False):
        (folder / f"{name}.py").write_text(HEAD + "\n\n".join(statements) + "\n", encoding="utf-8")
    entry = str(folder / "a.py")
    for read in (lambda: zenml_code.read(entry, "training", str(root)),
                 lambda: zenml_code.read(entry, "tuned2", str(root)), lambda: flyte.read(entry, str(root))):
        first, again = read(), read()
        assert [x.as_text() for x in first.diagnostics] == [x.as_text() for x in again.diagnostics]
        assert list(first.steps) == list(again.steps)
        for problem in first.diagnostics:
            assert Path(problem.file).resolve().is_relative_to(root.resolve())
