"""The pull-request comment a reviewer reads, as golden files, each rendered with a
GitHub-flavoured Markdown renderer (tables, strikethrough) and checked for its
structure: (a) a configuration with errors, (b) a policy change against its base
branch (prod's GPU limit 12 -> 10: a step goes from allocated to queued and two
preemptions disappear), (c) a change with no effect, (d) a contended change where
the cluster (Kueue) does otherwise than the plan.

tests/fixtures/change is the base branch of (b); its running steps come from
applying it without `pipelines/training.yaml` first. (d) is tests/fixtures/review
with teams on its pipelines and one step made smaller.

Regenerate the golden files with ``pytest tests/test_pr_comment.py --update-golden``.
"""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from support import cli

from poolc.commands.apply import apply_paths

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden" / "comments"
FIXTURES = REPO / "tests" / "fixtures"
NOW = "2026-11-20T00:00:00Z"


class _Blocks(HTMLParser):
    """The rendered comment's top-level shape: each block in order (h3, h4, p,
    table, ul, blockquote, details, pre) with its text, and per table its rows."""

    BLOCKS = {"h3", "h4", "p", "table", "ul", "blockquote", "details", "pre"}

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[tuple[str, str]] = []
        self.tables: list[list[list[str]]] = []
        self._open: list[str] = []
        self._text: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in self.BLOCKS and not self._open:
            self._text = []
        if tag in self.BLOCKS:
            self._open.append(tag)
        if tag == "table" and self._open == ["table"]:
            self.tables.append([])
        elif tag == "tr" and self._open[:1] == ["table"]:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self._open[:1] == ["table"]:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None
        if tag in self.BLOCKS and self._open and self._open[-1] == tag:
            self._open.pop()
            if not self._open:
                self.blocks.append((tag, " ".join("".join(self._text).split())))

    def handle_data(self, data: str) -> None:
        self._text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.blocks]

    def text_of(self, kind: str) -> list[str]:
        return [text for k, text in self.blocks if k == kind]


def rendered(markdown: str) -> _Blocks:
    """As GitHub renders a comment: CommonMark, GFM tables and strikethrough, inline HTML."""
    parser = _Blocks()
    parser.feed(MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(markdown))
    return parser


def _golden(name: str, text: str, request: pytest.FixtureRequest) -> None:
    golden = GOLDEN / f"{name}.md"
    if request.config.getoption("--update-golden"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8", newline="\n")
    assert text == golden.read_bytes().decode("utf-8"), \
        f"{golden.name} differs; run `pytest tests/test_pr_comment.py --update-golden` and review the diff"


def _well_formed(html: _Blocks) -> None:
    """Every table row as wide as its header, and no pipe outside a table (a table
    the renderer did not recognise)."""
    for table in html.tables:
        assert len(table) > 1 and all(len(row) == len(table[0]) for row in table), table[0]
    assert not any("|" in text for kind, text in html.blocks if kind not in ("table", "details", "pre"))


# --- the platforms ------------------------------------------------------------------

@pytest.fixture
def change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tests/fixtures/change with its running steps applied into a state (cwd: tmp_path)."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(FIXTURES / "change", "base")
    shutil.copytree(FIXTURES / "change", "running")
    (tmp_path / "running" / "pipelines" / "training.yaml").unlink()
    applied = apply_paths(["running"], "deploy", state_file="poolc.state.json", now=NOW)
    assert applied.ok and len(applied.plan.by_status("allocated")) == 4
    shutil.copytree("base", "head")
    _edit(tmp_path / "head" / "policies.yaml", "limit: {gpu: 12}", "limit: {gpu: 10}")
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def _plan(root: str, *args: str):
    return cli("plan", root, "--state", "poolc.state.json", "--output-dir", "deploy", *args)


# --- (a) a configuration with errors ------------------------------------------------

def test_a_broken_configuration_gets_its_errors_and_no_plan(change, request):
    _edit(change / "head" / "pipelines" / "vlm-sweep.yaml", "stack: research", "stack: reserch")
    (change / "plan.json").write_text("earlier plan\n", encoding="utf-8")
    result = _plan("head", "--format", "markdown", "--out", "plan.json")
    assert result.exit_code == 1
    _golden("invalid", result.stdout, request)
    html = rendered(result.stdout)
    assert html.kinds() == ["h3", "p", "ul", "p", "pre"]
    assert html.text_of("h3") == ["poolc: 1 error, no plan"]
    assert html.text_of("ul") == ["head/pipelines/vlm-sweep.yaml:7:10 N002 pipeline 'vlm-sweep' uses stack "
                                  "'reserch', which is not defined in the files given; did you mean 'research'?"]
    assert html.text_of("pre") == ["poolc validate head"]
    assert not html.tables
    # no plan anywhere: the PLANFILE is left as it was, the log has the error
    assert (change / "plan.json").read_text(encoding="utf-8") == "earlier plan\n"
    assert "head/pipelines/vlm-sweep.yaml:7:10: error[N002]" in result.stderr
    assert "no plan made" in result.stderr


@pytest.mark.parametrize("fmt", ["json", "text", "github", "sarif"])
def test_a_broken_configuration_gives_no_plan_in_any_format(change, fmt):
    _edit(change / "head" / "pools.yaml", "  capacity:", "capacity:")       # a one-line indentation slip
    result = _plan("head", "--format", fmt, "--out", "plan.json")
    assert result.exit_code == 1
    assert not (change / "plan.json").exists()
    assert "error[" in result.stderr and "no plan made" in result.stderr
    if fmt == "json":
        assert list(json.loads(result.stdout)) == ["diagnostics"]
    elif fmt == "text":
        assert result.stdout == ""
    else:
        assert "requests" not in result.stdout and "allocated" not in result.stdout


def test_a_rejected_step_keeps_its_plan(change):
    """R004 is the step's own rejection: the plan is made and lists it."""
    _edit(change / "head" / "pipelines" / "training.yaml", "preemptible: true", "preemptible: false")
    result = _plan("head", "--format", "json", "--out", "plan.json")
    assert result.exit_code == 1
    plan = json.loads(result.stdout)
    assert {r["id"]: (r["status"], r["reason"]) for r in plan["requests"]}["ranking-pretrain/pretrain"] == \
        ("rejected", "R004")
    assert (change / "plan.json").exists()


# --- (b) a policy change against the base branch ------------------------------------

def test_lowering_a_limit_reads_as_what_it_does(change, request):
    assert _plan("base", "--out", "base.json").exit_code == 0
    result = _plan("head", "--base", "base.json", "--format", "markdown", "--out", "head.json")
    assert result.exit_code == 0
    _golden("policy-change", result.stdout, request)
    html = rendered(result.stdout)
    _well_formed(html)
    # the first screen: what changed, whose fate, per policy; the whole plan after it
    assert html.kinds()[:8] == ["h3", "h4", "table", "h4", "table", "h4", "table", "h4"]
    assert html.text_of("h3") == ["poolc: 1 step allocated → queued, 2 running steps no longer preempted"]
    assert html.blocks[7] == ("h4", "The whole plan: 4 allocated, 1 queued, 0 rejected, 0 preempted")
    inputs, fates, policies = html.tables[:3]
    assert inputs[1:] == [["policy", "prod-gpu-east", "limit 12 GPU → 10 GPU"]]
    assert [row[:4] for row in fates[1:]] == [
        ["ranking-pretrain/pretrain", "ranking", "allocated", "queued"],
        ["vlm-sweep/trial_lr1e3_mixb", "vision", "preempted", "keeps running"],
        ["vlm-sweep/trial_lr3e4_mixa", "vision", "preempted", "keeps running"]]
    assert fates[1][4].startswith("limit: policy prod-gpu-east holds 4 GPU of 10 GPU, needs 8 GPU")
    assert policies[1:] == [["prod-gpu-east", "2 → 1", "0 → 1", "0"],
                            ["research-gpu-east", "1 → 3", "2 → 0", "2 → 0"]]
    assert "blockquote" not in html.kinds()          # it preempts nothing: no warning
    assert not any("ee538171" in text for text in html.text_of("table"))   # step ids, not allocation names
    # the JSON's base section, as the contract gives it
    base = json.loads((change / "head.json").read_text(encoding="utf-8"))["base"]
    assert base == {
        "inputs_digest": json.loads((change / "base.json").read_text(encoding="utf-8"))["inputs_digest"],
        "inputs": [{"kind": "Policy", "name": "prod-gpu-east", "change": "update",
                    "fields": {"spec.limit.gpu": [12, 10]}}],
        "steps": [{"id": "ranking-pretrain/pretrain", "base": "allocated", "head": "queued"},
                  {"id": "vlm-sweep/trial_lr1e3_mixb", "base": "queued", "head": "allocated"},
                  {"id": "vlm-sweep/trial_lr3e4_mixa", "base": "queued", "head": "allocated"}],
        "preempted": {"added": [], "removed": ["vlm-sweep--trial-lr1e3-mixb-ee538171",
                                               "vlm-sweep--trial-lr3e4-mixa-ed771dad"]},
        "policies": [{"name": "prod-gpu-east", "admitted": [2, 1], "queued": [0, 1], "preempted": [0, 0]},
                     {"name": "research-gpu-east", "admitted": [1, 3], "queued": [2, 0], "preempted": [2, 0]}]}
    # `poolc show` renders the saved plan's base the same way (without the file diffs only `plan` has)
    shown = cli("show", "head.json", "--format", "markdown")
    assert shown.exit_code == 0
    assert shown.stdout.split("<details><summary>What <code>poolc apply")[0] == \
        result.stdout.split("<details><summary>What <code>poolc apply")[0]


def test_raising_it_back_warns_of_the_running_work_it_preempts(change):
    assert _plan("head", "--out", "head.json").exit_code == 0
    result = _plan("base", "--base", "head.json", "--format", "markdown")
    html = rendered(result.stdout)
    assert html.text_of("h3") == ["poolc: stops 2 running steps (preempted), 1 step queued → allocated"]
    assert html.blocks[1] == ("blockquote", "[!WARNING] Running work ends when this change is applied: is "
                                            "preempted: vlm-sweep/trial_lr1e3_mixb (vision), "
                                            "vlm-sweep/trial_lr3e4_mixa (vision).")
    ended = next(table for table in html.tables if table[0] == ["step", "team", "what happens", "why"])
    assert [row[:3] for row in ended[1:]] == [["vlm-sweep/trial_lr1e3_mixb", "vision", "is preempted"],
                                              ["vlm-sweep/trial_lr3e4_mixa", "vision", "is preempted"]]
    # gate mode: apply stops a victim with a stop object, which needs its Workload (unknown here: never imported)
    assert all(row[3].endswith("its Kueue Workload is unknown, so apply writes no stop object for it "
                               "(poolc state import --kueue records it)") for row in ended[1:])
    text = _plan("base", "--base", "head.json").stdout
    first = text.split("\n\n", 1)[0].splitlines()
    assert first[0] == "Change: stops 2 running steps (preempted), 1 step queued → allocated"
    assert " ".join(first[1:]) == ("WARNING: running work ends when this change is applied: is preempted: "
                                   "vlm-sweep/trial_lr1e3_mixb (vision), vlm-sweep/trial_lr3e4_mixa (vision)")
    assert cli("show", "--format", "text", "head.json").exit_code == 0


# --- (c) a change with no effect ----------------------------------------------------

def test_a_change_with_no_effect_is_one_paragraph(change, request):
    assert _plan("base", "--out", "base.json").exit_code == 0
    _edit(change / "head" / "policies.yaml", "limit: {gpu: 10}", "limit: {gpu: 12}")
    (change / "head" / "pipelines" / "training.yaml").write_text(
        "# a comment changes nothing\n" + (change / "base" / "pipelines" / "training.yaml").read_text("utf-8"))
    result = _plan("head", "--base", "base.json", "--format", "markdown", "--detailed-exitcode")
    assert result.exit_code == 2                       # the state still changes: it was never applied
    _golden("no-op", result.stdout, request)
    html = rendered(result.stdout)
    assert html.kinds() == ["p"]
    assert html.blocks[0][1].startswith("poolc: no changes.")
    assert len(result.stdout) < 300
    text = _plan("head", "--base", "base.json").stdout
    assert text.count("\n") == 1 and text.startswith("No changes:")


# --- (d) a contended change: the cluster does otherwise ------------------------------

def test_a_contended_change_says_once_what_happens_to_each_step(tmp_path, monkeypatch, request):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(FIXTURES / "review", "base")
    for name, team in (("ranking-train", "ranking"), ("vision-sweep", "vision"), ("mid-eval", "eval")):
        _edit(tmp_path / "base" / "pipelines.yaml", f"metadata: {{name: {name}}}",
              f"metadata: {{name: {name}, labels: {{team: {team}}}}}")
    shutil.copytree("base", "head")
    _edit(tmp_path / "head" / "pipelines.yaml", "rerank: {settings: {resources: {gpu_count: 6}}}",
          "rerank: {settings: {resources: {gpu_count: 4}}}")
    assert cli("plan", "base", "--state", "none.json", "--out", "base.json").exit_code == 1   # R004 in both
    result = cli("plan", "head", "--state", "none.json", "--base", "base.json", "--format", "markdown")
    assert result.exit_code == 1
    _golden("contended", result.stdout, request)
    html = rendered(result.stdout)
    _well_formed(html)
    headings = html.text_of("h4")
    assert headings[:3] == ["What changed (1)", "Per policy",
                            "The whole plan: 2 allocated, 2 queued, 1 rejected, 1 preempted"]
    assert headings[3:] == ["Where the cluster will do otherwise than the plan (2)", "Queued (2)", "Rejected (1)"]
    assert html.tables[0][1:] == [["pipeline", "ranking-train", "step rerank demand 6 GPU → 4 GPU"]]
    cluster = html.tables[2]
    assert cluster[0] == ["step", "team", "the cluster", "the plan", "why"]
    assert [row[:4] for row in cluster[1:]] == [["hi-borrower", "hi-k8s", "keeps running", "preempted"],
                                                ["mid-eval/fixed", "eval", "stays pending", "allocated"]]
    # one truth per step: no step of the cluster's table appears in another table of the plan
    steps = {row[0] for row in cluster[1:]}
    for table in html.tables[3:5]:
        assert not steps & {row[0] for row in table[1:]}
    assert "Running work preempted" not in " ".join(headings)     # hi-borrower keeps running, said once


# --- size ---------------------------------------------------------------------------

@pytest.mark.slow
def test_the_comment_of_10000_requests_with_a_base_stays_under_githubs_limit(tmp_path, monkeypatch):
    import subprocess
    import sys

    from poolc.report.plan_markdown import LIMIT

    monkeypatch.chdir(tmp_path)
    subprocess.run([sys.executable, str(REPO / "benchmarks" / "gen_pipelines.py"), "base", "--pipelines", "1820"],
                   check=True, capture_output=True)
    shutil.copytree("base", "head")
    # halve the GPU pool (and the orchestrator's limit with it): over a hundred steps change their fate
    edited = 0
    for path in sorted((tmp_path / "head").rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        if "limit: {gpu: 384}" in text:
            text = text.replace("limit: {gpu: 384}", "limit: {gpu: 256}").replace("capacity: {gpu: 512,",
                                                                                 "capacity: {gpu: 256,")
            path.write_text(text, encoding="utf-8")
            edited += 1
    assert edited == 1
    def poolc(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "poolc", "plan", *args, "--state", "none.json"],
                              capture_output=True, text=True)

    base = poolc("base", "--out", "base.json")
    assert base.returncode == 0, base.stderr
    result = poolc("head", "--base", "base.json", "--format", "markdown", "--out", "head.json")
    assert result.returncode == 0, result.stderr
    plan = json.loads((tmp_path / "head.json").read_text(encoding="utf-8"))
    assert len(plan["requests"]) >= 10_000 and len(plan["base"]["steps"]) > 100
    assert len(result.stdout) < LIMIT
    html = rendered(result.stdout)
    _well_formed(html)
    assert html.kinds()[0] == "h3" and "more steps not shown to stay under GitHub's comment size" in result.stdout


# --- a base that cannot be compared ---------------------------------------------------

def test_a_base_of_another_state_or_format_version_is_an_error_that_says_so(change):
    assert cli("plan", "base", "--state", "none.json", "--out", "base.json").exit_code == 0
    result = _plan("head", "--base", "base.json", "--format", "markdown", "--out", "head.json")
    assert result.exit_code == 1 and result.stdout == "" and not (change / "head.json").exists()
    assert "base.json: the base plan cannot be compared with this one: it was made against another state " \
           "(4 running allocation(s) differ: ranking-serve--refresh-index-" in result.stderr
    data = json.loads((change / "base.json").read_text(encoding="utf-8"))
    (change / "old.json").write_text(json.dumps({**data, "format_version": 0}), encoding="utf-8")
    result = _plan("head", "--base", "old.json")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.strip() == ("poolc: the base plan old.json has plan format version 0, this poolc writes "
                                     "version 1: plan the base branch with the same poolc as this one")
    (change / "broken.json").write_text('{"format_version": 1}', encoding="utf-8")
    result = _plan("head", "--base", "broken.json")
    assert result.exit_code == 1 and "the base plan broken.json:1:1: not a poolc plan file" in result.stderr
