"""What a large run keeps, and that keeping less changes nothing a user sees.

A run over 20,000 files holds one model per document and little else: equal parts
are validated once and shared, a document's plain data is dropped once its model
holds it (and read again from the text if asked), positions asked again are read
from libyaml's events, and every cache belongs to one run.
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from poolc.commands.validate import validate_paths
from poolc.config import build_config
from poolc.load import PositionCache, load_paths, load_text, positions
from poolc.requests import build_requests

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


EVENT_CASES = [
    PLATFORM,
    "apiVersion: poolc/v1\nkind: Pipeline\nmetadata:\n  name: x\n  labels: {a: b}\nspec:\n  steps:\n"
    "    - a\n    - [1, 2, {c: d}]\n    -\n      - nested\n      - 'q'\n  text: |\n    block\n    scalar\n"
    "  folded: >-\n    f\n  empty:\n  flow: {a: [1, 2], b: {c: \"d\"}}\n# comment\n",
    "---\n---\napiVersion: poolc/v1\nkind: Stack\nspec: {x: 1}\n...\n---\n- a\n- b\n---\nscalar\n",
    "apiVersion: poolc/v1\nkind: Policy\nspec:\n  reserved:\n    gpu: 1\n\n\n  limit: {}\n",
]


@pytest.mark.parametrize("text", EVENT_CASES)
def test_positions_from_events_are_the_builders(text, monkeypatch):
    quick = positions.event_positions(text)
    monkeypatch.setattr(positions, "event_positions", lambda _text: None)
    built = positions.FilePositions("f.yaml", text, PositionCache())._compose()
    assert quick is not None and built
    assert {i: quick[i] for i in built} == built


@pytest.mark.parametrize("text", [
    "a: &x {b: 1}\nc: *x\n",                 # anchor and alias
    "a: !!str 1\n",                          # explicit tag
    "a: {<<: {b: 1}, c: 2}\n",               # merge key
])
def test_positions_from_events_leave_aliases_tags_and_merges_to_the_builder(text):
    assert positions.event_positions(text) is None


def _doc(kind: str, body: str) -> str:
    return f"apiVersion: poolc/v1\nkind: {kind}\nmetadata: {{name: n}}\nspec:\n{body}"


MULTI_DOCUMENT_CASES = [
    "---\n".join(_doc("Allocation", f"  pool: p{i}\n  holds: {{gpu: {i}}}\n") for i in range(4)),
    # comments between documents, a foreign one, an explicit end, a block scalar last
    _doc("Stack", "  a: 1\n") + "# between\n---\n# before\nkind: ConfigMap\n---\n"
    + _doc("Pipeline", "  steps:\n    - name: s\n      text: |\n        kept\n\n") + "...\n---\n"
    + _doc("Policy", "  note: >-\n    folded\n    end\n"),
    # a document on its marker's line, flow collections over several lines, no final newline
    "--- {apiVersion: poolc/v1, kind: Stack,\n  spec: {x: 1}}\n---\n  apiVersion: poolc/v1\n  kind: Policy\n"
    "  spec:\n    r: [1,\n      2]\n    x: y",
    # CRLF: the whole file is read instead, the same positions
    _doc("Stack", "  a: 1\r\n").replace("\n", "\r\n") + "---\r\n" + _doc("Stack", "  b: 2\n").replace("\n", "\r\n"),
]


@pytest.mark.parametrize("text", MULTI_DOCUMENT_CASES)
def test_positions_of_one_document_are_those_of_the_whole_file(text):
    """A multi-document file answers for one document from its own lines: every span
    of every document is where reading the whole file puts it."""
    documents, problems = load_text("f.yaml", text, cache=PositionCache())
    assert len(documents) >= 2 and not problems
    whole = positions.FilePositions("f.yaml", text, PositionCache())._compose()
    for doc in reversed(documents):      # one by one, the last first
        start, keys, values = doc._lazy.of(doc.index)
        assert (start, keys, values) == whole[doc.index]
        assert doc._lazy.whole == ("\r" in text)      # read alone, unless the line breaks forbid it


def test_one_document_of_many_is_read_alone(monkeypatch):
    text = "---\n".join(_doc("Allocation", f"  pool: p{i}\n") for i in range(50))
    documents, _ = load_text("running.yaml", text, cache=PositionCache())
    monkeypatch.setattr(positions.FilePositions, "_compose", lambda self: pytest.fail("read the whole file"))
    line = 30 * 6 + 5      # six lines a document, "---" included
    assert documents[30].span(("spec", "pool")) == (line, 9, line, 12)
    assert set(documents[30]._lazy.found) == {30}


def test_a_file_of_one_document_keeps_no_line_table():
    """Most files hold one document, read whole when asked: 20,000 of them keep no table."""
    (single,), _ = load_text("one.yaml", _doc("Stack", "  a: 1\n"), cache=PositionCache())
    assert single._lazy.lines is None
    assert single.span(("spec", "a")) == (5, 6, 5, 7)
