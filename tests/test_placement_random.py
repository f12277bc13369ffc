"""GPU models, node groups and steering on random tiny platforms with two or three GPU
models: the `optimal` strategy against the exhaustive brute force (tests/bruteforce.py,
which writes the placement rules again), and no strategy ever allocating a request on
a pool whose nodes are of another model."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from sweep import blocks

from poolc.domain.problem import Node, PolicyRule, Pool, Problem, Request, Running, start_ranks
from poolc.planner.optimal import solve
from poolc.planner.zenml import solve as solve_zenml

sys.path.insert(0, str(Path(__file__).parent))
import bruteforce  # noqa: E402

# product label values, and gpu_type names that accept some of them (exact or by family)
MODELS = ["NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-SXM4-40GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-L4"]
ASKED = ["A100", "A100-80GB", "H100", "L4", "NVIDIA-A100-SXM4-40GB", "NVIDIA-H100-80GB-HBM3", None]


def random_placement_problem(seed: int) -> Problem:
    """2-3 pools, each of one GPU model (or none said, or no GPUs at all), some with
    node groups; requests with gpu_type, pools and pool_selector; a few running."""
    rng = random.Random(seed)
    models = rng.sample(MODELS, rng.choice([2, 3]))
    pools = []
    for i, name in enumerate(("p1", "p2", "p3")[: rng.choice([2, 3, 3])]):
        kind = rng.random()
        labels = {"zone": rng.choice(["x", "y"])}
        if kind < 0.15:                                   # a CPU pool
            pools.append(Pool(name, {"mcpu": rng.randint(2, 6)}, labels))
            continue
        model = models[i % len(models)]
        cap = {"gpu": rng.randint(2, 4)}
        if rng.random() < 0.5:
            cap["mcpu"] = rng.randint(2, 6)
        nodes: tuple[Node, ...] = ()
        if rng.random() < 0.4:                            # node groups: a step must fit on one node
            per = rng.randint(1, cap["gpu"])
            nodes = (Node("g", {"gpu": per, "mcpu": rng.randint(1, 3), "memory_mb": 10}, model),)
        said = None if rng.random() < 0.15 else frozenset({model})
        pools.append(Pool(name, cap, labels, said, nodes))
    subjects = ["a", "b"][: rng.randint(1, 2)]
    policies = []
    for pool in pools:
        for s in subjects:
            if rng.random() < 0.8 or not policies:
                rsv = {k: rng.randint(0, c) for k, c in pool.capacity.items() if rng.random() < 0.4}
                policies.append(PolicyRule(f"{s}-{pool.name}", s, pool.name, rng.choice([0, 5, 10]),
                                           {k: v for k, v in rsv.items() if v}, dict(pool.capacity)))
    names = [p.name for p in pools]
    shapes = []
    for _ in range(rng.randint(1, 3)):
        demand = {"step_run": 1}
        if rng.random() < 0.8:
            demand["gpu"] = rng.randint(1, 2)
        if rng.random() < 0.4:
            demand["mcpu"] = rng.randint(1, 3)
        gpu_type = rng.choice(ASKED) if "gpu" in demand else None
        prefer = tuple(rng.sample(names, rng.randint(1, len(names)))) if rng.random() < 0.3 else ()
        selector = (("zone", rng.choice(["x", "y"])),) if rng.random() < 0.2 else ()
        shapes.append((rng.choice(subjects), demand, rng.random() < 0.8, gpu_type, prefer, selector))
    ranks = list(range(rng.randint(1, 5)))
    rng.shuffle(ranks)
    requests = []
    for i, rank in enumerate(ranks):
        who, demand, pre, gpu_type, prefer, selector = rng.choice(shapes)
        requests.append(Request(f"pipe/s{i}", who, dict(demand), pre, rank, gpu_type=gpu_type, pools=prefer,
                                pool_selector=selector))
    running = []
    for i in range(rng.randint(0, 2)):
        pool = rng.choice(pools)
        holds = {k: rng.randint(1, c) for k, c in pool.capacity.items()}
        running.append(Running(f"run-{i}", rng.choice(subjects), pool.name, rng.random() < 0.8, holds, None))
    return Problem(tuple(pools), tuple(policies), tuple(requests), tuple(start_ranks(running)))


def wrong_model(problem: Problem, admitted: dict[str, str]) -> list[str]:
    """Requests allocated on a pool whose nodes say another model than the one asked."""
    pools = {p.name: p for p in problem.pools}
    policies = {q.name: q for q in problem.policies}
    found = []
    for request in problem.requests:
        if request.id not in admitted or not request.gpu_type:
            continue
        pool = pools[policies[admitted[request.id]].pool]
        if pool.gpu_models is not None and not any(bruteforce.model_ok(request.gpu_type, m)
                                                   for m in pool.gpu_models):
            found.append(f"{request.id} ({request.gpu_type}) on {pool.name} ({sorted(pool.gpu_models)})")
    return found


@pytest.mark.parametrize("block", blocks(4))
def test_optimal_matches_bruteforce_with_gpu_models_and_steering(block: int) -> None:
    for seed in range(block * 50, block * 50 + 50):
        p = random_placement_problem(seed)
        sol = solve(p)
        preempted = set(sol.preempted)
        assert bruteforce.violations(p, sol.admitted, preempted) == [], seed
        assert bruteforce.vector(p, sol.admitted, preempted) == sol.objective, seed
        assert sol.objective == bruteforce.optimum(p, set(sol.admitted)), seed
        assert wrong_model(p, sol.admitted) == [], seed


def test_the_reference_reconciler_never_places_another_model() -> None:
    for seed in range(200):
        p = random_placement_problem(seed)
        sol = solve_zenml(p)
        assert wrong_model(p, sol.admitted) == [], seed
        assert bruteforce.violations(p, sol.admitted, set(sol.preempted)) == [], seed


def test_the_random_platforms_exercise_every_rule() -> None:
    """The generator is worth its name: across the seeds some request is kept off a
    pool by its model, by its selector, by node size and by being CPU-only, and some
    request's preference reorders its pools."""
    seen = set()
    for seed in range(200):
        p = random_placement_problem(seed)
        for request in p.requests:
            for q in p.policies:
                if q.subject != request.requester:
                    continue
                pool = next(x for x in p.pools if x.name == q.pool)
                if request.gpu_type and pool.gpu_models and not any(
                        bruteforce.model_ok(request.gpu_type, m) for m in pool.gpu_models):
                    seen.add("model")
                if any(pool.labels.get(k) != v for k, v in request.pool_selector):
                    seen.add("selector")
                if pool.nodes and request.demand.get("gpu", 0) > pool.nodes[0].shape["gpu"]:
                    seen.add("node")
            order = [q.pool for q in bruteforce.eligible(p, request)]
            if "gpu" not in request.demand and any(x.capacity.get("gpu", 0) == 0 for x in p.pools):
                seen.add("cpu-only")
            if request.pools and len(order) > 1 and order[0] == request.pools[0]:
                seen.add("preference")
    assert seen == {"model", "selector", "node", "cpu-only", "preference"}
