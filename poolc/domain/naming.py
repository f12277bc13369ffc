"""Names poolc derives for the objects it generates (Jobs, queues, allocations,
training jobs), written once so every target and the state agree.

Kubernetes and SageMaker cap names at 63 characters and allow fewer characters
than poolc's step names (``_``). A name that had to be cut or rewritten gets a
hash suffix of its source, so two different steps never share a derived name and
the same step gets the same name on every run.
"""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 63
_HASH_CHARS = 8


def digest8(source: str) -> str:
    """8 hex digits of the sha256 of ``source``."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:_HASH_CHARS]


def hash_suffixed(text: str, source: str, limit: int = MAX_NAME) -> str:
    """``text`` cut to leave room for ``-`` and the digest of ``source``."""
    return f"{text[:limit - _HASH_CHARS - 1].rstrip('-')}-{digest8(source)}"


def short_name(name: str, limit: int = MAX_NAME) -> str:
    """``name`` if it fits, else a prefix plus the digest of the whole name."""
    return name if len(name) <= limit else hash_suffixed(name, name, limit)


def dns_label(name: str, limit: int = MAX_NAME) -> str:
    """A DNS-1123 label from a poolc name (step names may hold ``_``)."""
    label = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "x"
    return short_name(label, limit)


def step_name(request_id: str) -> str:
    """``<pipeline>--<step>``: the base of every per-step name."""
    pipeline, _, step = request_id.partition("/")
    return f"{pipeline}--{step}"


def allocation_name(request_id: str) -> str:
    """The allocation name of a step: ``<pipeline>--<step>`` as a DNS-1123 label;
    a rewritten character or a cut gets the digest of the request id, so
    ``train_model`` and ``train-model`` never share an allocation."""
    plain = step_name(request_id)
    label = re.sub(r"[^a-z0-9-]", "-", plain.lower())
    if label == plain and len(label) <= MAX_NAME:
        return label
    return hash_suffixed(label, request_id)


def step_label(request_id: str) -> str:
    """A Kubernetes label value naming a step (``<pipeline>.<step>``; a label value
    cannot hold ``/``), cut with the digest of the request id past 63 characters."""
    value = request_id.replace("/", ".", 1)
    return value if len(value) <= MAX_NAME else hash_suffixed(value, request_id)


def training_job_name(request_id: str) -> str:
    """``<pipeline>--<step>`` in SageMaker's pattern ``[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}``;
    a rewritten character or a cut gets the digest of the request id, so
    ``train_model`` and ``train-model`` never share a training job name."""
    plain = step_name(request_id)
    name = re.sub(r"[^A-Za-z0-9-]+", "-", plain).strip("-")
    if name == plain and len(name) <= MAX_NAME:
        return name
    return hash_suffixed(name or "x", request_id)


def priority_class_name(value: int) -> str:
    """``poolc-1000``; negative values as ``poolc-minus-5``."""
    return f"poolc-{value}" if value >= 0 else f"poolc-minus-{-value}"


def cluster_queue_name(policy: str, preemptible: bool) -> str:
    """Non-preemptible steps of a policy go to its guaranteed queue, the others to burst."""
    return f"{policy}-{'burst' if preemptible else 'guaranteed'}"


def local_queue_name(policy: str, preemptible: bool) -> str:
    """The LocalQueue has the ClusterQueue's name, cut to fit a label value
    (Jobs name it in ``kueue.x-k8s.io/queue-name``)."""
    return short_name(cluster_queue_name(policy, preemptible))


def cohort_name(pool: str, policy: str) -> str:
    """``<pool>.<policy>``: a dot cannot occur in either name, so no child cohort can
    clash with another pool's root cohort (``a`` + ``b-c`` vs a pool ``a-b``)."""
    return f"{pool}.{policy}"
