"""Queued steps are explained by the rule that really holds them back.

Each case is one where the naive reason, the pool's free capacity, is wrong or not
the whole story; each is planned by the real solver, and then the rule named as
binding is lifted (or another one is) to show that it was the one that binds.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from poolc.commands.planning import plan_paths
from poolc.domain.plan import Plan, to_json

REVIEW = Path(__file__).resolve().parent / "fixtures" / "review"


def planned(root: Path) -> Plan:
    return plan_paths([str(root)], state_file=str(root / "no-state.json")).plan


def entry(plan: Plan, step: str) -> dict:
    return next(r for r in json.loads(to_json(plan))["requests"] if r["id"] == step)


def review_copy(tmp_path: Path, old: str = "", new: str = "") -> Path:
    root = tmp_path / "review"
    shutil.copytree(REVIEW, root)
    if old:
        text = (root / "pools.yaml").read_text(encoding="utf-8")
        assert old in text
        (root / "pools.yaml").write_text(text.replace(old, new), encoding="utf-8")
    return root


def test_own_non_preemptible_share_binds_while_a_lower_priority_team_borrows(tmp_path):
    """ranking-train/train (priority 1000, non-preemptible) sees 2 free GPUs while
    the priority-300 vision team borrows 8 it could preempt: the pool is not what
    holds it back, its own policy's non-preemptible share is."""
    plan = planned(review_copy(tmp_path))
    train = entry(plan, "ranking-train/train")
    assert train["status"] == "queued" and train["policy"] == "ranking-onprem"
    share = "non-preemptible share: policy ranking-onprem holds 8 of reserved gpu=12, needs 8"
    assert train["reason"] == share
    assert train["message"] == (
        f"{share}; also gpu: needs 8, free 2 in pool onprem-gpu (borrowers below priority 1000 hold 8 it may "
        "preempt; borrowers at priority 1000 or above hold 6 it may not)")
    # A larger pool changes nothing for it: the share binds, not the capacity.
    larger = planned(review_copy(tmp_path / "larger", "capacity: {gpu: 24}", "capacity: {gpu: 64}"))
    again = entry(larger, "ranking-train/train")
    assert again["status"] == "queued" and again["reason"] == share
    assert again["message"] == share


def test_capacity_held_by_higher_priority_borrowers_binds(tmp_path):
    """vision-sweep/sweep (priority 300) cannot preempt the ranking step that
    borrows above its reserve, nor its own team: capacity binds, and the numbers
    say who holds it."""
    plan = planned(review_copy(tmp_path))
    sweep = entry(plan, "vision-sweep/sweep")
    assert sweep["status"] == "queued" and sweep["policy"] == "vision-onprem"
    assert sweep["reason"] == sweep["message"] == (
        "gpu: needs 4, free 2 in pool onprem-gpu (borrowers at priority 300 or above hold 14 it may not)")
    larger = planned(review_copy(tmp_path / "larger", "capacity: {gpu: 24}", "capacity: {gpu: 30}"))
    assert entry(larger, "vision-sweep/sweep")["status"] == "allocated"


LIMITED = {
    "platform.yaml": """\
apiVersion: poolc/v1
kind: ResourcePool
metadata: {name: dc}
spec: {capacity: {gpu: 8}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: prod}
spec: {subject: prod-k8s, pool: dc, priority: 100, limit: {gpu: LIMIT}}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: research}
spec: {subject: research-k8s, pool: dc, priority: 10}
---
apiVersion: poolc/v1
kind: Stack
metadata: {name: prod-stack}
spec:
  orchestrator: {name: prod-k8s, flavor: kubernetes, namespace: prod, image: "train:1"}
---
apiVersion: poolc/v1
kind: Stack
metadata: {name: research-stack}
spec:
  orchestrator: {name: research-k8s, flavor: kubernetes, namespace: research, image: "train:1"}
---
apiVersion: poolc/v1
kind: Allocation
metadata: {name: prod-serve}
spec: {subject: prod-k8s, pool: dc, holds: {gpu: 5}, started_at: "2026-01-01T00:00:00Z"}
---
apiVersion: poolc/v1
kind: Allocation
metadata: {name: research-sweep}
spec: {subject: research-k8s, pool: dc, holds: {gpu: 3}, started_at: "2026-01-01T01:00:00Z"}
---
apiVersion: poolc/v1
kind: Pipeline
metadata: {name: train}
spec:
  stack: prod-stack
  steps:
    more: {settings: {resources: {gpu_count: 2}}}
""",
}


def write_limited(root: Path, limit: int) -> Path:
    root.mkdir(parents=True)
    (root / "platform.yaml").write_text(LIMITED["platform.yaml"].replace("LIMIT", str(limit)), encoding="utf-8")
    return root


def test_the_policys_limit_binds_where_the_pool_looks_full(tmp_path):
    """The pool is full, but the priority-10 sweep borrowing 3 GPUs could be
    preempted for a priority-100 step: what holds it back is prod's limit. (prod
    reserves nothing: a step inside a free reserved share may displace any
    borrower, its own policy's included.)"""
    plan = planned(write_limited(tmp_path / "limit6", 6))
    more = entry(plan, "train/more")
    assert more["status"] == "queued" and more["policy"] == "prod"
    assert more["reason"] == "limit: policy prod holds 5 of 6 gpu, needs 2"
    assert more["message"] == ("limit: policy prod holds 5 of 6 gpu, needs 2; also gpu: needs 2, free 0 in pool dc "
                               "(borrowers below priority 100 hold 3 it may preempt; borrowers at priority 100 or "
                               "above hold 5 it may not)")
    assert plan.preempted == ()
    # Lift the limit: the sweep is preempted and the step admitted, as the message said it could be.
    lifted = planned(write_limited(tmp_path / "limit8", 8))
    assert entry(lifted, "train/more")["status"] == "allocated"
    assert [p.id for p in lifted.preempted] == ["research-sweep"]
