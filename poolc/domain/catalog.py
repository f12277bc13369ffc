"""SageMaker instance catalog and the choice of an instance type for a step.

A SageMaker training job cannot ask for "16 vCPUs and 2 GPUs"; it names an
instance type. This module maps a step's demand onto the smallest type that
holds it, so the generated job body never under- or over-provisions silently.

The catalog is ``instance_types.csv`` beside this module. Its facts come
from the AWS documentation (EC2 and AWS Batch user guides, the EC2 Capacity
Blocks pricing page) and public repositories, cited per row in the ``source``
column. Prices (USD per hour, us-east-1) are indicative only and missing for
some rows; see docs/instance-catalog.md.

Only the standard library is imported so that ``poolc validate`` stays fast.
"""

from __future__ import annotations

import csv
import functools
import io
import math
import re
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources

_CATALOG_FILE = "instance_types.csv"
_BYTES_PER_GIB = 1024**3
_BYTES_PER_MB = 10**6


@dataclass(frozen=True)
class InstanceType:
    """One SageMaker instance type; memory in decimal MB like poolc's ``memory_mb``."""

    name: str
    vcpu: int
    memory_mb: int
    gpu_count: int
    gpu_model: str | None
    gpu_memory_gib: float | None  # total over all GPUs of the instance
    price: float | None  # indicative USD per hour in us-east-1

    @property
    def memory_gib(self) -> float:
        """Memory in GiB, recovered from ``memory_mb`` (the floor lost < 1 MB)."""
        return round(self.memory_mb * _BYTES_PER_MB / _BYTES_PER_GIB, 1)


@dataclass(frozen=True)
class NoFit:
    """No allowed type holds the step; ``message`` is one sentence for the user."""

    largest: InstanceType | None
    message: str


def gib_to_mb(memory_gib: str | int | float) -> int:
    """GiB to decimal MB, rounded down: an instance never offers more than it has."""
    return int(Decimal(str(memory_gib)) * _BYTES_PER_GIB // _BYTES_PER_MB)


def _optional_float(text: str) -> float | None:
    return float(text) if text.strip() else None


def _parse_row(row: dict[str, str]) -> InstanceType:
    gpu_count = int(row["gpu_count"])
    return InstanceType(
        name=row["instance_type"],
        vcpu=int(row["vcpu"]),
        memory_mb=gib_to_mb(row["memory_gib"]),
        gpu_count=gpu_count,
        gpu_model=(row["gpu_model"] or None) if gpu_count else None,
        gpu_memory_gib=_optional_float(row["gpu_memory_gib"]) if gpu_count else None,
        price=_optional_float(row["price_usd_hour_us_east_1"]),
    )


@functools.lru_cache(maxsize=1)
def load_catalog() -> tuple[InstanceType, ...]:
    """All catalog types sorted by name; parsed once per process."""
    text = resources.files(__package__).joinpath(_CATALOG_FILE).read_text(encoding="utf-8")
    rows = csv.DictReader(io.StringIO(text))
    return tuple(sorted((_parse_row(r) for r in rows), key=lambda t: t.name))


@functools.lru_cache(maxsize=1)
def instance_type_names() -> frozenset[str]:
    return frozenset(t.name for t in load_catalog())


def unknown_instance_types(allowed: list[str] | None) -> list[str]:
    """Names in an allow-list that the catalog lacks, once each, in their given order."""
    known = instance_type_names()
    return list(dict.fromkeys(n for n in allowed or () if n not in known))


# --- GPU model names --------------------------------------------------------
# Requests say `A100`, `A100-80GB`, `a10g`; the catalog says `NVIDIA A100 80GB`;
# Kubernetes node labels say `NVIDIA-A100-SXM4-80GB`. All are reduced to a family
# (e.g. `A100`) and an optional per-GPU memory in GB.

_VENDOR_TOKENS = frozenset({"NVIDIA", "TESLA"})
_FORM_FACTOR = re.compile(r"SXM\d*|PCIE|HBM\d*E?")
_MEMORY = re.compile(r"(\d+(?:\.\d+)?)(?:GB|GIB|G)")


def parse_gpu_model(name: str) -> tuple[str, float | None]:
    """(family, per-GPU memory or None), case-insensitive; vendor and form factor dropped."""
    family: list[str] = []
    memory: float | None = None
    for token in re.split(r"[\s_-]+", name.strip().upper()):
        if not token or token in _VENDOR_TOKENS or _FORM_FACTOR.fullmatch(token):
            continue
        match = _MEMORY.fullmatch(token)
        if match:
            memory = float(match.group(1))
        else:
            family.append(token)
    return " ".join(family), memory


def gpu_model_matches(requested: str, instance: InstanceType) -> bool:
    """Same family; a memory in the request must equal the instance's per-GPU memory."""
    if not instance.gpu_count or not instance.gpu_model:
        return False
    want_family, want_memory = parse_gpu_model(requested)
    family, memory = parse_gpu_model(instance.gpu_model)
    if not want_family or want_family != family:
        return False
    if want_memory is None:
        return True
    if memory is None and instance.gpu_memory_gib is not None:
        memory = instance.gpu_memory_gib / instance.gpu_count
    return memory is not None and abs(memory - want_memory) < 0.5


# --- choice ------------------------------------------------------------------


def _size(t: InstanceType) -> tuple[int, int, int]:
    return (t.gpu_count, t.vcpu, t.memory_mb)


def _preference(t: InstanceType) -> tuple[bool, float, str]:
    """Among equal sizes: a known price before an unknown one, cheaper first, then name.

    "Cheaper where both prices are known, then the name" compared pair by pair is
    not transitive once some prices are missing; ranking unknown prices last is
    the total order closest to it.
    """
    return (t.price is None, t.price if t.price is not None else 0.0, t.name)


def _smallest(types: list[InstanceType]) -> InstanceType:
    return min(types, key=lambda t: (_size(t), _preference(t)))


def _largest(types: list[InstanceType]) -> InstanceType:
    top = max(_size(t) for t in types)
    return min((t for t in types if _size(t) == top), key=_preference)


def choose_instance(
    *,
    mcpu: int,
    memory_mb: int,
    gpu: int,
    gpu_type: str | None,
    allowed: list[str] | None,
) -> InstanceType | NoFit:
    """The smallest allowed type with enough vCPUs, memory and GPUs of ``gpu_type``."""
    pool = list(load_catalog())
    if allowed:
        wanted = set(allowed)
        pool = [t for t in pool if t.name in wanted]
        if not pool:
            names = ", ".join(dict.fromkeys(allowed))
            return NoFit(None, f"none of the allowed instance types ({names}) is in the SageMaker instance catalog")
    typed = [t for t in pool if gpu_model_matches(gpu_type, t)] if gpu_type else pool
    fits = [
        t for t in typed if t.vcpu * 1000 >= mcpu and t.memory_mb >= memory_mb and t.gpu_count >= gpu
    ]
    if fits:
        return _smallest(fits)
    largest = _largest(typed or pool)
    message = _no_fit_message(
        largest, mcpu=mcpu, memory_mb=memory_mb, gpu=gpu, gpu_type=gpu_type,
        restricted=bool(allowed), type_missing=not typed, pool=pool,
    )
    return NoFit(largest, message)


# --- the NoFit sentence --------------------------------------------------------


def _plural(count: int | str, noun: str) -> str:
    return f"{count} {noun}" if str(count) == "1" else f"{count} {noun}s"


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _display_model(model: str) -> str:
    return re.sub(r"^NVIDIA\s+", "", model, flags=re.IGNORECASE)


def _describe(t: InstanceType) -> str:
    gpus = "no GPU"
    if t.gpu_count:
        gpus = _plural(t.gpu_count, f"{_display_model(t.gpu_model or 'unknown')} GPU")
    return f"{_plural(t.vcpu, 'vCPU')}, {_number(t.memory_gib)} GiB memory and {gpus}"


def _number(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


def _needs(t: InstanceType, *, mcpu: int, memory_mb: int, gpu: int, gpu_type: str | None,
           type_missing: bool) -> list[str]:
    needs = []
    if t.vcpu * 1000 < mcpu:
        needs.append(_plural(_number(mcpu / 1000), "vCPU"))
    if t.memory_mb < memory_mb:
        gib = math.ceil(memory_mb * _BYTES_PER_MB / _BYTES_PER_GIB * 10) / 10
        needs.append(f"{_number(gib)} GiB memory ({memory_mb} MB)")
    if type_missing or t.gpu_count < gpu:
        noun = f"{gpu_type} GPU" if gpu_type else "GPU"
        needs.append(_plural(gpu, noun) if gpu else f"{noun}s")
    return needs


def _no_fit_message(largest: InstanceType, *, mcpu: int, memory_mb: int, gpu: int,
                    gpu_type: str | None, restricted: bool, type_missing: bool,
                    pool: list[InstanceType]) -> str:
    scope = "allowed" if restricted else "catalog"
    kind = f"{gpu_type} " if gpu_type and not type_missing else ""
    needs = _needs(largest, mcpu=mcpu, memory_mb=memory_mb, gpu=gpu, gpu_type=gpu_type,
                   type_missing=type_missing)
    text = f"the largest {scope} {kind}instance {largest.name} has {_describe(largest)}; the step needs {_join(needs)}"
    if type_missing:
        models = sorted({_display_model(t.gpu_model) for t in pool if t.gpu_count and t.gpu_model})
        have = f"only {_join(models)} GPUs" if models else "no GPUs"
        text += f", and the {scope} types have {have}"
    return text
