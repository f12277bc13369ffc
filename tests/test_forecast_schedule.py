"""The forecast is a schedule the cluster could run (docs/forecast.md#the-schedule):
the JSON gives every stretch of work its pool, start and end, and at no instant does
the work holding a pool exceed its capacity or a policy's limit, in any strategy,
with preempted work that runs again. Real plans and forecasts of YAML platforms.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from sweep import blocks

from poolc.commands.planning import PlanResult, plan_paths
from poolc.domain.eligibility import check_placement
from poolc.forecast.make import forecast_plan, steps_of_allocations
from poolc.forecast.summary import Forecast

T0 = "2026-11-20T04:00:00Z"
H = 3600
STRATEGIES = ["optimal", "zenml", "kueue"]
MODELS = {"H100": "NVIDIA-H100-80GB-HBM3", "A100": "NVIDIA-A100-SXM4-80GB", "L4": "NVIDIA-L4"}

DOUBLE_BOOKING = """\
apiVersion: poolc/v1
kind: ResourcePool
metadata: {name: h100}
spec:
  capacity: {step_run: 16}
  nodes:
    - {name: h, count: 1, gpu: 8, cpu: 96, memory: 1024GB, gpu_type: NVIDIA-H100-80GB-HBM3}
---
apiVersion: poolc/v1
kind: ResourcePool
metadata: {name: a100}
spec:
  capacity: {step_run: 16}
  nodes:
    - {name: a, count: 1, gpu: 8, cpu: 96, memory: 1024GB, gpu_type: NVIDIA-A100-SXM4-80GB}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: lo-h100}
spec: {subject: lo-k8s, pool: h100, priority: 100}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: lo-a100}
spec: {subject: lo-k8s, pool: a100, priority: 100}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: hi-h100}
spec: {subject: hi-k8s, pool: h100, priority: 300}
---
apiVersion: poolc/v1
kind: Stack
metadata: {name: lo}
spec: {orchestrator: {name: lo-k8s, flavor: kubernetes, image: "img:1"}}
---
apiVersion: poolc/v1
kind: Stack
metadata: {name: hi}
spec: {orchestrator: {name: hi-k8s, flavor: kubernetes, image: "img:1"}}
---
apiVersion: poolc/v1
kind: Pipeline
metadata: {name: lo}
spec:
  stack: lo
  steps:
    train_h100: {settings: {resources: {gpu_count: 8, cpu_count: 8, memory: 64GB, gpu_type: H100,
                                        expected_runtime: 6h}}}
    export: {settings: {resources: {gpu_count: 1, cpu_count: 1, memory: 8GB, gpu_type: A100,
                                    expected_runtime: 30m}}}
---
apiVersion: poolc/v1
kind: Pipeline
metadata: {name: hi}
spec:
  stack: hi
  steps:
    big: {settings: {resources: {gpu_count: 8, cpu_count: 8, memory: 64GB, gpu_type: H100,
                                 expected_runtime: 10h}}}
---
apiVersion: poolc/v1
kind: Allocation
metadata: {name: train-started-by-hand}
spec:
  step: lo/train_h100
  subject: lo-k8s
  pool: h100
  holds: {gpu: 8, mcpu: 8000, memory_mb: 61035, step_run: 1}
  started_at: 2026-11-20T03:59:00Z
---
apiVersion: poolc/v1
kind: Allocation
metadata: {name: export-started-by-hand}
spec:
  step: lo/export
  subject: lo-k8s
  pool: a100
  holds: {gpu: 1, mcpu: 1000, memory_mb: 7629, step_run: 1}
  started_at: 2026-11-20T03:59:00Z
"""


def plan_and_forecast(root: Path, strategy: str, horizon: int) -> tuple[PlanResult, Forecast]:
    result = plan_paths([str(root)], state_file=str(root / "none.state.json"), strategy=strategy,
                        runtime_check=False)
    made = forecast_plan(result, horizon=horizon, now=T0)
    assert made.forecast is not None, made.diagnostics
    return result, made.forecast


def overbooked(result: PlanResult, forecast: Forecast) -> list[str]:
    """Every instant at which the schedule's work holds more than a pool's capacity
    or a policy's limit, and every stretch of a step on a pool its step may not use."""
    problem = result.problem
    found = []
    instants = sorted({max(r.start, 0) for r in forecast.schedule}
                      | {x for r in forecast.schedule for x in (r.end, r.preempted_at) if x is not None})
    for when in instants:
        holding = [r for r in forecast.schedule if r.holds_at(when)]
        for pool in problem.pools:
            for key, cap in pool.capacity.items():
                used = sum(r.holds.get(key, 0) for r in holding if r.pool == pool.name)
                if used > cap:
                    found.append(f"{when}s: pool {pool.name} holds {key}={used} of {cap}")
        for q in problem.policies:
            for key, limit in q.limit.items():
                used = sum(r.holds.get(key, 0) for r in holding if r.policy == q.name)
                if used > limit:
                    found.append(f"{when}s: policy {q.name} holds {key}={used} over its limit {limit}")
    steps = {t.id: t for t in steps_of_allocations(result).values()}
    for run in forecast.schedule:
        step = steps.get(run.id)
        if step is None or run.policy is None:
            continue
        policy = next(q for q in problem.policies if q.name == run.policy)
        if check_placement(problem.pool(run.pool), policy, step) is not None:
            found.append(f"{run.id} runs on pool {run.pool}, where its step may not run")
    return found


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_preempted_work_waits_for_a_pool_its_step_may_use(tmp_path, strategy):
    """hi/big (priority 300, 8 H100 GPUs, 10 h) preempts lo's train_h100 (8 H100 GPUs);
    30 minutes later export frees the A100 pool, which train_h100 may not use: it
    waits past the 2-hour horizon, and the H100 pool never holds more than 8 GPUs.
    (It used to run again on the A100 pool at 29 minutes: its GPU model was lost when
    it waited again, and the allocation written by hand had no duration.)"""
    (tmp_path / "platform.yaml").write_text(DOUBLE_BOOKING)
    result, forecast = plan_and_forecast(tmp_path, strategy, 2 * H)
    again = {s.id: s for s in forecast.steps if s.preempted}
    assert again["lo/train_h100"].outcome == "after-horizon"
    export = next(r for r in forecast.schedule if r.id == "lo/export")
    assert export.end == 30 * 60 - 60          # started a minute before the forecast, 30 minutes long
    assert [r.pool for r in forecast.schedule if r.id == "lo/train_h100"] == ["h100"]
    assert overbooked(result, forecast) == []


def random_platform(seed: int) -> str:
    """Two or three pools of one GPU model each, three teams with policies of mixed
    priority, reserve and limit, running work (some of it a step's, some written by
    hand) that fits capacity and limits, and preemptible steps of the models their
    team's pools offer, with known or unknown durations, more than fit."""
    rng = random.Random(seed)
    docs = []
    pools: dict[str, tuple[str, int]] = {}
    for p in range(rng.randint(2, 3)):
        model = rng.choice(sorted(MODELS))
        gpus = rng.choice([4, 8])
        pools[f"p{p}"] = (model, gpus)
        docs.append(f"kind: ResourcePool\nmetadata: {{name: p{p}}}\nspec:\n  capacity: {{step_run: 12}}\n"
                    f"  nodes:\n    - {{name: n, count: 1, gpu: {gpus}, cpu: 64, memory: 512GB, "
                    f"gpu_type: {MODELS[model]}}}\n")
    policies: dict[tuple[str, str], tuple[int, int, int]] = {}
    for name, (_, gpus) in pools.items():
        left = gpus
        for team in rng.sample(["a", "b", "c"], rng.randint(2, 3)):
            reserve = rng.randint(0, min(2, left))
            left -= reserve
            limit = rng.randint(max(reserve, 4), gpus) if rng.random() < 0.4 else gpus   # a 4-GPU step fits
            prio = rng.choice([10, 50, 100])
            policies[(team, name)] = (prio, reserve, limit)
            docs.append(f"kind: Policy\nmetadata: {{name: {team}-{name}}}\nspec: {{subject: {team}-k8s, "
                        f"pool: {name}, priority: {prio}, reserved: {{gpu: {reserve}}}, limit: {{gpu: {limit}}}}}\n")
    steps: dict[str, dict[str, tuple[str, str | None]]] = {}   # team -> step -> (settings, gpu_type)
    for team in ("a", "b", "c"):
        docs.append(f"kind: Stack\nmetadata: {{name: {team}-stack}}\nspec:\n"
                    f"  orchestrator: {{name: {team}-k8s, flavor: kubernetes, namespace: ml-{team}, image: \"t:1\"}}\n")
        mine = {}
        if not any(who == team for who, _ in policies):
            continue
        for s in range(rng.randint(2, 5)):
            settings = [f"gpu_count: {rng.randint(1, 4)}", "cpu_count: 2"]
            offered = sorted({pools[name][0] for (who, name) in policies if who == team})
            model = rng.choice(offered) if rng.random() < 0.8 else None   # one its team's pools have
            if model:
                settings.append(f"gpu_type: {model}")
            if rng.random() < 0.85:
                settings.append(f"expected_runtime: {rng.choice(['20m', '45m', '1h', '2h', '5h'])}")
            mine[f"s{s}"] = ("{" + ", ".join(settings) + "}", model)
        steps[team] = mine
    used = dict.fromkeys(pools, 0)
    held: dict[tuple[str, str], int] = {}
    by_hand = 0
    taken: set[str] = set()
    for i in range(rng.randint(2, 6)):
        team, name = rng.choice(sorted(policies))
        _, _, limit = policies[(team, name)]
        gpu = rng.randint(1, 3)
        if used[name] + gpu > pools[name][1] or held.get((team, name), 0) + gpu > limit:
            continue
        used[name] += gpu
        held[(team, name)] = held.get((team, name), 0) + gpu
        step = ""
        free = sorted(c for c, (_, model) in steps.get(team, {}).items()
                      if f"{team}/{c}" not in taken and model in (None, pools[name][0]))
        if free and rng.random() < 0.5:     # a step of its team's pipeline, running already
            choice = rng.choice(free)
            taken.add(f"{team}/{choice}")
            step = f"step: {team}/{choice}, "
        else:
            by_hand += 1
        docs.append(f"kind: Allocation\nmetadata: {{name: run-{i}}}\nspec: {{{step}subject: {team}-k8s, "
                    f"pool: {name}, holds: {{gpu: {gpu}, mcpu: 2000, step_run: 1}}, "
                    f"started_at: \"2026-11-20T0{rng.randint(0, 3)}:00:00Z\"}}\n")
    for team, mine in sorted(steps.items()):
        body = "".join(f"    {s}: {{settings: {{resources: {settings}}}}}\n" for s, (settings, _) in mine.items())
        if mine:
            docs.append(f"kind: Pipeline\nmetadata: {{name: {team}}}\nspec:\n  stack: {team}-stack\n  steps:\n{body}")
    return "---\n".join("apiVersion: poolc/v1\n" + doc for doc in docs)


@pytest.mark.parametrize("block", blocks(4))
def test_random_schedules_never_exceed_a_pool_or_a_limit(tmp_path, block):
    """60 random platforms (15 per block) in each strategy, over a day: no instant of
    any forecast holds more than a pool's capacity or a policy's limit, and no step
    runs on a pool its GPU model rules out; enough of them preempt work that runs
    again for the property to mean something."""
    again = preempted = 0
    for seed in range(block * 15, block * 15 + 15):
        root = tmp_path / f"s{seed}"
        root.mkdir()
        (root / "platform.yaml").write_text(random_platform(seed), encoding="utf-8")
        for strategy in STRATEGIES:
            result, forecast = plan_and_forecast(root, strategy, 24 * H)
            assert overbooked(result, forecast) == [], f"seed {seed}, {strategy}"
            preempted += any(r.preempted_at is not None for r in forecast.schedule)
            again += any(s.preempted and s.outcome == "started" for s in forecast.steps)
    assert preempted >= 3 and again >= 1, (preempted, again)
