"""One way to show a quantity (issue 40): every renderer says memory in the family
the platform writes it in (examples/: decimal GB; tests/fixtures/change: binary
GiB), so no table row or line mixes GB with GiB, and no reason a person reads
shows the canonical ``mcpu``/``memory_mb`` keys; the JSON keeps them.

Each platform is planned with running work and a change against its base, so the
change's sections, reasons with amounts, diagnostics and `state list` are all in
what is checked.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from support import cli

from poolc.commands.apply import apply_paths
from poolc.domain.amounts import BINARY, DECIMAL, Units, memory_family

REPO = Path(__file__).resolve().parent.parent
DECIMAL_UNIT = re.compile(r"\d (MB|GB|TB)\b")
BINARY_UNIT = re.compile(r"\d (MiB|GiB|TiB)\b")
CANONICAL = re.compile(r"\b(mcpu|memory_mb)\b")
NOW = "2026-11-20T07:00:00Z"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def _platform(tmp_path: Path, source: Path, edit: tuple[str, str, str]) -> Path:
    """``source`` applied into a state, its copy as ``base`` and an edited ``head`` (cwd: tmp_path)."""
    shutil.copytree(source, tmp_path / "base")
    assert apply_paths(["base"], "deploy", state_file="poolc.state.json", now=NOW).plan is not None
    shutil.copytree(tmp_path / "base", tmp_path / "head")
    _edit(tmp_path / "head" / edit[0], edit[1], edit[2])
    return tmp_path


# (source, the edit in head, the family its platform is written in)
PLATFORMS = {
    "examples": (REPO / "examples", ("pipelines/prod-training.yaml", "          memory: 32GB\n          gpu_count: 1",
                                     "          memory: 32GB\n          gpu_count: 8"), DECIMAL),
    "change": (REPO / "tests" / "fixtures" / "change", ("policies.yaml", "  priority: 100\n",
                                                        "  priority: 100\n  limit: {gpu: 4, memory: 100GiB}\n"),
               BINARY),
}


def _rendered(root: Path) -> dict[str, str]:
    """Every way poolc shows this platform's plan and state to people."""
    def plan(*args: str) -> str:
        return cli("plan", *args, "--state", "poolc.state.json", "--output-dir", "deploy").stdout

    plan("base", "--out", "base.json")
    found = {fmt: plan("head", "--base", "base.json", "--format", fmt) for fmt in ("text", "markdown", "github")}
    found["plan text, no base"] = plan("head")
    found["validate"] = cli("validate", "head").stderr
    found["state list"] = cli("state", "list", "head", "--state", "poolc.state.json").stdout
    found["json"] = plan("head", "--base", "base.json", "--format", "json")
    return found


def _rows(text: str) -> list[str]:
    """Table rows and lines, without fenced code (file diffs quote generated YAML)."""
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return [line for line in text.splitlines() if line.strip() and not re.match(r"^\s+[-+@ ]", line[:6] + "x")
            or "|" in line]


@pytest.mark.parametrize("name", sorted(PLATFORMS))
def test_no_row_mixes_unit_families_and_no_reason_shows_canonical_keys(name, tmp_path, monkeypatch):
    source, edit, family = PLATFORMS[name]
    monkeypatch.chdir(tmp_path)
    rendered = _rendered(_platform(tmp_path, source, edit))
    expected, other = (DECIMAL_UNIT, BINARY_UNIT) if family == DECIMAL else (BINARY_UNIT, DECIMAL_UNIT)
    for renderer, text in rendered.items():
        if renderer == "json":
            continue
        assert text, renderer
        for row in _rows(text):
            assert not (DECIMAL_UNIT.search(row) and BINARY_UNIT.search(row)), (renderer, row)
            assert not other.search(row), (renderer, row)
            assert not CANONICAL.search(row), (renderer, row)
    # memory shows up somewhere in the family, and the JSON keeps canonical keys
    assert any(expected.search(text) for key, text in rendered.items() if key != "json")
    data = json.loads(rendered["json"])
    assert all("memory_mb" in pool["capacity"] for pool in data["pools"] if pool["name"] != "aws-sagemaker")
    assert data.get("units", {"memory_mb": DECIMAL}) == {"memory_mb": family}


def test_the_family_is_how_the_platform_writes_memory():
    assert memory_family(["2048GiB", "512Gi", 1536000]) == BINARY
    assert memory_family(["1536GB", 2048000, "256Gi"]) == DECIMAL
    assert memory_family(["64G", "1T"]) == DECIMAL
    assert memory_family([]) == DECIMAL                       # poolc's own unit when nothing is written
    binary, decimal = Units(BINARY), Units(DECIMAL)
    assert [binary.memory_text(x) for x in (2199023, 17180, 537, 0, 12_000_000)] == \
        ["2048 GiB", "16 GiB", "512 MiB", "0 GiB", "10.91 TiB"]
    assert [decimal.memory_text(x) for x in (2048000, 17180, 537, 0, 12_000_000)] == \
        ["2048 GB", "17.2 GB", "537 MB", "0 GB", "12 TB"]


def test_text_tables_never_cut_a_name_mid_word(tmp_path, monkeypatch):
    """examples/ applied, at COLUMNS=200 (the text plan is 100 columns wide whatever
    the terminal): every pool, policy and resource key is whole on its line."""
    monkeypatch.chdir(tmp_path)
    source, edit, _ = PLATFORMS["examples"]
    _platform(tmp_path, source, edit)
    monkeypatch.setenv("COLUMNS", "200")
    text = cli("plan", "head", "--state", "poolc.state.json").stdout
    data = json.loads(cli("plan", "head", "--state", "poolc.state.json", "--format", "json").stdout)
    names = {p["name"] for p in data["pools"]} | {q["name"] for q in data["policies"]} | \
        {key for p in data["pools"] for key in p["capacity"] if key not in ("gpu", "mcpu", "memory_mb", "step_run")}
    assert "tensorrt_sessions" in names
    section = text[text.index("\nPools\n"):text.index("\nWhat the cluster will do")]
    tokens = {token for line in section.splitlines() for token in line.split()}
    for name in names:
        assert name in tokens, name
        cut = {token for token in tokens if len(token) >= 4 and token != name and name.startswith(token)}
        assert not cut, (name, cut)                 # a name cut at the column's edge
    assert all(len(line) <= 100 for line in text.splitlines())
