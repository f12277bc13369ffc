"""poolc.load: plain data with positions, the guards, and which files and documents are read.

The fixture tests (test_validate.py) check rule ids and start positions end to end;
these check the loader's own contract: spans (1-based, exclusive end), the fallback
of Document.span, YAML 1.2 scalars, merge keys, and path expansion.
"""

from __future__ import annotations

import os
from pathlib import Path

from poolc import load
from poolc.load import Document, expand_paths, load_file, load_paths, load_text, parse

POOL = """\
apiVersion: poolc/v1
kind: ResourcePool
metadata: {name: x}
spec:
  capacity:
    gpu: 4
    mcpu: 0x10
    step_run: 1_000
  when: 2026-11-20T10:00:00Z
  flags: [yes, true, ~, null, 0o17, -3, +4, 1.5e3, "7"]
"""


MERGED = ("apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {name: m}\n"
          "defaults: &d {cpu_count: 1, memory: 1GB}\n"
          "spec:\n  r:\n    <<: *d\n    memory: 2GB\n")


def one(text: str) -> Document:
    docs, diags = load_text("f.yaml", text)
    assert diags == []
    assert len(docs) == 1
    return docs[0]


def test_yaml_1_2_scalars():
    """yes stays a string, timestamps stay strings (the models parse RFC 3339), 0x/0o and _ are ints."""
    data = one(POOL).data
    assert data["spec"]["capacity"] == {"gpu": 4, "mcpu": 16, "step_run": 1000}
    assert data["spec"]["when"] == "2026-11-20T10:00:00Z"
    assert data["spec"]["flags"] == ["yes", True, None, None, 15, -3, 4, 1500.0, "7"]
    assert isinstance(data["spec"]["flags"][1], bool)


def test_key_and_value_spans():
    doc = one(POOL)
    assert doc.keys[("spec", "capacity", "gpu")] == (6, 5, 6, 8)
    assert doc.values[("spec", "capacity", "gpu")] == (6, 10, 6, 11)
    assert doc.keys[("metadata", "name")] == (3, 12, 3, 16)
    assert doc.values[("metadata", "name")] == (3, 18, 3, 19)
    assert doc.values[("spec", "flags", 8)] == (10, 52, 10, 55)  # quotes included
    assert doc.values[("metadata",)] == (3, 11, 3, 20)          # a flow mapping, braces included


def test_span_falls_back_to_the_nearest_ancestor_key():
    doc = one(POOL)
    assert doc.span(("spec", "capacity", "nope")) == doc.keys[("spec", "capacity")]
    assert doc.span(("spec", "nope", "deeper")) == doc.keys[("spec",)]
    assert doc.span(("nope",)) == doc.start
    assert doc.span(("spec", "capacity", "gpu"), key=True) == (6, 5, 6, 8)


def test_diagnostic_uses_the_rule_severity_unless_overridden():
    from poolc import diagnostics as d

    doc = one(POOL)
    diag = doc.diagnostic(d.P006, "m", ("spec", "capacity", "gpu"), key=True)
    assert (diag.line, diag.column, diag.end_line, diag.end_column, diag.severity) == (6, 5, 6, 8, "warning")
    assert doc.diagnostic(d.P006, "m", severity="error").severity == "error"


def test_block_collection_span_covers_its_last_line():
    doc = one(POOL)
    last_item_end = doc.values[("spec", "flags")][2:]
    assert doc.values[("spec",)][2:] >= last_item_end
    assert doc.values[()][2:] >= last_item_end


def test_merge_keys_explicit_keys_win():
    doc = one(MERGED)
    assert doc.data["spec"]["r"] == {"memory": "2GB", "cpu_count": 1}
    assert doc.values[("spec", "r")][:2] == (7, 5)
    assert doc.keys[("spec", "r", "cpu_count")] == (4, 15, 4, 24)  # only written in the anchor


def test_merge_keys_explicit_keys_keep_their_positions():
    doc = one(MERGED)
    assert doc.keys[("spec", "r", "memory")] == (8, 5, 8, 11)
    assert doc.values[("spec", "r", "memory")] == (8, 13, 8, 16)


def test_shared_alias_is_not_mistaken_for_recursion():
    doc = one("apiVersion: poolc/v1\nkind: ResourcePool\nmetadata: {name: s}\n"
              "a: &x {k: 1}\nb: *x\nc: [*x, *x]\n")
    assert doc.data["b"] == doc.data["c"][0] == doc.data["c"][1] == {"k": 1}


def test_expansion_guard_counts_expanded_nodes(monkeypatch):
    monkeypatch.setattr(parse, "MAX_EXPANDED_NODES", 60)
    text = ("apiVersion: poolc/v1\nkind: ResourcePool\nmetadata: {name: s}\n"
            "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9]\nb: &b [*a, *a, *a, *a, *a]\n")
    docs, diags = load_text("f.yaml", text)
    assert [(x.rule, x.line) for x in diags] == [("Y005", 4)]
    docs, diags = load_text("f.yaml", text.replace("*a, *a, *a, *a, *a", "*a, *a"))
    assert diags == [] and len(docs) == 1


def test_depth_guard_boundary(monkeypatch):
    head = "apiVersion: poolc/v1\nkind: ResourcePool\nmetadata: {name: s}\nx: "
    # x's value is depth 1; n nested lists reach depth n.
    docs, diags = load_text("f.yaml", head + "[" * load.MAX_DEPTH + "]" * load.MAX_DEPTH + "\n")
    assert diags == []
    docs, diags = load_text("f.yaml", head + "[" * (load.MAX_DEPTH + 1) + "]" * (load.MAX_DEPTH + 1) + "\n")
    assert [(x.rule, x.line, x.column) for x in diags] == [("Y006", 4, 4 + load.MAX_DEPTH)]


def test_documents_that_are_not_ours_are_skipped():
    text = ("kind: ConfigMap\napiVersion: v1\n---\n[1, 2]\n---\n"
            "apiVersion: poolc/v1\nkind: Stack\nmetadata: {name: a}\n---\n"
            "- apiVersion: v1\n---\n~\n---\napiVersion: poolc/v1\nkind: Policy\nmetadata: {name: b}\n")
    docs, diags = load_text("f.yaml", text)
    assert diags == []
    assert [(d.index, d.data["kind"]) for d in docs] == [(2, "Stack"), (5, "Policy")]
    assert docs[0].start[0] == 6 and docs[1].start[0] == 14


def test_a_foreign_document_is_decided_before_it_is_built():
    """Tags and duplicate keys in a document that is not ours are not our business."""
    text = "apiVersion: v1\nx: !Ref y\nx: 2\nnote: poolc/v1\n"
    assert load_text("f.yaml", text) == ([], [])


def test_text_without_poolc_is_not_parsed():
    assert load_text("f.yaml", "{{{ not yaml ]]]\n\t- x") == ([], [])


def test_list_of_poolc_documents_is_y008_but_other_lists_are_skipped():
    _, diags = load_text("f.yaml", "- {apiVersion: v1}\n- {apiVersion: poolc/v1, kind: Stack}\n")
    assert [(x.rule, x.line, x.column) for x in diags] == [("Y008", 1, 1)]
    assert load_text("f.yaml", "- {apiVersion: v1}\n- note: poolc/v1\n") == ([], [])


def test_load_file_reads_bytes_and_reports_unreadable_files(tmp_path: Path):
    path = tmp_path / "p.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + POOL.encode())
    docs, diags = load_file(str(path))
    assert diags == [] and docs[0].keys[("apiVersion",)] == (1, 1, 1, 11)
    docs, diags = load_file(str(tmp_path))  # a directory cannot be read as a file
    assert docs == [] and [x.rule for x in diags] == ["Y001"]


def _touch(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x: 1\n", encoding="utf-8")


def test_expand_paths_sorted_recursive_and_deduplicated(tmp_path: Path):
    _touch(tmp_path, "b.yaml", "a.yml", "sub/c.yaml", "sub/deeper/a.yaml", ".hidden/x.yaml",
           "notes.txt", "x.yaml.bak", "sub/.git/config.yaml")
    root = os.path.normpath(str(tmp_path)).replace(os.sep, "/")
    files, problems = expand_paths([str(tmp_path), str(tmp_path / "b.yaml")])
    assert problems == []
    assert files == [f"{root}/{n}" for n in ("a.yml", "b.yaml", "sub/c.yaml", "sub/deeper/a.yaml")]


def test_expand_paths_keeps_command_line_order(tmp_path: Path):
    """Arrival order depends on it: files as given, directories expanded in place."""
    _touch(tmp_path, "z.yaml", "d/a.yaml", "d/b.yaml")
    root = os.path.normpath(str(tmp_path)).replace(os.sep, "/")
    files, _ = expand_paths([str(tmp_path / "z.yaml"), str(tmp_path / "d")])
    assert files == [f"{root}/z.yaml", f"{root}/d/a.yaml", f"{root}/d/b.yaml"]


def test_an_explicit_file_is_read_whatever_its_suffix(tmp_path: Path):
    path = tmp_path / "pool.txt"
    path.write_text(POOL, encoding="utf-8")
    assert len(load_paths([str(path)]).documents) == 1


def test_missing_path_is_one_y001_and_the_rest_is_still_read(tmp_path: Path):
    _touch(tmp_path, "a.yaml")
    result = load_paths([str(tmp_path / "missing"), str(tmp_path)])
    assert [(x.rule, x.file.endswith("missing")) for x in result.diagnostics] == [("Y001", True)]
    assert len(result.files) == 1
