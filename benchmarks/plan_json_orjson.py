"""The plan JSON written three ways, side by side: the standard library, poolc's
writer (poolc.text.jsontext, what `poolc plan --format json` uses) and orjson.

    python benchmarks/plan_json_orjson.py PLAN.json [--repeat 5] [--out DIR]

PLAN.json is a plan `poolc plan --format json` wrote (benchmarks/plan_cli.py
--keep DIR makes the 10,000-request platform; plan it once). The plan is read
back through poolc's own model (plan_file.read_plan) and its ``as_dict()``, the value
poolc serialises, is written by each writer; the figures are the median of
``--repeat`` runs, and each output is compared byte for byte with the standard
library's (with ``--out``, each is also written there, for ``cmp``). orjson is
optional: without it, its line says so. A writer whose bytes differ is of no use
to poolc, however fast: the plan's bytes are its contract. So the run ends with
values a plan can hold (a solver gap of 1e-05, an amount of 2.5e-07) written by
each writer: where orjson formats a float otherwise than Python's ``repr`` (it
writes ``0.00001`` and ``2.5e-7``), a plan's bytes would change with it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from poolc.domain.plan_file import read_plan  # noqa: E402
from poolc.text.jsontext import dumps_sorted  # noqa: E402


def writers() -> dict[str, Callable[[Any], str] | None]:
    """name -> value to the plan's text (before poolc's final escaping), or None when absent."""
    found: dict[str, Callable[[Any], str] | None] = {
        "stdlib json.dumps": lambda v: json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
        "poolc jsontext": lambda v: dumps_sorted(v, ensure_ascii=False) + "\n",
    }
    try:
        import orjson
    except ImportError:
        found["orjson"] = None
    else:
        options = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
        found["orjson"] = lambda v: orjson.dumps(v, option=options).decode("utf-8")
    return found


def first_difference(a: str, b: str) -> str:
    """Where two texts part, with a little of each."""
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    line = a.count("\n", 0, at) + 1
    return f"line {line}: {a[max(0, at - 30):at + 30]!r} vs {b[max(0, at - 30):at + 30]!r}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plan", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, help="write each writer's output here (plan.<writer>.json)")
    args = parser.parse_args()
    value = read_plan(args.plan.read_text(encoding="utf-8")).as_dict()
    print(f"{args.plan}: {len(value.get('requests', []))} requests, {args.plan.stat().st_size / 1e6:.1f} MB")
    print(f"{'writer':<20} {'median s':>9} {'min s':>7}  bytes")
    reference: str | None = None
    for name, write in writers().items():
        if write is None:
            print(f"{name:<20} {'-':>9} {'-':>7}  not installed (pip install orjson)")
            continue
        times, text = [], ""
        for _ in range(max(1, args.repeat)):
            start = time.perf_counter()
            text = write(value)
            times.append(time.perf_counter() - start)
        if reference is None:
            reference = text
        verdict = "identical" if text == reference else f"DIFFER: {first_difference(reference, text)}"
        print(f"{name:<20} {statistics.median(times):>9.3f} {min(times):>7.3f}  {verdict}")
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"plan.{name.split()[0]}.json").write_text(text, encoding="utf-8")
    probe = {"solver": {"gap": 1e-05}, "amount": 2.5e-07, "big": 1e16, "ratio": 0.1}
    print("floats a plan can hold:")
    for name, write in writers().items():
        if write is not None:
            print(f"  {name:<18} {write(probe).replace(chr(10), ' ').strip()}")


if __name__ == "__main__":
    main()
