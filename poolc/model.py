"""Pydantic models of the six v1 kinds; the JSON Schemas in schemas/ are generated from them.

Models are strict (no "2" -> 2 coercion) and forbid unknown fields, so they agree
with the published schemas: a document the schema accepts, the model accepts, and
the reverse (tests/test_schema_agreement.py checks it on random mutations).
Rules that span documents live in poolc/checks/, not here.
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
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WithJsonSchema,
    model_validator,
)

from . import vocabulary
from .units import DURATION_PATTERN, QUANTITY_PATTERN, mcpu_ceil, memory_mb_floor

MAX_INT = 10**12
# The node label of a GPU model (NVIDIA GPU feature discovery's), also in domain/gpu_models.py.
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
STEP_NAME = r"^[a-z0-9]([-a-z0-9_]*[a-z0-9])?$"
STEP_ID = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9_]*[a-z0-9])?$"
RESOURCE_KEY = r"^[a-z][a-z0-9_]{0,62}$"
# a namespaced Kubernetes object: <DNS-1123 label>/<DNS-1123 subdomain>
WORKLOAD_REF = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?$"
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
    name: Name = Field(description="The document's name: a DNS-1123 label (lower-case letters, digits and '-', "
                       "at most 63 characters), unique per kind across all files given to one command.")
    description: str | None = Field(default=None, description="Free text for people; poolc ignores it.")
    labels: dict[Annotated[str, StringConstraints(pattern=LABEL_KEY, max_length=316)],
                 Annotated[str, StringConstraints(pattern=LABEL_VALUE, max_length=63)]] = Field(
        default={}, description="Kubernetes-style labels (key: value); poolc does not interpret them.")


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
        """Canonical keys only, sorted. A written 0 stays: it is a real zero (a
        capacity that admits nothing, a limit that forbids the key), and only a key
        that is not written is absent; users write 0 to say "none", never "unbounded"."""
        units = dict(self.__pydantic_extra__ or {})
        if self.cpu is not None:
            units["mcpu"] = mcpu_ceil(self.cpu)
        if self.memory is not None:
            units["memory_mb"] = memory_mb_floor(self.memory)
        return dict(sorted(units.items()))


def _resource_map_schema(schema: dict[str, Any]) -> None:
    # cpu and memory are declared properties; every other key is a canonical one
    schema["propertyNames"] = {"pattern": RESOURCE_MAP_KEY}
    schema["additionalProperties"] = {"type": "integer", "minimum": 0, "maximum": MAX_INT}
    schema["not"] = {"anyOf": [{"required": ["cpu", "mcpu"]}, {"required": ["memory", "memory_mb"]}]}


class Spec(Strict):
    """Base of kind specs (kept as a name for readability)."""


# The validation context key under which ConfigBuilder passes one dict per run:
# (model class, data_key of the input) -> the validated instance.
SHARED = "poolc.shared"
_PLAIN = (str, int, float, bool, type(None), dict, list)


def data_key(value: Any) -> str | None:
    """A short, exact stand-in for plain YAML data: its repr, which tells apart what
    validation does (1, 1.0, True and "1"; 0.0 and -0.0; key order). None when the
    data holds anything else, such as the loader's stand-in for an integer too long
    to convert (its repr names only its length): such data is never shared."""
    key = repr(value)
    return None if type(value) not in _PLAIN or "integer of" in key else key


class Shared(Spec):
    """A part that thousands of documents write identically (a step's resources, a
    whole step): validated once per run and then shared, the instance being frozen.
    A repository of 20,000 pipelines holds a few hundred distinct ones, so this saves
    both the validation and most of the models' memory."""

    @model_validator(mode="wrap")
    @classmethod
    def _shared(cls, data: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        cache: dict | None = info.context.get(SHARED) if isinstance(info.context, dict) else None
        if cache is None or type(data) is not dict:
            return handler(data)
        key = data_key(data)
        if key is None:
            return handler(data)
        found = cache.get((cls, key))
        if found is None:
            found = cache[cls, key] = handler(data)   # only a valid part is kept: a failure raises
        return found


# --- ResourcePool ----------------------------------------------------------------

LabelKey = Annotated[str, StringConstraints(pattern=LABEL_KEY, max_length=316)]
LabelValue = Annotated[str, StringConstraints(pattern=LABEL_VALUE, max_length=63)]
# Kueue's ResourceFlavor holds at most 8 node labels and 8 tolerations (its CRD).
MAX_FLAVOR_ITEMS = 8


class Toleration(Spec):
    """A Kubernetes toleration (key, operator, value, effect, tolerationSeconds) for the taints of a pool's nodes."""

    model_config = ConfigDict(json_schema_extra=lambda schema, _: _toleration_schema(schema))

    key: LabelKey | None = Field(default=None, description=(
        "Taint key to tolerate (Kubernetes label key syntax); leave it out, with operator Exists, to tolerate "
        "every taint."))
    operator: Literal["Equal", "Exists"] | None = Field(default=None, description=(
        "Equal (the default): the taint's value must equal value; Exists: any value (then give no value)."))
    value: LabelValue | None = Field(default=None, description=(
        "Taint value to match with operator Equal (label value syntax); not with operator Exists."))
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(default=None, description=(
        "Taint effect to tolerate: NoSchedule, PreferNoSchedule or NoExecute; leave it out for every effect."))
    tolerationSeconds: Count | None = Field(default=None, description=(
        "With effect NoExecute only: how long a running pod stays on a node after the taint appears."))

    @model_validator(mode="after")
    def _kubernetes_rules(self) -> Toleration:
        if self.key is None and self.operator != "Exists":
            raise ValueError("a toleration without a key must have operator Exists (it tolerates every taint)")
        if self.tolerationSeconds is not None and self.effect != "NoExecute":
            raise ValueError("tolerationSeconds is only allowed with effect NoExecute")
        if self.operator == "Exists" and self.value is not None:
            raise ValueError("a toleration with operator Exists takes no value; remove value or use operator Equal")
        return self


def _toleration_schema(schema: dict[str, Any]) -> None:
    # the same three rules as Toleration._kubernetes_rules, for editors and check-jsonschema
    exists = {"required": ["operator"], "properties": {"operator": {
        "const": "Exists", "description": "Without a key, a toleration must say operator: Exists (every taint)."}}}
    no_execute = {"required": ["effect"], "properties": {"effect": {
        "const": "NoExecute", "description": "tolerationSeconds is only allowed with effect: NoExecute."}}}
    schema["allOf"] = [
        {"if": {"not": {"required": ["key"]}}, "then": exists},
        {"if": {"required": ["tolerationSeconds"]}, "then": no_execute},
        {"if": {"required": ["operator"], "properties": {"operator": {"const": "Exists"}}},
         "then": {"not": {"required": ["value"]}}},
    ]


class NodeGroup(Spec):
    """Identical nodes of a pool: their shape says what one step can ever get (a step runs on one node)."""

    name: Name = Field(description="Name of the node group, unique in its pool (a DNS-1123 label).")
    count: PositiveCount = Field(description="How many such nodes the pool has (>= 1).")
    gpu: Count = Field(description="GPUs per node (0 for CPU nodes).")
    cpu: Annotated[float, Field(gt=0, le=MAX_INT)] = Field(description="Cores per node, may be fractional.")
    memory: Quantity = Field(description="Memory per node, a quantity such as 512GiB.")
    gpu_type: LabelValue | None = Field(default=None, description=(
        "The GPU model of these nodes as their nvidia.com/gpu.product label says it, e.g. NVIDIA-A100-SXM4-80GB "
        "(see docs/format.md#gpu-models)."))
    labels: Annotated[dict[LabelKey, LabelValue], Field(max_length=MAX_FLAVOR_ITEMS)] | None = Field(
        default=None, description="Labels these nodes carry besides the pool's node_labels (at most 8).")

    def model(self, pool_model: str | None) -> str | None:
        """The GPU model of these nodes: gpu_type, else their product label, else the pool's."""
        return self.gpu_type or (self.labels or {}).get(GPU_PRODUCT_LABEL) or pool_model

    def units(self) -> dict[str, int]:
        """What the whole group adds to the pool's capacity."""
        return {"gpu": self.count * self.gpu, "mcpu": self.count * mcpu_ceil(self.cpu),
                "memory_mb": self.count * memory_mb_floor(self.memory)}

    def shape(self) -> dict[str, int]:
        """One node, in request keys."""
        return {"gpu": self.gpu, "mcpu": mcpu_ceil(self.cpu), "memory_mb": memory_mb_floor(self.memory)}


# A pool's price per unit-hour of one key (docs/forecast.md#money); YAML's .inf and
# .nan never get here (the loader refuses them, Y009), allow_inf_nan keeps JSON out too.
PRICE_KEY = r"^[a-z][a-z0-9_]{0,57}_hour$"
Price = Annotated[float, Field(ge=0, le=MAX_INT, allow_inf_nan=False)]


class ResourcePoolSpec(Spec):
    model_config = ConfigDict(json_schema_extra=lambda schema, _: _pool_schema(schema))

    capacity: ResourceMap | None = Field(default=None, description=(
        "Integer units per resource key: gpu, mcpu (milli-CPU), memory_mb (decimal MB), step_run (concurrent "
        "steps) and custom keys; aliases cpu (cores) and memory (a quantity). A built-in key without a row is "
        "unbounded; any other key without a row has capacity 0. Required unless nodes are given; with nodes, "
        "gpu, mcpu and memory_mb default to their sum. See docs/format.md#resourcepool."))
    nodes: Annotated[list[NodeGroup], Field(min_length=1)] | None = Field(default=None, description=(
        "The pool's node groups ({name, count, gpu, cpu, memory, gpu_type, labels}): the capacity of gpu, mcpu "
        "and memory_mb defaults to their sum, the pool offers their GPU models, and every step must fit on one "
        "node of some group. See docs/format.md#node-groups."))
    node_labels: Annotated[dict[LabelKey, LabelValue], Field(max_length=MAX_FLAVOR_ITEMS)] | None = Field(
        default=None, description=(
            "Labels every node of this pool carries (Kubernetes label syntax, at most 8), e.g. "
            "poolc.dev/pool: datacenter-one. They become the node labels of the pool's Kueue ResourceFlavor, "
            "so work admitted on the pool's quota runs on these nodes."))
    tolerations: Annotated[list[Toleration], Field(max_length=MAX_FLAVOR_ITEMS)] | None = Field(
        default=None, description=(
            "Kubernetes tolerations (at most 8) for the taints of this pool's nodes, e.g. {key: nvidia.com/gpu, "
            "operator: Exists, effect: NoSchedule}. They become the tolerations of the pool's Kueue "
            "ResourceFlavor, which Kueue adds to the pods it admits on the pool."))
    price: dict[Annotated[str, StringConstraints(pattern=PRICE_KEY)], Price] | None = Field(
        default=None, description=(
            "Indicative price of the pool's resources, for `poolc plan --forecast`: USD per unit-hour, keyed "
            "<key>_hour (gpu_hour, cpu_hour per core, memory_gb_hour per decimal GB, step_run_hour, or a "
            "custom key such as tensorrt_sessions_hour); finite and >= 0. See docs/forecast.md#money."))

    @model_validator(mode="after")
    def _capacity_or_nodes(self) -> ResourcePoolSpec:
        if self.capacity is None and self.nodes is None:
            raise ValueError("give capacity, nodes or both")
        return self

    def capacity_units(self) -> dict[str, int]:
        """The pool's capacity in canonical keys: the node groups' sum of gpu, mcpu and
        memory_mb, with what ``capacity`` writes over it (a written row may only be
        smaller: the check says so), keys sorted."""
        units: dict[str, int] = {}
        for group in self.nodes or ():
            for key, value in group.units().items():
                units[key] = units.get(key, 0) + value
        if self.capacity is not None:
            units.update(self.capacity.units())
        return dict(sorted(units.items()))

    def gpu_models(self) -> frozenset[str] | None:
        """The GPU models the pool's nodes offer (their nvidia.com/gpu.product values):
        from the node groups with GPUs when each says its model (gpu_type, or the label
        in its labels or the pool's node_labels), else from node_labels; None when the
        pool does not say (a step's gpu_type cannot be checked there)."""
        pool_model = (self.node_labels or {}).get(GPU_PRODUCT_LABEL)
        if not self.nodes:
            return frozenset({pool_model}) if pool_model else None
        models: set[str] = set()
        for group in self.nodes:
            if group.gpu > 0:
                model = group.model(pool_model)
                if model is None:
                    return None
                models.add(model)
        return frozenset(models)

    def flavor_node_labels(self) -> dict[str, str]:
        """The labels every node of the pool carries, sorted: node_labels, the labels
        all node groups share, and the GPU model when every group has it. They become
        the pool's ResourceFlavor nodeLabels, which Kueue adds to the pods it admits."""
        labels = dict(self.node_labels or {})
        if self.nodes:
            per_group = [{**(g.labels or {}), **({GPU_PRODUCT_LABEL: m} if (m := g.model(None)) else {})}
                         for g in self.nodes]
            shared = set(per_group[0].items()).intersection(*(set(x.items()) for x in per_group[1:]))
            for key, value in sorted(shared):
                labels.setdefault(key, value)
        return dict(sorted(labels.items()))


def _pool_schema(schema: dict[str, Any]) -> None:
    # capacity is required unless nodes are given (said as a missing field, not a mismatch)
    schema["if"] = {"not": {"required": ["nodes"]}}
    schema["then"] = {"required": ["capacity"]}


# --- Policy ----------------------------------------------------------------------

class PolicySpec(Spec):
    subject: Name = Field(description="Name of a stack component (orchestrator or step operator).")
    pool: Name = Field(description="Name of the ResourcePool this policy gives the subject access to.")
    priority: Annotated[int, Field(ge=-1_000_000_000, le=1_000_000_000), BeforeValidator(_integral_float)] = Field(
        default=0, description="Integer from -10^9 to 10^9, default 0; higher wins. Becomes a Kubernetes "
        "PriorityClass value.")
    reserved: ResourceMap = Field(default=ResourceMap.model_construct(), description=(
        "Guaranteed share per key of the pool's capacity (default: nothing). Non-preemptible steps must fit "
        "inside it; use beyond it is borrowed and may be preempted. Same keys and aliases as capacity."))
    limit: ResourceMap | None = Field(default=None, description=(
        "Hard cap per key on what the subject may hold in the pool; a key without a limit is capped by the "
        "capacity alone. Same keys and aliases as capacity."))


# --- Stack -----------------------------------------------------------------------

class KubernetesComponent(Spec):
    name: Name = Field(description="Component name, the subject of policies; unique across stacks (a component "
                       "listed in several stacks must have identical settings).")
    flavor: Literal["kubernetes"] = Field(description="kubernetes: steps run as Kubernetes Jobs admitted by Kueue.")
    namespace: Name = Field(default="default", description="Kubernetes namespace of the step Jobs (default: default).")
    image: NonEmpty | None = Field(default=None, description="Default container image for steps that set none.")
    service_account: Name | None = Field(default=None, description="Kubernetes service account the step pods run as.")


class SageMakerComponent(Spec):
    name: Name = Field(description="Component name, the subject of policies; unique across stacks.")
    flavor: Literal["sagemaker"] = Field(description="sagemaker: a step operator whose steps run as SageMaker "
                                         "training jobs (step operator only).")
    region: Annotated[str, StringConstraints(pattern=AWS_REGION)] = Field(description="AWS region, e.g. us-east-1.")
    role_arn: Annotated[str, StringConstraints(pattern=ROLE_ARN)] = Field(
        description="IAM role the training jobs run as, e.g. arn:aws:iam::123456789012:role/SageMakerRole.")
    output_s3_uri: Annotated[str, StringConstraints(pattern=S3_URI)] = Field(
        description="S3 prefix for job output; each step writes under <uri>/<pipeline>/<step>.")
    image: NonEmpty | None = Field(default=None, description="Default training image for steps that set none.")
    instance_types: list[Annotated[str, StringConstraints(pattern=r"^ml\.[a-z0-9]+\.[a-z0-9]+$")]] | None = Field(
        default=None, description="Allow-list of instance types (e.g. ml.g5.2xlarge) poolc may choose from; "
        "default: the whole catalog.")


Component = Annotated[KubernetesComponent | SageMakerComponent, Field(discriminator="flavor")]


class StackSpec(Spec):
    orchestrator: KubernetesComponent = Field(description="The orchestrator (flavor kubernetes); it requests for "
                                              "every step that names no step operator.")
    step_operators: list[Component] = Field(default=[], description="Step operators (kubernetes or sagemaker) a "
                                            "step may name in step_operator.")


# --- Pipeline --------------------------------------------------------------------

def _duration_schema(description: str) -> dict[str, Any]:
    # One schema for both spellings, so a wrong value gets one precise message:
    # minimum/maximum apply to integers only, pattern to strings only.
    return {"type": ["integer", "string"], "minimum": 1, "maximum": MAX_INT, "pattern": DURATION_PATTERN,
            "description": description}


MAX_RUNTIME_HELP = ("The step's hard time limit: seconds as an integer, or a whole number of seconds, minutes, "
                    "hours or days (600s, 90m, 30h, 2d). Kubernetes activeDeadlineSeconds, SageMaker "
                    "StoppingCondition.MaxRuntimeInSeconds (at most 28 days there). Default: none on Kubernetes, "
                    "one day on SageMaker.")
Duration = Annotated[PositiveCount | Annotated[str, StringConstraints(pattern=DURATION_PATTERN)],
                     WithJsonSchema(_duration_schema(MAX_RUNTIME_HELP))]

EXPECTED_RUNTIME_HELP = ("How long the step is expected to run, in the same syntax as max_runtime (600s, 90m, 30h, "
                         "2d). Only `poolc plan --forecast` reads it (default: max_runtime); nothing enforces it.")
ExpectedRuntime = Annotated[PositiveCount | Annotated[str, StringConstraints(pattern=DURATION_PATTERN)],
                            WithJsonSchema(_duration_schema(EXPECTED_RUNTIME_HELP))]

# ZenML 0.98 spelling -> the v1 field it stands for (same meaning, warning R007 where
# the value has a v1 spelling: a map of resources, reclaim_tolerance none or any).
NEW_SPELLINGS = {"resources": "pool_resources", "reclaim_tolerance": "preemptible"}
# reclaim_tolerance -> preemptible, as ZenML 0.98 reads them: only none protects a step
# (legacy preemptible: true becomes coordinated there, false becomes none).
RECLAIM_TOLERANCE = {"none": False, "coordinated": True, "any": True}
# the reclaim_tolerance values a v1 `preemptible` spells exactly (R007 names it)
RECLAIM_V1 = ("none", "any")


class PoolDemand(Strict):
    """One ZenML 0.98 PoolResourceDemand of ``resources``: ``name`` (or else ``kind``)
    becomes the request key. A capacity class and selectors pick among ZenML pools'
    capacity, which poolc does not model: accepted and ignored, with a warning."""

    # the same rule as _named, for editors and check-jsonschema
    model_config = ConfigDict(json_schema_extra={"anyOf": [{"required": ["name"]}, {"required": ["kind"]}]})

    quantity: PositiveCount = Field(description="Units asked (>= 1).")
    name: Annotated[str, StringConstraints(pattern=RESOURCE_KEY)] | None = Field(default=None, description=(
        "The request key, e.g. tensorrt_sessions."))
    kind: Annotated[str, StringConstraints(pattern=RESOURCE_KEY)] | None = Field(default=None, description=(
        "A kind without a name: gpu is the key gpu, cpu (unit CPU or mCPU) is mcpu, memory (unit a byte unit) "
        "is memory_mb, any other kind is its own key."))
    unit: NonEmpty | None = Field(default=None, description=(
        "cpu: CPU or mCPU; memory: B, KB, KiB, ... PiB; otherwise ignored."))
    class_: NonEmpty | None = Field(default=None, alias="class", description=(
        "A ZenML capacity class; poolc has none and ignores it (warning R009)."))
    resource_selector: dict[str, Any] | None = Field(default=None, description=(
        "A ZenML selector over resource descriptors; ignored by poolc (warning R009)."))
    class_selector: dict[str, Any] | None = Field(default=None, description=(
        "A ZenML selector over capacity classes; ignored by poolc (warning R009)."))

    @model_validator(mode="after")
    def _named(self) -> PoolDemand:
        if self.name is None and self.kind is None:
            raise ValueError("a demand needs a name (the request key) or a kind")
        return self

    def units(self) -> tuple[str, int]:
        """(request key, units) of this demand."""
        if self.name is not None:
            return self.name, self.quantity
        if self.kind == "cpu":
            return "mcpu", self.quantity * (1 if self.unit == "mCPU" else 1000)
        if self.kind == "memory":
            return "memory_mb", -(-self.quantity * _BYTE_UNITS.get(self.unit or "B", 1) // 10**6)
        assert self.kind is not None
        return self.kind, self.quantity


_BYTE_UNITS = {"B": 1, "KB": 10**3, "KiB": 2**10, "MB": 10**6, "MiB": 2**20, "GB": 10**9, "GiB": 2**30,
               "TB": 10**12, "TiB": 2**40, "PB": 10**15, "PiB": 2**50}
ResourceKey = Annotated[str, StringConstraints(pattern=RESOURCE_KEY)]
Resources = ResourceKey | dict[ResourceKey, PositiveCount] | list[PoolDemand]


def resource_units(resources: Resources) -> dict[str, int]:
    """ZenML 0.98 ``resources`` (a name, a map or a list of demands) as request units;
    demands of one key add up."""
    if isinstance(resources, str):
        return {resources: 1}
    if isinstance(resources, dict):
        return dict(resources)
    found: dict[str, int] = {}
    for demand in resources:
        key, units = demand.units()
        found[key] = found.get(key, 0) + units
    return found


class ResourceSettings(Shared):
    """ZenML's ResourceSettings (zenml 0.95-0.96 names), plus ZenML 0.98's fields read as 0.98 means them:
    resources, reclaim_tolerance, gpu_class (a capacity class, ignored), the allocation timeouts (not planned)."""

    model_config = ConfigDict(json_schema_extra=lambda schema, _: _settings_schema(schema))

    cpu_count: Annotated[float, Field(gt=0, le=MAX_INT)] | None = Field(default=None, description=(
        "CPU cores, may be fractional (0.5); request key mcpu = cores x 1000, rounded up."))
    memory: Quantity | None = Field(default=None, description=(
        "Memory with a unit (16GB, 16GiB, 16Gi); request key memory_mb = bytes / 1,000,000, rounded up."))
    gpu_count: Count | None = Field(default=None, description=(
        "Whole GPUs (request key gpu); 0 removes a GPU demand inherited from the pipeline default."))
    gpu_type: NonEmpty | None = Field(default=None, description=(
        "Accelerator model (T4, A10G, A100, ...): a node selector on Kubernetes, the instance choice on SageMaker. "
        "Not ZenML 0.98's gpu_class."))
    disk: Quantity | None = Field(default=None, description=(
        "Ephemeral storage (Kubernetes) or volume size (SageMaker), a quantity such as 200Gi; not planned."))
    shm: Quantity | Literal["auto"] | None = Field(default=None, description=(
        "Shared memory at /dev/shm: a quantity, or auto for a memory-backed volume without a size limit."))
    preemptible: bool | None = Field(default=None, description=(
        "May this step be preempted? Default true. A non-preemptible step must fit in its policy's reserved share."))
    pool_resources: dict[Annotated[str, StringConstraints(pattern=RESOURCE_KEY)], PositiveCount] | None = Field(
        default=None, description=(
            "Custom request keys and amounts (>= 1), e.g. tensorrt_sessions: 1; merged key by key with the "
            "pipeline default. gpu_count, cpu_count and memory win over the same key here."))
    max_runtime: Duration | None = Field(default=None, description=MAX_RUNTIME_HELP)
    expected_runtime: ExpectedRuntime | None = Field(default=None, description=EXPECTED_RUNTIME_HELP)
    min_replicas: Count | None = Field(default=None, description=(
        "Deployed pipelines: minimum replicas; must not exceed max_replicas unless that is 0. Not planned."))
    max_replicas: Count | None = Field(default=None, description=(
        "Deployed pipelines: maximum replicas, 0 = no limit. Not planned."))
    autoscaling_metric: Literal["cpu", "memory", "concurrency", "rps"] | None = Field(default=None, description=(
        "Deployed pipelines: the metric to scale on (cpu, memory, concurrency, rps). Not planned."))
    autoscaling_target: Annotated[float, Field(gt=0, le=MAX_INT)] | None = Field(default=None, description=(
        "Deployed pipelines: target value of autoscaling_metric (> 0). Not planned."))
    max_concurrency: PositiveCount | None = Field(default=None, description=(
        "Deployed pipelines: maximum concurrent requests per replica (>= 1). Not planned."))
    resources: Resources | None = Field(default=None, description=(
        "ZenML 0.98 pool demands: a key (one unit), a map key -> units (the spelling of pool_resources, "
        "warning R007) or a list of demands {quantity, name or kind, ...}. Not together with pool_resources."))
    gpu_class: NonEmpty | None = Field(default=None, description=(
        "ZenML 0.98 GPU capacity class (for ZenML's resource pools): poolc has no capacity classes and ignores "
        "it (warning R009). It is not a GPU model: write gpu_type for that."))
    reclaim_tolerance: Literal["none", "coordinated", "any"] | None = Field(default=None, description=(
        "ZenML 0.98: none = not preemptible; coordinated (ZenML warns the step through its heartbeat before "
        "taking the capacity back) and any (taken back at any time) are both preemptible. Not together with "
        "preemptible."))
    allocation_wait_timeout_seconds: PositiveCount | None = Field(default=None, description=(
        "ZenML 0.98: seconds ZenML waits for an allocation before giving up (default 3600). Not planned."))
    initialization_lease_seconds: PositiveCount | None = Field(default=None, description=(
        "ZenML 0.98: seconds ZenML keeps an allocation while the step starts (default 3600). Not planned."))
    pools: Annotated[list[Name], Field(min_length=1)] | None = Field(default=None, description=(
        "Pools this step prefers, best first (an ordered preference, not a requirement): among placements the "
        "plan finds equally good it takes the earlier pool. See docs/format.md#steering."))
    pool_selector: dict[LabelKey, LabelValue] | None = Field(default=None, description=(
        "A requirement: the step may only run on pools whose metadata.labels carry every label given here. "
        "See docs/format.md#steering."))

    @model_validator(mode="after")
    def _one_spelling(self) -> ResourceSettings:
        for new, old in NEW_SPELLINGS.items():
            if getattr(self, new) is not None and getattr(self, old) is not None:
                raise ValueError(f"give either {new} or {old}, not both")
        return self

    def new_spellings(self) -> list[str]:
        """The ZenML 0.98 field names written here whose value has a v1 spelling, in
        NEW_SPELLINGS order (a map of resources, reclaim_tolerance none or any)."""
        found = []
        if isinstance(self.resources, dict):
            found.append("resources")
        if self.reclaim_tolerance in RECLAIM_V1:
            found.append("reclaim_tolerance")
        return found

    def v1_fields(self) -> dict[str, Any]:
        """The fields set here, by their v1 names, so merging and the demand see one
        spelling: a step's reclaim_tolerance overrides the pipeline's preemptible. (Read from the
        instance: a model_dump per step is what made the requests of a large
        repository slow.)"""
        fields = {key: value for key, value in self.__dict__.items() if value is not None}
        if self.resources is not None:
            fields["pool_resources"] = resource_units(fields.pop("resources"))
        if self.reclaim_tolerance is not None:
            fields["preemptible"] = RECLAIM_TOLERANCE[fields.pop("reclaim_tolerance")]
        return fields

    def merged_fields(self, default: ResourceSettings | None) -> dict[str, Any]:
        """Field by field, this (the step) wins; pool_resources maps merge key by key.
        Both sides are read in v1 spellings."""
        own = self.v1_fields()
        if default is None:
            return own
        base = default.v1_fields()
        fields = {**base, **own}
        if "pool_resources" in base and "pool_resources" in own:
            fields["pool_resources"] = {**base["pool_resources"], **own["pool_resources"]}
        return fields

    def merged_over(self, default: ResourceSettings | None) -> ResourceSettings:
        """The settings a step runs with: merged_fields as a ResourceSettings (itself
        when there is nothing to merge or rename)."""
        if default is None and self.resources is None and self.reclaim_tolerance is None:
            return self
        return ResourceSettings.model_construct(**self.merged_fields(default))  # both sides are validated already


def _settings_schema(schema: dict[str, Any]) -> None:
    # one spelling per field
    schema["not"] = {"anyOf": [{"required": [new, old]} for new, old in NEW_SPELLINGS.items()]}


class Settings(Shared):
    resources: ResourceSettings | None = Field(default=None, description=(
        "ZenML ResourceSettings. At pipeline level: the default of every step; at step level: merged over the "
        "default field by field, the step winning. See docs/format.md#resourcesettings."))


class Step(Shared):
    step_operator: Name | None = Field(default=None, description=(
        "A step operator of the pipeline's stack; it becomes the requester. Default: the stack's orchestrator."))
    image: NonEmpty | None = Field(default=None, description="Container image; default: the component's image.")
    command: list[str] | None = Field(default=None, description=(
        "Container command as a list, e.g. [python, -m, train]; default: the image's entrypoint."))
    settings: Settings | None = Field(default=None, description="The step's own settings (settings.resources).")
    instance_type: Annotated[str, StringConstraints(pattern=r"^ml\.[a-z0-9]+\.[a-z0-9-]+$")] | None = Field(
        default=None, description=(
            "SageMaker step operators only: the instance type the step runs on (ZenML's "
            "SagemakerStepOperatorSettings.instance_type). It must be in poolc's catalog (and the component's "
            "instance_types); its GPUs, vCPUs and memory are the step's demand. Default: the smallest that fits."))
    submitted_at: Timestamp | None = Field(default=None, description=(
        "RFC 3339 time with a zone (2026-11-20T10:00:00Z): the step arrived then. Steps that set it arrive "
        "first, by time; see docs/format.md#arrival-order."))



class PipelineSource(Strict):
    """Where the steps are declared, when not here: paths relative to this file."""

    model_config = ConfigDict(json_schema_extra=lambda schema, _: _source_schema(schema))

    zenml_config: NonEmpty | None = Field(default=None, description=(
        "A ZenML run configuration YAML: settings.resources, steps.<step>.settings.resources, "
        "steps.<step>.step_operator and the SageMaker step operator settings' instance_type are read; a settings "
        "key ZenML refuses is an error, every other key is ignored."))
    python: NonEmpty | None = Field(default=None, description=(
        "A Python file with ZenML @step/@pipeline decorators, read without running it; needs pipeline."))
    pipeline: NonEmpty | None = Field(default=None, description=(
        "The ZenML pipeline of the python file: its name, its function's name, or a module-level name that "
        "stands for it (<pipeline>.with_options(...), an alias of one, an import of the pipeline)."))
    flyte: NonEmpty | None = Field(default=None, description=(
        "A Python file with Flyte tasks (flytekit @task or flyte TaskEnvironment), read without running it; "
        "each task it holds (its own and those it imports from the repository) is a step."))

    @model_validator(mode="after")
    def _one_front_end(self) -> PipelineSource:
        if self.zenml_config is None and self.python is None and self.flyte is None:
            raise ValueError("give zenml_config, python (with pipeline) or flyte")
        if (self.python is None) != (self.pipeline is None):
            raise ValueError("python and pipeline go together: the file and the pipeline in it")
        if self.flyte is not None and (self.python is not None or self.zenml_config is not None):
            raise ValueError("flyte is read alone, not with zenml_config or python")
        return self


def _source_schema(schema: dict[str, Any]) -> None:
    # the same three rules as PipelineSource._one_front_end
    schema["anyOf"] = [{"required": ["zenml_config"]}, {"required": ["python"]}, {"required": ["flyte"]}]
    schema["dependentRequired"] = {"python": ["pipeline"], "pipeline": ["python"]}
    schema["not"] = {"anyOf": [{"required": ["flyte", "python"]}, {"required": ["flyte", "zenml_config"]}]}


class PipelineSpec(Spec):
    model_config = ConfigDict(json_schema_extra=lambda schema, _: _pipeline_spec_schema(schema))

    stack: Name = Field(description="Name of the Stack the pipeline runs on.")
    source: PipelineSource | None = Field(default=None, description=(
        "Take the steps from a ZenML run configuration, ZenML decorators or Flyte tasks; spec.settings and "
        "spec.steps written here override what the source says. See docs/format.md#reading-your-zenml-and-"
        "flyte-code."))
    settings: Settings | None = Field(default=None, description="Pipeline-level settings: the default of every step.")
    steps: dict[Annotated[str, StringConstraints(pattern=STEP_NAME, max_length=63)], Step] = Field(
        default={}, min_length=1, description=(
            "Steps by name, in arrival order (lower-case letters, digits, '-' and '_'); at least one, unless "
            "source gives them. Each step is one request, id <pipeline>/<step>."))

    @model_validator(mode="before")
    @classmethod
    def _steps_or_source(cls, data: Any) -> Any:
        if isinstance(data, dict) and "steps" not in data and "source" not in data:
            raise ValueError("give steps, or a source to take them from")
        return data


def _pipeline_spec_schema(schema: dict[str, Any]) -> None:
    schema.pop("required", None)
    schema["required"] = ["stack"]
    schema["anyOf"] = [{"required": ["steps"]}, {"required": ["source"]}]


# --- Allocation ------------------------------------------------------------------

class AllocationSpec(Spec):
    subject: Name = Field(description="The component whose work is running.")
    pool: Name = Field(description="The pool it runs in.")
    preemptible: bool = Field(default=True, description=(
        "Default true. Only preemptible allocations that borrow beyond their policy's reserved share can be "
        "preempted."))
    holds: dict[Annotated[str, StringConstraints(pattern=RESOURCE_KEY)], Count] = Field(description=(
        "What it holds, in request keys (gpu, mcpu, memory_mb, step_run, custom keys); keys the pool does not "
        "meter are ignored."))
    started_at: Timestamp | None = Field(default=None, description=(
        "RFC 3339 start time; orders preemption victims (most recently started first). Missing = earliest."))
    step: Annotated[str, StringConstraints(pattern=STEP_ID, max_length=127)] | None = Field(default=None, description=(
        "The step this allocation runs, as <pipeline>/<step> (e.g. training/train_model): the plan counts the "
        "step as running in this allocation instead of requesting it again, whatever the allocation's name. "
        "Without it, an allocation is a step's only when its name is the one apply gives (docs/cli.md)."))
    workload: Annotated[str, StringConstraints(pattern=WORKLOAD_REF, max_length=317)] | None = Field(
        default=None, description=(
            "The Kueue Workload that runs it, as <namespace>/<name> (`poolc state import --kueue` records it). "
            "When a plan preempts the allocation, `apply` stops exactly this Workload (spec.active: false); "
            "without it poolc cannot stop the allocation itself."))



# --- Scenario --------------------------------------------------------------------

SCENARIO_DURATION_HELP = ("A length of time: seconds as an integer, or a whole number of seconds, minutes, hours or "
                          "days (600s, 90m, 30h, 2d).")
ScenarioDuration = Annotated[PositiveCount | Annotated[str, StringConstraints(pattern=DURATION_PATTERN)],
                             WithJsonSchema(_duration_schema(SCENARIO_DURATION_HELP))]
_AT_HELP = ("When, from the scenario's start: 0, seconds as an integer, or a whole number of seconds, minutes, hours "
            "or days (30m, 2h, 1d).")
ScenarioTime = Annotated[Count | Annotated[str, StringConstraints(pattern=DURATION_PATTERN)], WithJsonSchema(
    {"type": ["integer", "string"], "minimum": 0, "maximum": MAX_INT, "pattern": DURATION_PATTERN,
     "description": _AT_HELP})]
# a step id (<pipeline>/<step>) or the name of a running allocation
WORK_REF = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9_]*[a-z0-9])?$"
WorkRef = Annotated[str, StringConstraints(pattern=WORK_REF, max_length=127)]
StepId = Annotated[str, StringConstraints(pattern=STEP_ID, max_length=127)]
PERCENT = r"^(100(\.0+)?|[0-9]{1,2}(\.[0-9]+)?)%$"
Percent = Annotated[str, StringConstraints(pattern=PERCENT)]
GpuHours = Annotated[float, Field(ge=0, le=MAX_INT), BeforeValidator(_integral_float)]


def _one_bound(schema: dict[str, Any]) -> None:
    schema["anyOf"] = [{"required": ["at_least"]}, {"required": ["at_most"]}]


class ScenarioStart(Strict):
    """Where the scenario starts: the platform as configured (the Allocations among the inputs), or a state file."""

    state: NonEmpty | None = Field(default=None, description=(
        "A state file (poolc.state.json, as apply writes it), relative to this file: what runs at the start. "
        "Default: no state file, only the Allocation documents among the inputs."))
    time: Timestamp | None = Field(default=None, description=(
        "The start instant, RFC 3339 with a zone; running work's started_at is counted from it. Default: the "
        "latest started_at of the running allocations (so the scenario never depends on the clock)."))


class Arrival(Strict):
    """Work that arrives during the scenario: a step, or every step of a pipeline, as written in the inputs
    (its demand, component and placement), arriving again at ``at`` (and ``count`` times, ``every`` apart)."""

    model_config = ConfigDict(json_schema_extra=lambda schema, _: _arrival_schema(schema))

    at: ScenarioTime = Field(description=_AT_HELP)
    step: StepId | None = Field(default=None, description="A step of the inputs, <pipeline>/<step>.")
    pipeline: Name | None = Field(default=None, description="A pipeline of the inputs: each of its steps arrives.")
    duration: ScenarioDuration | None = Field(default=None, description=(
        "How long each arriving run takes. Default: the step's duration in the scenario's durations, else its "
        "expected_runtime, else its max_runtime; else unknown (it holds its capacity to the end)."))
    every: ScenarioDuration | None = Field(default=None, description="Repeat this far apart (with count).")
    count: Annotated[int, Field(ge=1, le=1000), BeforeValidator(_integral_float)] | None = Field(
        default=None, description="How many times it arrives in all (1 to 1000; default 1; more than 1 needs every).")

    @model_validator(mode="after")
    def _what(self) -> Arrival:
        if (self.step is None) == (self.pipeline is None):
            raise ValueError("give step or pipeline, one of them")
        if (self.count or 1) > 1 and self.every is None:
            raise ValueError("count above 1 needs every")
        return self


def _arrival_schema(schema: dict[str, Any]) -> None:
    schema["oneOf"] = [{"required": ["step"]}, {"required": ["pipeline"]}]
    schema["if"] = {"properties": {"count": {"minimum": 2}}, "required": ["count"]}
    schema["then"] = {"required": ["every"]}


class StepState(Strict):
    step: WorkRef = Field(description="A step id (<pipeline>/<step>) or the name of a running allocation.")
    at: ScenarioTime = Field(description=_AT_HELP)
    state: vocabulary.StepState = Field(description=(
        "running (holds capacity), queued (waits, never started since it arrived), preempted (waits again after "
        "a preemption), finished (its run ended)."))


class StartsWithin(Strict):
    step: WorkRef = Field(description="A step id: every run of it (the plan's and each arrival) must start within.")
    within: ScenarioDuration = Field(description="From when it arrived (0 for the plan's own steps).")


class NeverPreempted(Strict):
    step: WorkRef = Field(description="A step id or the name of a running allocation.")


class TeamHours(Strict):
    model_config = ConfigDict(json_schema_extra=lambda schema, _: _one_bound(schema))

    team: NonEmpty = Field(description="A team: a pipeline's labels.team, else the component (docs/cli.md#teams).")
    measure: Literal["admitted", "waiting", "lost"] = Field(description=(
        "GPU-hours admitted (work started), waiting, or lost to preemption, over the horizon."))
    at_least: GpuHours | None = Field(default=None, description="The least GPU-hours.")
    at_most: GpuHours | None = Field(default=None, description="The most GPU-hours.")

    @model_validator(mode="after")
    def _some(self) -> TeamHours:
        if self.at_least is None and self.at_most is None:
            raise ValueError("give at_least or at_most")
        return self


class PoolUse(Strict):
    model_config = ConfigDict(json_schema_extra=lambda schema, _: _one_bound(schema))

    pool: Name = Field(description="A pool of the inputs.")
    key: Annotated[str, StringConstraints(pattern=RESOURCE_KEY)] = Field(default="gpu", description=(
        "The key whose use is measured (default gpu): units held over the horizon / capacity x horizon."))
    at_least: Percent | None = Field(default=None, description="The least utilisation, as a percentage (50%).")
    at_most: Percent | None = Field(default=None, description="The most utilisation, as a percentage (95%).")

    @model_validator(mode="after")
    def _some(self) -> PoolUse:
        if self.at_least is None and self.at_most is None:
            raise ValueError("give at_least or at_most")
        return self


class NoLoop(Strict):
    step: WorkRef | None = Field(default=None, description="Only this step or allocation (default: all work).")
    max_readmissions: Annotated[int, Field(ge=0, le=1000), BeforeValidator(_integral_float)] = Field(
        default=2, description="The most times one workload may be preempted and admitted again (default 2).")


class Expectation(Strict):
    """One expectation: exactly one of its keys."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1, "maxProperties": 1})

    state: StepState | None = Field(default=None, description="A step's state at a time.")
    starts_within: StartsWithin | None = Field(default=None, description="A step starts within a bound.")
    never_preempted: NeverPreempted | None = Field(default=None, description="A step or allocation is never "
                                                   "preempted over the horizon.")
    gpu_hours: TeamHours | None = Field(default=None, description="A team's GPU-hours within a bound.")
    utilisation: PoolUse | None = Field(default=None, description="A pool's utilisation within a bound.")
    no_preemption_loop: NoLoop | None = Field(default=None, description=(
        "No workload is preempted and admitted again more than max_readmissions times."))

    @model_validator(mode="before")
    @classmethod
    def _exactly_one(cls, data: Any) -> Any:
        if isinstance(data, dict) and len(data) != 1:
            raise ValueError("an expectation is one of state, starts_within, never_preempted, gpu_hours, "
                             "utilisation, no_preemption_loop")
        return data

    @property
    def kind(self) -> str:
        return next(k for k in type(self).model_fields if getattr(self, k) is not None)


class ScenarioSpec(Spec):
    start: ScenarioStart = Field(default=ScenarioStart.model_construct(), description="Where the scenario starts.")
    horizon: ScenarioDuration = Field(default="7d", description="How far the scenario rolls forward (default 7d).")
    durations: dict[WorkRef, ScenarioDuration] = Field(default={}, description=(
        "How long steps (<pipeline>/<step>) and running allocations (by name) run, over what the files say."))
    arrivals: list[Arrival] = Field(default=[], description="Work that arrives over time.")
    expect: list[Expectation] = Field(min_length=1, description="What must stay true; at least one.")


# --- Envelopes -------------------------------------------------------------------

class _Envelope(Strict):
    apiVersion: Literal["poolc/v1"] = Field(description="Always poolc/v1 for this version of the language.")
    metadata: Metadata = Field(description="Name, description and labels of the document.")


class ResourcePool(_Envelope):
    kind: Literal["ResourcePool"] = Field(description="Always ResourcePool for this kind of document.")
    spec: ResourcePoolSpec = Field(description="The ResourcePool's content (supply: the capacity of a pool).")


class Policy(_Envelope):
    kind: Literal["Policy"] = Field(description="Always Policy for this kind of document.")
    spec: PolicySpec = Field(description="The Policy's content (wiring: which component may use which pool, "
                             "with what share, limit and priority).")


class Stack(_Envelope):
    kind: Literal["Stack"] = Field(description="Always Stack for this kind of document.")
    spec: StackSpec = Field(description="The Stack's content (components: the orchestrator and the step operators).")


class Pipeline(_Envelope):
    kind: Literal["Pipeline"] = Field(description="Always Pipeline for this kind of document.")
    spec: PipelineSpec = Field(description="The Pipeline's content (demand: steps and their resource settings).")


class Allocation(_Envelope):
    kind: Literal["Allocation"] = Field(description="Always Allocation for this kind of document.")
    spec: AllocationSpec = Field(description="The Allocation's content (state: work that already runs in a pool).")


class Scenario(_Envelope):
    kind: Literal["Scenario"] = Field(description="Always Scenario for this kind of document.")
    spec: ScenarioSpec = Field(description="The Scenario's content (a test: a start, arrivals over time, and what "
                               "must stay true; `poolc test`).")


KINDS: dict[str, type[_Envelope]] = {
    "ResourcePool": ResourcePool,
    "Policy": Policy,
    "Stack": Stack,
    "Pipeline": Pipeline,
    "Allocation": Allocation,
    "Scenario": Scenario,
}
