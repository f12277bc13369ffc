"""Flyte's accelerator names -> poolc GPU models (docs/format.md#flyte-accelerators).

flytekit names a device by a constant of ``flytekit.extras.accelerators`` (which
carries a GKE accelerator name: ``A100`` is ``nvidia-tesla-a100``, the 40 GB card;
``A100_80GB`` is ``nvidia-a100-80gb``); flyte 2 by a string (``"A100:2"``,
``"A100_80G:8"``, ``GPU(device="H100", ...)``). Each maps to a family of poolc's
closed GPU model table (docs/format.md#gpu-models). A name with no model there (a
TPU, a shared time-slice, a card poolc has no family for) and every MIG partition
(a slice of one GPU, which poolc cannot count as whole GPUs) is refused with the
reason, never guessed.
"""

from __future__ import annotations

FLYTEKIT = {"A10G": "A10G", "L4": "L4", "L4_VWS": "L4", "L40S": "L40S", "T4": "T4", "V100": "V100",
            "H100": "H100", "H200": "H200", "A100": "A100-40GB", "A100_80GB": "A100-80GB"}
FLYTE = {"A10": "A10", "A10G": "A10G", "A100": "A100-40GB", "A100_80G": "A100-80GB", "A100 80G": "A100-80GB",
         "H100": "H100", "H200": "H200", "L4": "L4", "L40s": "L40S", "T4": "T4", "V100": "V100"}
# flyte 2 devices it accepts that poolc has no GPU model for (refused with that reason)
FLYTE_UNMAPPED = ("A2", "B200", "GB10", "RTX_PRO_4500", "RTX_PRO_6000", "RTX PRO 6000", "T4 shared", "L4 shared",
                  "A10G shared", "A10 shared", "L40S shared", "V5E", "V5P", "V6E")
FLYTE_MAX_GPUS = 8     # flyte 2's accelerator strings go from "<device>:1" to "<device>:8"


def model(name: str, table: dict[str, str], library: str) -> tuple[str | None, str | None]:
    """(poolc model, None) or (None, why the name is refused)."""
    if "." in name or "partition" in name:
        return None, (f"{name} is a MIG partition, a slice of one GPU: poolc plans whole GPUs and has no model for "
                      "a slice; request whole GPUs, or plan this step in the poolc document")
    if name in table:
        return table[name], None
    known = ", ".join(sorted(table))
    return None, (f"{library} device {name!r} has no GPU model in poolc (it maps {known}; "
                  "docs/format.md#flyte-accelerators); write gpu_type for this step in the poolc document")
