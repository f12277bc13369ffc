"""GPU models: which node model a step's ``gpu_type`` accepts (docs/format.md#gpu-models).

A node says its model in the ``nvidia.com/gpu.product`` label that NVIDIA's GPU
feature discovery sets (the device name with spaces as '-', e.g.
``NVIDIA-A100-SXM4-80GB``). A ``gpu_type`` matches a model when it is that label
value exactly, or when it is one of the family names below and the model is in
its family. The table is closed on purpose: a guess such as "every model whose
name contains A100" would let ``A100`` match a future ``A1000`` card, and a step
would be placed on a model its author never meant.
"""

from __future__ import annotations

import re

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"

# family name -> the product label values it accepts (docs/format.md's table is this one)
FAMILIES: dict[str, tuple[str, ...]] = {
    "T4": ("Tesla-T4",),
    "V100": ("Tesla-V100-PCIE-16GB", "Tesla-V100-PCIE-32GB", "Tesla-V100-SXM2-16GB", "Tesla-V100-SXM2-32GB"),
    "V100-16GB": ("Tesla-V100-PCIE-16GB", "Tesla-V100-SXM2-16GB"),
    "V100-32GB": ("Tesla-V100-PCIE-32GB", "Tesla-V100-SXM2-32GB"),
    "A10": ("NVIDIA-A10",),
    "A10G": ("NVIDIA-A10G",),
    "L4": ("NVIDIA-L4",),
    "L40S": ("NVIDIA-L40S",),
    "A100": ("NVIDIA-A100-80GB-PCIe", "NVIDIA-A100-PCIE-40GB", "NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-SXM4-80GB"),
    "A100-40GB": ("NVIDIA-A100-PCIE-40GB", "NVIDIA-A100-SXM4-40GB"),
    "A100-80GB": ("NVIDIA-A100-80GB-PCIe", "NVIDIA-A100-SXM4-80GB"),
    "H100": ("NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-NVL", "NVIDIA-H100-PCIe"),
    "H200": ("NVIDIA-H200", "NVIDIA-H200-NVL"),
}


def product_value(gpu_type: str) -> str:
    """A gpu_type as a label value (spaces and other characters become '-'), so
    ``NVIDIA A100-SXM4-80GB`` as a person writes it is the label's spelling."""
    value = re.sub(r"[^A-Za-z0-9_.-]+", "-", gpu_type).strip("-_.")
    return value[:63].rstrip("-_.")


def accepted_models(gpu_type: str) -> tuple[str, ...]:
    """Every product label value ``gpu_type`` accepts, sorted: its family's and itself."""
    exact = product_value(gpu_type)
    return tuple(sorted({exact, *FAMILIES.get(gpu_type, ())}))


def matches(gpu_type: str, model: str) -> bool:
    """Does a node of ``model`` (its product label value) serve a step asking ``gpu_type``?"""
    return model == product_value(gpu_type) or model in FAMILIES.get(gpu_type, ())


def node_selection(gpu_type: str) -> dict:
    """What a pod spec needs to run on nodes of ``gpu_type``: a nodeSelector when
    one model is accepted, else a required node affinity listing them (a family),
    so neither the scheduler nor Kueue's flavor check sees anything else."""
    models = accepted_models(gpu_type)
    if len(models) == 1:
        return {"nodeSelector": {GPU_PRODUCT_LABEL: models[0]}}
    term = {"matchExpressions": [{"key": GPU_PRODUCT_LABEL, "operator": "In", "values": list(models)}]}
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term]}}}}
