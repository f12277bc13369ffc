"""How long `read_state` takes for a state of 500, 5,000 and 50,000 allocations.

Reading must be linear in the size of the state: apply reads it on every run,
and a platform accumulates allocations. Prints one line per size, and the time
per allocation, which should stay flat.

    python benchmarks/state_read.py [--sizes 500,5000,50000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from poolc.state.records import FORMAT_VERSION, allocation_json, dump_state, new_allocation, read_state  # noqa: E402


def state_text(count: int) -> str:
    """A valid state of ``count`` allocations on one pool, as apply writes it."""
    allocations = []
    for i in range(count):
        alloc = new_allocation(f"pipeline-{i // 50}/step_{i % 50}", "k8s-prod", "datacenter-one",
                               "prod-on-dc1", i % 2 == 0, {"mcpu": 1000, "memory_mb": 1024})
        allocations.append(allocation_json(alloc))
    files = {f"kubernetes/ml/pipeline-{i // 50}--step_{i % 50}.job.yaml": "sha256:" + "0" * 64
             for i in range(count)}
    return dump_state({"format_version": FORMAT_VERSION, "inputs_digest": "sha256:" + "1" * 64,
                       "allocations": allocations, "files": files})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,5000,50000")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    with tempfile.TemporaryDirectory() as scratch:
        for count in sizes:
            path = os.path.join(scratch, f"state-{count}.json")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(state_text(count))
            started = time.perf_counter()
            read = read_state(path)
            elapsed = time.perf_counter() - started
            assert len(read.allocations) == count, read.diagnostics[:3]
            print(f"{count:>7,} allocations  {os.path.getsize(path) / 1e6:7.1f} MB  {elapsed:7.2f} s  "
                  f"{elapsed / count * 1e6:6.1f} µs per allocation")


if __name__ == "__main__":
    main()
