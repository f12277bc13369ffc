"""Input size -> CPU seconds of reading `spec.source` files (issue #42: linear to 10 MB).

    python benchmarks/source_read_speed.py [--sizes 10000,100000,1000000,2000000,10000000]

For each shape and size, a repository is generated in a temporary directory (the
corpus platform, a Pipeline document naming the source) and `poolc validate` runs on
it once in a child process; the table is the child's user + system CPU seconds
(resource.getrusage), the peak resident memory of the children so far (ru_maxrss: a
running maximum), and whether poolc read the source or refused it (C002: beyond the
byte, token, node or depth budget, poolc/sources/pysource.py).
The shapes:
  - zenml-steps     N step functions and one pipeline calling each of them
  - zenml-nested    one pipeline whose body nests `if` blocks as deep as the budget allows
                    and then repeats them (what made per-ancestor walks quadratic)
  - flyte-tasks     N flytekit tasks and one workflow calling each of them
  - run-config      a ZenML run configuration (YAML) with N steps' settings
  - expression      a module constant that is one long sum of terms
Figures, not pass/fail: run it on a quiet machine, and say which machine.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLATFORM = REPO / "tests" / "fixtures" / "sources" / "corpus" / "platform.yaml"
POOLC = [sys.executable, "-m", "poolc"]
TIMEOUT = 300   # seconds of wall time per run: a row over it is printed as TIMEOUT

ZENML_HEAD = "from zenml import pipeline, step\nfrom zenml.config import ResourceSettings\n\n"


def zenml_steps(size: int) -> tuple[dict[str, str], str]:
    one = ('@step(settings={{"resources": ResourceSettings(gpu_count=1, cpu_count=2, memory="4GB")}})\n'
           "def step_{i}() -> int:\n    value = {i} * 2\n    return value\n\n\n")
    n = max(1, size // len(one.format(i=10_000)))
    body = "".join(f"    step_{i}()\n" for i in range(n))
    code = ZENML_HEAD + "".join(one.format(i=i) for i in range(n)) + f"@pipeline\ndef training() -> None:\n{body}"
    return {"train.py": code}, "python: train.py, pipeline: training"


def zenml_nested(size: int) -> tuple[dict[str, str], str]:
    depth = 40
    block = "".join("    " * (level + 1) + f"if flag_{level}:\n" for level in range(depth))
    block += "    " * (depth + 1) + "train()\n"
    n = max(1, size // len(block))
    code = (ZENML_HEAD + '@step(settings={"resources": ResourceSettings(gpu_count=1)})\ndef train() -> int:\n'
            "    return 1\n\n\n@pipeline\ndef training() -> None:\n" + block * n)
    return {"train.py": code}, "python: train.py, pipeline: training"


def flyte_tasks(size: int) -> tuple[dict[str, str], str]:
    one = ('@task(requests=Resources(gpu="1", cpu="2", mem="4Gi"))\n'
           "def task_{i}() -> int:\n    return {i}\n\n\n")
    n = max(1, size // len(one.format(i=10_000)))
    body = "".join(f"    task_{i}()\n" for i in range(n))
    code = ("from flytekit import Resources, task, workflow\n\n\n" + "".join(one.format(i=i) for i in range(n))
            + f"@workflow\ndef wf() -> None:\n{body}")
    return {"train.py": code}, "flyte: train.py"


def run_config(size: int) -> tuple[dict[str, str], str]:
    one = ("  step_{i}:\n    enable_cache: false\n    settings:\n      resources:\n"
           "        gpu_count: 1\n        cpu_count: 2\n        memory: 4GB\n")
    n = max(1, size // len(one.format(i=10_000)))
    return {"run.yaml": "steps:\n" + "".join(one.format(i=i) for i in range(n))}, "zenml_config: run.yaml"


def expression(size: int) -> tuple[dict[str, str], str]:
    n = max(1, size // 4)
    code = (ZENML_HEAD + "TOTAL = " + " + ".join(["1"] * n) + "\n\n\n"
            '@step(settings={"resources": ResourceSettings(gpu_count=1)})\ndef train() -> int:\n    return 1\n\n\n'
            "@pipeline\ndef training() -> None:\n    train()\n")
    return {"train.py": code}, "python: train.py, pipeline: training"


SHAPES: dict[str, Callable[[int], tuple[dict[str, str], str]]] = {
    "zenml-steps": zenml_steps, "zenml-nested": zenml_nested, "flyte-tasks": flyte_tasks,
    "run-config": run_config, "expression": expression}


def measure(shape: str, size: int, tmp: Path) -> tuple[int, float, float, str]:
    """(bytes written, CPU s, peak MB, outcome) of one `poolc validate` of the shape."""
    root = tmp / f"{shape}-{size}"
    root.mkdir()
    (root / ".git").mkdir()
    files, source = SHAPES[shape](size)
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    (root / "poolc.yaml").write_text("apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {name: bench}\n"
                                     f"spec:\n  stack: corpus-stack\n  source: {{{source}}}\n", encoding="utf-8")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        done = subprocess.run([*POOLC, "validate", str(PLATFORM), str(root / "poolc.yaml")], capture_output=True,
                              text=True, check=False, cwd=root, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return sum(len(t.encode()) for t in files.values()), float(TIMEOUT), after.ru_maxrss / 1024, "TIMEOUT"
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode == 3 or "Traceback" in done.stderr:
        outcome = "EXIT 3"
    elif "C002" in done.stdout and "does not read this file" in done.stdout:
        outcome = "refused (budget)"
    elif done.returncode == 0:
        outcome = "read"
    else:
        outcome = f"exit {done.returncode}"
    return sum(len(t.encode()) for t in files.values()), cpu, after.ru_maxrss / 1024, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000,2000000,10000000")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    print(f"{'shape':<14} {'bytes':>10} {'CPU s':>8} {'peak MB':>8}  outcome")
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes.split(","):
            for size in sizes:
                written, cpu, peak, outcome = measure(shape, size, Path(tmp))
                print(f"{shape:<14} {written:>10} {cpu:>8.2f} {peak:>8.0f}  {outcome}", flush=True)


if __name__ == "__main__":
    main()
