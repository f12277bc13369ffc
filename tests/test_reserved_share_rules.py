"""The reserved-share diagnostics (issue 40): a non-preemptible step short of a
reserved share hears every short key at once and the two real fixes (reserve
more, or make the step preemptible), also when a pool with node groups meters
CPU and memory it never reserved; a policy that reserves a share but no
``step_run`` on a pool that meters it is warned (P010) that every step borrows.
"""

from __future__ import annotations

from pathlib import Path

from poolc.commands.validate import validate_paths

POOL = """\
apiVersion: poolc/v1
kind: ResourcePool
metadata: {name: dc}
spec:
  capacity: {gpu: 8, step_run: 10}
  nodes:
    - {name: a100, count: 1, gpu: 8, cpu: 64, memory: 512GB, gpu_type: NVIDIA-A100-SXM4-80GB}
---
apiVersion: poolc/v1
kind: ResourcePool
metadata: {name: cpu}
spec:
  capacity: {cpu: 64, memory: 256GB}
---
apiVersion: poolc/v1
kind: Stack
metadata: {name: s}
spec:
  orchestrator: {name: k8s, flavor: kubernetes, namespace: ml, image: "registry.example.com/ml:1"}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: prod}
spec:
  subject: k8s
  pool: dc
  priority: 100
  reserved: {gpu: 4, step_run: 4}
---
apiVersion: poolc/v1
kind: Pipeline
metadata: {name: train}
spec:
  stack: s
  steps:
    fit:
      settings: {resources: {gpu_count: 2, cpu_count: 8, memory: 32GB, preemptible: false}}
"""


def _diagnostics(tmp_path: Path, text: str):
    (tmp_path / "platform.yaml").write_text(text, encoding="utf-8")
    return validate_paths([str(tmp_path / "platform.yaml")]).diagnostics


def test_every_short_key_at_once_and_the_two_real_fixes(tmp_path):
    found = [x for x in _diagnostics(tmp_path, POOL) if x.rule in ("R003", "R004")]
    assert [(x.rule, x.line) for x in found] == [("R004", 37)]
    assert found[0].message == (
        "step 'fit' is non-preemptible and asks 8 cores, 32 GB, but policy 'prod' reserves only 0 cores, 0 GB; "
        "it can never be admitted: reserve more (8 cores, 32 GB in policy 'prod'), or make the step preemptible")


def test_a_pool_that_cannot_take_the_step_does_not_hide_the_share_to_fix(tmp_path):
    text = POOL + """\
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: prod-cpu}
spec: {subject: k8s, pool: cpu, priority: 100, reserved: {cpu: 8, memory: 32GB}}
"""
    found = [x for x in _diagnostics(tmp_path, text) if x.rule in ("R003", "R004")]
    assert [x.rule for x in found] == ["R003"]
    assert "pool 'cpu' has no GPU (capacity 0 GPU; needs 2 GPU)" in found[0].message
    assert found[0].message.endswith("it can never be admitted: reserve more (8 cores, 32 GB in policy 'prod'), "
                                     "or make the step preemptible")
    assert "raise the capacity" not in found[0].message


def test_a_share_without_step_run_on_a_pool_that_meters_it_is_warned(tmp_path):
    text = POOL.replace("reserved: {gpu: 4, step_run: 4}", "reserved: {gpu: 4, cpu: 16, memory: 64GB}")
    warned = [x for x in _diagnostics(tmp_path, text) if x.rule == "P010"]
    assert len(warned) == 1 and warned[0].severity == "warning" and (warned[0].line, warned[0].column) == (28, 3)
    assert warned[0].message.startswith("policy 'prod' reserves gpu, mcpu, memory_mb on pool 'dc' but no step_run, "
                                        "which the pool meters: every step takes one step_run above the share")
    # reserved: {} borrows on purpose; a reserved step_run, or a pool without the row, is fine
    for edit in ("reserved: {}", "reserved: {gpu: 4, step_run: 1}"):
        assert not [x for x in _diagnostics(tmp_path, POOL.replace("reserved: {gpu: 4, step_run: 4}", edit))
                    if x.rule == "P010"]
    assert not [x for x in _diagnostics(tmp_path, text.replace("capacity: {gpu: 8, step_run: 10}",
                                                               "capacity: {gpu: 8}")) if x.rule == "P010"]
