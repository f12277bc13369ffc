"""Issue #42: a fuzz test over source files and saved plans. A seeded random mutator in a
bounded loop changes real corpus sources and a real plan file; poolc may refuse each
with a diagnostic, never with an internal error (exit 3). The fast suite runs a few
dozen cases; `-m slow` runs more seeds."""

from __future__ import annotations

import copy
import json
import random
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from support import cli
from test_source_corpus import CORPUS, PLATFORM, case_data, project

from poolc.commands.validate import validate_paths

CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "case.yaml").is_file())
ODD = ["²", "٣", "9" * 5000, "(" * 300, ")" * 300, " + 1" * 1200, "\x00", "\ufeff", "'''", '"', "\\",
       "@step(", "def ", "class ", "lambda: ", "import ..x", "from . import *", "\n    " * 50, "𝟘", "1e999",
       "__import__('os')", "global x\n", "x := 1", "match x:\n  case 1: pass\n", "async def f(): await g()\n"]


NUMBERS = ["²", "٣", "9" * 5000, "A100:²", "H100:" + "9" * 5000, "-1", "0x10", "1_0", "", "∞"]


def _mutate_text(text: str, rng: random.Random, numbers: bool = False) -> str:
    """``numbers``: one string literal holding a digit (a GPU count, a quantity) made odd."""
    if numbers:
        strings = list(re.finditer(r'"[^"\n]{0,20}[0-9][^"\n]{0,20}"', text))
        if strings:
            found = rng.choice(strings)
            return text[:found.start()] + f'"{rng.choice(NUMBERS)}"' + text[found.end():]
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(text))
        kind = rng.random()
        strings = list(re.finditer(r'"[^"\n]{0,20}"', text))
        if kind < 0.25 and strings:   # a string literal made odd
            found = rng.choice(strings)
            text = text[:found.start()] + f'"{rng.choice(NUMBERS)}"' + text[found.end():]
        elif kind < 0.4:
            text = text[:at] + rng.choice(ODD) + text[at:]
        elif kind < 0.6:
            text = text[:at] + text[at + rng.randint(1, 40):]
        elif kind < 0.8:
            end = min(len(text), at + rng.randint(1, 200))
            text = text[:at] + text[at:end] * rng.randint(2, 20) + text[end:]
        else:
            text = text[:at] + "".join(chr(rng.randint(0, 0x2FFF)) for _ in range(rng.randint(1, 8))) + text[at:]
    return text


def _fuzz_sources(tmp_path: Path, seed: int, count: int) -> None:
    rng = random.Random(seed)
    flyte = [name for name in CASES if case_data(name)["library"] != "zenml"]
    for i in range(count):
        numbers = i % 3 == 0   # every third case: a Flyte project's numbers made odd
        name = rng.choice(flyte if numbers else CASES)
        root = project(name, tmp_path / f"{seed}-{i}")
        files = sorted(p for p in root.rglob("*") if p.suffix in (".py", ".yaml", ".yml") and p.name != "poolc.yaml"
                       and p.name != "case.yaml")
        if not files:
            continue
        target = rng.choice(files)
        target.write_text(_mutate_text(target.read_text(encoding="utf-8"), rng, numbers), encoding="utf-8")
        # in-process: an exception escaping here is what the CLI turns into exit 3
        result = validate_paths([str(PLATFORM), str(root / "poolc.yaml")])
        assert isinstance(result.diagnostics, list), (name, seed, i)
        shutil.rmtree(root)


def test_mutated_sources_never_crash(tmp_path):
    _fuzz_sources(tmp_path, seed=42, count=40)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_mutated_sources_never_crash_more_seeds(tmp_path, seed):
    _fuzz_sources(tmp_path, seed=1000 + seed, count=100)


VALUES: list[Any] = [None, 0, -1, 10**29, -(10**29), 1.5, 1e300, "", "x", "##[error]", "a" * 5000, [], {}, True,
                     [1, "x"], {"a": 1}, {"inputs_digest": "x", "preempted": 2}, "2026-13-45T99:99:99Z"]


def _paths(data: Any, here: tuple = ()) -> list[tuple]:
    found = [here]
    if isinstance(data, dict):
        for key, value in data.items():
            found += _paths(value, here + (key,))
    elif isinstance(data, list):
        for index, value in enumerate(data[:3]):
            found += _paths(value, here + (index,))
    return found


BASES: list[Any] = [{"inputs_digest": "x", "preempted": 2}, {"inputs_digest": "x", "ends": [1]},
                    {"inputs_digest": "x", "policies": [{"name": "p", "admitted": [1e308, 2], "queued": [0, 0],
                                                         "preempted": [0, 0]}]}, 5, {"inputs_digest": 1}]


def _mutate_plan(plan: dict, rng: random.Random, kind: int) -> dict:
    """``kind`` 0: the ``base`` section, 1: a forecast number, else random values at random places."""
    plan = copy.deepcopy(plan)
    if kind == 0:
        plan["base"] = copy.deepcopy(rng.choice(BASES + VALUES))
        return plan
    if kind == 1:
        plan["forecast"][rng.choice(["horizon", "events", "replans"])] = rng.choice([10**400, -(10**40), 10**29])
        return plan
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(_paths(plan)[1:])
        parent = plan
        for part in path[:-1]:
            parent = parent[part]
        if rng.random() < 0.15 and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(VALUES))
    return plan


def _fuzz_plans(seed: int, count: int) -> None:
    assert cli("plan", "examples", "--forecast", "--out", "plan.json").exit_code == 0
    saved = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    rng = random.Random(seed)
    for i in range(count):
        Path("m.json").write_text(json.dumps(_mutate_plan(saved, rng, i % 4)), encoding="utf-8")
        commands = [("show", "m.json"), ("show", "m.json", "--format", "markdown"),
                    ("plan", "examples", "--forecast", "--base", "m.json", "--format", "markdown")]
        if i % 4 == 2:
            commands.append(("apply", "examples", "--output-dir", f"deploy-{i}", "--plan", "m.json"))
        for args in commands:
            result = cli(*args)   # cli() itself asserts no traceback
            assert result.exit_code != 3, (seed, i, args, result.stderr[-500:])


def test_mutated_plan_files_never_crash(platform):
    _fuzz_plans(seed=42, count=30)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_mutated_plan_files_never_crash_more_seeds(platform, seed):
    _fuzz_plans(seed=2000 + seed, count=100)


def test_the_fuzzed_cases_are_real():
    assert len(CASES) >= 30 and all(case_data(name).get("source") for name in CASES)
