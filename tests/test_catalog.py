"""The shipped SageMaker catalog and the instance choice made from it."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import botocore.session
import pytest

from poolc.domain.catalog import (
    InstanceType,
    NoFit,
    choose_instance,
    gib_to_mb,
    gpu_model_matches,
    instance_type_names,
    load_catalog,
    unknown_instance_types,
)

REPO = Path(__file__).resolve().parents[1]
SHARED_CSV = REPO.parent / "shared" / "data" / "sagemaker-instance-types.csv"
SHIPPED_CSV = REPO / "poolc" / "domain" / "instance_types.csv"
DOC = REPO / "docs" / "instance-catalog.md"


def by_name(name: str) -> InstanceType:
    return next(t for t in load_catalog() if t.name == name)


def choose(*, mcpu=1000, memory_mb=1000, gpu=0, gpu_type=None, allowed=None):
    return choose_instance(mcpu=mcpu, memory_mb=memory_mb, gpu=gpu, gpu_type=gpu_type, allowed=allowed)


# --- the data -------------------------------------------------------------------


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _citations(source: str) -> list[tuple[str, str]]:
    """(label, reference) pairs of a shipped `source` cell."""
    return [tuple(part.split(":", 1)) for part in source.split("; ")]


@pytest.mark.skipif(not SHARED_CSV.exists(), reason="shared data directory not beside the repo")
def test_catalog_has_the_shared_rows_values_and_citations():
    shared = {r["instance_type"]: r for r in _rows(SHARED_CSV)}
    shipped = {r["instance_type"]: r for r in _rows(SHIPPED_CSV)}
    assert shipped.keys() == shared.keys()
    for name, row in shipped.items():
        original = shared[name]
        for column in ("vcpu", "memory_gib", "gpu_count", "gpu_model", "gpu_memory_gib", "price_usd_hour_us_east_1"):
            assert row[column] == original[column], (name, column)
        # every shortened citation keeps its label and the document it names
        original_labels = re.findall(r"(?:^|; )([^:;()]+):", original["source"])
        assert [label for label, _ in _citations(row["source"])] == original_labels, name
        for label, reference in _citations(row["source"]):
            assert reference and reference in original["source"], (name, label, reference)
    assert {t.name for t in load_catalog()} == shared.keys()


def test_catalog_is_sorted_parsed_and_cached():
    catalog = load_catalog()
    assert [t.name for t in catalog] == sorted(t.name for t in catalog)
    assert len(catalog) == len(_rows(SHIPPED_CSV)) == len(instance_type_names())
    assert load_catalog() is catalog
    assert by_name("ml.p4de.24xlarge") == InstanceType(
        name="ml.p4de.24xlarge", vcpu=96, memory_mb=1236950, gpu_count=8,
        gpu_model="NVIDIA A100 80GB", gpu_memory_gib=640.0, price=None,
    )
    m5 = by_name("ml.m5.xlarge")
    assert (m5.gpu_count, m5.gpu_model, m5.gpu_memory_gib, m5.price) == (0, None, None, 0.23)


def test_every_row_is_a_training_type_or_listed_in_the_docs():
    enum = set(
        botocore.session.get_session().get_service_model("sagemaker").shape_for("TrainingInstanceType").enum
    )
    not_training = sorted(instance_type_names() - enum)
    section = DOC.read_text(encoding="utf-8").split("## Rows that are not SageMaker training types", 1)[1]
    section = section.split("\n## ", 1)[0]
    documented = sorted(set(re.findall(r"`(ml\.[a-z0-9.]+)`", section)))
    assert not_training == documented


def test_memory_conversion_rounds_gib_down_to_decimal_mb():
    assert gib_to_mb(8) == 8589  # 8,589,934,592 bytes
    assert gib_to_mb(61) == 65498  # 65,498,251,264 bytes
    assert gib_to_mb("0.5") == 536
    assert by_name("ml.g5.2xlarge").memory_mb == 34359
    assert by_name("ml.p3.2xlarge").memory_mb == 65498
    # a request for exactly 32Gi is ceil(34,359,738,368 / 1e6) = 34360 MB: it needs the next size
    assert choose(memory_mb=34359, gpu=1, allowed=["ml.g5.2xlarge", "ml.g5.4xlarge"]).name == "ml.g5.2xlarge"
    assert choose(memory_mb=34360, gpu=1, allowed=["ml.g5.2xlarge", "ml.g5.4xlarge"]).name == "ml.g5.4xlarge"


def test_importing_the_catalog_is_light():
    code = ("import sys, poolc.domain.catalog as c; c.load_catalog(); "
            "print(sorted({'ortools', 'pydantic'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- choice ---------------------------------------------------------------------


def test_smallest_fit_by_gpus_then_vcpus_then_memory():
    assert choose(mcpu=500, memory_mb=100).name == "ml.m5.large"
    assert choose(mcpu=2001, memory_mb=100).name == "ml.c5.xlarge"  # 4 vCPUs, 8 GiB beats m5.xlarge's 16 GiB
    assert choose(mcpu=4000, memory_mb=9000).name == "ml.m5.xlarge"
    assert choose(mcpu=48000, memory_mb=1000).name == "ml.m5.12xlarge"
    # GPUs count first: a CPU job never lands on a GPU type while a CPU type fits
    assert choose(mcpu=72000, memory_mb=150000).name == "ml.c5.18xlarge"
    assert choose(mcpu=72000, memory_mb=160000).name == "ml.m5.24xlarge"
    assert choose(gpu=2).name == "ml.p3.8xlarge"  # 4 GPUs and the fewest vCPUs (32)
    assert choose(gpu=2, mcpu=40000).name == "ml.g4dn.12xlarge"  # 4 GPUs, 48 vCPUs, cheapest at $4.89
    assert choose(gpu=5, mcpu=100000).name == "ml.g6.48xlarge"  # 8 GPUs, 192 vCPUs, 768 GiB, cheaper than g5


def test_ties_broken_by_price_then_name():
    # same size (1 GPU, 8 vCPUs, 32 GiB): the cheaper wins although its name sorts later
    assert choose(gpu=1, mcpu=5000, allowed=["ml.g5.2xlarge", "ml.g6.2xlarge"]).name == "ml.g6.2xlarge"
    assert choose(gpu=1, mcpu=5000).name == "ml.g4dn.2xlarge"
    # no prices: the name decides
    assert choose(gpu=1, gpu_type="H200").name == "ml.p5e.48xlarge"
    # a known price ranks before an unknown one (g5.16xlarge has none)
    sixteen = ["ml.g4dn.16xlarge", "ml.g5.16xlarge", "ml.g6.16xlarge"]
    assert choose(gpu=1, mcpu=64000, allowed=sixteen).name == "ml.g6.16xlarge"
    assert choose(gpu=1, mcpu=64000, allowed=["ml.g5.16xlarge", "ml.g4dn.16xlarge"]).name == "ml.g4dn.16xlarge"


def test_allow_list_is_respected_and_unknown_names_reported():
    allowed = ["ml.g5.2xlarge", "ml.p4d.24xlarge", "ml.nope.xlarge"]
    assert choose(mcpu=500, allowed=allowed).name == "ml.g5.2xlarge"
    assert choose(gpu=2, allowed=allowed).name == "ml.p4d.24xlarge"
    assert choose(mcpu=500, allowed=[]).name == "ml.m5.large"  # empty list: no restriction
    assert unknown_instance_types(allowed + ["ml.x", "ml.nope.xlarge"]) == ["ml.nope.xlarge", "ml.x"]
    assert unknown_instance_types(["ml.m5.large"]) == []
    assert unknown_instance_types(None) == []
    assert "ml.g6e.48xlarge" in instance_type_names()


@pytest.mark.parametrize(
    ("gpu_type", "expected"),
    [
        ("A100", "ml.p4d.24xlarge"),
        ("a100", "ml.p4d.24xlarge"),
        ("A100-80GB", "ml.p4de.24xlarge"),
        ("nvidia a100 80gb", "ml.p4de.24xlarge"),
        ("NVIDIA-A100-SXM4-40GB", "ml.p4d.24xlarge"),
        ("V100-32GB", "ml.p3dn.24xlarge"),
        ("Tesla-V100-SXM2-16GB", "ml.p3.2xlarge"),
        ("H100-80GB", "ml.p5.48xlarge"),
        ("L40S", "ml.g6e.xlarge"),
        ("A10G", "ml.g5.xlarge"),
        ("T4", "ml.g4dn.xlarge"),
    ],
)
def test_gpu_type_filter(gpu_type, expected):
    assert choose(gpu=1, gpu_type=gpu_type).name == expected


def test_gpu_model_names_match_by_family_and_exact_memory():
    p4d = by_name("ml.p4d.24xlarge")
    assert gpu_model_matches("A100", p4d)
    assert gpu_model_matches("A100-40GiB", p4d)
    assert not gpu_model_matches("A100-80GB", p4d)
    assert not gpu_model_matches("A10", by_name("ml.g5.xlarge"))
    assert not gpu_model_matches("L40", by_name("ml.g6e.xlarge"))
    assert not gpu_model_matches("80GB", by_name("ml.p4de.24xlarge"))
    assert not gpu_model_matches("T4", by_name("ml.m5.large"))


def test_no_fit_names_the_largest_allowed_and_what_it_lacks():
    result = choose(mcpu=16000, gpu=2, allowed=["ml.g5.2xlarge", "ml.g4dn.xlarge"])
    assert result == NoFit(
        by_name("ml.g5.2xlarge"),
        "the largest allowed instance ml.g5.2xlarge has 8 vCPUs, 32 GiB memory and 1 A10G GPU; "
        "the step needs 16 vCPUs and 2 GPUs",
    )
    result = choose(mcpu=1500, memory_mb=40000, allowed=["ml.m5.large", "ml.c5.xlarge"])
    assert result.message == (
        "the largest allowed instance ml.c5.xlarge has 4 vCPUs, 8 GiB memory and no GPU; "
        "the step needs 37.3 GiB memory (40000 MB)"
    )
    result = choose(mcpu=200000, memory_mb=3_000_000, gpu=9)
    assert result.largest == by_name("ml.p5.48xlarge")  # of three 8-GPU 192-vCPU types, the one with a price
    assert result.message == (
        "the largest catalog instance ml.p5.48xlarge has 192 vCPUs, 2048 GiB memory and 8 H100 GPUs; "
        "the step needs 200 vCPUs, 2794 GiB memory (3000000 MB) and 9 GPUs"
    )


def test_no_fit_within_a_gpu_model():
    result = choose(gpu=16, gpu_type="A100-80GB")
    assert result.largest == by_name("ml.p4de.24xlarge")
    assert result.message == (
        "the largest catalog A100-80GB instance ml.p4de.24xlarge has 96 vCPUs, 1152 GiB memory and "
        "8 A100 80GB GPUs; the step needs 16 A100-80GB GPUs"
    )


def test_no_fit_when_gpu_type_filters_everything_out():
    result = choose(gpu=1, gpu_type="A100", allowed=["ml.g5.2xlarge", "ml.g4dn.xlarge", "ml.m5.large"])
    assert result.largest == by_name("ml.g5.2xlarge")
    assert result.message == (
        "the largest allowed instance ml.g5.2xlarge has 8 vCPUs, 32 GiB memory and 1 A10G GPU; "
        "the step needs 1 A100 GPU, and the allowed types have only A10G and T4 GPUs"
    )
    result = choose(gpu=2, gpu_type="T4", allowed=["ml.m5.large", "ml.c5.xlarge"])
    assert result.message == (
        "the largest allowed instance ml.c5.xlarge has 4 vCPUs, 8 GiB memory and no GPU; "
        "the step needs 2 T4 GPUs, and the allowed types have no GPUs"
    )


def test_no_fit_when_the_allow_list_names_nothing_in_the_catalog():
    assert choose(allowed=["ml.x", "ml.y", "ml.x"]) == NoFit(
        None, "none of the allowed instance types (ml.x, ml.y) is in the SageMaker instance catalog"
    )
