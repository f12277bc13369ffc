"""The rule table in docs/rules.md is generated from the registry; stale docs fail."""

import functools
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from poolc.cli import main
from poolc.commands import rules_doc
from poolc.diagnostics import RULES

ROOT = Path(__file__).resolve().parents[1]


def test_rules_doc_is_fresh():
    committed = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert committed == rules_doc.render(), "run: python -m poolc.commands.rules_doc > docs/rules.md"


def test_every_rule_is_in_the_table():
    table = rules_doc.render()
    for rule_id in RULES:
        assert f"| `{rule_id}` |" in table


# --- the docs point only at files in this repository ------------------------------------
#
# Users have the repository and the installed package, nothing else: every link and
# every path a doc, an example, a schema description or the CLI help names must be a
# file here, and no text may send readers to contract files that are not shipped.


# Built from pieces so that this file does not name them itself.
_CONTRACT_FILES = re.compile(r"\b(?:" + "|".join(["FORMAT", "CLI", "SEMANTICS", "TARGETS", "ARCHITECTURE"])
                             + r")\.md\b")
_OUTSIDE = re.compile(r"(?<![\w-])shared/")
_SECTION = re.compile("\u00a7" + r"\s?\d")  # "section 5" of a contract file, by its sign
_MD_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_BACKTICKED = re.compile(r"`([^`\s]+)`")
_PATH_LIKE = re.compile(r"^[A-Za-z0-9_.\-/]+\.(?:md|yaml|yml|json|py)(?:#[\w-]+)?$")
_BARE_PATH = re.compile(r"(?<![\w./<-])((?:\.\./)?[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\.(?:md|yaml|yml|json|py)"
                        r"(?:#[\w-]+)?)")
# Backticked names of files that poolc or the user creates, not files of this repository.
_NOT_REPOSITORY_FILES = {"poolc.state.json", "plan.json", "pyproject.toml",
                         # the reports `poolc cycle` writes beside the state
                         "poolc.state.json.workloads.json", "poolc.state.json.training-jobs.json",
                         "FILE.workloads.json", "FILE.training-jobs.json",
                         # a file of another public repository, cited as a data source
                         "notebooks/10kGNAD/sagemaker/README.md"}
_GENERATED_PREFIXES = ("deploy/", "DIR/", "kubernetes/", "kueue/", "sagemaker/", "config/", "out/",
                       "tests/golden/", "pipelines/")


def _markdown_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "examples").rglob("*.md")), *sorted((ROOT / "benchmarks").glob("*.md"))]
    return [f for f in files if f.is_file()]


def _example_files() -> list[Path]:
    return sorted(f for f in (ROOT / "examples").rglob("*") if f.is_file()) + \
        sorted((ROOT / "docs" / "examples").rglob("*.yaml"))


def _schema_descriptions() -> list[tuple[str, str]]:
    found = []

    def walk(node, where):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "description" and isinstance(value, str):
                    found.append((where, value))
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}/{i}")

    for folder in ("schemas", "poolc/schemas"):
        for path in sorted((ROOT / folder).glob("*.json")):
            walk(json.loads(path.read_text(encoding="utf-8")), f"{folder}/{path.name}")
    return found


def _help_texts() -> list[tuple[str, str]]:
    runner = CliRunner()
    texts = [("poolc --help", runner.invoke(main, ["--help"]).output)]
    for name in sorted(main.commands):
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0, result.output
        texts.append((f"poolc {name} --help", result.output))
    return texts


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"[`*_]{1,2}(?=\S)|(?<=\S)[`*_]{1,2}", "", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    anchors: set[str] = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            slug = _slug(line.lstrip("#"))
            candidate, n = slug, 1
            while candidate in anchors:
                candidate, n = f"{slug}-{n}", n + 1
            anchors.add(candidate)
    return anchors


@functools.cache
def _repository_files() -> tuple[Path, ...]:
    """Every file of the repository, once per run: hidden directories (.git, .venv
    with its tens of thousands of files) are not even walked."""
    found = []
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        found += [Path(folder) / name for name in sorted(names) if not name.startswith(".")]
    return tuple(found)


def _resolve(reference: str, base: Path) -> str | None:
    """None when ``reference`` (a path with an optional #anchor) names a file of the
    repository and the anchor exists; else why not. A path is tried relative to
    ``base``, the root, the package and schemas/; a bare file name (a module named in
    a table) may be anywhere in the repository."""
    target, _, anchor = reference.partition("#")
    candidates = [(start / target).resolve() for start in (base, ROOT, ROOT / "poolc", ROOT / "schemas")]
    if "/" not in target:
        candidates += [p.resolve() for p in _repository_files() if p.name == target]
    for path in candidates:
        if path.is_file() and ROOT in path.parents:
            if anchor and path.suffix == ".md" and anchor not in _anchors(path):
                return f"{reference}: no heading with anchor #{anchor} in {path.relative_to(ROOT)}"
            return None
    return f"{reference}: no such file in the repository"


def _prose(text: str) -> str:
    """Markdown without fenced code blocks and inline code (links live in prose)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def _comments(text: str) -> str:
    """The comment part of every line of a YAML file."""
    return "\n".join(line[line.index("#"):] for line in text.splitlines()
                     if line.lstrip().startswith("#") or " #" in line)


def _text_sources() -> list[tuple[str, str, Path]]:
    """(name, text, base directory for relative paths) of everything users read."""
    sources = [(str(f.relative_to(ROOT)), f.read_text(encoding="utf-8"), f.parent) for f in _markdown_files()]
    sources += [(str(f.relative_to(ROOT)), f.read_text(encoding="utf-8") if f.suffix == ".md"
                 else _comments(f.read_text(encoding="utf-8")), f.parent) for f in _example_files()]
    sources += [(where, text, ROOT) for where, text in _schema_descriptions()]
    sources += [(where, text, ROOT) for where, text in _help_texts()]
    return sources


def test_no_text_points_at_files_outside_the_repository():
    """Docs, examples, schema descriptions, CLI help, and the code's and tests' own
    docstrings and comments never name the unshipped contract files or `shared/`
    (tests may still *read* oracle files beside the repository at run time: those
    paths are built with Path components, not written as text)."""
    sources = [(name, text) for name, text, _ in _text_sources()]
    for folder in ("poolc", "tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".md", ".toml", ".yaml", ".json") \
                    and path != Path(__file__).resolve() and "golden" not in path.parts:
                sources.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
    sources.append(("pyproject.toml", (ROOT / "pyproject.toml").read_text(encoding="utf-8")))
    problems = [f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group()}"
                for name, text in sources for pattern in (_CONTRACT_FILES, _OUTSIDE, _SECTION)
                for m in pattern.finditer(text)]
    assert not problems, "references to files outside the repository:\n" + "\n".join(problems)


@pytest.mark.slow
def test_relative_links_and_anchors_resolve():
    """Every relative Markdown link names a file of the repository, and every
    #anchor a heading that exists (in the same file for a bare #anchor)."""
    problems = []
    for path in _markdown_files():
        text = _prose(path.read_text(encoding="utf-8"))
        for match in _MD_LINK.finditer(text):
            target = match.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # https:, mailto:
            if target.startswith("#"):
                if target[1:] not in _anchors(path):
                    problems.append(f"{path.relative_to(ROOT)}: {target}: no such heading")
                continue
            why = _resolve(target, path.parent)
            if why:
                problems.append(f"{path.relative_to(ROOT)}: {why}")
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_path_like_references_resolve():
    """Backticked paths to .md/.yaml/.json/.py files in the docs and examples, and
    paths in schema descriptions, YAML comments and the CLI help, name repository files
    (names of files poolc or the user creates, such as the state file, are exempt)."""
    problems = []
    for name, text, base in _text_sources():
        candidates = [m.group(1) for m in _BACKTICKED.finditer(text) if _PATH_LIKE.match(m.group(1))]
        if not name.endswith(".md"):
            candidates += [m.group(1) for m in _BARE_PATH.finditer(text)]
        for reference in candidates:
            target = reference.partition("#")[0]
            if target in _NOT_REPOSITORY_FILES or target.startswith(_GENERATED_PREFIXES):
                continue
            why = _resolve(reference, base)
            if why:
                problems.append(f"{name}: {why}")
    assert not problems, "\n".join(sorted(set(problems)))


def test_the_anchors_other_files_rely_on_exist():
    planning = _anchors(ROOT / "docs" / "planning.md")
    assert {"tiers", "worked-example", "eligibility", "reserved-share-and-borrowing",
            "zenml-the-reference-reconciler-simulated", "explanations"} <= planning
    assert {"resourcesettings", "how-step-settings-merge", "arrival-order", "metered-keys",
            "the-published-schemas"} <= _anchors(ROOT / "docs" / "format.md")
    assert {"the-plan-as-json", "the-state-file", "diagnostics", "exit-codes"} <= \
        _anchors(ROOT / "docs" / "cli.md")


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "schemas").glob("*.json")))
def test_every_schema_property_has_a_description(name):
    """Editors show a property's description on hover: every property of every
    published schema, in its $defs too, has one (the conditions inside `if` of
    poolc.schema.json only select a branch and are not properties users write)."""
    missing = []

    def walk(node, where, in_condition):
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict) and not in_condition:
                for key, value in properties.items():
                    if not (isinstance(value, dict) and str(value.get("description", "")).strip()):
                        missing.append(f"{where}/properties/{key}")
            for key, value in node.items():
                walk(value, f"{where}/{key}", in_condition or key == "if")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}/{i}", in_condition)

    walk(json.loads((ROOT / "schemas" / name).read_text(encoding="utf-8")), name, False)
    assert not missing, "properties without a description:\n" + "\n".join(missing)


def test_the_worked_example_of_planning_md_gives_the_documented_plan():
    """docs/planning.md#worked-example quotes this plan and its objective; keep them true."""
    from poolc.commands.planning import plan_paths
    from poolc.report.plan_text import render_plan

    for strategy in ("optimal", "zenml"):
        plan = plan_paths([str(ROOT / "docs" / "examples" / "tiers.yaml")], strategy=strategy).plan
        status = {r.id: r.status for r in plan.requests}
        assert status == {"training/train": "allocated", "training/evaluate": "allocated",
                          "training/report": "queued", "sweep/trial_d": "queued"}, strategy
        assert [p.id for p in plan.preempted] == ["trial-c"], strategy
        if strategy == "optimal":
            assert plan.solver.status == "OPTIMAL" and plan.solver.gap == 0
            assert list(plan.solver.objective) == [1, 2, 1, 0, 7, 2, 2]
            by_id = {r.id: r for r in plan.requests}
            assert by_id["training/report"].reason == "limit: policy prod holds 6 of 6 gpu, needs 3"
            assert by_id["sweep/trial_d"].reason.startswith("gpu: needs 1, free 0 in pool gpus")
            words = render_plan(plan, color=False)
    text = (ROOT / "docs" / "planning.md").read_text(encoding="utf-8")
    assert '"objective": [1, 2, 1, 0, 7, 2, 2]' in text
    quoted = text.split("Objective, in order", 1)[1].split("```", 1)[0]
    assert "Objective, in order" + quoted in words
