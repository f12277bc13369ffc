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
    ("commands", {"validate", "plan", "apply", "saved_plan", "statecmd", "rules_doc", "runtime", "forecast",
                  "waiting"}),
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
