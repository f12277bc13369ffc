"""How much the examples' scenario suite catches: 50 single-field mutations of
examples/' policies, pools, steps and allocations, each run through `poolc test`.

Prints figures, not pass/fail (see benchmarks/README.md):

    python benchmarks/scenario_mutations.py [--strategy optimal] [--list] [--probe N]

Each mutation changes one thing a platform team changes in a pull request: a
priority swapped between two policies, a reserved share or a limit one unit up or
down, a step's or a running allocation's preemptible flipped, or a pool one node
smaller (the node group's count and the capacity rows that node held, the one edit
`validate` accepts). A mutation is **caught** when at least one expectation of the
suite fails on it, **refused** when the mutated platform does not validate (then no
scenario runs: validate caught it, the suite did not), and **missed** otherwise; a
missed mutation may change nothing the scenarios can see (an equivalent mutant).
The share caught is counted over the mutations that validate. Beside it: the CPU
seconds per scenario (process time of the whole run of the suite, divided by its
scenarios; median over the mutations), and the machine's `uptime`. A missed mutation
is told apart by whether it moves any scenario's schedule: one that moves none is
equivalent for these arrivals (no expectation could see it); one that moves some
is a gap in the expectations. `--probe N` runs each one that moves none against N
seeded random arrival patterns (scenario_probe.py): one that moves none of those
either is equivalent as far as the search sees (benchmarks/README.md gives the
reason of each). Under a strategy where some expectations already fail on examples/
as they are (kueue), a mutation is caught when one that held there fails.

The priority swaps are the pairs of policies whose swap reorders the policies of some
pool, those sharing a pool first. A swap that reorders none (prod-k8s-dc1 and
prod-sagemaker each top their own pool, before and after) is a no-op by
construction; three such swaps were in the first list and were replaced.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scenario_probe import moved, probe_root  # noqa: E402

from poolc.scenario.command import run_tests  # noqa: E402

Edit = Callable[[dict], None]


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str            # relative to examples/
    document: str        # metadata.name of the document it edits
    edit: Edit


def _set(path: tuple, delta: int) -> Edit:
    def edit(doc: dict) -> None:
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = node[path[-1]] + delta
    return edit


def _flip(path: tuple) -> Edit:
    def edit(doc: dict) -> None:
        node = doc
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = not node.get(path[-1], True)
    return edit


POLICIES = {   # name -> (file, pool, priority)
    "prod-k8s-dc1": ("policies/prod.yaml", "datacenter-one", 1000),
    "prod-k8s-cpu": ("policies/prod.yaml", "cpu-batch", 500),
    "prod-sagemaker": ("policies/prod.yaml", "aws-sagemaker", 900),
    "research-k8s-dc1": ("policies/research.yaml", "datacenter-one", 100),
    "research-gpu-dc1": ("policies/research.yaml", "datacenter-one", 100),
    "research-k8s-cpu": ("policies/research.yaml", "cpu-batch", 10)}


def reorders_a_pool(a: str, b: str) -> bool:
    """Whether swapping a's and b's priorities changes the order of the policies on some
    pool. A swap that changes none (each side keeps its place on its own pool, say the
    top policies of two pools) is a no-op by construction: no plan reads it."""
    swapped = {a: POLICIES[b][2], b: POLICIES[a][2]}
    for name, (_, pool, priority) in POLICIES.items():
        for other, (_, pool2, priority2) in POLICIES.items():
            if pool2 != pool or other == name:
                continue
            now, then = priority - priority2, swapped.get(name, priority) - swapped.get(other, priority2)
            if (now > 0) != (then > 0) or (now < 0) != (then < 0):
                return True
    return False


def swap_pairs() -> list[tuple[str, str]]:
    """The ten priority swaps: pairs that reorder some pool, those sharing a pool first,
    then by name."""
    names = list(POLICIES)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:] if reorders_a_pool(a, b)]
    pairs.sort(key=lambda p: (POLICIES[p[0]][1] != POLICIES[p[1]][1], p))
    return pairs[:10]


def mutations() -> list[Mutation]:
    found: list[Mutation] = []
    for a, b in swap_pairs():
        pa, pb = POLICIES[a][2], POLICIES[b][2]
        found.append(Mutation(f"priority swap {a} <-> {b}", POLICIES[a][0], a, _swap(b, pa, pb)))
    for policy, keys in (("prod-k8s-dc1", ("gpu", "step_run", "tensorrt_sessions")), ("prod-k8s-cpu", ("step_run",)),
                         ("prod-sagemaker", ("gpu", "step_run")),
                         ("research-gpu-dc1", ("gpu", "step_run", "tensorrt_sessions")),
                         ("research-k8s-cpu", ("step_run",))):
        for key in keys:
            for delta in (1, -1):
                found.append(Mutation(f"reserved {key} {delta:+d} in {policy}", POLICIES[policy][0], policy,
                                      _set(("spec", "reserved", key), delta)))
    for policy, keys in (("prod-k8s-dc1", ("gpu", "tensorrt_sessions")), ("research-k8s-dc1", ("gpu", "step_run")),
                         ("research-gpu-dc1", ("gpu",))):
        for key in keys:
            for delta in (1, -1):
                found.append(Mutation(f"limit {key} {delta:+d} in {policy}", POLICIES[policy][0], policy,
                                      _set(("spec", "limit", key), delta)))
    for pipeline, step in (("prod-training", "train_model"), ("llm-finetune", "finetune"),
                           ("research-sweep", "summarize"), ("research-sweep", "sweep_lr_03")):
        found.append(Mutation(f"preemptible flipped on {pipeline}/{step}", f"pipelines/{pipeline}.yaml", pipeline,
                              _flip(("spec", "steps", step, "settings", "resources", "preemptible"))))
    for alloc in ("research-sweep-lr-02", "research-finetune-llama"):
        found.append(Mutation(f"preemptible flipped on allocation {alloc}", "state/running.yaml", alloc,
                              _flip(("spec", "preemptible"))))
    found.append(Mutation("datacenter-one one A100 node fewer", "pools/datacenter-one.yaml", "datacenter-one",
                          _node_fewer(0, {"gpu": 8, "mcpu": 64000, "memory_mb": 1024000})))
    found.append(Mutation("datacenter-one one CPU node fewer", "pools/datacenter-one.yaml", "datacenter-one",
                          _node_fewer(1, {"mcpu": 32000, "memory_mb": 256000})))
    found.append(Mutation("aws-sagemaker one 8-GPU instance fewer", "pools/aws-sagemaker.yaml", "aws-sagemaker",
                          _set(("spec", "capacity", "gpu"), -8)))
    found.append(Mutation("cpu-batch one 32-core node fewer", "pools/cpu-batch.yaml", "cpu-batch",
                          _set(("spec", "capacity", "cpu"), -32)))
    return found


SWAPS: dict[str, int] = {}   # policy -> the priority its side of a swap gets


def _swap(b: str, pa: int, pb: int) -> Edit:
    """a's priority becomes b's; b's is set when its document is reached (see apply)."""
    def edit(doc: dict) -> None:
        doc["spec"]["priority"] = pb
        SWAPS[b] = pa
    return edit


def _node_fewer(group: int, held: dict[str, int]) -> Edit:
    def edit(doc: dict) -> None:
        spec = doc["spec"]
        spec["nodes"][group]["count"] -= 1
        for key, units in held.items():
            if key in spec["capacity"]:
                spec["capacity"][key] -= units
    return edit


def apply(mutation: Mutation, root: Path) -> None:
    yaml = YAML()
    yaml.preserve_quotes = True
    SWAPS.clear()
    for path in sorted(root.rglob("*.yaml")):
        with path.open(encoding="utf-8") as stream:
            docs = list(yaml.load_all(stream))
        changed = False
        for doc in docs:
            if not isinstance(doc, dict):
                continue
            name = doc.get("metadata", {}).get("name")
            if path.relative_to(root).as_posix() == mutation.file and name == mutation.document:
                mutation.edit(doc)
                changed = True
        if changed:
            with path.open("w", encoding="utf-8") as stream:
                yaml.dump_all(docs, stream)
    for b, pa in SWAPS.items():   # the other side of a priority swap
        path = root / POLICIES[b][0]
        with path.open(encoding="utf-8") as stream:
            docs = list(yaml.load_all(stream))
        for doc in docs:
            if doc.get("metadata", {}).get("name") == b:
                doc["spec"]["priority"] = pa
        with path.open("w", encoding="utf-8") as stream:
            yaml.dump_all(docs, stream)


def schedules(report: object) -> list:
    """Every scenario's schedule: what ran where and when (a mutation that changes none of
    them is one no expectation of these scenarios could catch)."""
    return [[(r.id, r.pool, r.start, r.end, r.preempted_at) for r in o.rolled.forecast.schedule]
            if o.rolled.forecast is not None else None for o in report.outcomes]   # type: ignore[attr-defined]


def failing(report: object) -> list[str]:
    """Every expectation that fails, as "scenario: expectation"."""
    return [f"{o.name}: {v.title}" for o in report.outcomes   # type: ignore[attr-defined]
            for v in o.verdicts if not v.passed]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strategy", default="optimal", choices=["optimal", "zenml", "kueue"])
    parser.add_argument("--list", action="store_true", help="only list the mutations")
    parser.add_argument("--probe", type=int, default=0, metavar="N",
                        help="also run each mutation that moves no schedule against N random arrival patterns")
    args = parser.parse_args()
    found = mutations()
    assert len(found) == 50, len(found)
    if args.list:
        print("\n".join(m.name for m in found))
        return
    baseline = run_tests([str(REPO / "examples")], args.strategy)
    assert not baseline.diagnostics, "examples/ must validate as they are"
    already = failing(baseline)   # under kueue or zenml some expectations fail on examples/ as they are
    if args.strategy == "optimal":
        assert not already, "the suite must pass on examples/ as they are"
    before = schedules(baseline)
    caught = refused = missed = unchanged = 0
    still: list[Mutation] = []
    per_scenario: list[float] = []
    for mutation in found:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "examples"
            shutil.copytree(REPO / "examples", root)
            apply(mutation, root)
            began = time.process_time()
            report = run_tests([str(root)], args.strategy)
            spent = time.process_time() - began
        if report.diagnostics:
            refused += 1
            verdict = f"refused by validate ({report.diagnostics[0].rule})"
        else:
            per_scenario.append(spent / max(1, len(report.outcomes)))
            broken = [f for f in failing(report) if f not in already]
            if broken:
                caught += 1
                verdict = f"caught by {len(broken)}: {broken[0]}"
            elif schedules(report) == before:
                missed += 1
                unchanged += 1
                still.append(mutation)
                verdict = "missed: no scenario's schedule moves (equivalent for these arrivals)"
            else:
                missed += 1
                verdict = "missed: a schedule moves, no expectation looks there"
        print(f"{mutation.name:55} {verdict}")
    judged = caught + missed
    print()
    if already:
        print(f"{len(already)} expectations fail on examples/ as they are under {args.strategy}; a mutation is "
              "caught when one that held there fails")
    print(f"strategy {args.strategy}: {len(found)} mutations; {caught} caught, {missed} missed, {refused} refused "
          f"by validate; caught {caught}/{judged} = {100 * caught / max(1, judged):.0f}% of those that validate")
    moved = judged - unchanged
    print(f"{unchanged} of the missed move no scenario's schedule at all; of the {moved} that move one, "
          f"the suite catches {caught} = {100 * caught / max(1, moved):.0f}%")
    if per_scenario:
        print(f"CPU seconds per scenario: median {statistics.median(per_scenario):.3f}, "
              f"max {max(per_scenario):.3f} (the suite's run / its scenarios)")
    if args.probe and still:
        probe(still, args.probe)
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


def probe(still: list[Mutation], count: int) -> None:
    """Whether other arrivals could make the missed mutations decide anything (scenario_probe.py)."""
    root = probe_root(REPO / "examples", count)
    try:
        unmutated = run_tests([str(root)])
        assert not unmutated.diagnostics and unmutated.passed, "the random patterns must run on examples/"
        before = schedules(unmutated)
        print()
        print(f"the {len(still)} missed mutations that move no schedule, against {count} random arrival patterns:")
        for mutation in still:
            found = moved(root, before, lambda r, m=mutation: apply(m, r), schedules)
            said = "refused by validate" if found is None else \
                ("moves none: equivalent as far as this search sees" if found == 0 else
                 f"moves {found}: a scenario with such arrivals could catch it")
            print(f"{mutation.name:55} {said}")
    finally:
        shutil.rmtree(root.parent)


if __name__ == "__main__":
    main()
