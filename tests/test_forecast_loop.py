"""The forecast is held to the loop it predicts (docs/forecast.md#how-it-rolls): with
no new arrivals and exact durations, it starts and stops every step exactly when
the reconcile loop does when it plans and applies at every completion.

The loop here is the real one, run in process: `poolc apply` at the start, then at
each completion `poolc state rm` of what finished and `poolc apply` again at that
instant (`--now`), reading only the state file apply writes. The forecast is made
once, from the first plan. Two phases give the loop running steps to start from:
the teams but the first apply an hour and a half before the start, then the first
team's pipeline arrives and both are rolled forward.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sweep import blocks
from test_forecast_schedule import MODELS

from poolc.commands.apply import apply_paths
from poolc.commands.planning import plan_paths
from poolc.commands.state_command import remove
from poolc.domain.naming import step_label
from poolc.forecast.durations import durations_of
from poolc.forecast.make import forecast_plan

T0 = datetime(2026, 11, 20, 4, tzinfo=UTC)
H = 3600
HORIZON = 12 * H
STRATEGIES = ["optimal", "zenml", "kueue"]


def at(seconds: int) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def offset(text: str) -> int:
    """Seconds from the start to an RFC 3339 instant of the state (whole seconds)."""
    when = datetime.fromisoformat(text.replace("Z", "+00:00")).replace(microsecond=0)
    return (when - T0) // timedelta(seconds=1)


def allocations(state: Path) -> dict[str, tuple[str, int]]:
    """Allocation name -> (step label, start in seconds from the start)."""
    data = json.loads(state.read_text())
    return {a["metadata"]["name"]: (a["metadata"]["labels"]["poolc.dev/step"], offset(a["spec"]["started_at"]))
            for a in data["allocations"]}


def reconcile_loop(root: Path, strategy: str) -> tuple[set[tuple[str, int]], set[tuple[str, int]]]:
    """(step id, start) of every run and (step id, when) of every preemption in the loop
    from the start to the horizon, the runs started before it included."""
    state, out = root / "loop.state.json", str(root / "deploy")
    first = plan_paths([str(root / "platform")], state_file=str(state), runtime_check=False)
    steps = {step_label(r.id): r.id for r in first.validation.requests}
    seconds = {step: d.seconds for step, d in durations_of(first.validation.requests).items()}
    starts: set[tuple[str, int]] = set()
    stops: set[tuple[str, int]] = set()
    now = 0
    seen = allocations(state) if state.exists() else {}       # what runs when the loop starts
    starts |= {(steps[label], start) for label, start in seen.values()}
    while True:
        done = apply_paths([str(root / "platform")], out, state_file=str(state), strategy=strategy, now=at(now))
        assert done.refused is None and done.written, done.refused
        running = allocations(state)
        for name, (label, _) in seen.items():
            if name not in running:
                stops.add((steps[label], now))        # gone without finishing: preempted
        seen = running
        starts |= {(steps[label], start) for label, start in running.values()}
        ends = {name: start + seconds[steps[label]] for name, (label, start) in running.items()
                if seconds.get(steps[label]) is not None}
        if not ends:
            break
        now = max(now, min(ends.values()))
        if now > HORIZON:
            break
        finished = sorted(name for name, end in ends.items() if end <= now)
        assert not remove(str(state), finished).refused
        seen = {name: entry for name, entry in seen.items() if name not in finished}
    return starts, stops


def forecast_runs(root: Path, strategy: str) -> tuple[set[tuple[str, int]], set[tuple[str, int]]]:
    result = plan_paths([str(root / "platform")], state_file=str(root / "loop.state.json"), strategy=strategy,
                        runtime_check=False)
    made = forecast_plan(result, horizon=HORIZON, now=at(0))
    assert made.forecast is not None, made.diagnostics
    schedule = made.forecast.schedule
    return ({(r.id, r.start) for r in schedule if r.start <= HORIZON},
            {(r.id, r.preempted_at) for r in schedule if r.preempted_at is not None})


def platform(seed: int) -> tuple[str, str]:
    """(the platform without team a's pipeline, the platform): pools of one GPU
    model each, three teams of mixed priority and reserve, preemptible steps of the
    models their pools offer, each with an expected runtime on a 10-minute grid."""
    rng = random.Random(seed)
    docs = []
    pools: dict[str, tuple[str, int]] = {}
    for p in range(rng.randint(1, 2)):
        model, gpus = rng.choice(sorted(MODELS)), rng.choice([4, 8])
        pools[f"p{p}"] = (model, gpus)
        docs.append(f"kind: ResourcePool\nmetadata: {{name: p{p}}}\nspec:\n  capacity: {{step_run: 12}}\n"
                    f"  nodes:\n    - {{name: n, count: 1, gpu: {gpus}, cpu: 64, memory: 512GB, "
                    f"gpu_type: {MODELS[model]}}}\n")
    prios = dict(zip("abc", rng.sample([10, 50, 100], 3), strict=True))
    for name, (_, gpus) in pools.items():
        left = gpus
        for team in "abc":
            reserve = rng.randint(0, min(2, left))
            left -= reserve
            docs.append(f"kind: Policy\nmetadata: {{name: {team}-{name}}}\nspec: {{subject: {team}-k8s, "
                        f"pool: {name}, priority: {prios[team]}, reserved: {{gpu: {reserve}}}}}\n")
    pipelines = {}
    for team in "abc":
        docs.append(f"kind: Stack\nmetadata: {{name: {team}-stack}}\nspec:\n"
                    f"  orchestrator: {{name: {team}-k8s, flavor: kubernetes, namespace: ml-{team}, image: \"t:1\"}}\n")
        body = ""
        for s in range(rng.randint(2, 5)):
            model = rng.choice(sorted({m for m, _ in pools.values()}))
            body += (f"    s{s}: {{settings: {{resources: {{gpu_count: {rng.randint(1, 4)}, cpu_count: 2, "
                     f"gpu_type: {model}, expected_runtime: {10 * rng.randint(3, 30)}m}}}}}}\n")
        pipelines[team] = f"kind: Pipeline\nmetadata: {{name: {team}}}\nspec:\n  stack: {team}-stack\n  steps:\n{body}"
    head = "---\n".join("apiVersion: poolc/v1\n" + d for d in docs)
    rest = "---\n".join("apiVersion: poolc/v1\n" + pipelines[t] for t in "bc")
    return head + "---\n" + rest, head + "---\n" + rest + "---\napiVersion: poolc/v1\n" + pipelines["a"]


def equal_to_the_loop(root: Path, seed: int, strategy: str) -> bool:
    """Set the platform up (phase one applied 90 minutes before the start), then hold
    the forecast to the loop; whether anything was preempted."""
    before, full = platform(seed)
    (root / "platform").mkdir(parents=True)
    (root / "platform" / "all.yaml").write_text(before, encoding="utf-8")
    apply_paths([str(root / "platform")], str(root / "deploy"), state_file=str(root / "loop.state.json"),
                strategy=strategy, now=at(-90 * 60))
    (root / "platform" / "all.yaml").write_text(full, encoding="utf-8")
    expected = forecast_runs(root, strategy)
    assert reconcile_loop(root, strategy) == expected, f"seed {seed}, {strategy}"
    return bool(expected[1])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_examples_forecast_is_the_loop(tmp_path, strategy):
    """The worked example's platform (docs/planning.md) with durations, every step a
    pipeline's, rolled over 12 hours."""
    root = tmp_path / "tiers"
    (root / "platform").mkdir(parents=True)
    text = (Path(__file__).resolve().parents[1] / "docs/examples/tiers.yaml").read_text()
    text = text.replace("resources: {gpu_count: 3, preemptible: false}",
                        "resources: {gpu_count: 3, preemptible: false, expected_runtime: 2h}")
    text = text.replace("resources: {gpu_count: 3}", "resources: {gpu_count: 3, expected_runtime: 1h}")
    text = text.replace("resources: {gpu_count: 1}", "resources: {gpu_count: 1, expected_runtime: 30m}")
    docs = [d for d in text.split("\n---\n") if "kind: Allocation" not in d]   # no work of no step
    (root / "platform" / "tiers.yaml").write_text("\n---\n".join(docs), encoding="utf-8")
    expected = forecast_runs(root, strategy)           # from an empty state, as the loop starts
    assert reconcile_loop(root, strategy) == expected


@pytest.mark.parametrize("block", blocks(5))
def test_random_platforms_forecast_is_the_loop(tmp_path, block):
    """50 random contended platforms (10 per block), in each strategy: the forecast
    starts and preempts every step at the loop's instants."""
    preempting = 0
    for seed in range(block * 10, block * 10 + 10):
        for strategy in STRATEGIES:
            preempting += equal_to_the_loop(tmp_path / f"{seed}-{strategy}", seed, strategy)
    assert preempting >= 1
