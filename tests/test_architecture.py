"""The package's layers (docs/architecture.md): an import only goes down.

Every import in poolc/, also those inside functions, is read with ast and
resolved; a module may import from its own layer or a lower one, and the stage
packages (checks, planner, targets, report) never import one another.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "poolc"

# Top to bottom, as in docs/architecture.md.
LAYERS: list[tuple[str, set[str]]] = [
    ("cli", {"cli", "__main__"}),
    ("commands", {"validate", "plan", "apply", "statecmd", "rules_doc", "runtime", "forecast", "waiting"}),
    ("stages", {"checks", "planner", "targets", "report"}),
    ("data in", {"requests", "config", "schema", "schema_messages", "model", "load", "state", "inputs", "jsonpos",
                 "schemas", "reports", "observe", "sources"}),
    ("domain", {"domain"}),
    ("foundation", {"units", "diagnostics", "transaction", "writer", "lock", "signals", "kueuesim", "jsontext",
                    "escape", "textdiff", "__init__"}),
]
STAGES = {"checks", "planner", "targets", "report"}


def layer_of(top: str) -> int:
    for index, (_, names) in enumerate(LAYERS):
        if top in names:
            return index
    raise AssertionError(f"poolc/{top} is in no layer of docs/architecture.md: add it to LAYERS and the doc")


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def top_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def imported_tops(path: Path) -> list[tuple[int, str]]:
    """(line, top-level poolc module) of every import of a poolc module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                package = list(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
                base = package[: len(package) - node.level + 1]
                target = base + (node.module.split(".") if node.module else [])
                if len(target) == 1:   # "from . import x": x is the module
                    target += [alias.name for alias in node.names[:1]]
            else:
                target = (node.module or "").split(".")
            if target[0] == "poolc" and len(target) > 1:
                found.append((node.lineno, target[1]))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "poolc" and len(parts) > 1:
                    found.append((node.lineno, parts[1]))
    return [(line, top if _is_module(top) else "__init__") for line, top in found]


def _is_module(top: str) -> bool:
    return (PACKAGE / f"{top}.py").exists() or (PACKAGE / top).is_dir()


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_only_go_down(path):
    here = top_of(path)
    mine = layer_of(here)
    wrong = []
    for line, top in imported_tops(path):
        if top == here:
            continue
        if layer_of(top) < mine:
            wrong.append(f"line {line}: imports poolc.{top} ({LAYERS[layer_of(top)][0]}) "
                         f"from the {LAYERS[mine][0]} layer")
        elif here in STAGES and top in STAGES:
            wrong.append(f"line {line}: the stage {here} imports the stage {top}; move the shared rule to domain/")
    assert not wrong, f"poolc/{path.relative_to(PACKAGE)}:\n" + "\n".join(wrong)


def test_the_check_sees_a_wrong_import(tmp_path, monkeypatch):
    """The test itself can fail: a domain module importing a stage is caught."""
    fake = PACKAGE / "domain" / "problem.py"
    tree_imports = imported_tops(fake)
    assert all(layer_of(top) >= layer_of("domain") for _, top in tree_imports)
    bad = tmp_path / "bad.py"
    bad.write_text("from poolc.planner import optimal\n", encoding="utf-8")
    assert imported_tops(bad) == [(1, "planner")]
    assert layer_of("planner") < layer_of("domain")


# Inside the optimal strategy's package (poolc/planner/optimal/), top to bottom, as in
# docs/architecture.md: the tier loop's steps above the model they work on.
OPTIMAL = PACKAGE / "planner" / "optimal"
OPTIMAL_LAYERS: list[set[str]] = [
    {"__init__"},
    {"parts"},                                            # solve: part by part, reopen, hand out
    {"reopening"},
    {"loop"},                                             # the lexicographic loop's steps
    {"retries"},                                          # one retry strategy per kind of tier
    {"hand_out", "hints", "attempts", "folds", "build"},
    {"tiers", "rules", "dominance"},
    {"short_keys", "run"},
    {"model"},
    {"classes", "settings"},
]


def optimal_layer(name: str) -> int:
    for index, names in enumerate(OPTIMAL_LAYERS):
        if name in names:
            return index
    raise AssertionError(f"poolc/planner/optimal/{name}.py is in no layer: add it to OPTIMAL_LAYERS and the doc")


def optimal_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module of the optimal package) of every import of one, relative or not."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 or node.module and node.module.startswith("poolc.planner.optimal"):
                rest = (node.module or "").removeprefix("poolc.planner.optimal").lstrip(".")
                if rest:
                    found.append((node.lineno, rest.split(".")[0]))
                else:              # "from . import x": x is a module, or a name of __init__
                    found += [(node.lineno, a.name if (OPTIMAL / f"{a.name}.py").exists() else "__init__")
                              for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name.split(".")[3]) for a in node.names
                      if a.name.startswith("poolc.planner.optimal.")]
    return found


@pytest.mark.parametrize("path", sorted(OPTIMAL.glob("*.py")), ids=lambda p: p.name)
def test_the_optimal_package_imports_only_go_down(path):
    here = path.stem
    wrong = [f"line {line}: imports {name} from above ({path.stem} is in layer {optimal_layer(here)})"
             for line, name in optimal_imports(path) if name != here and optimal_layer(name) < optimal_layer(here)]
    assert not wrong, f"poolc/planner/optimal/{path.name}:\n" + "\n".join(wrong)


def test_the_optimal_layer_check_sees_a_wrong_import(tmp_path):
    """A model module importing the loop is caught; every module is in a layer."""
    bad = tmp_path / "model.py"
    bad.write_text("from . import loop\nfrom .classes import RequestClass\nimport poolc.planner.optimal.hints\n",
                   encoding="utf-8")
    assert optimal_imports(bad) == [(1, "loop"), (2, "classes"), (3, "hints")]
    assert optimal_layer("loop") < optimal_layer("model") < optimal_layer("classes")
    assert {p.stem for p in OPTIMAL.glob("*.py")} == set().union(*OPTIMAL_LAYERS)
