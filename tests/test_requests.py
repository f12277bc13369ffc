"""poolc.requests: merged ResourceSettings -> demand vector, requester and arrival order
(docs/format.md#pipeline)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolc.commands.validate import validate_paths
from poolc.model import ResourceSettings
from poolc.requests import build_requests, demand_of

REPO = Path(__file__).resolve().parent.parent
CONTEXT = REPO / "tests" / "fixtures" / "context" / "platform.yaml"


def settings(**fields) -> ResourceSettings:
    return ResourceSettings.model_validate(fields)


# --- demand_of ---------------------------------------------------------------------

def test_zenml_documented_example():
    """ZenML's resource-pool docs: ResourceSettings(gpu_count=2, cpu_count=4, memory="16GiB",
    pool_resources={"tensorrt_sessions": 1})."""
    demand = demand_of(settings(gpu_count=2, cpu_count=4, memory="16GiB", pool_resources={"tensorrt_sessions": 1}))
    assert demand == {"gpu": 2, "mcpu": 4000, "memory_mb": 17180, "tensorrt_sessions": 1, "step_run": 1}
    assert list(demand) == sorted(demand)


def test_fractional_cores_are_exact_decimal():
    assert demand_of(settings(cpu_count=16.1))["mcpu"] == 16100


def test_gpu_count_zero_removes_gpu_given_in_pool_resources():
    assert demand_of(settings(gpu_count=0, pool_resources={"gpu": 3, "fpga": 1})) == {"fpga": 1, "step_run": 1}


def test_gpu_from_pool_resources_stays_when_gpu_count_is_absent():
    assert demand_of(settings(pool_resources={"gpu": 3})) == {"gpu": 3, "step_run": 1}


def test_typed_fields_win_over_pool_resources():
    demand = demand_of(settings(gpu_count=1, cpu_count=1, memory="1GB",
                                pool_resources={"gpu": 5, "mcpu": 5, "memory_mb": 5}))
    assert demand == {"gpu": 1, "mcpu": 1000, "memory_mb": 1000, "step_run": 1}


@pytest.mark.parametrize("given_step_run", [None, 1, 7])
def test_step_run_is_always_one(given_step_run):
    pool_resources = {"step_run": given_step_run} if given_step_run else None
    assert demand_of(settings(**({"pool_resources": pool_resources} if pool_resources else {}))) == {"step_run": 1}


def test_fields_that_are_not_demand_do_not_appear():
    demand = demand_of(settings(gpu_type="A100", disk="100GB", shm="auto", preemptible=False, min_replicas=1,
                                max_replicas=2, autoscaling_metric="rps", autoscaling_target=1.5,
                                max_concurrency=4))
    assert demand == {"step_run": 1}


# --- merging -----------------------------------------------------------------------

def test_merge_field_by_field_step_wins():
    default = settings(cpu_count=4, memory="16GiB", gpu_count=2, preemptible=True)
    step = settings(memory="32GB", gpu_count=0, preemptible=False)
    merged = step.merged_over(default)
    assert (merged.cpu_count, merged.memory, merged.gpu_count, merged.preemptible) == (4, "32GB", 0, False)
    assert demand_of(merged) == {"mcpu": 4000, "memory_mb": 32000, "step_run": 1}


def test_pool_resources_merge_key_by_key():
    default = settings(pool_resources={"a": 1, "b": 2})
    step = settings(pool_resources={"b": 5, "c": 1})
    assert step.merged_over(default).pool_resources == {"a": 1, "b": 5, "c": 1}
    assert settings().merged_over(default).pool_resources == {"a": 1, "b": 2}
    assert step.merged_over(settings()).pool_resources == {"b": 5, "c": 1}
    assert step.merged_over(None) is step


def test_empty_step_pool_resources_keeps_the_defaults():
    merged = settings(pool_resources={}).merged_over(settings(pool_resources={"fpga": 1}))
    assert merged.pool_resources == {"fpga": 1}


_fields = {
    "cpu_count": st.sampled_from([0.5, 1, 2, 16.1]),
    "memory": st.sampled_from(["512Mi", "4GB", "16GiB"]),
    "gpu_count": st.integers(0, 4),
    "gpu_type": st.sampled_from(["A100", "T4"]),
    "disk": st.sampled_from(["10GB", "1Ti"]),
    "shm": st.sampled_from(["auto", "1Gi"]),
    "preemptible": st.booleans(),
    "pool_resources": st.dictionaries(st.sampled_from(["gpu", "fpga", "licence", "step_run"]),
                                      st.integers(1, 5), max_size=3),
    "min_replicas": st.integers(0, 3),
    "max_replicas": st.integers(0, 3),
}
partial_settings = st.fixed_dictionaries({}, optional=_fields)


@given(partial_settings, partial_settings)
def test_merge_property(default_fields: dict, step_fields: dict):
    merged = settings(**step_fields).merged_over(settings(**default_fields))
    for name in _fields:
        if name == "pool_resources":
            expected = {**default_fields.get(name, {}), **step_fields.get(name, {})} \
                if name in default_fields or name in step_fields else None
            assert (merged.pool_resources or None) == (expected or None)
        else:
            assert getattr(merged, name) == step_fields.get(name, default_fields.get(name))


@given(partial_settings)
def test_demand_property(fields: dict):
    demand = demand_of(settings(**fields))
    assert demand["step_run"] == 1
    assert all(isinstance(v, int) and v > 0 for v in demand.values())
    assert ("gpu" in demand) == (fields.get("gpu_count", fields.get("pool_resources", {}).get("gpu", 0)) > 0)
    assert ("mcpu" in demand) == ("cpu_count" in fields)
    for key, value in fields.get("pool_resources", {}).items():
        if key not in ("gpu", "step_run"):
            assert demand[key] == value


# --- requests from files: requester, arrival order, preemptible ------------------------

def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def pipeline(name: str, steps: str, default: str = "") -> str:
    return (f"apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {{name: {name}}}\n"
            f"spec:\n  stack: team-stack\n{default}  steps:\n{steps}")


def requests_of(paths: list[str]):
    result = validate_paths([str(CONTEXT), *paths])
    assert result.ok, [d.as_text() for d in result.diagnostics]
    return build_requests(result.config)


def test_requester_is_the_step_operator_else_the_orchestrator(tmp_path: Path):
    path = write(tmp_path, "p.yaml", pipeline("p", "    a: {}\n    b: {step_operator: team-gpu-op}\n"))
    assert [(r.id, r.requester) for r in requests_of([path])] == [("p/a", "team-k8s"), ("p/b", "team-gpu-op")]


def test_preemptible_defaults_to_true_and_merges(tmp_path: Path):
    default = "  settings: {resources: {preemptible: false}}\n"
    path = write(tmp_path, "p.yaml", pipeline(
        "p", "    a: {}\n    b: {settings: {resources: {preemptible: true}}}\n", default))
    other = write(tmp_path, "q.yaml", pipeline("q", "    c: {}\n"))
    assert [(r.id, r.preemptible) for r in requests_of([path, other])] == [
        ("p/a", False), ("p/b", True), ("q/c", True)]


def test_arrival_order_files_as_given_then_documents_then_steps(tmp_path: Path):
    first = write(tmp_path, "z-first.yaml", pipeline("z", "    s2: {}\n    s1: {}\n")
                  + "---\n" + pipeline("y", "    only: {}\n"))
    second = write(tmp_path, "a-second.yaml", pipeline("a", "    x: {}\n"))
    ids = [r.id for r in requests_of([first, second])]
    assert ids == ["z/s2", "z/s1", "y/only", "a/x"]


def test_directories_expand_in_sorted_path_order(tmp_path: Path):
    (tmp_path / "dir").mkdir()
    write(tmp_path, "dir/b.yaml", pipeline("b", "    x: {}\n"))
    write(tmp_path, "dir/a.yaml", pipeline("a", "    x: {}\n"))
    assert [r.id for r in requests_of([str(tmp_path / "dir")])] == ["a/x", "b/x"]


def test_submitted_at_wins_and_is_compared_as_an_instant(tmp_path: Path):
    steps = ("    plain_first: {}\n"
             "    late: {submitted_at: '2026-11-20T07:00:00Z'}\n"
             "    early_in_paris: {submitted_at: '2026-11-20T06:30:00+01:00'}\n"   # 05:30Z
             "    plain_second: {}\n"
             "    early_utc: {submitted_at: '2026-11-20T06:00:00Z'}\n")
    ids = [r.id for r in requests_of([write(tmp_path, "p.yaml", pipeline("p", steps))])]
    assert ids == ["p/early_in_paris", "p/early_utc", "p/late", "p/plain_first", "p/plain_second"]


def test_equal_submitted_at_keeps_arrival_order(tmp_path: Path):
    steps = "".join(f"    s{i}: {{submitted_at: '2026-11-20T06:00:00Z'}}\n" for i in (3, 1, 2))
    ids = [r.id for r in requests_of([write(tmp_path, "p.yaml", pipeline("p", steps))])]
    assert ids == ["p/s3", "p/s1", "p/s2"]


@pytest.mark.parametrize("resources, rule", [
    ("{gpu_count: 1.5}", "S003"),             # fractional gpu_count
    ("{gpu_count: -1}", "S003"),
    ("{cpu_count: 0}", "S003"),
    ("{cpu_count: -0.5}", "S003"),
    ("{pool_resources: {fpga: 0}}", "S003"),  # pool_resources values >= 1
    ("{memory: 0Mi}", "R001"),
    ("{min_replicas: 2, max_replicas: 1}", "R002"),
])
def test_semantics_1_3_errors(tmp_path: Path, resources: str, rule: str):
    path = write(tmp_path, "p.yaml", pipeline("p", f"    s: {{settings: {{resources: {resources}}}}}\n"))
    result = validate_paths([str(CONTEXT), path])
    assert [(d.rule, d.line) for d in result.diagnostics] == [(rule, 7)]


EXAMPLE_DEMANDS = {  # examples/README.md, computed by hand
    "llm-finetune/tokenize": ("sagemaker-gpu", True, {"mcpu": 16000, "memory_mb": 48000, "step_run": 1}),
    "llm-finetune/finetune": ("sagemaker-gpu", False, {"gpu": 8, "mcpu": 64000, "memory_mb": 966368,
                                                       "step_run": 1}),
    "llm-finetune/distill": ("sagemaker-gpu", True, {"gpu": 4, "mcpu": 32000, "memory_mb": 137439, "step_run": 1}),
    "llm-finetune/quantize_adapter": ("sagemaker-gpu", True, {"gpu": 1, "mcpu": 8000, "memory_mb": 25770,
                                                              "step_run": 1}),
    "llm-finetune/package_model": ("prod-k8s", True, {"gpu": 1, "mcpu": 2000, "memory_mb": 8590, "step_run": 1,
                                                      "tensorrt_sessions": 1}),
    "prod-training/load_data": ("prod-k8s", True, {"mcpu": 4000, "memory_mb": 17180, "step_run": 1}),
    "prod-training/train_model": ("prod-k8s", False, {"gpu": 4, "mcpu": 32000, "memory_mb": 274878, "step_run": 1}),
    "prod-training/evaluate": ("prod-k8s", True, {"gpu": 1, "mcpu": 4000, "memory_mb": 32000, "step_run": 1,
                                                  "tensorrt_sessions": 1}),
    "prod-training/register_model": ("prod-k8s", False, {"mcpu": 500, "memory_mb": 537, "step_run": 1}),
    "research-sweep/sweep_lr_03": ("research-k8s", True, {"gpu": 2, "mcpu": 8000, "memory_mb": 64000,
                                                          "step_run": 1}),
    "research-sweep/sweep_lr_04": ("research-k8s", True, {"gpu": 2, "mcpu": 8000, "memory_mb": 64000,
                                                          "step_run": 1}),
    "research-sweep/finetune_lora": ("research-gpu-op", True, {"gpu": 2, "mcpu": 12000, "memory_mb": 103080,
                                                               "step_run": 1}),
    "research-sweep/export_trt": ("research-gpu-op", True, {"gpu": 1, "mcpu": 4000, "memory_mb": 17180,
                                                            "step_run": 1, "tensorrt_sessions": 1}),
    "research-sweep/summarize": ("research-k8s", False, {"mcpu": 2000, "memory_mb": 4295, "step_run": 1}),
}


def test_example_repository_demands_match_the_hand_computed_table():
    result = validate_paths([str(REPO / "examples")])
    requests = build_requests(result.config)
    assert {r.id: (r.requester, r.preemptible, r.demand) for r in requests} == EXAMPLE_DEMANDS
    # summarize sets submitted_at, so it arrives first; the rest in file, document, step order.
    assert [r.id for r in requests] == ["research-sweep/summarize"] + [
        i for i in EXAMPLE_DEMANDS if i != "research-sweep/summarize"]


# --- ZenML 0.98 spellings ------------------------------------------------------------

def test_zenml_098_spellings_mean_the_v1_fields():
    canonical = settings(resources={"lic": 2}, reclaim_tolerance="none").merged_over(None)
    assert (canonical.pool_resources, canonical.preemptible) == ({"lic": 2}, False)
    assert canonical.new_spellings() == []
    assert settings(reclaim_tolerance="any").merged_over(None).preemptible is True
    # ZenML 0.98 maps legacy preemptible: true to coordinated: preemptible too
    assert settings(reclaim_tolerance="coordinated").merged_over(None).preemptible is True


def test_gpu_class_is_a_capacity_class_never_a_gpu_model():
    """ZenML 0.98's gpu_class picks a capacity class of its resource pools; poolc has
    none: it must never become gpu_type (a node selector no node may carry)."""
    merged = settings(gpu_count=1, gpu_class="A100").merged_over(settings(gpu_type="T4"))
    assert (merged.gpu_type, merged.gpu_class) == ("T4", "A100")
    alone = settings(gpu_count=1, gpu_class="A100").merged_over(None)
    assert alone.gpu_type is None


@pytest.mark.parametrize(("resources", "demand"), [
    ("tpu", {"tpu": 1, "step_run": 1}),
    ({"tpu": 2, "lic": 1}, {"lic": 1, "tpu": 2, "step_run": 1}),
    ([{"name": "tpu", "quantity": 2}, {"name": "tpu", "quantity": 1}, {"kind": "gpu", "quantity": 3}],
     {"gpu": 3, "tpu": 3, "step_run": 1}),
    ([{"kind": "cpu", "quantity": 2, "unit": "CPU"}, {"kind": "memory", "quantity": 3, "unit": "GiB"}],
     {"mcpu": 2000, "memory_mb": 3222, "step_run": 1}),
    ([{"kind": "cpu", "quantity": 250, "unit": "mCPU"}], {"mcpu": 250, "step_run": 1}),
])
def test_resources_as_a_name_a_map_or_a_list_of_demands(resources, demand):
    assert demand_of(settings(resources=resources).merged_over(None)) == demand


def test_memory_in_plain_bytes():
    assert demand_of(settings(memory="1500000B").merged_over(None)) == {"memory_mb": 2, "step_run": 1}


def test_zenml_098_spellings_merge_with_the_v1_fields_of_the_other_side():
    default = settings(pool_resources={"lic": 1, "seat": 1}, preemptible=True)
    merged = settings(resources={"lic": 2}, reclaim_tolerance="none").merged_over(default)
    assert merged.pool_resources == {"lic": 2, "seat": 1}
    assert merged.preemptible is False
    inherited = settings().merged_over(settings(resources={"lic": 1}, reclaim_tolerance="none"))
    assert (inherited.pool_resources, inherited.preemptible) == ({"lic": 1}, False)
    assert demand_of(inherited) == {"lic": 1, "step_run": 1}


def test_the_zenml_098_fixture_builds_a_non_preemptible_step_without_a_gpu_selector():
    fixture = REPO / "tests" / "fixtures" / "negative" / "r007-zenml-098-spellings.yaml"
    result = validate_paths([str(CONTEXT), str(fixture)])
    train = next(r for r in build_requests(result.config) if r.id == "zenml-098/train")
    assert (train.settings.gpu_type, train.preemptible) == ("T4", False)   # gpu_class A100 is not a model
    assert train.demand == {"gpu": 1, "mcpu": 1000, "step_run": 1}
    evaluate = next(r for r in build_requests(result.config) if r.id == "zenml-098/evaluate")
    assert (evaluate.settings.gpu_type, evaluate.preemptible) == ("T4", True)


@pytest.mark.parametrize("fields", [{"resources": {"a": 1}, "pool_resources": {"a": 1}},
                                    {"reclaim_tolerance": "any", "preemptible": True},
                                    {"reclaim_tolerance": "sometimes"},
                                    {"resources": [{"quantity": 1}]},
                                    {"allocation_wait_timeout_seconds": 0}])
def test_zenml_098_fields_refused_by_the_model(fields):
    with pytest.raises(ValueError):
        settings(**fields)


@pytest.mark.parametrize("fields", [{"reclaim_tolerance": "coordinated"},
                                    {"allocation_wait_timeout_seconds": 1},
                                    {"initialization_lease_seconds": 1},
                                    {"gpu_class": "A", "gpu_type": "A"}])
def test_zenml_098_fields_accepted_by_the_model(fields):
    assert settings(**fields) is not None


def test_max_runtime_merges_like_other_settings(tmp_path: Path):
    """The pipeline default applies to every step; a step's own max_runtime wins, in
    either spelling (an integer is seconds)."""
    default = "  settings:\n    resources: {max_runtime: 2h}\n"
    steps = ("    a: {}\n    b: {settings: {resources: {max_runtime: 90}}}\n"
             "    c: {settings: {resources: {cpu_count: 1}}}\n")
    path = write(tmp_path, "p.yaml", pipeline("p", steps, default))
    assert [(r.step, r.max_runtime_seconds) for r in requests_of([path])] == [("a", 7200), ("b", 90), ("c", 7200)]
    path = write(tmp_path, "q.yaml", pipeline("q", "    a: {}\n"))
    assert [r.max_runtime_seconds for r in requests_of([path])] == [None]
