"""`poolc plan --forecast`: small platforms whose forecast is worked out by hand
(docs/forecast.md), with the real planners, the real Kueue replay and the CLI.

Regenerate the golden before/after comment with
``pytest tests/test_forecast.py --update-golden``.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support import cli

from poolc.commands.planning import plan_paths
from poolc.domain.problem import PolicyRule, Pool, Problem, Request, Running, start_ranks
from poolc.forecast import compare
from poolc.forecast.make import forecast_plan
from poolc.forecast.rollforward import _bounded, roll_forward
from poolc.forecast.summary import Forecast
from poolc.planner import optimal

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden" / "forecast"
T0 = "2026-11-20T04:00:00Z"
EPOCH = str(int(datetime(2026, 11, 20, 4, tzinfo=UTC).timestamp()))
H = 3600
WEEK = 7 * 24 * H


def tiers(tmp_path: Path, prod_limit: int = 6, gpus: int = 10) -> Path:
    """docs/examples/tiers.yaml (planning.md's worked example) with durations:
    train 2 h (expected), evaluate 1 h (expected), report 3 h (max_runtime only),
    trial_d 30 min; the three running trials have none (unknown)."""
    text = (REPO / "docs/examples/tiers.yaml").read_text()
    text = text.replace("resources: {gpu_count: 3, preemptible: false}",
                        "resources: {gpu_count: 3, preemptible: false, expected_runtime: 2h}")
    text = text.replace("resources: {gpu_count: 3}", "resources: {gpu_count: 3, expected_runtime: 1h}", 1)
    text = text.replace("resources: {gpu_count: 3}", "resources: {gpu_count: 3, max_runtime: 3h}", 1)
    text = text.replace("resources: {gpu_count: 1}", "resources: {gpu_count: 1, expected_runtime: 30m}")
    text = text.replace("limit: {gpu: 6}", f"limit: {{gpu: {prod_limit}}}")
    text = text.replace("capacity: {gpu: 10}", f"capacity: {{gpu: {gpus}}}\n  price: {{gpu_hour: 2.1}}")
    path = tmp_path / f"tiers-{prod_limit}-{gpus}.yaml"
    path.write_text(text)
    return path


def forecast_of(path: Path, strategy: str = "optimal", horizon: int = WEEK) -> Forecast:
    result = plan_paths([str(path)], state_file=str(path.parent / "none.state.json"), strategy=strategy,
                        runtime_check=False)
    made = forecast_plan(result, horizon=horizon, now=T0)
    assert made.forecast is not None, made.diagnostics
    return made.forecast


def starts(forecast: Forecast) -> dict[tuple[str, bool], int | str | None]:
    return {(s.id, s.preempted): s.start if s.outcome == "started" else s.outcome for s in forecast.steps}


def team(forecast: Forecast, name: str):
    return next(t for t in forecast.teams if t.team == name)


@pytest.mark.parametrize("strategy", ["optimal", "zenml", "kueue"])
def test_worked_example_rolled_forward(tmp_path, strategy):
    """At 04:00 the plan starts train and evaluate and preempts trial-c (planning.md).
    1 h: evaluate ends; prod's limit has room again and 3 GPUs are free: report starts.
    2 h: train ends; 3 GPUs free: trial_d (1 GPU) starts. trial-c is an allocation
    written by hand, of no step: gate mode (optimal, zenml) stops its Workload for
    good, so nothing runs it again; Kueue (the kueue strategy) requeues what it
    evicts, ahead of every request, so it runs again at 2 h too. The trials that run
    have no duration, so they hold their GPUs to the horizon."""
    forecast = forecast_of(tiers(tmp_path), strategy)
    again = 2 * H if strategy == "kueue" else "stopped"
    assert starts(forecast) == {
        ("training/train", False): 0, ("training/evaluate", False): 0, ("training/report", False): H,
        ("sweep/trial_d", False): 2 * H, ("trial-c", True): again}
    assert forecast.drained == 2 * H
    research = team(forecast, "research-orch")
    assert research.gpu_hours_lost == 2.0          # trial-c: 2 GPUs since 03:00, preempted at 04:00
    if strategy == "kueue":
        assert research.gpu_hours_waiting == 2 * 2 + 1 * 2   # trial-c and trial_d wait 2 h each
        # trial-c again (2 GPUs from 2 h to the horizon) and trial_d (1 GPU, 30 min)
        assert research.gpu_hours_admitted == 2 * (168 - 2) + 0.5
    else:
        assert research.gpu_hours_waiting == 1 * 2 and research.gpu_hours_admitted == 0.5
    prod = team(forecast, "prod-orch")
    assert (prod.p50_start, prod.p90_start, prod.drained) == (0, H, H)
    assert prod.gpu_hours_admitted == 3 * 2 + 3 * 1 + 3 * 3 and prod.gpu_hours_waiting == 3
    # prod's reserved 4 GPUs: used fully to 2 h, 3 of 4 from 2 h to 4 h (report), then idle
    idle = {x.policy: x.gpu_hours for x in forecast.idle}
    assert idle == {"prod": 1 * 2 + 4 * 164, "research": 0}
    assert forecast.durations == {"expected_runtime": 3, "max_runtime": 1, "unknown": 3}


PLATFORM = """\
apiVersion: poolc/v1
kind: ResourcePool
metadata: {name: pool-a}
spec:
  capacity: {gpu: 4}
  price: {gpu_hour: 2.5}
---
apiVersion: poolc/v1
kind: ResourcePool
metadata: {name: pool-b}
spec:
  capacity: {gpu: 2}
  price: {gpu_hour: 1, cpu_hour: 0.5}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: team-a}
spec: {subject: orch-a, pool: pool-a, reserved: {gpu: 2}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: team-b}
spec: {subject: orch-b, pool: pool-b, reserved: {gpu: 2}}
---
apiVersion: poolc/v1
kind: Stack
metadata: {name: stack-a}
spec:
  orchestrator: {name: orch-a, flavor: kubernetes, image: "img:1"}
---
apiVersion: poolc/v1
kind: Stack
metadata: {name: stack-b}
spec:
  orchestrator: {name: orch-b, flavor: kubernetes, image: "img:1"}
---
apiVersion: poolc/v1
kind: Pipeline
metadata: {name: a}
spec:
  stack: stack-a
  steps:
    big:
      settings: {resources: {gpu_count: 2, expected_runtime: 1h}}
---
apiVersion: poolc/v1
kind: Pipeline
metadata: {name: b}
spec:
  stack: stack-b
  settings: {resources: {expected_runtime: 1h}}
  steps:
    long:
      settings: {resources: {gpu_count: 1, expected_runtime: 10d}}
    wide:
      settings: {resources: {gpu_count: 2}}
    short:
      settings: {resources: {gpu_count: 1, cpu_count: 2}}
---
apiVersion: poolc/v1
kind: Allocation
metadata: {name: stuck-a}
spec: {subject: orch-a, pool: pool-a, preemptible: false, holds: {gpu: 3}, started_at: "2026-11-20T03:00:00Z"}
"""


def test_never_after_the_horizon_and_money(tmp_path):
    """pool-a: stuck-a (3 of 4 GPUs, non-preemptible, no duration) never ends, so
    a/big (2 GPUs) never starts. pool-b (2 GPUs): b/long (10 d) and b/short (1 h,
    the pipeline's default duration) start now; b/wide needs both GPUs, and the
    only thing that frees one within the week is short, so it waits past the
    horizon (long ends on day 10). Money: stuck-a has no duration, so it is never
    priced to the horizon: 3 GPUs x $2.50 an hour while it runs; team b: long 168
    GPU-h + short 1 GPU-h at $1, and short's 2 cores for 1 h at $0.50 (known work,
    inside the horizon). team-b reserves 2 GPUs: 2 x 168 - 168 - 1 = 167 GPU-h idle, $167."""
    path = tmp_path / "platform.yaml"
    path.write_text(PLATFORM)
    forecast = forecast_of(path)
    assert starts(forecast) == {("a/big", False): "never", ("b/long", False): 0, ("b/short", False): 0,
                                ("b/wide", False): "after-horizon"}
    a, b = team(forecast, "orch-a"), team(forecast, "orch-b")
    assert (a.drained, a.usd, a.gpu_hours_waiting) == ("never", None, 2 * 168)
    assert (a.usd_per_hour_unknown, a.unknown_runs) == (3 * 2.5, 1)
    assert (b.p50_start, b.p90_start, b.drained) == (0, "after-horizon", "after-horizon")
    assert b.usd == 168 + 1 + 2 * 0.5
    assert {x.policy: (x.gpu_hours, x.usd) for x in forecast.idle} == {"team-a": (0, 0.0), "team-b": (167, 167.0)}
    assert forecast.drained == "never"


PREEMPTION = """\
apiVersion: poolc/v1
kind: ResourcePool
metadata: {name: g}
spec: {capacity: {gpu: 4}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: prod}
spec: {subject: prod-orch, pool: g, priority: 100, limit: {gpu: 2}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: research}
spec: {subject: research-orch, pool: g, priority: 10}
---
apiVersion: poolc/v1
kind: Stack
metadata: {name: prod}
spec: {orchestrator: {name: prod-orch, flavor: kubernetes, image: "img:1"}}
---
apiVersion: poolc/v1
kind: Stack
metadata: {name: research}
spec: {orchestrator: {name: research-orch, flavor: kubernetes, image: "img:1"}}
---
apiVersion: poolc/v1
kind: Pipeline
metadata: {name: prod}
spec:
  stack: prod
  steps:
    p1: {settings: {resources: {gpu_count: 1, expected_runtime: 1h}}}
    p2: {settings: {resources: {gpu_count: 2, expected_runtime: 2h}}}
---
apiVersion: poolc/v1
kind: Pipeline
metadata: {name: sweep}
spec:
  stack: research
  steps:
    r1: {settings: {resources: {gpu_count: 2, expected_runtime: 5h}}}
    r2: {settings: {resources: {gpu_count: 1, expected_runtime: 5h}}}
"""


def test_a_preemption_inside_the_forecast(tmp_path):
    """Now: p1 (1 GPU) runs; p2 (2 GPUs) is held by prod's limit of 2; research
    borrows the other 3 GPUs (r1, r2). 1 h: p1 ends, p2 has limit room but one GPU
    is free: the optimal plan preempts one borrower, r2 (1 GPU; it and r1 started
    together, r2 is the later by name). 3 h: p2 ends and r2 runs again."""
    path = tmp_path / "preemption.yaml"
    path.write_text(PREEMPTION)
    forecast = forecast_of(path)
    assert starts(forecast) == {("prod/p1", False): 0, ("prod/p2", False): H, ("sweep/r1", False): 0,
                                ("sweep/r2", False): 0, ("sweep/r2", True): 3 * H}
    again = next(s for s in forecast.steps if s.preempted)
    assert again.since == H
    assert team(forecast, "research-orch").gpu_hours_lost == 1.0


def test_zenml_preempts_inside_the_forecast_too(tmp_path):
    path = tmp_path / "preemption.yaml"
    path.write_text(PREEMPTION)
    forecast = forecast_of(path, "zenml")
    assert starts(forecast)[("prod/p2", False)] == H
    assert any(s.preempted and s.since == H for s in forecast.steps)


def test_forecast_is_byte_identical_across_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    path = tiers(tmp_path)
    outputs = [cli("plan", str(path), "--state", str(tmp_path / "none.json"), "--forecast", "--format", "json",
                   "--horizon", "3d").stdout for _ in range(2)]
    assert outputs[0] == outputs[1]
    data = json.loads(outputs[0])
    assert data["forecast"]["start"] == T0 and data["forecast"]["horizon"] == 3 * 24 * H
    assert {s["id"]: s["start"] for s in data["forecast"]["steps"]}["training/report"] == H
    text = cli("plan", str(path), "--state", str(tmp_path / "none.json"), "--forecast").stdout
    assert "training/report    starts in 1 h; runs 3 h (max_runtime)" in text


def test_markdown_puts_the_forecast_table_near_the_top(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    out = cli("plan", str(tiers(tmp_path)), "--state", str(tmp_path / "none.json"), "--forecast",
              "--format", "markdown").stdout
    lines = out.splitlines()
    assert lines[0].startswith("### poolc plan:")
    assert "#### Forecast" in lines[:8]          # after the headline (and its warning line, if any)
    assert out.index("#### Forecast") < out.index("<details><summary>What the solver")
    assert "| prod-orch | 3 | now | in 1 h | in 1 h |" in out


def test_before_and_after_golden(tmp_path, request):
    """Three more GPUs and prod's limit from 6 to 9: report no longer waits for
    evaluate, it starts now too (7 GPUs free, trial-c still preempted for the
    ninth, and stopped for good: it runs no step); research's trial_d then starts
    when evaluate ends (1 h), 1 GPU-h less waiting. Spend: trial_d (30 min) costs
    the same, earlier: ±$0 in the horizon."""
    before, after = forecast_of(tiers(tmp_path, 6)), forecast_of(tiers(tmp_path, 9, 13))
    rows = {r.team: r for r in compare.compare(before, after)}
    assert rows["prod-orch"].p90 == (H, 0)
    assert rows["prod-orch"].waiting_per_week == -3.0
    assert rows["research-orch"].p50 == (2 * H, H) and rows["research-orch"].waiting_per_week == -1.0
    text = compare.render_markdown(before, after)
    golden = GOLDEN / "before-after.md"
    if request.config.getoption("--update-golden"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text(), "run `pytest tests/test_forecast.py --update-golden` and review the diff"


@pytest.mark.parametrize(("value", "rule"), [("0", "S003"), ("-5", "S003"), ("soon", "S003"), ("2w", "S003"),
                                             ("100000000d", "F001")])
def test_bad_durations_are_diagnostics_with_positions(tmp_path, value, rule):
    path = tiers(tmp_path)
    path.write_text(path.read_text().replace("expected_runtime: 30m", f"expected_runtime: {value}"))
    result = cli("plan", str(path), "--state", str(tmp_path / "none.json"), "--forecast", "--horizon", "1h")
    assert result.exit_code == 1
    line = next(i for i, x in enumerate(path.read_text().splitlines(), 1) if f"expected_runtime: {value}" in x)
    assert f"{path}:{line}:" in result.stderr and f"[{rule}]" in result.stderr
    assert "no forecast" in result.stderr


@pytest.mark.parametrize(("price", "rule"), [(".inf", "Y009"), (".nan", "Y009"), ("-1", "S003"), ("cheap", "S003")])
def test_bad_prices_are_diagnostics_with_positions(tmp_path, price, rule):
    path = tmp_path / "platform.yaml"
    path.write_text(PLATFORM.replace("price: {gpu_hour: 2.5}", f"price: {{gpu_hour: {price}}}"))
    result = cli("plan", str(path), "--state", str(tmp_path / "none.json"), "--forecast")
    assert result.exit_code == 1
    assert f"{path}:6:" in result.stderr and f"[{rule}]" in result.stderr


def test_no_forecast_on_inputs_that_fail_validation(tmp_path):
    path = tmp_path / "platform.yaml"
    path.write_text(PLATFORM.replace("stack: stack-b", "stack: stack-z"))
    result = cli("plan", str(path), "--state", str(tmp_path / "none.json"), "--forecast", "--format", "json")
    assert result.exit_code == 1
    assert "[N002]" in result.stderr and "no forecast: the inputs do not validate" in result.stderr
    assert list(json.loads(result.stdout)) == ["diagnostics"]       # a configuration with errors: no plan, no forecast


def test_a_bad_horizon_is_a_usage_error(tmp_path):
    result = cli("plan", str(tiers(tmp_path)), "--forecast", "--horizon", "a week")
    assert result.exit_code == 2 and "--horizon" in result.stderr


def test_instance_prices_override_and_bad_table(tmp_path):
    table = tmp_path / "prices.csv"
    table.write_text("instance_type,usd_hour\nml.g5.xlarge,nan\n")
    result = cli("plan", str(tiers(tmp_path)), "--state", str(tmp_path / "none.json"), "--forecast",
                 "--instance-prices", str(table))
    assert result.exit_code == 1 and f"{table}:2: usd_hour 'nan'" in result.stderr


def test_sagemaker_steps_are_priced_by_their_instance(tmp_path):
    """examples/: the llm-finetune steps run on SageMaker (pool aws-sagemaker has
    no price). finetune gets ml.p4d.24xlarge, priced from the shipped table; with a
    table that prices every instance type at $10 and then at $20 an hour, the
    team's spend doubles exactly: only the instances are priced."""
    from poolc.domain.catalog import load_catalog
    from poolc.forecast.costs import instance_prices, sagemaker_rate

    result = plan_paths([str(REPO / "examples")], state_file=str(tmp_path / "none.json"), runtime_check=False)
    finetune = next(r for r in result.validation.requests if r.id == "llm-finetune/finetune")
    component = next(c for e in result.validation.config.stacks.values() for c in e.obj.spec.step_operators
                     if c.name == "sagemaker-gpu")
    shipped = {t.name: t.price for t in load_catalog()}
    assert sagemaker_rate(finetune, component, instance_prices()) == ("ml.p4d.24xlarge", shipped["ml.p4d.24xlarge"])
    spend = []
    for usd in (10, 20):
        made = forecast_plan(result, horizon=WEEK, now=T0,
                             instance_price_override={t.name: usd for t in load_catalog()})
        assert made.forecast is not None
        # the spend is the pipeline's team's (llm-finetune: assistant), not the step operator's
        spend.append(team(made.forecast, "assistant").usd)
        assert "sagemaker-gpu" not in {t.team for t in made.forecast.teams if t.usd}
        assert made.forecast.prices["date"] == "2026-11-22"
    assert spend[0] and spend[1] == 2 * spend[0]


def _random_problem(seed: int) -> Problem:
    rng = random.Random(seed)
    pools = [Pool(f"p{i}", {"gpu": rng.randint(2, 6), "step_run": rng.randint(2, 5)}) for i in range(2)]
    policies = [PolicyRule(f"q{s}{p.name}", f"s{s}", p.name, rng.choice((0, 10)),
                           {"gpu": rng.randint(0, 2)} if rng.random() < 0.5 else {}, dict(p.capacity))
                for s in range(2) for p in pools]
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    running = [Running(f"run{i}", f"s{rng.randint(0, 1)}", rng.choice(pools).name, rng.random() < 0.7,
                       {"gpu": rng.randint(1, 2), "step_run": 1}, t0 - timedelta(minutes=rng.randint(1, 60)))
               for i in range(5)]
    requests = [Request(f"x/r{i:02d}", f"s{rng.randint(0, 1)}", {"gpu": rng.choice((1, 2)), "step_run": 1},
                        rng.random() < 0.7, i) for i in range(40)]
    return Problem(tuple(pools), tuple(policies), tuple(requests), tuple(start_ranks(running)))


@pytest.mark.parametrize("seed", range(16))
def test_bounding_classes_does_not_change_the_optimal_plan(seed):
    """The forecast hands the optimal planner only the members of each class that
    could be admitted at once; the real solver decides the same with and without."""
    problem = _random_problem(seed)
    bounded = _bounded(list(problem.requests), problem.pools, list(problem.running), problem)
    assert len(bounded) < len(problem.requests)
    full = optimal.solve(problem)
    small = optimal.solve(Problem(problem.pools, problem.policies, tuple(bounded), problem.running))
    assert (full.admitted, full.preempted) == (small.admitted, small.preempted)


def test_roll_forward_alone_is_deterministic():
    problem = _random_problem(3)
    durations = {r.id: 1800 * (1 + r.rank % 4) for r in problem.requests} | {a.name: 3600 for a in problem.running}
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    runs = [roll_forward(problem, optimal.solve(problem), t0=t0, horizon=WEEK, durations=durations,
                         replan=optimal.solve, bound_classes=True) for _ in range(2)]
    assert [(w.request.id, w.start, w.outcome) for w in runs[0].waits] == \
        [(w.request.id, w.start, w.outcome) for w in runs[1].waits]
    assert any(w.outcome == "started" and w.start for w in runs[0].waits)   # some start only later



@pytest.mark.parametrize("seed", range(4))
def test_bounded_roll_forward_equals_the_unbounded_one(seed):
    """Across every re-plan of a forecast, the cut classes change no start."""
    problem = _random_problem(seed)
    durations = {r.id: 1800 * (1 + r.rank % 4) for r in problem.requests} | {a.name: 2700 for a in problem.running}
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    first = optimal.solve(problem)
    rolled = [roll_forward(problem, first, t0=t0, horizon=WEEK, durations=durations, replan=optimal.solve,
                           bound_classes=bound) for bound in (True, False)]
    assert [(w.request.id, w.since, w.start) for w in rolled[0].waits] == \
        [(w.request.id, w.since, w.start) for w in rolled[1].waits]


def test_the_comment_lists_only_the_latest_waiting_steps(tmp_path):
    from poolc.forecast.render import render_markdown

    forecast = forecast_of(tiers(tmp_path))
    text = render_markdown(forecast, max_steps=2)
    assert "`training/report`" not in text and "`sweep/trial_d`" in text and "`trial-c`" in text
    assert "_3 more waiting steps, starting earlier, not shown" in text


def test_a_running_allocation_started_after_the_forecast_start_is_counted_from_it():
    """A cluster clock ahead of the forecast's start gives a started_at in the
    future: the allocation runs, so it started by now; the work lost when the plan
    preempts it is never negative, and a note says what was assumed."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    pool = Pool("p", {"gpu": 2})
    policies = (PolicyRule("hi", "team-hi", "p", 100, {}, {"gpu": 2}),
                PolicyRule("lo", "team-lo", "p", 0, {}, {"gpu": 2}))
    running = start_ranks([Running("early", "team-lo", "p", True, {"gpu": 2}, t0 + timedelta(hours=1))])
    problem = Problem((pool,), policies, (Request("x/urgent", "team-hi", {"gpu": 2}, True, 0),), tuple(running))
    first = optimal.solve(problem)
    assert "early" in first.preempted
    rolled = roll_forward(problem, first, t0=t0, horizon=WEEK, durations={"x/urgent": 3600, "early": 7200},
                          replan=optimal.solve)
    early = next(r for r in rolled.runs if r.id == "early")
    assert (early.start, early.stopped) == (0, 0)
    assert any("early has started_at after the forecast's start" in n for n in rolled.notes)
