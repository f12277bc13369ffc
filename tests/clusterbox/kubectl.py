"""The `kubectl` of the cluster in a box (cluster.py): the commands `poolc cycle` runs, and no others.

    kubectl apply -f FILE [-f FILE]...                 each object in file order, Kueue scheduling after each
    kubectl get workloads.kueue.x-k8s.io -A -o json    (also `workloads`)
    kubectl get jobs -A -l KEY=VALUE -o json
    kubectl delete job -n NAMESPACE [--ignore-not-found] NAME...

Anything else exits 2 with "stand-in: not modelled", so a cycle that starts using a
command the box does not know fails loudly instead of passing on a guess.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from cluster import Cluster, Refused
from ruamel.yaml import YAML


def main(argv: list[str]) -> int:
    cluster = Cluster(Path(os.environ["CLUSTERBOX"]) / "cluster.json")
    try:
        return run(cluster, argv)
    finally:
        cluster.save()


def run(cluster: Cluster, argv: list[str]) -> int:
    if argv[:1] == ["apply"]:
        files = [argv[i + 1] for i, a in enumerate(argv) if a == "-f"]
        if not files or len(files) * 2 != len(argv) - 1:
            return _unknown(argv)
        failed = False
        for file in files:
            for obj in YAML(typ="safe").load_all(Path(file).read_text(encoding="utf-8")):
                if obj is None:
                    continue
                try:
                    print(cluster.apply(obj))
                except Refused as exc:
                    print(f"Error from server: {exc}", file=sys.stderr)
                    failed = True
        return 1 if failed else 0
    if argv[:1] == ["get"] and argv[2:] == ["-A", "-o", "json"] and argv[1] in ("workloads.kueue.x-k8s.io",
                                                                                "workloads"):
        cluster.look()
        items = [cluster.workload_json(k) for k in sorted(cluster.workloads)]
        print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        return 0
    if argv[:3] == ["get", "jobs", "-A"] and len(argv) == 7 and argv[3] == "-l" and argv[5:] == ["-o", "json"]:
        key, _, value = argv[4].partition("=")
        items = [o for o in cluster.objects.values()
                 if o["kind"] == "Job" and o["metadata"].get("labels", {}).get(key) == value]
        print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        return 0
    if argv[:4] == ["delete", "job", "-n", argv[3] if len(argv) > 3 else ""] and len(argv) > 4:
        names = [a for a in argv[4:] if a != "--ignore-not-found"]
        for name in names:
            if cluster.delete_job(argv[3], name):
                print(f'job.batch "{name}" deleted')
            elif "--ignore-not-found" not in argv:
                print(f'Error from server (NotFound): jobs.batch "{name}" not found', file=sys.stderr)
                return 1
        return 0
    return _unknown(argv)


def _unknown(argv: list[str]) -> int:
    print(f"stand-in: not modelled: kubectl {' '.join(argv)}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
