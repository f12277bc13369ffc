"""What a large run keeps, and that keeping less changes nothing a user sees.

A run over 20,000 files holds one model per document and little else: equal parts
are validated once and shared, a document's plain data is dropped once its model
holds it (and read again from the text if asked), positions asked again are read
from the table the first load recorded, and every cache belongs to one run.
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from poolc import diagnostics as d
from poolc.config import build_config
from poolc.load import PositionCache, load_paths, load_text, parse, positions
from poolc.load.kinds import node_is_ours
from poolc.load.parse import Builder, compose_all
from poolc.requests import build_requests
from poolc.validate import validate_paths

PLATFORM = """\
apiVersion: poolc/v1
kind: ResourcePool
metadata: {name: gpus}
spec:
  capacity: {gpu: 8, cpu: 64, memory: 512GB, step_run: 10}
---
apiVersion: poolc/v1
kind: Stack
metadata: {name: s}
spec:
  orchestrator: {name: k8s, flavor: kubernetes, image: img}
---
apiVersion: poolc/v1
kind: Policy
metadata: {name: k8s-gpus}
spec: {subject: k8s, pool: gpus}
"""


def pipeline(name: str, resources: str) -> str:
    return (f"apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {{name: {name}}}\nspec:\n  stack: s\n"
            f"  steps:\n    train:\n      settings:\n        resources: {resources}\n"
            f"    score: {{}}\n")


def config_of(*texts: str):
    docs = [doc for i, text in enumerate(texts) for doc in load_text(f"f{i}.yaml", text)[0]]
    return build_config([f"f{i}.yaml" for i in range(len(texts))], docs)


def test_equal_parts_are_validated_once_and_shared():
    config, problems = config_of(PLATFORM, pipeline("a", "{gpu_count: 1, memory: 8GB}"),
                                 pipeline("b", "{gpu_count: 1, memory: 8GB}"),
                                 pipeline("c", "{gpu_count: 2, memory: 8GB}"))
    assert problems == []
    a, b, c = (config.pipelines[n].obj.spec.steps for n in "abc")
    assert a["train"] is b["train"] and a["score"] is c["score"]
    assert a["train"] is not c["train"] and a["train"] != c["train"]


@pytest.mark.parametrize("other", ["true", "1.5", '"1"'])
def test_sharing_tells_apart_what_validation_does(other):
    """True == 1 and hash(True) == hash(1): a cache keyed on the value would let
    gpu_count: true through as the 1 validated before it."""
    config, problems = config_of(PLATFORM, pipeline("a", "{gpu_count: 1}"), pipeline("b", f"{{gpu_count: {other}}}"))
    assert "a" in config.pipelines and "b" not in config.pipelines
    assert [(x.file, x.line, x.column, x.rule) for x in problems] == [("f2.yaml", 9, 32, "S003")]
    assert "gpu_count must be an integer" in problems[0].message


def test_parts_are_shared_only_when_written_alike():
    """gpu_count: 2.0 validates to the same value as 2, but as another written part."""
    config, problems = config_of(PLATFORM, pipeline("a", "{gpu_count: 2}"), pipeline("b", "{gpu_count: 2.0}"))
    assert problems == []
    a, b = (config.pipelines[n].obj.spec.steps["train"] for n in "ab")
    assert a == b and a is not b


def test_valid_documents_release_their_data_and_read_it_again(tmp_path: Path):
    (tmp_path / "p.yaml").write_text(PLATFORM + "---\n" + pipeline("a", "{gpu_count: 1}"), encoding="utf-8")
    before = {doc.index: doc.data for doc in load_paths([str(tmp_path)]).documents}
    config, _ = build_config([str(tmp_path / "p.yaml")], load_paths([str(tmp_path)]).documents)
    entry = config.pipelines["a"]
    assert entry.doc._data is None                  # released once the model held it
    assert entry.doc.data == before[entry.doc.index]  # and read again from the text
    assert entry.doc.span(("spec", "steps", "train"), key=True) == (24, 5, 24, 10)


def test_broken_documents_keep_their_data():
    config, problems = config_of(PLATFORM, pipeline("a", "{gpu_count: -1}"))
    doc = config.broken["Pipeline"]["a"]
    assert problems and doc._data is not None


def test_validate_streams_files_into_the_config(tmp_path: Path):
    """validate_paths builds each file's models as it reads the file; the result is the
    one build_config gives on the whole list."""
    (tmp_path / "a.yaml").write_text(PLATFORM, encoding="utf-8")
    for i in range(3):
        (tmp_path / f"p{i}.yaml").write_text(pipeline(f"p{i}", "{gpu_count: 1}"), encoding="utf-8")
    (tmp_path / "q.yaml").write_text(pipeline("p0", "{gpu_count: 2}"), encoding="utf-8")  # a duplicate name
    streamed = validate_paths([str(tmp_path)])
    loaded = load_paths([str(tmp_path)])
    whole, problems = build_config(loaded.files, loaded.documents)
    assert sorted(streamed.config.pipelines) == sorted(whole.pipelines) == ["p0", "p1", "p2"]
    assert streamed.config.pipelines["p0"].doc.file.endswith("p0.yaml")
    assert [x.rule for x in streamed.diagnostics if x.rule == "N001"] == ["N001"]
    assert all(entry.doc._data is None for entry in streamed.config.pipelines.values())


def test_requests_share_equal_settings_and_demands():
    config, _ = config_of(PLATFORM, pipeline("a", "{gpu_count: 1, memory: 8GB}"),
                          pipeline("b", "{memory: 8GB, gpu_count: 1}"))
    requests = {r.id: r for r in build_requests(config)}
    a, b = requests["a/train"], requests["b/train"]
    assert a.settings is b.settings and a.demand is b.demand
    assert a.demand == {"gpu": 1, "memory_mb": 8000, "step_run": 1}
    assert requests["a/score"].demand == {"step_run": 1}


def test_positions_cache_belongs_to_the_run(tmp_path: Path):
    """Nothing outlives the documents of a run: no class-level table keeps a file's
    text or positions alive."""
    (tmp_path / "p.yaml").write_text(PLATFORM, encoding="utf-8")
    docs = load_paths([str(tmp_path)]).documents
    assert docs[0].span(("metadata", "name")) == (3, 18, 3, 22)
    positions = weakref.ref(docs[0]._lazy)
    del docs
    gc.collect()
    assert positions() is None


def test_position_cache_evicts_the_oldest_tables():
    cache = PositionCache(max_spans=30)
    first, _ = load_text("a.yaml", PLATFORM, cache=cache)
    second, _ = load_text("b.yaml", PLATFORM, cache=cache)
    first[0].span(("spec",))
    second[0].span(("spec",))
    assert first[0]._lazy.found is None and second[0]._lazy.found is not None
    assert first[0].span(("spec",)) == (5, 3, 5, 59)   # worked out again


SPAN_CASES = [
    PLATFORM,
    "apiVersion: poolc/v1\nkind: Pipeline\nmetadata:\n  name: x\n  labels: {a: b}\nspec:\n  steps:\n"
    "    - a\n    - [1, 2, {c: d}]\n    -\n      - nested\n      - 'q'\n  text: |\n    block\n    scalar\n"
    "  folded: >-\n    f\n  empty:\n  flow: {a: [1, 2], b: {c: \"d\"}}\n# comment\n",
    "---\n---\napiVersion: poolc/v1\nkind: Stack\nspec: {x: 1}\n...\n---\n- a\n- b\n---\nscalar\n",
    "apiVersion: poolc/v1\nkind: Policy\nspec:\n  reserved:\n    gpu: 1\n\n\n  limit: {}\n",
    # anchors and aliases, explicit string tags, merge keys (explicit keys win over merged ones)
    "apiVersion: poolc/v1\nkind: Stack\nspec:\n  a: &x {b: 1}\n  c: *x\n  d: !!str 1\n",
    "apiVersion: poolc/v1\nkind: Stack\nspec:\n  base: &b\n    x: 1\n    y: [1, 2]\n  over:\n    <<: *b\n"
    "    y: 3\n  many: {<<: [*b, {z: 2}], x: 0}\n",
    "apiVersion: poolc/v1\nkind: Stack\nspec:\n  m:\n    k: v\n    <<: {q: 1}\n",
    "--- {apiVersion: poolc/v1, kind: Stack,\n  spec: {x: 1}}\n---\n  apiVersion: poolc/v1\n  kind: Policy\n"
    "  spec:\n    r: [1,\n      2]\n    x: y",
    "apiVersion: poolc/v1\r\nkind: Stack\r\nspec:\r\n  a: 1\r\n",
]


def _recorded(file: str, text: str) -> dict[int, tuple]:
    """Every document's spans as the first load recorded them (the table)."""
    documents, _ = load_text(file, text, cache=PositionCache())
    return {doc.index: doc._lazy.of(doc.index) for doc in documents}


def _composed(text: str) -> dict[int, tuple]:
    """The same spans by composing the text again and building with every position recorded."""
    found = {}
    for i, node in enumerate(compose_all(text)):
        if node is not None and node_is_ours(node):
            builder = Builder(record=True)
            builder.build(node, (), 0)
            found[i] = (builder.values[()], builder.keys, builder.values)
    return found


def _yaml_files():
    return sorted(p for root in ("examples", "tests/fixtures") for p in (REPO / root).rglob("*.y*ml")
                  if p.is_file() and "corpus" not in p.parts)


REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("text", SPAN_CASES)
def test_the_first_loads_table_holds_the_builders_spans(text):
    recorded = _recorded("f.yaml", text)
    assert recorded and recorded == _composed(text)


def test_the_tables_of_every_example_and_fixture_are_the_builders():
    """Every YAML file of examples/ and tests/fixtures/ that loads: each document's table
    gives exactly the spans of a build that records them."""
    compared = 0
    for path in _yaml_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        documents, problems = load_text(str(path), text, cache=PositionCache())
        if not documents or any(p.rule.startswith("Y") for p in problems):
            continue
        composed = _composed(text)
        for doc in documents:
            assert doc._lazy.of(doc.index) == composed[doc.index], (path, doc.index)
            compared += 1
    assert compared > 100


def test_a_position_never_parses_the_file_again(monkeypatch):
    """#41: a diagnostic's position comes from the table the first load recorded."""
    text = "---\n".join(_doc("Allocation", f"  pool: p{i}\n") for i in range(50))
    documents, _ = load_text("running.yaml", text, cache=PositionCache())

    def refuse(*_args, **_kwargs):
        pytest.fail("the YAML was parsed again for a position")

    monkeypatch.setattr(parse, "Composer", refuse)
    monkeypatch.setattr(positions, "compose_all", refuse)
    line = 30 * 6 + 5      # six lines a document, "---" included
    assert documents[30].span(("spec", "pool")) == (line, 9, line, 12)
    assert documents[0].diagnostic(d.A002, "m", ("metadata", "name")).line == 3
    assert set(documents[30]._lazy.found) == {0, 30}


def _doc(kind: str, body: str) -> str:
    return f"apiVersion: poolc/v1\nkind: {kind}\nmetadata: {{name: n}}\nspec:\n{body}"
