"""What writing the state through its one declaration costs: the StateFile model
built (and checked) from a plan's allocations, then its bytes, beside the bytes of
the same content as a plain dict (how apply wrote it before #43), in CPU seconds.

    python benchmarks/state_write.py [--sizes 500,5000,50000] [--repeat 5]

Prints one line per size: the median CPU seconds of each way, both outputs'
byte-identity, and the load average (the machine may be shared). Figures, never
pass/fail.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from poolc.state.records import FORMAT_VERSION, StateRead, allocation_json, dump_state, new_allocation, state_dict  # noqa: E402


def allocations(count: int) -> list:
    return [new_allocation(f"pipeline-{i // 50}/step_{i % 50}", "k8s-prod", "datacenter-one", "prod-on-dc1",
                           i % 2 == 0, {"mcpu": 1000, "memory_mb": 1024}) for i in range(count)]


def cpu(work, repeat: int) -> tuple[float, str]:
    """(median CPU seconds, the text of the last run)."""
    times, text = [], ""
    for _ in range(repeat):
        started = time.process_time()
        text = work()
        times.append(time.process_time() - started)
    return statistics.median(times), text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,5000,50000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'allocations':>11}  {'plain dict s':>12}  {'StateFile s':>11}  same bytes  load average")
    for count in (int(s) for s in args.sizes.split(",")):
        found = sorted(allocations(count), key=lambda a: a.metadata.name)   # as the state holds them
        files = {f"kubernetes/ml/{a.metadata.name}.job.yaml": "sha256:" + "0" * 64 for a in found}
        state = StateRead([], files, "sha256:" + "1" * 64, [], [])

        def plain(found=found, files=files) -> str:
            return dump_state({"format_version": FORMAT_VERSION, "inputs_digest": "sha256:" + "1" * 64,
                               "allocations": [allocation_json(a) for a in found],
                               "files": dict(sorted(files.items()))})

        def model(found=found, state=state) -> str:
            return dump_state(state_dict(state, found, {}))

        before, a = cpu(plain, args.repeat)
        after, b = cpu(model, args.repeat)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"{count:>11,}  {before:12.3f}  {after:11.3f}  {'yes' if a == b else 'NO':>10}  {load}")


if __name__ == "__main__":
    main()
