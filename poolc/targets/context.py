"""What every target reads: the configuration and the Plan.

The plan says which steps run and through which policy (an allocated step's
policy, a queued step's the one it waits in); the configuration gives what a
manifest needs beyond that (images, commands, namespaces, pools and policies).
Targets are pure functions of this value and never plan again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from .. import __version__
from ..config import Config, Entry
from ..domain.plan import QUEUED, REJECTED, Plan, PlannedRequest
from ..domain.problem import PolicyRule, Pool
from ..inputs import policies_of, pools_of
from ..model import KubernetesComponent, Policy, SageMakerComponent, Stack
from ..requests import StepRequest, build_requests
from ..vocabulary import GATE, SUBMIT_MODES, SubmitMode

Component = KubernetesComponent | SageMakerComponent

MANAGED_BY = {"app.kubernetes.io/managed-by": "poolc"}
LABEL_PREFIX = "poolc.dev/"


@dataclass(frozen=True)
class TargetContext:
    config: Config
    plan: Plan
    requests: tuple[StepRequest, ...]
    pools: tuple[Pool, ...]
    policy_rules: tuple[PolicyRule, ...]
    version: str = __version__
    submit: SubmitMode = GATE
    # what a target renders once per context and reads twice (the runtime check
    # and the files read the same Jobs and Kueue objects): key -> value; not an
    # __init__ field, so a dataclasses.replace copy (another plan) starts empty
    rendered: dict[str, object] = field(default_factory=dict, init=False, compare=False, repr=False)

    @classmethod
    def of(cls, config: Config, plan: Plan, requests: Iterable[StepRequest] | None = None,
           submit: SubmitMode = GATE) -> TargetContext:
        """The context of ``plan``, made from ``config``; ``requests`` are the config's
        step requests when the caller already built them; ``submit``: gate or all."""
        pools = pools_of(config)
        rules = policies_of(config, {p.name: p for p in pools})
        steps = tuple(requests if requests is not None else build_requests(config))
        known = {q.name for q in rules}
        for planned in plan.requests:
            if planned.policy is not None and planned.policy not in known:
                raise ValueError(f"the plan sends {planned.id!r} through policy {planned.policy!r}, "
                                 "which the configuration does not define")
        if submit not in SUBMIT_MODES:
            raise ValueError(f"unknown submit mode {submit!r}; choose one of {', '.join(SUBMIT_MODES)}")
        return cls(config, plan, steps, pools, rules, submit=submit)

    # --- lookups ---------------------------------------------------------------

    @cached_property
    def planned(self) -> dict[str, PlannedRequest]:
        return {r.id: r for r in self.plan.requests}

    @cached_property
    def components(self) -> dict[str, tuple[Component, Entry[Stack]]]:
        """Component name -> (component, first stack listing it, by stack name)."""
        found: dict[str, tuple[Component, Entry[Stack]]] = {}
        for _, entry in sorted(self.config.stacks.items()):
            spec = entry.obj.spec
            for component in [spec.orchestrator, *spec.step_operators]:
                found.setdefault(component.name, (component, entry))
        return found

    def component(self, name: str | None) -> Component | None:
        found = self.components.get(name or "")
        return found[0] if found else None

    def kubernetes_component(self, name: str) -> KubernetesComponent:
        component = self.component(name)
        if not isinstance(component, KubernetesComponent):
            raise ValueError(f"component {name!r} is not a Kubernetes component")
        return component

    def component_file(self, name: str) -> str:
        return self.components[name][1].doc.file

    @cached_property
    def policies(self) -> dict[str, PolicyRule]:
        return {q.name: q for q in self.policy_rules}

    def policy_entry(self, name: str) -> Entry[Policy]:
        return self.config.policies[name]

    def policy_of(self, request: StepRequest) -> PolicyRule | None:
        """The policy the plan sends the step through (None: unmanaged or rejected)."""
        planned = self.planned.get(request.id)
        return self.policies.get(planned.policy) if planned is not None and planned.policy else None

    def is_rejected(self, request: StepRequest) -> bool:
        """The plan says the step can never run (or does not know it)."""
        planned = self.planned.get(request.id)
        return planned is None or planned.status == REJECTED

    def is_queued(self, request: StepRequest) -> bool:
        """The plan lets the step wait (its queue is its policy's)."""
        planned = self.planned.get(request.id)
        return planned is not None and planned.status == QUEUED

    def kubernetes_policies(self, pool: str | None = None) -> list[PolicyRule]:
        """Policies whose subject is a Kubernetes component, by name: only these
        reach the cluster (a SageMaker job is not a pod Kueue could admit)."""
        return [q for q in sorted(self.policy_rules, key=lambda q: q.name)
                if isinstance(self.component(q.subject), KubernetesComponent)
                and (pool is None or q.pool == pool)]

    def image_of(self, request: StepRequest) -> str | None:
        step = request.entry.obj.spec.steps[request.step]
        component = self.component(request.requester)
        return step.image or (component.image if component else None)

    def command_of(self, request: StepRequest) -> list[str] | None:
        return request.entry.obj.spec.steps[request.step].command
