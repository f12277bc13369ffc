"""A cluster in a box: what the Kubernetes API server and Kueue do with what `poolc cycle` applies.

The `kubectl` stand-in (kubectl.py) loads this state from ``$CLUSTERBOX/cluster.json``,
acts and saves it; the test drives time (completions) through the same class. It reads
only the files poolc wrote, as the API server would, and decides admission with the
project's Kueue simulation (poolc.kueuesim), never with poolc's plan.

Behaviour kept:

- ``apply`` creates an object that does not exist and leaves an equal one alone; a Job
  whose spec differs under the same name is refused (a Job's template is immutable);
  a Workload patch (a stop object) for a Workload that does not exist is refused, as
  Kueue's webhook refuses a Workload without pod sets.
- A suspended Job with a ``kueue.x-k8s.io/queue-name`` label gets a Workload named
  ``job-<job>-<5 hex>`` (owner: the Job), with the Job's pod template and priority.
- **Kueue schedules after every object applied** (adversarial interleaving): each
  object can change admissions before the next one lands, and Kueue may preempt
  admitted work (a preempted Workload is requeued, as Kueue does).
- ``spec.active: false`` evicts a Workload, but its quota is released only after a few
  looks at the Workloads (0-2, seeded; ``$CLUSTERBOX_EVICTION_LOOKS`` to fix it):
  ``kubectl get workloads`` is how time passes.
- ``delete job`` removes the Job and, by owner reference, its Workload, which keeps
  its quota like an evicted one until its pods are gone.

Simplified, because poolc never relies on it: no pods or nodes (an admitted Workload
"runs"); a deleted Job goes at once, its Workload when its quota is released (as an
eviction); an unmanaged Job (no queue label)
just runs; ``--prune``, ``-R``, server-side apply and field managers are not modelled
(the cycle does not use them); a Workload being evicted that Kueue's simulation would
preempt again stays evicting.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from poolc.kueuesim import Workload, canonical_units, simulate

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
KUEUE_KINDS = ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass")


class Refused(Exception):
    """What the API server answers with an error (kubectl prints it and exits 1)."""


def _key(obj: dict) -> str:
    meta = obj["metadata"]
    return f"{obj['kind']}/{meta.get('namespace', '')}/{meta['name']}"


class Cluster:
    def __init__(self, path: Path):
        self.path = path
        data = json.loads(path.read_text()) if path.exists() else {}
        self.objects: dict[str, dict] = data.get("objects", {})       # Jobs and Kueue objects, as applied
        self.workloads: dict[str, dict] = data.get("workloads", {})   # ns/name -> Kueue's record
        self.clock: int = data.get("clock", 1_800_000_000)           # epoch seconds
        self.seed: int = data.get("seed", 0)
        self.serial: int = data.get("serial", 0)
        self.log: list[str] = data.get("log", [])                    # what happened, for the test

    def save(self) -> None:
        self.path.write_text(json.dumps({"objects": self.objects, "workloads": self.workloads, "clock": self.clock,
                                         "seed": self.seed, "serial": self.serial, "log": self.log}, indent=1))

    def tick(self) -> str:
        self.clock += 1
        return datetime.fromtimestamp(self.clock, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    # --- the API server -------------------------------------------------------------

    def apply(self, obj: dict) -> str:
        kind = obj.get("kind")
        if kind == "Workload":
            return self._patch_workload(obj)
        key = _key(obj)
        old = self.objects.get(key)
        if kind == "Job":
            if old is not None:
                if old["spec"] != obj["spec"]:
                    raise Refused(f"Job.batch {obj['metadata']['name']!r} is invalid: spec.template: field is "
                                  "immutable")
                return f"job.batch/{obj['metadata']['name']} unchanged"
            self.serial += 1
            job = json.loads(json.dumps(obj))
            job["metadata"]["uid"] = hashlib.sha256(f"{key}/{self.serial}".encode()).hexdigest()[:16]
            self.objects[key] = job
            self.log.append(f"create job {obj['metadata']['namespace']}/{obj['metadata']['name']}")
            if QUEUE_LABEL in obj["metadata"].get("labels", {}) and obj["spec"].get("suspend"):
                self._workload_for(job)
            self.schedule()
            return f"job.batch/{obj['metadata']['name']} created"
        self.objects[key] = json.loads(json.dumps(obj))
        if kind in KUEUE_KINDS:
            self.schedule()
        return f"{kind.lower()}/{obj['metadata']['name']} {'configured' if old else 'created'}"

    def _workload_for(self, job: dict) -> None:
        meta = job["metadata"]
        name = f"job-{meta['name']}-{hashlib.sha256(meta['uid'].encode()).hexdigest()[:5]}"[:253]
        labels = meta.get("labels", {})
        self.workloads[f"{meta['namespace']}/{name}"] = {
            "name": name, "namespace": meta["namespace"], "job": meta["name"], "uid": meta["uid"],
            "queue": labels[QUEUE_LABEL], "priority_class": labels.get(PRIORITY_LABEL),
            "template": job["spec"]["template"], "created": self.serial, "created_at": self.tick(),
            "active": True, "state": "pending", "cluster_queue": None, "admitted_at": None,
            "evicting": None, "finished_at": None, "labels": {}, "annotations": {}, "evicted_reason": None}

    def _patch_workload(self, obj: dict) -> str:
        meta = obj["metadata"]
        key = f"{meta.get('namespace', '')}/{meta['name']}"
        found = self.workloads.get(key)
        if found is None:
            raise Refused(f"admission webhook denied the request: Workload {key}: spec.podSets: Required value")
        found["labels"].update(meta.get("labels") or {})
        found["annotations"].update(meta.get("annotations") or {})
        if (obj.get("spec") or {}).get("active") is False and found["active"]:
            found["active"] = False
            self.log.append(f"deactivate {key}")
            if found["state"] == "admitted":
                self._evict(key)
            found["evicted_reason"] = "Deactivated"
        return f"workload.kueue.x-k8s.io/{meta['name']} configured"

    def _evict(self, key: str) -> None:
        """An admitted Workload's pods stop: it keeps its quota for a few more looks."""
        found = self.workloads[key]
        found["state"] = "evicting"
        found["evicting"] = int(os.environ.get("CLUSTERBOX_EVICTION_LOOKS", "-1"))
        if found["evicting"] < 0:
            found["evicting"] = random.Random(f"{self.seed}/{key}").randint(0, 2)

    def delete_job(self, namespace: str, name: str) -> bool:
        """The Job goes at once; its Workload goes (by owner reference) when its pods are
        gone: at once unless it holds quota, else after the looks an eviction takes."""
        key = f"Job/{namespace}/{name}"
        if self.objects.pop(key, None) is None:
            return False
        self.log.append(f"delete job {namespace}/{name}")
        for wkey in [k for k, w in self.workloads.items() if w["namespace"] == namespace and w["job"] == name]:
            workload = self.workloads[wkey]
            if workload["state"] == "admitted":
                self._evict(wkey)
            if workload["state"] == "evicting":
                workload["deleting"] = True
            else:
                del self.workloads[wkey]
        self.schedule()
        return True

    def look(self) -> None:
        """A look at the Workloads: time passes for the ones being evicted."""
        released = False
        for key, w in list(self.workloads.items()):
            if w["state"] == "evicting":
                if w["evicting"] <= 0:
                    w["state"], w["cluster_queue"], w["admitted_at"] = "pending", None, None
                    released = True
                    if w.get("deleting"):
                        del self.workloads[key]
                else:
                    w["evicting"] -= 1
        if released:
            self.schedule()

    # --- Kueue ------------------------------------------------------------------------

    def kueue_objects(self) -> list[dict]:
        return [o for o in self.objects.values() if o["kind"] in KUEUE_KINDS]

    def schedule(self) -> None:
        """One pass of Kueue's scheduler over every active, unfinished Workload."""
        objects = self.kueue_objects()
        if not any(o["kind"] == "ClusterQueue" for o in objects):
            return
        values = {o["metadata"]["name"]: int(o.get("value", 0)) for o in objects
                  if o["kind"] == "WorkloadPriorityClass"}
        items = []
        for key, w in self.workloads.items():
            if w["finished_at"] or (not w["active"] and w["state"] != "evicting") or (
                    w.get("deleting") and w["state"] != "evicting"):
                continue
            holding = w["state"] in ("admitted", "evicting")
            items.append(Workload(name=key, namespace=w["namespace"], queue_name=w["queue"],
                                  priority=values.get(w["priority_class"] or "", 0), requests=_requests(w["template"]),
                                  created=w["created"], admitted_at=w["admitted_at"] if holding else None,
                                  node_selector=tuple(sorted((w["template"]["spec"].get("nodeSelector")
                                                              or {}).items()))))
        outcome = simulate(objects, items).outcomes
        for key, result in outcome.items():
            w = self.workloads[key]
            if w["state"] == "evicting":
                continue
            if result.status == "admitted" and w["state"] != "admitted":
                w["state"], w["cluster_queue"], w["admitted_at"] = "admitted", result.cluster_queue, self.serial
                w["admitted_time"] = self.tick()
                w["evicted_reason"] = None
                self.log.append(f"admit {key}")
            elif result.status == "preempted" and w["state"] == "admitted":
                w["state"], w["cluster_queue"], w["admitted_at"] = "pending", None, None
                w["evicted_reason"] = "Preempted"
                self.log.append(f"preempt {key}")

    # --- what the test does to the cluster --------------------------------------------

    def finish(self, key: str) -> None:
        """The Job of an admitted Workload completes."""
        w = self.workloads[key]
        assert w["state"] == "admitted", (key, w["state"])
        w["state"], w["finished_at"] = "finished", self.tick()
        self.log.append(f"finish {key}")
        self.schedule()

    def admitted(self) -> dict[str, dict]:
        return {k: w for k, w in self.workloads.items() if w["state"] == "admitted"}

    # --- what kubectl get prints --------------------------------------------------------

    def workload_json(self, key: str) -> dict:
        w = self.workloads[key]
        conditions = []
        holding = w["state"] in ("admitted", "evicting")
        if holding:
            conditions += [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                            "lastTransitionTime": w["admitted_time"]},
                           {"type": "Admitted", "status": "True", "reason": "Admitted",
                            "lastTransitionTime": w["admitted_time"]}]
        if w["evicted_reason"]:
            conditions.append({"type": "Evicted", "status": "True", "reason": w["evicted_reason"],
                               "lastTransitionTime": w["created_at"]})
        if w["finished_at"]:
            conditions.append({"type": "Finished", "status": "True", "reason": "Succeeded",
                               "lastTransitionTime": w["finished_at"]})
        status: dict[str, Any] = {"conditions": conditions}
        if holding or w["finished_at"]:
            status["admission"] = {"clusterQueue": w["cluster_queue"] or w.get("last_queue"),
                                   "podSetAssignments": [{"name": "main", "count": 1}]}
        if w["cluster_queue"]:
            w["last_queue"] = w["cluster_queue"]
        return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": w["name"], "namespace": w["namespace"],
                             **({"deletionTimestamp": w["created_at"]} if w.get("deleting") else {}),
                             "labels": {"kueue.x-k8s.io/job-uid": w["uid"], **w["labels"]},
                             "annotations": w["annotations"],
                             "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": w["job"],
                                                  "uid": w["uid"], "controller": True}]},
                "spec": {"active": w["active"], "queueName": w["queue"], "priorityClassName": w["priority_class"],
                         "podSets": [{"name": "main", "count": 1, "template": w["template"]}]},
                "status": status}


def _requests(template: dict) -> dict[str, int]:
    total = {"pods": 1}
    for container in template["spec"].get("containers", []):
        resources = container.get("resources", {})
        for name, quantity in {**resources.get("limits", {}), **resources.get("requests", {})}.items():
            total[name] = total.get(name, 0) + canonical_units(name, quantity)
    return total
