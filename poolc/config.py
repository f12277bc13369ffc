"""From loaded documents to typed, name-indexed configuration.

Each document is checked against its kind's schema; valid ones become pydantic
objects kept beside the Document they came from, so every later rule can point
back at the user's line and column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pydantic import ValidationError

from . import diagnostics as d
from .diagnostics import Diagnostic
from .domain.amounts import Units, memory_family
from .load import Document
from .model import KINDS, SHARED, Allocation, Pipeline, Policy, ResourcePool, Scenario, Stack
from .schema import structural_diagnostics

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A validated object and the document it was read from."""

    obj: T
    doc: Document

    @property
    def name(self) -> str:
        return self.obj.metadata.name  # type: ignore[attr-defined]


@dataclass
class Config:
    files: list[str] = field(default_factory=list)
    pools: dict[str, Entry[ResourcePool]] = field(default_factory=dict)
    policies: dict[str, Entry[Policy]] = field(default_factory=dict)
    stacks: dict[str, Entry[Stack]] = field(default_factory=dict)
    pipelines: dict[str, Entry[Pipeline]] = field(default_factory=dict)
    allocations: dict[str, Entry[Allocation]] = field(default_factory=dict)
    scenarios: dict[str, Entry[Scenario]] = field(default_factory=dict)   # read by `poolc test` only
    # Documents of a known kind that exist but failed validation: kind -> name ->
    # document. A reference to one of them is not "undefined" (its own error is
    # the one to fix), so the reference checks skip it instead of cascading.
    broken: dict[str, dict[str, Document]] = field(default_factory=dict)

    def is_broken(self, kind: str, name: object) -> bool:
        return isinstance(name, str) and name in self.broken.get(kind, {})

    def names(self, kind: str) -> list[str]:
        """Every name of a kind that exists, valid or broken (for did-you-mean)."""
        return sorted({*self.by_kind(kind), *self.broken.get(kind, {})})

    def by_kind(self, kind: str) -> dict[str, Entry]:
        tables: dict[str, dict[str, Entry]] = {
            "ResourcePool": self.pools, "Policy": self.policies, "Stack": self.stacks,
            "Pipeline": self.pipelines, "Allocation": self.allocations,
            "Scenario": self.scenarios}
        return tables[kind]


def _pydantic_diagnostics(doc: Document, error: ValidationError) -> list[Diagnostic]:
    """Fallback for model rules the schema cannot state (e.g. a real calendar date)."""
    found = []
    for problem in error.errors():
        path = tuple(p for p in problem["loc"] if not (isinstance(p, str) and p in
                                                      ("KubernetesComponent", "SageMakerComponent")))
        message = problem["msg"].removeprefix("Value error, ")
        found.append(doc.diagnostic(d.S003, f"{'.'.join(map(str, path)) or 'document'}: {message}", path))
    return found


def _remember_broken(config: Config, kind: str, doc: Document) -> None:
    metadata = doc.data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if isinstance(name, str):
        config.broken.setdefault(kind, {}).setdefault(name, doc)


class ConfigBuilder:
    """Builds a Config one document at a time, in the order given: equal parts are
    validated once (model.Shared) and a document's plain data is released as soon as
    its model holds it."""

    def __init__(self) -> None:
        self.config = Config()
        self.problems: list[Diagnostic] = []
        self._context: dict = {SHARED: {}}

    def add(self, doc: Document) -> None:
        """Validate one document; keep it by kind and name when valid (first wins)."""
        config, problems = self.config, self.problems
        kind = doc.data.get("kind")
        model = KINDS.get(kind) if isinstance(kind, str) and doc.data.get("apiVersion") == "poolc/v1" else None
        if model is None:
            problems.extend(structural_diagnostics(doc))
            return
        try:
            obj = model.model_validate(doc.data, context=self._context)
        except ValidationError as error:
            found = structural_diagnostics(doc)
            problems.extend(found or _pydantic_diagnostics(doc, error))
            _remember_broken(config, kind, doc)
            return
        if isinstance(obj, Pipeline) and obj.spec.source is not None:
            from .sources.resolve import resolve  # only pipelines that name a source pay for reading one

            resolved = resolve(obj, doc)
            problems.extend(resolved.diagnostics)
            if resolved.pipeline is None or resolved.document is None:
                _remember_broken(config, kind, doc)
                return
            obj, doc = resolved.pipeline, resolved.document
        table = config.by_kind(kind)
        name = obj.metadata.name
        if name in table:
            first = table[name].doc
            problems.append(doc.diagnostic(
                d.N001, f"{kind} {name!r} is already defined at {first.file}:"
                f"{first.span(('metadata', 'name'))[0]}; names are unique per kind",
                ("metadata", "name")))
        else:
            table[name] = Entry(obj, doc)
        doc.release()

    def finish(self, files: list[str]) -> tuple[Config, list[Diagnostic]]:
        """The Config of the files read, and the problems found in their documents."""
        self.config.files = list(files)
        self._context = {SHARED: {}}
        return self.config, self.problems


def build_config(files: list[str], documents: list[Document]) -> tuple[Config, list[Diagnostic]]:
    """Validate every document; keep the valid ones by kind and name (first wins)."""
    builder = ConfigBuilder()
    for doc in documents:
        builder.add(doc)
    return builder.finish(files)


def display_units(config: Config) -> Units:
    """The unit family people read memory in, from how this platform writes it
    (pools' capacities and node groups, policies' reserved shares and limits)."""
    written: list[str | int] = []

    def add(resource_map: object) -> None:
        if resource_map is None:
            return
        memory = getattr(resource_map, "memory", None)
        extra = getattr(resource_map, "__pydantic_extra__", None) or {}
        if memory is not None:
            written.append(str(memory))
        elif "memory_mb" in extra:
            written.append(int(extra["memory_mb"]))

    for _, pool in sorted(config.pools.items()):
        add(pool.obj.spec.capacity)
        written += [str(group.memory) for group in pool.obj.spec.nodes or ()]
    for _, policy in sorted(config.policies.items()):
        add(policy.obj.spec.reserved)
        add(policy.obj.spec.limit)
    return Units(memory_family(written))
