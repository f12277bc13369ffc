"""The published JSON Schemas (docs/format.md#the-published-schemas).

- committed schemas/ and the packaged poolc/schemas/ equal what the models generate;
- each is a valid draft 2020-12 schema;
- the real `check-jsonschema` CLI accepts every valid example and fixture and rejects
  the structural negative fixtures that poolc rejects (S001-S006);
- poolc.schema.json dispatches on kind;
- the pydantic model accepts a document iff the schema, read as check-jsonschema
  reads it, does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from functools import cache, lru_cache
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from poolc.load import load_paths, load_text
from poolc.model import KINDS
from poolc.schema import ANY_FILE, DRAFT, KIND_FILES, build_schemas, dump, packaged_schema

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
CHECK_JSONSCHEMA = shutil.which("check-jsonschema", path=os.path.dirname(sys.executable)) \
    or shutil.which("check-jsonschema")

# `poolc schema` generates from the models (test_poolc_schema_output_dir_regenerates_from_the_models).
REGENERATE = "poolc schema --output-dir schemas && poolc schema --output-dir poolc/schemas"


@lru_cache(maxsize=1)
def generated() -> dict[str, str]:
    return {name: dump(schema) for name, schema in build_schemas().items()}


# --- staleness and validity --------------------------------------------------------

def test_the_set_of_schema_files():
    names = set(generated())
    assert names == {*KIND_FILES.values(), ANY_FILE}
    for folder in ("schemas", "poolc/schemas"):
        assert {p.name for p in (REPO / folder).glob("*.json")} == names, folder


@pytest.mark.parametrize("folder", ["schemas", "poolc/schemas"])
@pytest.mark.parametrize("name", sorted({*KIND_FILES.values(), ANY_FILE}))
def test_committed_schema_is_up_to_date(folder: str, name: str):
    committed = (REPO / folder / name).read_text(encoding="utf-8")
    assert committed == generated()[name], (
        f"{folder}/{name} is stale: the models changed but the schema was not regenerated. "
        f"Regenerate both copies (schemas/ and poolc/schemas/) from the repository root with: {REGENERATE}")


@pytest.mark.parametrize("name", sorted({*KIND_FILES.values(), ANY_FILE}))
def test_schema_is_valid_draft_2020_12(name: str):
    schema = json.loads(generated()[name])
    assert schema["$schema"] == DRAFT == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_poolc_schema_output_dir_regenerates_from_the_models(tmp_path: Path):
    """Make the packaged copy stale in a scratch copy of the package, then regenerate."""
    shutil.copytree(REPO / "poolc", tmp_path / "pkg" / "poolc",
                    ignore=shutil.ignore_patterns("__pycache__"))
    stale = tmp_path / "pkg" / "poolc" / "schemas" / "pipeline.schema.json"
    stale.write_text(json.dumps({"stale": True}), encoding="utf-8")
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-c", "from poolc.cli import main; main()", "schema",
                    "--output-dir", str(out)], cwd=tmp_path / "pkg", check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(tmp_path / "pkg")}, timeout=60)
    assert (out / "pipeline.schema.json").read_text(encoding="utf-8") == generated()["pipeline.schema.json"]


# --- check-jsonschema, the reference tool ---------------------------------------------

def split_documents(path: Path, tmp_path: Path) -> list[tuple[str, Path]]:
    """One file per poolc document as (kind, path): check-jsonschema reads a single
    document per file, while poolc files may hold several separated by '---'."""
    text = path.read_text(encoding="utf-8")
    chunks = [c for c in re.split(r"(?m)^---[ \t]*$|^\.\.\.[ \t]*$", text)]
    found = []
    for index, chunk in enumerate(chunks):
        docs, diags = load_text(str(path), chunk)
        if diags or len(docs) != 1:
            continue
        target = tmp_path / f"{path.stem}.{index}.yaml"
        target.write_text(chunk, encoding="utf-8")
        found.append((docs[0].data.get("kind"), target))
    return found


def check_jsonschema(schema: str, files: list[Path]) -> dict:
    """Run the installed CLI once; {file: [messages]} of the files it rejected."""
    assert CHECK_JSONSCHEMA, "check-jsonschema is not installed (pip install -e '.[test]')"
    proc = subprocess.run([CHECK_JSONSCHEMA, "-o", "json", "--schemafile", str(REPO / "schemas" / schema),
                           *map(str, files)], capture_output=True, text=True, timeout=120)
    report = json.loads(proc.stdout)
    assert report.get("parse_errors", []) == [], report["parse_errors"]
    rejected: dict[str, list[str]] = {}
    for error in report["errors"]:
        rejected.setdefault(error["filename"], []).append(f"{error['path']}: {error['message']}")
    assert proc.returncode == (1 if rejected else 0), proc.stderr
    return rejected


def test_check_jsonschema_accepts_the_example_pipelines_as_documented():
    """docs/format.md: `check-jsonschema --schemafile schemas/pipeline.schema.json pipelines/*.yaml`."""
    pipelines = sorted((REPO / "examples" / "pipelines").glob("*.yaml"))
    assert pipelines and check_jsonschema("pipeline.schema.json", pipelines) == {}


def _valid_documents(tmp_path: Path) -> dict[str, list[Path]]:
    by_kind: dict[str, list[Path]] = {}
    sources = sorted((REPO / "examples").rglob("*.yaml")) + sorted((FIXTURES / "positive").glob("*.yaml")) \
        + sorted((FIXTURES / "context").glob("*.yaml"))
    for source in sources:
        for kind, path in split_documents(source, tmp_path):
            by_kind.setdefault(kind, []).append(path)
    return by_kind


def test_check_jsonschema_accepts_every_valid_document_of_every_kind(tmp_path: Path):
    by_kind = _valid_documents(tmp_path)
    assert set(by_kind) == set(KIND_FILES)
    for kind, paths in sorted(by_kind.items()):
        assert check_jsonschema(KIND_FILES[kind], paths) == {}, kind
    assert check_jsonschema(ANY_FILE, [p for paths in by_kind.values() for p in paths]) == {}


STRUCTURAL = {"S001", "S002", "S003", "S004", "S005", "S006"}   # S007 is retired (never emitted)
# check-jsonschema's own YAML loader raises on integers beyond Python's 4300-digit limit
# (a traceback, exit 1): it does reject the file, but not through its report.
TOOL_CANNOT_READ = {"s003-huge-integer.yaml"}


def _structural_negatives() -> list[Path]:
    """Negative fixtures whose every expected diagnostic is structural (and no known bug),
    with one document each: check-jsonschema reads one document per file, and a
    fixture with several (a broken pool and the valid documents that refer to it)
    tests poolc's cross-document behaviour, not the schema."""
    chosen = []
    for path in sorted((FIXTURES / "negative").glob("*.yaml")):
        if re.search(r"(?m)^---", path.read_text(encoding="utf-8")):
            continue
        head = [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
        rules = {line.split()[-1] for line in head if line.startswith("# expect:")}
        if rules and rules <= STRUCTURAL and not any(line.startswith("# xfail:") for line in head) \
                and path.name not in TOOL_CANNOT_READ:
            chosen.append(path)
    return chosen


def test_there_are_structural_negatives_for_every_s_rule():
    rules: set[str] = set()
    for path in _structural_negatives():
        rules |= {line.split()[-1] for line in path.read_text(encoding="utf-8").splitlines()
                  if line.startswith("# expect:")}
    assert rules == STRUCTURAL


def test_check_jsonschema_exits_non_zero_on_files_it_cannot_read():
    for name in sorted(TOOL_CANNOT_READ):
        proc = subprocess.run([CHECK_JSONSCHEMA, "--schemafile", str(REPO / "schemas" / "poolc.schema.json"),
                               str(FIXTURES / "negative" / name)], capture_output=True, text=True, timeout=120)
        assert proc.returncode != 0, name


def test_check_jsonschema_rejects_what_poolc_rejects_structurally(tmp_path: Path):
    files = _structural_negatives()
    by_schema: dict[str, list[Path]] = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        kind = re.search(r"(?m)^kind: (\w+)", text)
        # An unknown or missing kind can only be judged by the dispatching schema.
        schema = KIND_FILES.get(kind[1]) if kind else None
        target = tmp_path / path.name
        target.write_text(text, encoding="utf-8")
        by_schema.setdefault(schema or ANY_FILE, []).append(target)
        if schema:
            by_schema.setdefault(ANY_FILE, []).append(target)
    for schema, paths in sorted(by_schema.items()):
        rejected = check_jsonschema(schema, paths)
        assert sorted(Path(p).name for p in rejected) == sorted(p.name for p in paths), schema


# --- poolc.schema.json dispatches on kind -----------------------------------------------

@lru_cache(maxsize=1)
def any_validator() -> Draft202012Validator:
    return Draft202012Validator(packaged_schema(ANY_FILE))


def test_any_document_schema_accepts_every_example_document():
    documents = load_paths([str(REPO / "examples")]).documents
    assert len(documents) >= 15
    for doc in documents:
        errors = [e.message for e in any_validator().iter_errors(doc.data)]
        assert errors == [], (doc.file, doc.index)


POOL = {"apiVersion": "poolc/v1", "kind": "ResourcePool", "metadata": {"name": "p"},
        "spec": {"capacity": {"gpu": 1}}}


@pytest.mark.parametrize("change", [
    {"apiVersion": "poolc/v9"},
    {"kind": "ResourcePoll"},
    {"kind": "Pipeline"},                     # a pool's spec under another kind
    {"spec": {"capacity": {"gpu": -1}}},
    {"spec": {"capacty": {"gpu": 1}}},
    {"metadata": {"name": "Not_A_Label"}},
    {"extra": 1},
])
def test_any_document_schema_rejects_a_bad_document(change: dict):
    assert any_validator().is_valid(POOL)
    assert not any_validator().is_valid({**POOL, **change})


def test_any_document_schema_requires_the_envelope():
    for missing in ("apiVersion", "kind"):
        assert not any_validator().is_valid({k: v for k, v in POOL.items() if k != missing})


# --- schema and model agree -------------------------------------------------------

@cache
def reference_validator(kind: str):
    """The packaged schema judged as check-jsonschema judges it, in-process: 'pattern'
    with ECMA-262 semantics (regress, the engine check-jsonschema uses; Python's '$'
    would also match before a final newline) and RFC 3339 'date-time' checked."""
    import regress
    from check_jsonschema.formats.implementations import validate_rfc3339
    from jsonschema import FormatChecker, ValidationError, validators

    compiled: dict[str, regress.Regex] = {}

    def ecma_pattern(validator, pattern, instance, schema):
        regex = compiled.setdefault(pattern, regress.Regex(pattern))
        if isinstance(instance, str) and regex.find(instance) is None:
            yield ValidationError(f"{instance!r} does not match {pattern!r}")

    formats = FormatChecker()
    formats.checks("date-time")(validate_rfc3339)
    cls = validators.extend(Draft202012Validator, {"pattern": ecma_pattern})
    return cls(packaged_schema(KIND_FILES[kind]), format_checker=formats)


def model_accepts(doc: dict) -> bool:
    try:
        KINDS[doc["kind"]].model_validate(doc)
        return True
    except ValueError:
        return False


def agree(doc: dict) -> tuple[bool, bool]:
    """(reference schema accepts, model accepts)."""
    return reference_validator(doc["kind"]).is_valid(doc), model_accepts(doc)


def test_schema_and_model_agree_on_examples_and_simple_errors():
    assert agree(POOL) == (True, True)
    assert agree({**POOL, "spec": {"capacity": {"cpu": 2, "mcpu": 2000}}}) == (False, False)
    assert agree({**POOL, "spec": {"capacity": {"gpu": True}}}) == (False, False)
    assert agree({**POOL, "spec": {"capacity": {"gpu": 10**12 + 1}}}) == (False, False)
    assert agree({**POOL, "metadata": {"name": "p", "description": None}}) == (False, False)


def test_integral_float_for_an_integer():
    """JSON Schema counts 1.0 as an integer (check-jsonschema accepts it), so the model must too."""
    assert agree({**POOL, "spec": {"capacity": {"gpu": 1.0}}}) == (True, True)
    assert agree({**POOL, "spec": {"capacity": {"gpu": 1.5}}}) == (False, False)


@pytest.mark.parametrize("name", ["abc\n", "abc\n\n", "\nabc", "ab\nc"])
def test_newline_in_a_name(name: str):
    """Python's '$' also matches before a final newline; ECMA-262's (and pydantic's) does not."""
    assert agree({**POOL, "metadata": {"name": name}}) == (False, False)


def test_newline_in_a_resource_key(tmp_path: Path):
    path = tmp_path / "pool.yaml"
    path.write_text('apiVersion: poolc/v1\nkind: ResourcePool\nmetadata: {name: a}\nspec:\n'
                    '  capacity:\n    "gpu\\n": 1\n', encoding="utf-8")
    assert list(check_jsonschema("resourcepool.schema.json", [path])) == [str(path)]
    assert agree({**POOL, "spec": {"capacity": {"gpu\n": 1}}}) == (False, False)


def test_newline_in_a_step_name_is_rejected_by_both(tmp_path: Path):
    """Step names use propertyNames + pattern, which check-jsonschema reads as ECMA-262."""
    path = tmp_path / "pipeline.yaml"
    path.write_text('apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {name: a}\nspec:\n  stack: s\n'
                    '  steps:\n    "ok\\n": {}\n', encoding="utf-8")
    assert list(check_jsonschema("pipeline.schema.json", [path])) == [str(path)]


@pytest.mark.parametrize("when, ok", [
    ("2026-02-30T00:00:00Z", False), ("2026-12-31T23:59:60Z", False), ("2026-13-01T00:00:00Z", False),
    ("2026-11-20T10:00:00Z", True), ("2026-11-20T10:00:00+01:00", True), ("2026-11-20t10:00:00z", True),
    ("2026-11-20T10:00:00.123456Z", True), ("2026-11-20", False), ("2026-11-20T10:00:00", False),
    ("2026-11-20 10:00:00Z", False),
])
def test_calendar_dates(when: str, ok: bool):
    doc = {"apiVersion": "poolc/v1", "kind": "Allocation", "metadata": {"name": "a"},
           "spec": {"subject": "s", "pool": "p", "holds": {"gpu": 1}, "started_at": when}}
    assert agree(doc) == (ok, ok)


def test_check_jsonschema_rejects_an_impossible_date(tmp_path: Path):
    """The date-time format is checked by check-jsonschema by default, so it rejects what poolc rejects."""
    path = tmp_path / "alloc.yaml"
    path.write_text("apiVersion: poolc/v1\nkind: Allocation\nmetadata: {name: a}\nspec:\n  subject: s\n"
                    "  pool: p\n  holds: {gpu: 1}\n  started_at: '2026-02-30T00:00:00Z'\n", encoding="utf-8")
    assert list(check_jsonschema("allocation.schema.json", [path])) == [str(path)]
