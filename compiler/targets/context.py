"""What every target reads: the configuration, the step requests, the planner's
problem, and the policy each step is sent through.

Targets are pure functions of this value, so the CLI can render from a plan (the
policy the plan admitted each step through) or straight from a validated config
(the first eligible policy, in the order the reference reconciler tries them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from .. import __version__
from ..config import Config, Entry
from ..domain.eligibility import eligible_policies
from ..domain.problem import PolicyRule, Problem
from ..inputs import problem_from_config
from ..model import KubernetesComponent, Policy, SageMakerComponent, Stack
from ..requests import StepRequest, build_requests

Component = KubernetesComponent | SageMakerComponent

MANAGED_BY = {"app.kubernetes.io/managed-by": "poolc"}
LABEL_PREFIX = "poolc.dev/"


@dataclass(frozen=True)
class TargetContext:
    config: Config
    requests: tuple[StepRequest, ...]
    problem: Problem
    assignment: Mapping[str, str]  # request id -> policy name; absent = unmanaged or rejected
    version: str = __version__

    @classmethod
    def from_validation(cls, validation, assignment: Mapping[str, str] | None = None) -> TargetContext:
        """Build the context; ``assignment`` (e.g. a plan's allocated policies) wins
        for the requests it names, the others get their first eligible policy."""
        config: Config = validation.config
        requests = tuple(build_requests(config))
        problem = problem_from_config(config, list(requests))
        chosen = default_assignment(problem)
        for request_id, policy in (assignment or {}).items():
            known = {q.name for q in problem.policies}
            if policy not in known:
                raise ValueError(f"assignment of {request_id!r} names unknown policy {policy!r}")
            chosen[request_id] = policy
        return cls(config, requests, problem, dict(sorted(chosen.items())))

    # --- lookups ---------------------------------------------------------------

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

    def component_file(self, name: str) -> str:
        return self.components[name][1].doc.file

    @cached_property
    def policies(self) -> dict[str, PolicyRule]:
        return {q.name: q for q in self.problem.policies}

    def policy_entry(self, name: str) -> Entry[Policy]:
        return self.config.policies[name]

    def policy_of(self, request: StepRequest) -> PolicyRule | None:
        name = self.assignment.get(request.id)
        return self.policies[name] if name else None

    def is_unmanaged(self, request: StepRequest) -> bool:
        """The requester has no policy on any pool: it runs outside every pool."""
        return request.requester is None or not self.problem.policies_of(request.requester)

    def is_rejected(self, request: StepRequest) -> bool:
        """Managed, but no policy can ever admit it (and none was assigned)."""
        return not self.is_unmanaged(request) and request.id not in self.assignment

    def kubernetes_policies(self, pool: str | None = None) -> list[PolicyRule]:
        """Policies whose subject is a Kubernetes component, by name: only these
        reach the cluster (a SageMaker job is not a pod Kueue could admit)."""
        return [q for q in sorted(self.problem.policies, key=lambda q: q.name)
                if isinstance(self.component(q.subject), KubernetesComponent)
                and (pool is None or q.pool == pool)]

    def image_of(self, request: StepRequest) -> str | None:
        step = request.entry.obj.spec.steps[request.step]
        component = self.component(request.requester)
        return step.image or (component.image if component else None)

    def command_of(self, request: StepRequest) -> list[str] | None:
        return request.entry.obj.spec.steps[request.step].command


def default_assignment(problem: Problem) -> dict[str, str]:
    """Each request's first eligible policy (priority desc, then pool name)."""
    chosen: dict[str, str] = {}
    for request in problem.requests:
        eligible, _ = eligible_policies(problem, request)
        if eligible:
            chosen[request.id] = eligible[0].name
    return chosen
