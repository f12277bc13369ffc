"""How fast is `poolc validate`, next to check-jsonschema doing less work on the same files?

    python benchmarks/validate_speed.py [--pipelines 2000] [--repeat 3] [--profile]

Generates a platform repository (benchmarks/gen_pipelines.py) in a temporary
directory, then times, in the same run, best and median of --repeat runs of:
  - `poolc validate DIR`                      schema + model + every semantic check
  - `check-jsonschema --schemafile schemas/pipeline.schema.json <pipeline files>`
                                               schema only, no cross-file rules
  - `poolc validate ONE_FILE`                 start-up cost, what a pre-commit run pays
and prints both, the ratio, and the one-file figure against its 0.35 s target.
--profile adds where the time goes: the import cost of the one-file run (python -X importtime)
and, for the DIR run, the time per stage and cProfile's top functions.
Figures, not pass/fail.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from gen_pipelines import generate  # noqa: E402

ONE_FILE_TARGET = 0.35
BIN = Path(sys.executable).parent


def tool(name: str) -> list[str]:
    """The console script installed beside this interpreter (the venv's), else on PATH."""
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if not found:
        sys.exit(f"{name} is not installed; pip install -e '.[test]'")
    return [found]


PEAK_MB: dict[str, float] = {}       # label -> peak resident MB of its runs


def timed(argv: list[str], repeat: int, ok: tuple[int, ...] = (0,), label: str = "") -> list[float]:
    """Wall times of ``repeat`` runs; the children's peak resident memory goes to PEAK_MB."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=out)
            _, status, usage = os.wait4(proc.pid, 0)
            times.append(time.perf_counter() - start)
            code = os.waitstatus_to_exitcode(status)
            if code not in ok:
                out.seek(0)
                sys.exit(f"{argv[0]} exited {code}:\n{out.read()[-4000:].decode(errors='replace')}")
        name = label or Path(argv[0]).name
        PEAK_MB[name] = max(PEAK_MB.get(name, 0.0), usage.ru_maxrss / 1024)
    return times


def line(label: str, times: list[float]) -> str:
    return f"  {label:<44} best {min(times):7.3f} s   median {statistics.median(times):7.3f} s"


def importtime(argv: list[str], top: int = 10) -> str:
    """Import cost of one run, as self time summed per top-level package, plus the
    compiler's own modules (python -X importtime: 'self | cumulative | name', microseconds)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c",
                           "import sys; from poolc.cli import main; sys.argv = ['poolc', *sys.argv[1:]]; main()",
                           *argv], capture_output=True, text=True, cwd=REPO)
    by_package: Counter = Counter()
    ours: Counter = Counter()
    for raw in proc.stderr.splitlines():
        parts = raw.removeprefix("import time:").split("|")
        if not raw.startswith("import time:") or len(parts) != 3 or not parts[0].strip().isdigit():
            continue
        name, own = parts[2].strip(), int(parts[0])
        by_package[name.split(".")[0]] += own
        if name.startswith("poolc"):
            ours[name] += own
    out = [f"  all imports: {sum(by_package.values()) / 1e6:.3f} s (self time; -X importtime adds overhead)"]
    out += [f"    {own / 1e6:7.3f} s  {name}" for name, own in by_package.most_common(top)]
    out.append("  of which poolc's own modules (class creation: pydantic models, dataclasses):")
    out += [f"    {own / 1e6:7.3f} s  {name}" for name, own in ours.most_common(6)]
    return "\n".join(out)


def phases(paths: list[str], top: int = 14) -> str:
    """The stages of validate_paths timed in-process, then cProfile's top functions by own time."""
    from poolc.checks import Context, run_checks
    from poolc.config import ConfigBuilder
    from poolc.load import load_paths

    # validate reads and validates file by file (load_paths' sink); here the two are
    # timed apart by summing the time spent inside the sink
    inside = [0.0]
    builder = ConfigBuilder()

    def add(doc):  # type: ignore[no-untyped-def]
        begin = time.perf_counter()
        builder.add(doc)
        inside[0] += time.perf_counter() - begin

    start = time.perf_counter()
    loaded = load_paths(paths, add)
    config, _ = builder.finish(loaded.files)
    built_at = time.perf_counter()
    run_checks(Context(config))
    done = time.perf_counter()
    out = [f"  load (YAML -> data)              {built_at - start - inside[0]:7.3f} s",
           f"  schema + model (ConfigBuilder)   {inside[0]:7.3f} s",
           f"  semantic checks (run_checks)     {done - built_at:7.3f} s",
           "  cProfile, top functions by own time (profiling slows everything down):"]
    profiler = cProfile.Profile()
    profiler.enable()
    builder = ConfigBuilder()
    loaded = load_paths(paths, builder.add)
    run_checks(Context(builder.finish(loaded.files)[0]))
    profiler.disable()
    buffer = io.StringIO()
    pstats.Stats(profiler, stream=buffer).sort_stats("tottime").print_stats(top)
    rows = [x for x in buffer.getvalue().splitlines() if re.match(r"\s+[0-9/]+\s+\d", x) or "ncalls" in x]
    out += ["    " + x.strip().replace(str(REPO) + "/", "").replace(sys.prefix + "/", "") for x in rows]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipelines", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="also show imports and a cProfile of the run")
    args = parser.parse_args()

    poolc, check = tool("poolc"), tool("check-jsonschema")
    with tempfile.TemporaryDirectory(prefix="poolc-bench-") as tmp:
        root = Path(tmp) / "platform"
        files = generate(root, args.pipelines, args.seed)
        steps = sum(len(re.findall(r"(?m)^    (?!resources:)[a-z0-9_]+:", f.read_text(encoding="utf-8")))
                    for f in files)
        one = Path(tmp) / "one.yaml"
        one.write_text((root / "platform.yaml").read_text(encoding="utf-8") + "---\n"
                       + files[0].read_text(encoding="utf-8"), encoding="utf-8")
        size = sum(f.stat().st_size for f in files)
        print(f"{len(files)} pipeline files ({size / 1e6:.1f} MB, {steps} steps) + platform.yaml; "
              f"{args.repeat} runs each; python {sys.version.split()[0]}, {os.cpu_count()} CPUs")

        ours = timed([*poolc, "validate", str(root)], args.repeat, label="poolc validate DIR")
        theirs = timed([*check, "--schemafile", str(REPO / "schemas" / "pipeline.schema.json"), *map(str, files)],
                       args.repeat, label="check-jsonschema")
        single = timed([*poolc, "validate", str(one)], max(args.repeat, 5), label="poolc validate ONE_FILE")
        print(line("poolc validate DIR", ours))
        print(line("check-jsonschema (pipeline schema only)", theirs))
        print(f"  ratio poolc / check-jsonschema: {min(ours) / min(theirs):.2f} (best), "
              f"{statistics.median(ours) / statistics.median(theirs):.2f} (median); "
              f"poolc per file {min(ours) / len(files) * 1e3:.2f} ms")
        verdict = "within" if min(single) < ONE_FILE_TARGET else "ABOVE"
        print(line("poolc validate ONE_FILE", single) + f"   ({verdict} the {ONE_FILE_TARGET} s target)")
        print("  peak resident memory: " + "; ".join(f"{name} {mb:.0f} MB" for name, mb in PEAK_MB.items()))

        if args.profile:
            print("\nWhere a one-file run spends its time (python -X importtime):")
            print(importtime(["validate", str(one)]))
            print("\nWhere `validate DIR` spends its time (in-process):")
            print(phases([str(root)]))


if __name__ == "__main__":
    main()
