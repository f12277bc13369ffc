"""The journal read through its model (poolc.state.journal_format): a journal that is not
exactly what apply writes is refused whole, and the refusal says where."""

from __future__ import annotations

import json

import pytest

from poolc.state.journal_format import BadJournal, read_journal
from poolc.state.transaction import Entry, Journal, JournalError, _parse_journal

GOOD = {"poolc_journal": 1, "id": "0123456789abcdef", "phase": "commit", "output_dir": "out",
        "state": "poolc.state.json", "dirs": ["kubernetes"],
        "entries": [{"tree": "out", "path": "kubernetes/a.yaml", "new": "sha256:1", "backup": False, "old": None},
                    {"tree": "state", "path": "poolc.state.json", "new": "sha256:2", "backup": True,
                     "old": "sha256:3"}]}


def text_of(change) -> str:
    data = json.loads(json.dumps(GOOD))
    change(data)
    return json.dumps(data, indent=1) + "\n"


def test_what_apply_writes_reads_back():
    journal = Journal(id="0123456789abcdef", phase="prepare", output_dir="out", state="poolc.state.json",
                      entries=[Entry(tree="out", path="kubernetes/a.yaml", new="sha256:1", backup=False),
                               Entry(tree="state", path="poolc.state.json", new=None, backup=True, old="sha256:3")],
                      dirs=["kubernetes"])
    text = journal.to_text()
    assert _parse_journal("j", text) == journal
    # the bytes apply has always written: the version first, then the fields in this order
    assert list(json.loads(text)) == ["poolc_journal", "id", "phase", "output_dir", "state", "dirs", "entries"]
    assert list(json.loads(text)["entries"][1]) == ["tree", "path", "new", "backup", "old"]


@pytest.mark.parametrize("change, why, bad", [
    (lambda d: d.update(id="xyz"), "id must be 16 lowercase hexadecimal digits", '"xyz"'),
    (lambda d: d.update(phase="done"), "phase must be 'prepare', 'commit' or 'rollback'", '"done"'),
    (lambda d: d.update(dirs=[1]), "dirs[0] must be a string", "1"),
    (lambda d: d.update(dirs=["../x"]), "dirs[0] '../x' is not a plain relative path inside its directory",
     '"../x"'),
    (lambda d: d["entries"][1].update(backup="yes"), "entries[1].backup must be true or false", '"yes"'),
    (lambda d: d["entries"][0].update(tree="elsewhere"), "entries[0].tree must be 'out' or 'state'",
     '"elsewhere"'),
    (lambda d: d["entries"][0].pop("backup"), "entries[0].backup is missing", "{"),   # at the entry
    (lambda d: d["entries"][1].update(path="other.json"),
     "entries[1].path 'other.json' is a state entry, but the journal's state is 'poolc.state.json'", '"other.json"'),
    (lambda d: d.update(poolc_journal=2), "unknown format", "2"),
])
def test_a_wrong_journal_is_refused_at_its_place(change, why, bad):
    text = text_of(change)
    with pytest.raises(BadJournal) as caught:
        read_journal(text)
    assert caught.value.why == why
    line, column = caught.value.span[:2]
    assert text.splitlines()[line - 1][column - 1:].startswith(bad)
    with pytest.raises(JournalError, match=rf"^j:{line}:{column}: not a journal poolc can recover"):
        _parse_journal("j", text)


def test_broken_json_is_refused_at_the_error():
    with pytest.raises(BadJournal) as caught:
        read_journal('{\n "poolc_journal": 1,\n "id": }\n')
    assert caught.value.span[:2] == (3, 8) and caught.value.why.startswith("not JSON: Expecting value")


@pytest.mark.parametrize("version", ["1.0", "true"])
def test_the_version_reads_as_before(version):
    """The version was compared with ``!= 1``: 1.0 and true are read as 1, as they were."""
    assert read_journal(text_of(lambda d: None).replace('"poolc_journal": 1', f'"poolc_journal": {version}')).id
