"""Build the planner's Problem from the validated configuration (no solver here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .config import Config
from .domain.problem import Node, PolicyRule, Pool, Problem, Request, Running, start_ranks
from .model import GPU_PRODUCT_LABEL, MAX_INT, Allocation, KubernetesComponent, ResourcePool, parse_timestamp
from .requests import StepRequest


def _capped(units: dict[str, int]) -> dict[str, int]:
    """A quantity converted past MAX_INT (``memory: 1e23PiB``) is a validation error (P007);
    capped here so the planner, which may still run to show the plan, never overflows."""
    return {k: min(v, MAX_INT) for k, v in units.items()}


def _shared_cap(capped: dict[int, dict[str, int]], units: dict[str, int]) -> dict[str, int]:
    """_capped, once per distinct dict (the caller keeps every ``units`` alive)."""
    found = capped.get(id(units))
    if found is None:
        found = capped[id(units)] = _capped(units)
    return found


def pools_of(config: Config) -> tuple[Pool, ...]:
    return tuple(pool_of(name, entry.obj) for name, entry in sorted(config.pools.items()))


def pool_of(name: str, pool: ResourcePool) -> Pool:
    """A pool's capacity (from its node groups and capacity rows), labels, GPU models and nodes."""
    spec = pool.spec
    pool_model = (spec.node_labels or {}).get(GPU_PRODUCT_LABEL)
    nodes = tuple(Node(g.name, _capped(g.shape()), g.model(pool_model) if g.gpu > 0 else None)
                  for g in spec.nodes or ())
    return Pool(name, _capped(spec.capacity_units()), dict(pool.metadata.labels), spec.gpu_models(), nodes)


def policies_of(config: Config, pools: dict[str, Pool]) -> tuple[PolicyRule, ...]:
    """Policies on known pools, restricted to metered keys; a metered key without a
    limit is capped by the capacity (docs/format.md#policy). A written limit of 0
    stays 0 (the key is forbidden); a reservation of 0 is dropped, because reserving
    nothing is the same as no reservation."""
    rules = []
    for name, entry in sorted(config.policies.items()):
        spec = entry.obj.spec
        pool = pools.get(spec.pool)
        if pool is None:
            continue
        reserved = {k: v for k, v in _capped(spec.reserved.units()).items() if v > 0 and pool.metered(k)}
        given = _capped(spec.limit.units()) if spec.limit is not None else {}
        limit = {k: min(given.get(k, cap), cap) for k, cap in pool.capacity.items()}
        rules.append(PolicyRule(name, spec.subject, spec.pool, spec.priority, reserved, limit))
    return tuple(rules)


def namespaces_of(config: Config) -> dict[str, str]:
    """Kubernetes component (a subject) -> the namespace its Jobs run in."""
    found: dict[str, str] = {}
    for entry in config.stacks.values():
        for component in (entry.obj.spec.orchestrator, *entry.obj.spec.step_operators):
            if isinstance(component, KubernetesComponent):
                found.setdefault(component.name, component.namespace)
    return found


def own_workload(allocation: Allocation, namespaces: Mapping[str, str]) -> str | None:
    """The allocation's Workload when it is in its own subject's namespace (issue #42:
    apply stops only that; another team's Workload is never the allocation's)."""
    workload = allocation.spec.workload
    if workload is None or workload.partition("/")[0] != namespaces.get(allocation.spec.subject):
        return None
    return workload


def running_of(allocations: list[tuple[str, Allocation]],
               namespaces: Mapping[str, str] | None = None) -> tuple[Running, ...]:
    """The running allocations; a Workload outside the subject's namespace (``namespaces``)
    is dropped, so no plan stops it in the allocation's name."""
    running = [Running(name, a.spec.subject, a.spec.pool, a.spec.preemptible,
                       dict(sorted((k, v) for k, v in a.spec.holds.items() if v > 0)),
                       parse_timestamp(a.spec.started_at) if a.spec.started_at else None,
                       workload=own_workload(a, namespaces or {}))
               for name, a in sorted(allocations)]
    return tuple(start_ranks(running))


def request_of(step: StepRequest, rank: int, demand: dict[str, int]) -> Request:
    """A step's request: its demand, and where it may run (docs/format.md#steering)."""
    assert step.requester is not None
    settings = step.settings
    gpu_type = settings.gpu_type if settings.gpu_type and demand.get("gpu") else None
    return Request(step.id, step.requester, demand, step.preemptible, rank, gpu_type=gpu_type,
                   pools=tuple(settings.pools or ()),
                   pool_selector=tuple(sorted((settings.pool_selector or {}).items())))


def problem_from_config(config: Config, requests: list[StepRequest],
                        extra_allocations: Sequence[Allocation] = ()) -> Problem:
    """Requests keep their arrival rank; allocations come from the files and the state."""
    pools = pools_of(config)
    by_name = {p.name: p for p in pools}
    allocations = [(name, e.obj) for name, e in config.allocations.items()]
    allocations += [(a.metadata.name, a) for a in extra_allocations
                    if a.metadata.name not in config.allocations]
    capped: dict[int, dict[str, int]] = {}   # requests share their demand dicts: cap each once
    return Problem(
        pools=pools,
        policies=policies_of(config, by_name),
        requests=tuple(request_of(r, rank, _shared_cap(capped, r.demand))
                       for rank, r in enumerate(requests) if r.requester is not None),
        running=tuple(a for a in running_of(allocations, namespaces_of(config)) if a.pool in by_name),
    )
