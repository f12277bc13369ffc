"""Accuracy of `plan --forecast`: forecasts made each morning against what then happened.

Prints figures, not pass/fail (see benchmarks/README.md):

    python benchmarks/forecast_accuracy.py [--seed 1] [--days 30] [--per-day 120] [--noise 0]

A generated month of arrivals (steps with submitted_at, known durations) on a
three-team, two-pool platform is replayed through the `kueue` strategy in time:
at every arrival and every completion Kueue's scheduler (poolc's simulation of it,
over the Kueue objects and Jobs `apply` writes) admits what it admits. That is
what happened. At the start of each day the forecast is made from the state of
that moment (what runs since when, what waits) with the same strategy, without
knowing later arrivals; each waiting step's forecast start is compared with its
real start. ``--noise S`` lets real durations differ from the ones the forecast
reads (each multiplied by exp(N(0, S)), the forecast reads the unperturbed one).
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from poolc.commands.planning import plan_paths  # noqa: E402
from poolc.domain.problem import Problem, Request, Running, start_ranks  # noqa: E402
from poolc.forecast.rollforward import STARTED, roll_forward  # noqa: E402
from poolc.forecast.strategies import replanner  # noqa: E402

T0 = datetime(2026, 10, 1, tzinfo=UTC)
DAY = 86400
HORIZON = 7 * DAY
PLATFORM = """\
apiVersion: poolc/v1
kind: ResourcePool
metadata: {name: gpu-a}
spec: {capacity: {gpu: 16}}
---
apiVersion: poolc/v1
kind: ResourcePool
metadata: {name: gpu-b}
spec: {capacity: {gpu: 8}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: prod-a}
spec: {subject: prod, pool: gpu-a, priority: 100, reserved: {gpu: 8}, limit: {gpu: 12}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: research-a}
spec: {subject: research, pool: gpu-a, priority: 10, reserved: {gpu: 4}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: batch-b}
spec: {subject: batch, pool: gpu-b, priority: 0, reserved: {gpu: 4}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: research-b}
spec: {subject: research, pool: gpu-b, priority: 10, limit: {gpu: 4}}
"""
TEAMS = {"prod": ((1, 2, 4), (1800, 3600, 7200)), "research": ((1, 2), (3600, 4 * 3600, 8 * 3600)),
         "batch": ((1, 2), (1800, 2 * 3600))}
SHARE = {"prod": 0.3, "research": 0.4, "batch": 0.3}


def stamp(seconds: int) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def generate(rng: random.Random, days: int, per_day: int, out: Path) -> dict[str, tuple[int, int]]:
    """Write the platform with one pipeline per arrival; request id -> (arrival s, duration s)."""
    arrivals: dict[str, tuple[int, int]] = {}
    docs = [PLATFORM]
    for team in TEAMS:
        docs.append(f"apiVersion: poolc/v1\nkind: Stack\nmetadata: {{name: {team}}}\nspec: {{orchestrator: "
                    f"{{name: {team}, flavor: kubernetes, namespace: {team}, image: 'img:1'}}}}\n")
    count = 0
    for day in range(days):
        for _ in range(per_day):
            team = rng.choices(list(SHARE), weights=list(SHARE.values()))[0]
            gpus, durations = TEAMS[team]
            hour = min(23, max(0, int(rng.gauss(13, 4))))   # busier in the afternoon
            at = day * DAY + hour * 3600 + rng.randrange(0, 3600, 60)
            duration = rng.choice(durations)
            name = f"{team}-{count:05d}"
            count += 1
            arrivals[f"{name}/run"] = (at, duration)
            docs.append(f"apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {{name: {name}}}\nspec:\n  stack: {team}\n"
                        f"  steps:\n    run:\n      submitted_at: '{stamp(at)}'\n      settings: {{resources: "
                        f"{{gpu_count: {rng.choice(gpus)}, expected_runtime: {duration}}}}}\n")
    out.write_text("---\n".join(docs))
    return arrivals


class Replay:
    """What happened: arrivals and completions in time, Kueue deciding at each."""

    def __init__(self, problem: Problem, replan, arrivals: dict[str, tuple[int, int]], real: dict[str, int]) -> None:
        self.base = problem
        self.replan = replan
        self.requests = {r.id: r for r in problem.requests}
        self.arrivals = sorted((at, self.requests[rid].rank, rid) for rid, (at, _) in arrivals.items())
        self.real = real
        self.pending: dict[str, Request] = {}
        self.running: dict[str, tuple[Running, int]] = {}       # id -> (allocation, end)
        self.ends: list[tuple[int, str]] = []
        self.starts: dict[str, list[int]] = {}                 # id -> every start (preempted work starts again)
        self.next_arrival = 0

    def problem(self) -> Problem:
        running = start_ranks([a for a, _ in self.running.values()])
        pending = sorted(self.pending.values(), key=lambda r: r.rank)
        return Problem(self.base.pools, self.base.policies, tuple(pending), tuple(running))

    def step(self, now: int) -> None:
        solution = self.replan(self.problem())
        policies = {q.name: q for q in self.base.policies}
        for name in solution.preempted:
            alloc, _ = self.running.pop(name)
            self.pending[name] = self.requests[name]
        for rid, policy in sorted(solution.admitted.items()):
            request = self.pending.pop(rid)
            alloc = Running(rid, request.requester, policies[policy].pool, request.preemptible, request.demand,
                            T0 + timedelta(seconds=now))
            end = now + self.real[rid]
            self.running[rid] = (alloc, end)
            heapq.heappush(self.ends, (end, rid))
            self.starts.setdefault(rid, []).append(now)

    def run_until(self, until: int) -> None:
        """Every event before ``until``, each followed by Kueue's decisions."""
        while True:
            arrival = self.arrivals[self.next_arrival][0] if self.next_arrival < len(self.arrivals) else None
            while self.ends and self.ends[0][1] not in self.running:
                heapq.heappop(self.ends)
            end = self.ends[0][0] if self.ends else None
            now = min(x for x in (arrival, end, until) if x is not None)
            if now >= until:
                return
            while self.next_arrival < len(self.arrivals) and self.arrivals[self.next_arrival][0] == now:
                rid = self.arrivals[self.next_arrival][2]
                self.pending[rid] = self.requests[rid]
                self.next_arrival += 1
            while self.ends and self.ends[0][0] == now:
                _, rid = heapq.heappop(self.ends)
                if rid in self.running and self.running[rid][1] == now:
                    del self.running[rid]
            self.step(now)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(len(ordered) * fraction) - 1)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--per-day", type=int, default=120)
    parser.add_argument("--noise", type=float, default=0.0)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "platform.yaml"
        arrivals = generate(rng, args.days, args.per_day, path)
        result = plan_paths([str(path)], state_file=str(Path(tmp) / "none.json"), strategy="kueue",
                            runtime_check=False)
    replan = replanner(result)
    expected = {rid: d for rid, (_, d) in arrivals.items()}
    real = {rid: max(60, round(d * math.exp(rng.gauss(0, args.noise)))) if args.noise else d
            for rid, d in sorted(expected.items())}
    truth = Replay(result.problem, replan, arrivals, real)
    snapshots = []
    for day in range(args.days + 1):   # the last morning: no arrival is still to come
        truth.run_until(day * DAY)
        problem = truth.problem()
        durations: dict[str, int | None] = dict(expected)
        snapshots.append((day, problem, durations))
        forecast = roll_forward(problem, replan(problem), t0=T0 + timedelta(days=day), horizon=HORIZON,
                                durations=durations, replan=replan)
        snapshots[-1] = (day, {w.request.id: (w.start, w.outcome) for w in forecast.waits if not w.preempted}, None)
    truth.run_until(args.days * DAY + 60 * DAY)
    errors: list[float] = []
    signed: list[float] = []
    last: list[float] = []
    beyond = right_beyond = unstarted = 0
    for day, forecast_starts, _ in snapshots:
        for rid, (start, outcome) in forecast_starts.items():
            actual = next((t - day * DAY for t in truth.starts.get(rid, []) if t >= day * DAY), None)
            if actual is None:
                unstarted += 1
                continue
            if outcome != STARTED:
                beyond += 1
                right_beyond += actual > HORIZON
                continue
            assert start is not None
            if day == args.days:
                last.append(abs(start - actual) / 3600)
                continue
            errors.append(abs(start - actual) / 3600)
            signed.append((start - actual) / 3600)
    print(f"platform: 2 pools (24 GPUs), 3 teams; {len(arrivals)} arrivals over {args.days} days; strategy kueue; "
          f"duration noise {args.noise}")
    print(f"forecasts: {args.days} (one each morning), {len(errors)} forecast starts compared with what happened")
    if errors:
        print(f"absolute error of start times: median {statistics.median(errors):.2f} h, "
              f"p90 {percentile(errors, 0.9):.2f} h, max {max(errors):.2f} h; "
              f"exact (under a minute) {sum(e < 1 / 60 for e in errors) / len(errors):.0%}; forecast minus real: "
              f"median {statistics.median(signed):+.2f} h (negative: later arrivals of higher priority went first)")
    if last:
        print(f"the morning after the last arrival (nothing unknown is still to come): {len(last)} starts, "
              f"median error {statistics.median(last):.2f} h, max {max(last):.2f} h")
    print(f"forecast after the horizon or never: {beyond} ({right_beyond} of them did start after the horizon); "
          f"never started at all: {unstarted}")
    print(f"wall time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
