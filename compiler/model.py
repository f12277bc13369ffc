"""Pydantic models of the five v1 kinds; the JSON Schemas in schemas/ are generated from them.

Models are strict (no "2" -> 2 coercion) and forbid unknown fields, so they agree
with the published schemas: a document the schema accepts, the model accepts, and
the reverse (tests/test_schema_agreement.py checks it on random mutations).
Rules that span documents live in compiler/checks/, not here.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    model_validator,
)

from .units import QUANTITY_PATTERN, mcpu_ceil, memory_mb_floor

MAX_INT = 10**12
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
STEP_NAME = r"^[a-z0-9]([-a-z0-9_]*[a-z0-9])?$"
RESOURCE_KEY = r"^[a-z][a-z0-9_]{0,62}$"
# Keys of a capacity/reserved/limit map in the published schema. "(?![\s\S])" pins
# the end for every regex flavour: Python's "$" alone also matches before a final
# newline, so check-jsonschema would accept "gpu\n" (a YAML block scalar key).
RESOURCE_MAP_KEY = r"^[a-z][a-z0-9_]{0,62}$(?![\s\S])"
LABEL_KEY = (r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
             r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$"
RFC3339 = (r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:"
           r"([0-5][0-9]|60)(\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$")
ROLE_ARN = r"^arn:aws[a-z\-]*:iam::[0-9]{12}:role/.+$"
S3_URI = r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/.*)?$"
AWS_REGION = r"^[a-z]{2}(-[a-z]+)+-[0-9]+$"

Name = Annotated[str, StringConstraints(pattern=DNS_LABEL, max_length=63)]
Quantity = Annotated[str, StringConstraints(pattern=QUANTITY_PATTERN)]
def _integral_float(value: Any) -> Any:
    """JSON Schema counts 1.0 as an integer, so the model does too (but not 1.5)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Count = Annotated[int, Field(ge=0, le=MAX_INT), BeforeValidator(_integral_float)]
PositiveCount = Annotated[int, Field(ge=1, le=MAX_INT), BeforeValidator(_integral_float)]
def _real_date(value: str) -> str:
    """The pattern checks the shape; this rejects dates no calendar has (02-30)."""
    parse_timestamp(value)
    return value


Timestamp = Annotated[str, StringConstraints(pattern=RFC3339), AfterValidator(_real_date), WithJsonSchema(
    {"type": "string", "format": "date-time", "pattern": RFC3339})]
NonEmpty = Annotated[str, StringConstraints(min_length=1)]

_KEY = re.compile(RESOURCE_KEY)
_KEY_FULL = re.compile(r"[a-z][a-z0-9_]{0,62}")


def parse_timestamp(text: str) -> datetime:
    """RFC 3339 to an aware datetime (the schema pattern has already checked the shape)."""
    return datetime.fromisoformat(text.replace("z", "Z").replace("t", "T").replace(" ", "T"))


class Strict(BaseModel):
    """Unknown fields are errors and nothing is coerced; an optional field is
    optional by absence, so an explicit ``null`` is rejected like the schema does."""

    # defer_build: a model is compiled when first used, so a one-file validate
    # pays only for the kinds it reads
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _no_nulls(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, value in data.items():
                if value is None:
                    raise ValueError(f"{key!r} is null; give a value or leave the field out")
        return data


class Metadata(Strict):
    name: Name
    description: str | None = None
    labels: dict[Annotated[str, StringConstraints(pattern=LABEL_KEY, max_length=316)],
                 Annotated[str, StringConstraints(pattern=LABEL_VALUE, max_length=63)]] = {}


class ResourceMap(BaseModel):
    """Integer units per resource key, plus the friendly aliases ``cpu`` (cores) and
    ``memory`` (a quantity), which are converted to ``mcpu`` / ``memory_mb`` on load."""

    model_config = ConfigDict(
        extra="allow", strict=True, frozen=True, defer_build=True,
        json_schema_extra=lambda schema, _: _resource_map_schema(schema),
    )
    __pydantic_extra__: dict[str, Count]

    cpu: Annotated[float, Field(gt=0, le=MAX_INT)] | None = Field(
        default=None, description="Cores, may be fractional; becomes mcpu (rounded up).")
    memory: Quantity | None = Field(
        default=None, description="A quantity such as 500GB or 64Gi; becomes memory_mb (rounded down).")

    @model_validator(mode="before")
    @classmethod
    def _no_nulls(cls, data: Any) -> Any:
        return Strict._no_nulls.__func__(cls, data)

    @model_validator(mode="after")
    def _keys_and_aliases(self) -> ResourceMap:
        for key in self.__pydantic_extra__ or {}:
            if key in ("cpu", "memory") or not _KEY_FULL.fullmatch(key):
                raise ValueError(f"{key!r} is not a resource key ([a-z][a-z0-9_]*, at most 63 characters)")
        extra = self.__pydantic_extra__ or {}
        if self.cpu is not None and "mcpu" in extra:
            raise ValueError("give either cpu or mcpu, not both")
        if self.memory is not None and "memory_mb" in extra:
            raise ValueError("give either memory or memory_mb, not both")
        return self

    def units(self) -> dict[str, int]:
        """Canonical keys only, zero entries dropped (0 means "key absent")."""
        units = dict(self.__pydantic_extra__ or {})
        if self.cpu is not None:
            units["mcpu"] = mcpu_ceil(self.cpu)
        if self.memory is not None:
            units["memory_mb"] = memory_mb_floor(self.memory)
        return {k: v for k, v in sorted(units.items()) if v}


def _resource_map_schema(schema: dict[str, Any]) -> None:
    # cpu and memory are declared properties; every other key is a canonical one
    schema["propertyNames"] = {"pattern": RESOURCE_MAP_KEY}
    schema["additionalProperties"] = {"type": "integer", "minimum": 0, "maximum": MAX_INT}
    schema["not"] = {"anyOf": [{"required": ["cpu", "mcpu"]}, {"required": ["memory", "memory_mb"]}]}


class Spec(Strict):
    """Base of kind specs (kept as a name for readability)."""


# --- ResourcePool ----------------------------------------------------------------

class ResourcePoolSpec(Spec):
    capacity: ResourceMap


# --- Policy ----------------------------------------------------------------------

class PolicySpec(Spec):
    subject: Name = Field(description="Name of a stack component (orchestrator or step operator).")
    pool: Name
    priority: Annotated[int, Field(ge=-1_000_000_000, le=1_000_000_000), BeforeValidator(_integral_float)] = Field(
        default=0, description="Higher wins; becomes a Kubernetes PriorityClass value.")
    reserved: ResourceMap = ResourceMap()
    limit: ResourceMap | None = None


# --- Stack -----------------------------------------------------------------------

class KubernetesComponent(Spec):
    name: Name
    flavor: Literal["kubernetes"]
    namespace: Name = "default"
    image: NonEmpty | None = None
    service_account: Name | None = None


class SageMakerComponent(Spec):
    name: Name
    flavor: Literal["sagemaker"]
    region: Annotated[str, StringConstraints(pattern=AWS_REGION)]
    role_arn: Annotated[str, StringConstraints(pattern=ROLE_ARN)]
    output_s3_uri: Annotated[str, StringConstraints(pattern=S3_URI)]
    image: NonEmpty | None = None
    instance_types: list[Annotated[str, StringConstraints(pattern=r"^ml\.[a-z0-9]+\.[a-z0-9]+$")]] | None = None


Component = Annotated[KubernetesComponent | SageMakerComponent, Field(discriminator="flavor")]


class StackSpec(Spec):
    orchestrator: KubernetesComponent
    step_operators: list[Component] = []


# --- Pipeline --------------------------------------------------------------------

class ResourceSettings(Spec):
    """ZenML's ResourceSettings (zenml 0.95-0.96 field names and meaning)."""

    cpu_count: Annotated[float, Field(gt=0, le=MAX_INT)] | None = None
    memory: Quantity | None = None
    gpu_count: Count | None = None
    gpu_type: NonEmpty | None = None
    disk: Quantity | None = None
    shm: Quantity | Literal["auto"] | None = None
    preemptible: bool | None = None
    pool_resources: dict[Annotated[str, StringConstraints(pattern=RESOURCE_KEY)], PositiveCount] | None = None
    min_replicas: Count | None = None
    max_replicas: Count | None = None
    autoscaling_metric: Literal["cpu", "memory", "concurrency", "rps"] | None = None
    autoscaling_target: Annotated[float, Field(gt=0, le=MAX_INT)] | None = None
    max_concurrency: PositiveCount | None = None

    def merged_over(self, default: ResourceSettings | None) -> ResourceSettings:
        """Field by field, this (the step) wins; pool_resources maps merge key by key."""
        if default is None:
            return self
        fields = {**default.model_dump(exclude_none=True), **self.model_dump(exclude_none=True)}
        if default.pool_resources is not None and self.pool_resources is not None:
            fields["pool_resources"] = {**default.pool_resources, **self.pool_resources}
        return ResourceSettings.model_construct(**fields)  # both sides are validated already


class Settings(Spec):
    resources: ResourceSettings | None = None


class Step(Spec):
    step_operator: Name | None = None
    image: NonEmpty | None = None
    command: list[str] | None = None
    settings: Settings | None = None
    submitted_at: Timestamp | None = None



class PipelineSpec(Spec):
    stack: Name
    settings: Settings | None = None
    steps: dict[Annotated[str, StringConstraints(pattern=STEP_NAME, max_length=63)], Step] = Field(min_length=1)


# --- Allocation ------------------------------------------------------------------

class AllocationSpec(Spec):
    subject: Name
    pool: Name
    preemptible: bool = True
    holds: dict[Annotated[str, StringConstraints(pattern=RESOURCE_KEY)], Count]
    started_at: Timestamp | None = None



# --- Envelopes -------------------------------------------------------------------

class _Envelope(Strict):
    apiVersion: Literal["poolc/v1"]
    metadata: Metadata


class ResourcePool(_Envelope):
    kind: Literal["ResourcePool"]
    spec: ResourcePoolSpec


class Policy(_Envelope):
    kind: Literal["Policy"]
    spec: PolicySpec


class Stack(_Envelope):
    kind: Literal["Stack"]
    spec: StackSpec


class Pipeline(_Envelope):
    kind: Literal["Pipeline"]
    spec: PipelineSpec


class Allocation(_Envelope):
    kind: Literal["Allocation"]
    spec: AllocationSpec


KINDS: dict[str, type[_Envelope]] = {
    "ResourcePool": ResourcePool,
    "Policy": Policy,
    "Stack": Stack,
    "Pipeline": Pipeline,
    "Allocation": Allocation,
}
