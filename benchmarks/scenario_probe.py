"""Random arrival patterns for examples/: does a mutation move any schedule at all?

`scenario_mutations.py --probe N` asks this of every mutation the suite misses. A
missed mutation that moves no schedule of the suite may still move one under other
arrivals (then a new scenario could catch it); one that moves none of N random
patterns either is, as far as this search sees, equivalent: no arrival of the
examples' steps makes the mutated field decide anything. The patterns are seeded,
so the same N gives the same patterns on every run.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from ruamel.yaml import YAML

from poolc.scenario.command import run_tests

STEPS = ("prod-training/load_data", "prod-training/train_model", "prod-training/evaluate",
         "prod-training/register_model", "llm-finetune/tokenize", "llm-finetune/finetune", "llm-finetune/distill",
         "llm-finetune/quantize_adapter", "llm-finetune/package_model", "research-sweep/sweep_lr_03",
         "research-sweep/sweep_lr_04", "research-sweep/finetune_lora", "research-sweep/export_trt",
         "research-sweep/summarize")
HOURS = (0, 1, 2, 3, 6, 10, 13, 14, 16, 20, 21, 24, 26, 30)   # the files' work ends around 12-21 h


def pattern(name: str, rng: random.Random, start: str, durations: dict[str, str]) -> str:
    """One scenario of 2 to 8 random arrivals (bursts at one instant or spread out),
    with the suite's start and duration estimates, expecting nothing that can fail."""
    lines = ["apiVersion: poolc/v1", "kind: Scenario", f"metadata: {{name: {name}}}", "spec:",
             f"  start: {{time: '{start}'}}", "  horizon: 2d", "  durations:"]
    lines += [f"    {ref}: {value}" for ref, value in durations.items()]
    lines.append("  arrivals:")
    for _ in range(rng.randint(2, 8)):
        at = rng.choice(HOURS) * 3600 + rng.choice((0, 0, 1800))
        step, count = rng.choice(STEPS), rng.choice((1, 1, 2, 3, 4, 6, 10))
        every = rng.choice(("1s", "30m", "1h", "2h"))
        lines.append(f"    - {{at: {at}, step: {step}, every: {every}, count: {count}}}")
    lines += ["  expect:", "    - no_preemption_loop: {max_readmissions: 1000}", ""]
    return "\n".join(lines)


def probe_root(examples: Path, count: int, seed: int = 44) -> Path:
    """A copy of examples/ whose scenarios are ``count`` random patterns (the caller removes it)."""
    yaml = YAML(typ="safe")
    model = yaml.load((examples / "scenarios" / "01-prod-nightly-retrain.yaml").read_text("utf-8"))["spec"]
    root = Path(tempfile.mkdtemp()) / "examples"
    shutil.copytree(examples, root, ignore=shutil.ignore_patterns("scenarios"))
    (root / "scenarios").mkdir()
    rng = random.Random(seed)
    for i in range(count):
        start = model["start"]["time"]   # the YAML reader gives a datetime: back to RFC 3339
        text = pattern(f"random-{i:03}", rng, start.isoformat() if hasattr(start, "isoformat") else str(start),
                       dict(model["durations"]))
        (root / "scenarios" / f"random-{i:03}.yaml").write_text(text, encoding="utf-8")
    return root


def moved(root: Path, before: list, apply: Callable[[Path], None],
          schedules: Callable[[object], list]) -> int | None:
    """How many of the patterns under ``root`` (whose schedules are ``before``) a
    mutation moves; None when the mutated platform does not validate."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "examples"
        shutil.copytree(root, copy)
        apply(copy)
        report = run_tests([str(copy)])
    if report.diagnostics:
        return None
    return sum(1 for a, b in zip(schedules(report), before, strict=True) if a != b)
