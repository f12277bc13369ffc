"""The pull-request comment (`poolc plan --format markdown`): golden files for
examples/ and for tests/fixtures/review (preemptions, queued and rejected steps,
runtime differences), rendered by a real Markdown renderer with GitHub's tables,
and GitHub's 65,536-character limit on a 10,000-request plan.

Regenerate the golden files with ``pytest tests/test_plan_markdown.py --update-golden``.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from poolc.commands.planning import plan_paths
from poolc.domain.plan import Plan, PlanFormatError, to_json
from poolc.domain.plan_file import read_plan
from poolc.domain.said import said
from poolc.report.plan_markdown import LIMIT, MAX_ROWS, render_markdown

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden" / "markdown"
PLATFORMS = {"examples": REPO / "examples", "review": REPO / "tests" / "fixtures" / "review"}


class _Structure(HTMLParser):
    """Headings, and per table its header cells and the cells of each body row;
    the text outside tables, to find pipes that leaked out of one."""

    def __init__(self) -> None:
        super().__init__()
        self.headings: list[str] = []
        self.tables: list[dict] = []
        self.outside: list[str] = []
        self._heading: list[str] | None = None
        self._cell: list[str] | None = None
        self._in_body = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in ("h3", "h4"):
            self._heading = []
        elif tag == "table":
            self.tables.append({"header": [], "rows": []})
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("h3", "h4") and self._heading is not None:
            self.headings.append("".join(self._heading))
            self._heading = None
        elif tag == "tbody":
            self._in_body = False
        elif tag in ("td", "th") and self._cell is not None:
            text = "".join(self._cell)
            (self.tables[-1]["rows"][-1] if tag == "td" else self.tables[-1]["header"]).append(text)
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading.append(data)
        if self._cell is not None:
            self._cell.append(data)
        else:
            self.outside.append(data)


def rendered(markdown: str) -> _Structure:
    """The comment as GitHub's renderer shapes it: CommonMark plus GFM tables."""
    parser = _Structure()
    parser.feed(MarkdownIt("commonmark").enable("table").render(markdown))
    return parser


def comment(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Plan, str]:
    monkeypatch.chdir(PLATFORMS[name])
    plan = plan_paths(["."], state_file=str(tmp_path / "no-state.json")).plan
    return plan, render_markdown(plan)


@pytest.mark.parametrize("name", sorted(PLATFORMS))
def test_markdown_matches_its_golden_file(name, tmp_path, monkeypatch, request):
    _, text = comment(name, tmp_path, monkeypatch)
    golden = GOLDEN / f"{name}.md"
    if request.config.getoption("--update-golden"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8", newline="\n")
    assert text == golden.read_bytes().decode("utf-8"), \
        f"{golden.name} differs; run `pytest tests/test_plan_markdown.py --update-golden` and review the diff"


def test_review_comment_renders_every_section_with_the_plans_rows(tmp_path, monkeypatch):
    plan, text = comment("review", tmp_path, monkeypatch)
    html = rendered(text)
    assert html.headings == [
        "poolc plan: 2 allocated, 2 queued, 1 rejected, 2 preempted",
        "Where the cluster will do otherwise than the plan (2)", "Running work preempted (1)", "Queued (2)",
        "Rejected (1)"]
    tables = {tuple(t["header"]): t["rows"] for t in html.tables}
    differences = tables["step", "team", "the cluster", "the plan", "why"]
    # gate mode: the queued vision sweep never reaches Kueue, so rerank is admitted as
    # planned; the lab borrower's Workload is unknown, so poolc cannot stop it
    assert [row[:4] for row in differences] == [["hi-borrower", "hi-k8s", "keeps running", "preempted"],
                                                ["mid-eval/fixed", "mid-k8s", "stays pending", "allocated"]]
    steps = [rows for header, rows in tables.items() if header == ("step", "team", "policy", "demand", "why")]
    assert len(html.tables) == 8 and len(steps) == 1      # rejected and queued share a header: one key
    assert tables["", "tier", "value"] == [
        ["maximised", "steps admitted inside their policy's free reserved share", "1"],
        ["maximised", "steps admitted at priority 1000", "1"],
        ["minimised", "running allocations preempted at priority 300", "1"],
        ["maximised", "steps admitted at priority 300", "0"],
        ["minimised", "running allocations preempted at priority 100", "1"],
        ["maximised", "steps admitted at priority 50", "1"],
        ["maximised", "arrival order: sum over admitted steps of (steps - arrival rank)", "5"],
        ["maximised", "most recently started preempted first: sum of their start ranks", "5"],
        ["maximised", "pool preference: higher-priority policy, then pool name", "2"]]
    queued = [row for t in html.tables if t["header"][:3] == ["step", "team", "policy"] for row in t["rows"]]
    assert [row[0] for row in queued] == ["ranking-train/train", "vision-sweep/sweep", "ranking-train/huge"]
    train = queued[0]
    assert train[2:4] == ["ranking-onprem", "8 GPU"]
    assert train[4].startswith("non-preemptible share: policy ranking-onprem holds 8 GPU of the reserved 12 GPU, "
                               "needs 8 GPU; also GPU: needs 8 GPU, free 2 GPU in pool onprem-gpu")
    # hi-borrower is preempted by the plan but kept running by Kueue: said once, among the differences
    assert [row[0] for row in tables["step", "team", "pool", "to make room for", "why"]] == ["vision-c"]
    assert len(tables["pool", "resource", "capacity", "used", "free", ""]) == len(plan.pools) == 2
    policies = tables["policy", "pool", "priority", "resource", "reserved", "used", "borrowed", "limit",
                      "of the limit"]
    assert [row[:8] for row in policies] == [
        ["hi-lab", "lab", "100", "GPU", "0", "0", "0", "8"], ["mid-lab", "lab", "50", "GPU", "4", "2", "0", "8"],
        ["ranking-onprem", "onprem-gpu", "1000", "GPU", "12", "14", "2", "24"],
        ["vision-onprem", "onprem-gpu", "300", "GPU", "0", "8", "8", "20"]]
    _assert_well_formed(html)


def test_examples_comment_renders(tmp_path, monkeypatch):
    from poolc.report.plan_view import waiting

    plan, text = comment("examples", tmp_path, monkeypatch)
    html = rendered(text)
    assert html.headings[0] == "poolc plan: 9 allocated, 5 queued, 0 rejected, 1 preempted"
    queued = next(t for t in html.tables if t["header"] == ["step", "team", "policy", "demand", "why"])
    assert [row[0] for row in queued["rows"]] == [r.id for r in waiting(plan)]
    assert [row[1] for row in queued["rows"]] == ["assistant", "vision", "vision", "vision", "vision"]
    assert ("> **Running work ends when this plan is applied:** is preempted: `research-sweep-lr-02` (research-k8s)."
            in text)
    _assert_well_formed(html)


def test_the_checks_see_a_broken_table():
    html = rendered("#### T\n\n| a | b |\n|---|---|\n| 1 | 2 | 3 |\n\nx | y\n")
    assert html.tables == [{"header": ["a", "b"], "rows": [["1", "2"]]}]   # the renderer drops the extra cell
    assert any("|" in text for text in html.outside)
    with pytest.raises(AssertionError):
        _assert_well_formed(html)


def _assert_well_formed(html: _Structure) -> None:
    """Every row as wide as its header (no cell broken by a pipe), and no pipe in
    the text around the tables (a table the renderer did not recognise)."""
    for table in html.tables:
        assert table["rows"], table["header"]
        assert all(len(row) == len(table["header"]) for row in table["rows"]), table["header"]
    assert not any("|" in text for text in html.outside), [t for t in html.outside if "|" in t]


def test_a_pipe_in_a_message_stays_inside_its_cell(tmp_path, monkeypatch):
    plan, _ = comment("review", tmp_path, monkeypatch)
    odd = tuple(dataclasses.replace(r, message=said("a | b\nc")) if r.status == "queued" else r for r in plan.requests)
    html = rendered(render_markdown(dataclasses.replace(plan, requests=odd)))
    queued = [t for t in html.tables if t["header"][:3] == ["step", "team", "policy"]][0]
    assert [row[4] for row in queued["rows"]] == ["a | b c", "a | b c"]
    _assert_well_formed(html)


def _many_queued(plan: Plan, count: int) -> Plan:
    template = plan.by_status("queued")[0]
    extra = tuple(dataclasses.replace(template, id=f"bulk/step-{i:05d}") for i in range(count))
    return dataclasses.replace(plan, requests=tuple(sorted(plan.requests + extra, key=lambda r: r.id)))


def test_a_long_section_ends_after_whole_rows_with_a_note(tmp_path, monkeypatch):
    """Thousands of queued steps: the comment stays under the limit, the table ends
    after a whole row, says how many more there are and where, and the sections
    after it (rejected steps; pools, policies, changes folded) are still there."""
    plan, _ = comment("review", tmp_path, monkeypatch)
    big = _many_queued(plan, 5000)
    text = render_markdown(big)
    assert len(text) < LIMIT
    html = rendered(text)
    assert html.headings[-1] == "Rejected (1)"
    for summary in ("Pools: capacity and use", "Policies: reserved, used, borrowed, limit",
                    "What <code>poolc apply</code> would write"):
        assert f"<summary>{summary}</summary>" in text
    queued = next(t for t in html.tables if t["rows"] and t["rows"][0][0].startswith("bulk/"))
    shown = len(queued["rows"])
    assert 0 < shown <= MAX_ROWS
    assert f"_{5002 - shown} more steps not shown to stay under GitHub's comment size; " in text
    assert "`poolc plan --format json` has them all" in text
    _assert_well_formed(html)
    assert render_markdown(big) == text


def _markdown_of(root: Path, state: Path) -> tuple[Plan, str]:
    plan = plan_paths([str(root)], state_file=str(state)).plan
    return plan, render_markdown(plan)


@pytest.mark.slow
def test_the_comment_of_a_10000_request_plan_stays_under_githubs_limit(tmp_path):
    root = tmp_path / "platform"
    subprocess.run([sys.executable, str(REPO / "benchmarks" / "gen_pipelines.py"), str(root), "--pipelines", "1820"],
                   check=True, capture_output=True)
    plan, text = _markdown_of(root, tmp_path / "no-state.json")
    assert len(plan.requests) >= 10_000
    assert len(text) < LIMIT
    html = rendered(text)
    assert html.headings[0].startswith(f"poolc plan: {len(plan.by_status('allocated'))} allocated, "
                                       f"{len(plan.by_status('queued'))} queued")
    assert f"Queued ({len(plan.by_status('queued'))})" in html.headings
    assert "<summary>Pools: capacity and use</summary>" in text and "<summary>What <code>poolc apply" in text
    assert "more steps not shown to stay under GitHub's comment size" in text
    _assert_well_formed(html)


def test_a_saved_plan_gives_the_same_comment(tmp_path, monkeypatch):
    """`poolc show --format markdown` reads policies and objective tiers back."""
    plan, text = comment("review", tmp_path, monkeypatch)
    saved = to_json(plan)
    again = read_plan(saved)
    assert to_json(again) == saved and render_markdown(again) == text
    assert again.policies == plan.policies and again.solver.tiers == plan.solver.tiers
    data = json.loads(saved)
    for broken, says in ((dict(data, policies=3), "'policies' must be list"),
                         ({**data, "solver": {**data["solver"], "tiers": [{"kind": "fifo"}]}}, "kind 'fifo'"),
                         ({**data, "solver": {**data["solver"], "tiers": data["solver"]["tiers"][1:]}},
                          "'tiers' must name every objective value")):
        with pytest.raises(PlanFormatError, match=says):
            read_plan(json.dumps(broken))
