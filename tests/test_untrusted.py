"""Issue #28 as regression tests: a pull request, a saved plan or a cluster report
from someone untrusted cannot leak a secret, inject into the CI log or the
pull-request comment, lose a later write, hang or crash poolc.

One test (or a few) per finding; the escaping of every output channel is checked
as a whole in ``test_no_output_channel_can_be_injected``, and ``show`` is fuzzed
over malformed plans in ``test_show_never_crashes_on_a_malformed_plan``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from support import cli

from poolc.report.sarif import artifact_location
from poolc.state.lock import state_lock
from poolc.text import escape

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "from poolc.cli import main; main()"]
LIMIT = 65_536

pytestmark = pytest.mark.usefixtures("fixed_clock")

# Everything a hostile string can try on the three channels at once.
HOSTILE = ("x\n::error::pwned %0A ##[warning]legacy\r\n  ::add-mask::s3cret <img src=x onerror=alert(1)> "
           "<b>bold</b> @octocat `tick` ```fence [/bold] [/] [link](http://evil.example) "
           "www.evil.example mail@evil.example #1 *em* _em_ ~~del~~ $x$ &amp;")


def poolc(*args: str, cwd: Path, timeout: float = 120, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """poolc in a subprocess; a hang (a FIFO waited on) is a failure, not a stuck test."""
    try:
        return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, timeout=timeout, input=stdin,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    except subprocess.TimeoutExpired:
        pytest.fail(f"poolc {' '.join(args)} did not finish in {timeout} s (it waits on something)")


# --- what GitHub's runner and GitHub's renderer would make of an output ------------------------

def runner_commands(output: str) -> list[str]:
    """Lines GitHub's runner would take as a workflow command: after leading blanks,
    ``::``; or the legacy ``##[`` anywhere in the line. (Python splits lines at more
    characters than the runner does, so this is the stricter reading.)"""
    return [line for line in output.splitlines() if line.lstrip().startswith("::") or "##[" in line]


_GITHUB_LINE = re.compile(r"::(error|warning) file=[^,:]*,line=\d+,col=\d+,endLine=\d+,endColumn=\d+,"
                          r"title=[A-Z]\d{3}::[^\r\n]*")


def assert_github_commands_only(output: str) -> None:
    """``--format github``: every line is one annotation poolc meant, nothing more."""
    for line in output.splitlines():
        assert _GITHUB_LINE.fullmatch(line), line
        assert "##[" not in line and "::" not in line.split("::", 3)[-1], line


class _Html(HTMLParser):
    """Tags, and the text outside code, of rendered Markdown."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.text: list[str] = []
        self._code = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.add(tag)
        self._code += tag in ("code", "pre")

    def handle_endtag(self, tag: str) -> None:
        self._code -= tag in ("code", "pre")

    def handle_data(self, data: str) -> None:
        if not self._code:
            self.text.append(data)


# What poolc's comment is made of; anything else (img, a, b, script...) came from input.
ALLOWED_TAGS = {"h3", "h4", "p", "table", "thead", "tbody", "tr", "th", "td", "code", "pre", "details", "summary",
                "strong", "em", "ul", "li", "br", "s", "del", "blockquote"}
# What GitHub turns into a mention, an issue link or an autolink in text (not in code).
LINKISH = re.compile(r"(?<![\w`])@[A-Za-z0-9]|(?<![\w&])#[0-9]|www\.|[A-Za-z][A-Za-z0-9+.-]*://|\w@\w+\.\w")


def assert_inert_markdown(markdown: str) -> None:
    html = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(markdown)
    seen = _Html()
    seen.feed(html)
    assert seen.tags <= ALLOWED_TAGS, seen.tags - ALLOWED_TAGS
    text = "".join(seen.text)
    assert not LINKISH.search(text), LINKISH.search(text)
    assert runner_commands(markdown) == []


# --- the escaping functions themselves ---------------------------------------------------------

def test_text_fields_are_one_line_with_no_runner_command():
    out = escape.text(HOSTILE)
    assert "\n" not in out and "\r" not in out and runner_commands(out) == []
    assert escape.text("::error::x") == "\\x3a:error::x" and escape.text("  ::x").startswith("  \\x3a")
    assert escape.text("a ##[group]b") == "a #\\x23[group]b" and escape.text("plain") == "plain"
    assert escape.guard_lines("ok\n  ::warning::x\n##[error]y") == "ok\n  \\x3a:warning::x\n#\\x23[error]y"


def test_markdown_text_code_and_fences_render_as_written():
    for value in (HOSTILE, "`", "``a```b`", "- item", "# heading", "1. first", "|pipe|"):
        for markdown in (escape.md_text(value), escape.md_code(value), escape.md_fence(value)):
            assert "\n" not in markdown or markdown.startswith("```")
            assert_inert_markdown(markdown)
    html = MarkdownIt("commonmark").render(escape.md_code("a``b`c"))
    assert "<code>a``b`c</code>" in html
    fenced = MarkdownIt("commonmark").render(escape.md_fence("```\nstill inside\n```"))
    assert fenced.count("<pre>") == 1 and "still inside" in fenced and fenced.rstrip().endswith("</pre>")


def test_a_huge_field_is_bounded_in_every_channel():
    huge = "\x1b" * 1_000_000
    assert len(escape.text(huge)) <= escape.TEXT_LIMIT + 1
    assert len(escape.md_text(huge)) <= escape.MD_TEXT_LIMIT + 1
    assert len(escape.md_code(huge)) <= escape.MD_CODE_LIMIT + 10


# --- secrets: nothing is read through a link ---------------------------------------------------

def _applied(root: Path) -> None:
    assert cli("apply", "examples", "--output-dir", "deploy").exit_code == 0


def test_a_generated_file_replaced_by_a_link_to_a_secret_is_never_shown(platform):
    """The red-team finding: `plan` printed .git/config (or /proc/self/environ) as the old
    side of a diff, into the CI log and the pull-request comment."""
    _applied(platform)
    secret = platform / "git-config"
    secret.write_text("[http]\n\textraheader = AUTHORIZATION: basic SECRET-TOKEN-1234\n", encoding="utf-8")
    job = next((platform / "deploy" / "kubernetes").rglob("*.job.yaml"))
    job.unlink()
    job.symlink_to(os.path.relpath(secret, job.parent))
    for fmt in ("text", "markdown", "json", "github"):
        result = cli("plan", "examples", "--format", fmt)
        assert "SECRET-TOKEN" not in result.stdout + result.stderr, fmt
        assert result.exit_code == 1, fmt
        assert fmt == "markdown" or "symbolic link" in result.stdout + result.stderr, fmt
    assert "SECRET-TOKEN" in secret.read_text(encoding="utf-8")   # and it is left alone


def test_a_link_in_a_directory_of_the_output_is_never_followed_for_a_diff(platform):
    _applied(platform)
    outside = platform / "outside"
    shutil.copytree(platform / "deploy" / "kubernetes", outside)
    for job in outside.rglob("*.job.yaml"):
        job.write_text("SECRET-TOKEN\n", encoding="utf-8")
    shutil.rmtree(platform / "deploy" / "kubernetes")
    (platform / "deploy" / "kubernetes").symlink_to("../outside")
    result = cli("plan", "examples", "--format", "markdown")
    assert "SECRET-TOKEN" not in result.stdout + result.stderr and result.exit_code == 1


def test_a_state_file_that_is_a_link_is_a_diagnostic_and_not_read(platform):
    _applied(platform)
    real = platform / "elsewhere.json"
    os.replace(platform / "poolc.state.json", real)
    (platform / "poolc.state.json").symlink_to(real.name)
    result = cli("plan", "examples")
    assert result.exit_code == 1 and "symbolic link" in result.stderr and result.stdout == ""


def test_a_plan_file_that_is_a_link_or_a_fifo_is_refused_at_once(platform):
    assert cli("plan", "examples", "--out", "plan.json").exit_code == 0
    Path("linked.json").symlink_to("plan.json")
    os.mkfifo("fifo.json")
    for name in ("linked.json", "fifo.json"):
        for args in (("show", name), ("apply", "examples", "--output-dir", "deploy", "--plan", name)):
            done = poolc(*args, cwd=platform, timeout=60)
            assert done.returncode == 1, (args, done.stderr)
            assert b"internal error" not in done.stderr and b"cannot read plan file" in done.stderr


# --- injection: every channel, every command ---------------------------------------------------

HOSTILE_FILE = HOSTILE.replace("/", "_")   # a file name has no '/'


def _hostile_platform(root: Path) -> None:
    """Inputs whose every echoed field carries HOSTILE, valid enough to plan and apply:
    a pool file with a hostile name (its custom key is a P006 warning naming the file)
    and a generated file on disk whose old text is hostile (a diff)."""
    pool = (root / "examples" / "pools" / "datacenter-one.yaml").read_text(encoding="utf-8")
    (root / "examples" / "pools" / "datacenter-one.yaml").unlink()
    (root / "examples" / "pools" / f"{HOSTILE_FILE}.yaml").write_text(pool, encoding="utf-8")


def _hostile_diff(root: Path) -> None:
    for job in sorted((root / "deploy" / "kubernetes").rglob("*.job.yaml"))[:2]:
        job.write_text(f"{HOSTILE}\n```\n::error::from the diff\n ::warning::context line\n" + job.read_text(),
                       encoding="utf-8")


def _hostile_plan(plan: dict) -> dict:
    """Every free string of a plan file (ids, names, messages, keys, paths) made hostile."""
    closed = {"status", "strategy", "severity", "action", "kind", "state", "format_version", "inputs_digest"}

    def walk(value: object, key: str | None = None) -> object:
        if isinstance(value, dict):
            return {(f"{HOSTILE}{k}" if key in ("demand", "borrowed", "capacity", "used", "free", "reserved",
                                                "limit", "inputs") else k): walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, key) for v in value]
        if isinstance(value, str) and key not in closed:
            return f"{HOSTILE}{value}"
        return value

    hostile = walk(plan)
    assert isinstance(hostile, dict)
    hostile["solver"]["status"] = HOSTILE
    hostile["runtime"] = {"engine": HOSTILE, "differences": [{"id": HOSTILE, "plan": HOSTILE, "cluster": HOSTILE,
                                                              "message": HOSTILE}], "notes": [HOSTILE]}
    hostile["changes"]["files"].append({"path": HOSTILE, "action": "update"})
    hostile["changes"]["allocations"]["added"].append(HOSTILE)
    return hostile


def _check(channel: str, fmt: str, result) -> None:
    assert "Traceback" not in result.stderr and result.exit_code in (0, 1), (channel, fmt, result.stderr[-300:])
    assert runner_commands(result.stderr) == [], (channel, fmt, runner_commands(result.stderr))
    if fmt == "github":
        assert_github_commands_only(result.stdout)
    else:
        assert runner_commands(result.stdout) == [], (channel, fmt, runner_commands(result.stdout)[:3])
    if fmt == "markdown":
        assert_inert_markdown(result.stdout)
        assert len(result.stdout) < LIMIT


def test_no_output_channel_can_be_injected(platform):
    """validate, plan, show and apply, in text, github and markdown, over inputs whose
    echoed fields carry newlines with ``::`` commands, ``%0A``, ``##[``, HTML, links,
    mentions, backticks and rich markup: no line a runner would take as a command,
    no raw HTML, link or mention in the comment, and the hostile text still shown
    (escaped, not dropped)."""
    _hostile_platform(platform)
    _applied(platform)
    _hostile_diff(platform)
    seen = ""
    for fmt in ("text", "github"):
        result = cli("validate", "examples", "--format", fmt)
        _check("validate", fmt, result)
        seen += result.stdout
    for fmt in ("text", "github", "markdown"):
        result = cli("plan", "examples", "--format", fmt, "--out", f"plan-{fmt}.json")
        _check("plan", fmt, result)
        seen += result.stdout
    assert "<img src=x" in seen and "#\\x23[warning]" in seen and "s3cret" in seen   # shown, escaped

    saved = json.loads(Path("plan-text.json").read_text(encoding="utf-8"))
    Path("hostile-plan.json").write_text(json.dumps(_hostile_plan(saved)), encoding="utf-8")
    for fmt in ("text", "markdown", "json"):
        result = cli("show", "hostile-plan.json", "--format", fmt)
        assert result.exit_code == 0, result.stderr
        _check("show", fmt, result)
    assert "[/bold]" in cli("show", "hostile-plan.json").stdout   # shown, not read as markup

    for fmt in ("text", "github"):
        result = cli("apply", "examples", "--output-dir", "deploy", "--format", fmt)
        _check("apply", fmt, result)
        result = cli("apply", "examples", "--output-dir", "deploy", "--format", fmt, "--check")
        _check("apply --check", fmt, result)


def test_rich_markup_in_a_plan_neither_crashes_nor_styles(platform):
    assert cli("plan", "examples", "--out", "plan.json").exit_code == 0
    saved = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    saved["inputs_digest"] = "[/bold][red]sha256"
    saved["requests"][0]["id"] = "\n::error::x [/]"
    Path("plan.json").write_text(json.dumps(saved), encoding="utf-8")
    result = cli("show", "plan.json")
    assert result.exit_code == 0 and "[/bold][red]sha256" in result.stdout
    assert runner_commands(result.stdout) == []


# --- show reads a plan through its typed model -------------------------------------------------

@pytest.fixture
def saved_plan(platform) -> dict:
    assert cli("plan", "examples", "--out", "plan.json").exit_code == 0
    return json.loads(Path("plan.json").read_text(encoding="utf-8"))


def _show(data: object, *formats: str, raw: str | None = None) -> list:
    Path("bad.json").write_text(raw if raw is not None else json.dumps(data), encoding="utf-8")
    return [cli("show", "bad.json", "--format", fmt) for fmt in formats or ("text", "markdown", "json")]


@pytest.mark.parametrize("change, says", [
    (lambda p: p.update(changes={"files": [{"path": 3}]}), "changes.files[0]"),
    (lambda p: p.update(changes={"allocations": {"added": "all"}}), "changes.allocations"),
    (lambda p: p.update(changes=[1, 2]), "'changes' must be dict"),
    (lambda p: p["pools"][0]["used"].update(gpu=10**25), "out of range"),
    (lambda p: p["solver"].update(objective=[1.5]), "objective"),
    (lambda p: p["requests"][0].update(status="running"), "status 'running'"),
])
def test_a_malformed_plan_is_refused_by_show_and_apply_alike(saved_plan, change, says):
    change(saved_plan)
    for result in _show(saved_plan):
        assert result.exit_code == 1 and says in result.stderr, result.stderr
    applied = cli("apply", "examples", "--output-dir", "deploy", "--plan", "bad.json")
    assert applied.exit_code == 1 and says in applied.stderr


@pytest.mark.parametrize("change, bad", [
    (lambda p: p["requests"][1].update(status="running"), '"running"'),
    (lambda p: p["pools"][0]["capacity"].update(gpu="8"), '"8"'),
    (lambda p: p.update(format_version=2), "2"),
    (lambda p: p["solver"].pop("status"), '"solver"'),      # a missing field: at its parent's key
])
def test_a_malformed_plan_file_is_refused_at_its_line_and_column(saved_plan, change, bad):
    """Like a YAML file's diagnostics: show, apply --plan and plan --base name the plan
    file's line and column of what is wrong."""
    change(saved_plan)
    text = json.dumps(saved_plan, indent=2, sort_keys=True)
    [shown] = _show(None, "text", raw=text)
    applied = cli("apply", "examples", "--output-dir", "deploy", "--plan", "bad.json")
    based = cli("plan", "examples", "--base", "bad.json")
    where = re.search(r"bad\.json:(\d+):(\d+): not a poolc plan file", shown.stderr)
    assert where, shown.stderr
    line, column = int(where[1]), int(where[2])
    assert text.splitlines()[line - 1][column - 1:].startswith(bad)
    assert f"bad.json:{line}:{column}: not a poolc plan file" in applied.stderr
    assert f"the base plan bad.json:{line}:{column}: not a poolc plan file" in based.stderr or \
        "has plan format version 2" in based.stderr


@pytest.mark.parametrize("literal", ["1" + "0" * 400, "1e400", "NaN", "-Infinity"])
def test_a_gap_that_is_no_finite_number_is_refused(saved_plan, literal):
    text = json.dumps(saved_plan).replace('"gap": ', f'"gap": {literal}, "was": ', 1)
    for result in _show(None, raw=text):
        assert result.exit_code == 1 and "internal error" not in result.stderr, result.stderr


def test_a_huge_used_value_is_refused_not_a_crash(saved_plan):
    text = json.dumps(saved_plan).replace('"used": {', '"used": {"huge": ' + "9" * 400 + ", ", 1)
    for result in _show(None, raw=text):
        assert result.exit_code == 1 and "internal error" not in result.stderr


def test_a_million_character_status_keeps_the_comment_under_githubs_limit(saved_plan):
    saved_plan["solver"]["status"] = "s" * 1_000_000
    saved_plan["requests"][0]["message"] = "m" * 1_000_000
    saved_plan["pools"][0]["name"] = "p" * 1_000_000
    text, markdown, _ = _show(saved_plan)
    assert markdown.exit_code == 0 and len(markdown.stdout) < LIMIT
    assert text.exit_code == 0 and max(len(line) for line in text.stdout.splitlines()) < 10_000


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                  max_size=4), max_leaves=12)


def _paths(value: object, here: tuple = ()) -> list[tuple]:
    found = [here]
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, (*here, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _paths(v, (*here, i))
    return found


def _replaced(value: object, path: tuple, new: object) -> object:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replaced(value[head], rest, new)}
    assert isinstance(value, list)
    return [_replaced(v, rest, new) if i == head else v for i, v in enumerate(value)]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=st.data())
def test_show_never_crashes_on_a_malformed_plan(saved_plan, data):
    """Any part of a real plan replaced by any JSON value: `show` prints the plan or
    says what is wrong (exit 0 or 1), never an internal error (exit 3), and the
    comment stays under GitHub's limit."""
    plan = saved_plan
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(plan)))
        plan = _replaced(plan, path, data.draw(JSON))
    for result in _show(plan):
        assert result.exit_code in (0, 1), result.stderr
        assert "internal error" not in result.stderr
    markdown = _show(plan, "markdown")[0]
    assert markdown.exit_code == 1 or len(markdown.stdout) < LIMIT


# --- lost writes --------------------------------------------------------------------------------

def _kill_point(root: Path, label: str) -> int:
    """The number of the disk change ``label`` in an apply of ``root`` (run on a copy)."""
    copy = root.parent / f"{root.name}-traced"
    shutil.copytree(root, copy)
    trace = copy / "trace"
    done = subprocess.run([*CLI, "apply", "examples", "--output-dir", "deploy", "-q"], cwd=copy, timeout=300,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO),
                                                    "POOLC_TEST_TRACE": str(trace)})
    assert done.returncode == 0, done.stderr
    points = [line.split(" ", 1) for line in trace.read_text(encoding="utf-8").splitlines()]
    return next(int(n) for n, what in points if what == label)


def test_a_state_rm_after_a_killed_apply_is_not_undone_by_the_recovery(platform):
    """apply killed past its commit point, before the state's rename; `state rm` then
    releases a step (it takes the lock, not the journal); the next apply's recovery
    completes the files but must not put the released step back."""
    _applied(platform)
    before = json.loads(Path("poolc.state.json").read_text(encoding="utf-8"))
    released = before["allocations"][0]["metadata"]["name"]
    training = platform / "examples" / "pipelines" / "prod-training.yaml"
    training.write_text(training.read_text().replace("      cpu_count: 4\n", "      cpu_count: 6\n", 1))
    point = _kill_point(platform, "rename poolc.state.json")
    killed = subprocess.run([*CLI, "apply", "examples", "--output-dir", "deploy", "-q"], cwd=platform, timeout=300,
                            capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO),
                                                      "POOLC_TEST_KILL_AT": str(point)})
    assert killed.returncode == -signal.SIGKILL
    assert Path("poolc.state.json.journal").exists()

    rm = cli("state", "rm", released)
    assert rm.exit_code == 0 and f"released: {released}" in rm.stdout
    assert cli("apply", "examples", "--output-dir", "deploy").exit_code == 0
    after = json.loads(Path("poolc.state.json").read_text(encoding="utf-8"))
    assert released not in [a["metadata"]["name"] for a in after["allocations"]]
    assert before["allocations"][0]["metadata"]["labels"]["poolc.dev/step"] in after.get("finished", {})
    assert not Path("poolc.state.json.journal").exists()


KILL_AT_RENAME = ("import os, signal\n"
                  "os.replace = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
                  "from poolc.cli import main\nmain()\n")


def _temps(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if "poolc-" in p.name and p.name.endswith(".tmp"))


def test_temps_of_a_state_rm_killed_at_its_rename_are_removed_by_the_next_run(platform):
    _applied(platform)
    names = [a["metadata"]["name"] for a in json.loads(Path("poolc.state.json").read_text())["allocations"]]
    killed = subprocess.run([sys.executable, "-c", KILL_AT_RENAME, "state", "rm", names[0]], cwd=platform,
                            capture_output=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert killed.returncode == -signal.SIGKILL and len(_temps(platform)) == 1
    assert cli("state", "rm", names[1]).exit_code == 0
    assert _temps(platform) == []


def test_temps_of_a_plan_out_killed_at_its_rename_are_removed_by_the_next_run(platform):
    killed = subprocess.run([sys.executable, "-c", KILL_AT_RENAME, "plan", "examples", "--out", "plan.json"],
                            cwd=platform, capture_output=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert killed.returncode == -signal.SIGKILL and len(_temps(platform)) == 1
    assert cli("plan", "examples", "--out", "plan.json").exit_code == 0
    assert _temps(platform) == [] and Path("plan.json").is_file()


def test_an_apply_removes_the_temps_a_killed_state_write_left(platform):
    _applied(platform)
    names = [a["metadata"]["name"] for a in json.loads(Path("poolc.state.json").read_text())["allocations"]]
    subprocess.run([sys.executable, "-c", KILL_AT_RENAME, "state", "rm", names[0]], cwd=platform,
                   capture_output=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert len(_temps(platform)) == 1
    assert cli("apply", "examples", "--output-dir", "deploy").exit_code == 0
    assert _temps(platform) == []


# --- bounded reads ------------------------------------------------------------------------------

def test_a_kueue_report_that_is_a_fifo_is_refused_not_waited_on(platform):
    _applied(platform)
    os.mkfifo("workloads.json")
    done = poolc("state", "import", "examples", "--kueue", "workloads.json", cwd=platform, timeout=120)
    assert done.returncode == 1 and b"not a regular file" in done.stdout + done.stderr


def test_a_pyproject_that_is_a_fifo_does_not_hang(platform):
    os.mkfifo("pyproject.toml")
    done = poolc("validate", "examples", cwd=platform, timeout=60)
    assert done.returncode == 2 and b"not a regular file" in done.stderr and b"Traceback" not in done.stderr


def test_tool_poolc_spelt_as_a_key_of_tool_is_read(platform):
    Path("pyproject.toml").write_text('[tool]\npoolc = {disable = ["P006"]}\n', encoding="utf-8")
    result = cli("validate", "examples")
    assert result.exit_code == 0 and "P006" not in result.stdout
    Path("pyproject.toml").write_text('[tool]\npoolc = {disable = ["P999"]}\n', encoding="utf-8")
    assert cli("validate", "examples").exit_code == 2


@pytest.mark.parametrize("content, says", [
    (b'[tool.poolc]\ndisable = ["P006"] # \xff\n', b"not UTF-8"),
    (b"[tool.poolc]\ndisable = " + b"[" * 100_000 + b"]" * 100_000 + b"\n", b"nests too deeply"),
    (b"# poolc\n" + b"#" * (2 << 20) + b"\n", b"at most"),
])
def test_a_pyproject_that_cannot_be_read_is_a_diagnostic_never_ignored(platform, content, says):
    Path("pyproject.toml").write_bytes(content)
    done = poolc("validate", "examples", cwd=platform)
    assert done.returncode == 2 and says in done.stderr and b"internal error" not in done.stderr


def test_standard_input_holds_the_size_limit(platform):
    document = (REPO / "examples" / "stacks" / "prod-stack.yaml").read_bytes()
    big = document + b"\n# " + b"x" * (9 << 20) + b"\n"
    done = poolc("validate", "-", cwd=platform, stdin=big)
    assert done.returncode == 1 and b"Y007" in done.stdout


def test_standard_input_holds_the_document_limit(platform):
    stream = b"".join(b"---\napiVersion: poolc/v1\n" for _ in range(100_001))
    done = poolc("validate", "-", cwd=platform, stdin=stream, timeout=600)
    assert done.returncode == 1 and b"Y007" in done.stdout and b"100000" in done.stdout


@pytest.mark.parametrize("where, old", [
    ("examples/pipelines/prod-training.yaml", "memory: 256Gi"),
    ("examples/pools/cpu-batch.yaml", "memory: 1536GB"),
])
def test_a_5000_digit_quantity_is_a_diagnostic_in_validate_plan_and_apply(platform, where, old):
    path = Path(where)
    path.write_text(path.read_text().replace(old, "memory: " + "9" * 5000 + "Gi", 1), encoding="utf-8")
    for args in (("validate", "examples"), ("plan", "examples"), ("apply", "examples", "--output-dir", "deploy")):
        result = cli(*args)
        assert result.exit_code == 1 and "internal error" not in result.stderr, (args, result.stderr[-300:])
        assert "is not a quantity" in result.stdout + result.stderr
    assert not Path("deploy").exists()


def test_a_sagemaker_disk_beyond_the_apis_volume_size_is_an_error(platform):
    path = Path("examples/pipelines/llm-finetune.yaml")
    path.write_text(path.read_text().replace("disk: 100GB", "disk: 100000000000000000000GiB", 1), encoding="utf-8")
    result = cli("validate", "examples")
    assert result.exit_code == 1 and "R001" in result.stdout and "16,384 GB" in result.stdout
    assert cli("apply", "examples", "--output-dir", "deploy").exit_code == 1
    assert not Path("deploy").exists()
    path.write_text(path.read_text().replace("disk: 100000000000000000000GiB", "disk: 16384GB"), encoding="utf-8")
    assert cli("validate", "examples").exit_code == 0


def test_a_file_name_with_a_backslash_gets_a_sarif_uri_that_resolves(platform):
    odd = platform / "examples" / "pools" / "odd\\name #1.yaml"
    shutil.copy(platform / "examples" / "pools" / "datacenter-one.yaml", odd)
    (platform / "examples" / "pools" / "datacenter-one.yaml").unlink()
    log = json.loads(cli("validate", "examples", "--format", "sarif").stdout)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert uris and all((platform / unquote(uri)).is_file() for uri in uris), uris


def test_windows_paths_become_file_uris_of_that_file():
    assert artifact_location("C:\\repo\\pools\\a b.yaml", windows=True) == {"uri": "file:///C:/repo/pools/a%20b.yaml"}
    assert artifact_location("\\\\host\\share\\a.yaml", windows=True) == {"uri": "file://host/share/a.yaml"}
    assert artifact_location("pools\\a.yaml", windows=True) == {"uri": "pools/a.yaml", "uriBaseId": "%SRCROOT%"}
    assert artifact_location("pools\\a.yaml", windows=False) == {"uri": "pools%5Ca.yaml", "uriBaseId": "%SRCROOT%"}


def test_a_plan_file_over_its_bound_is_refused(platform, monkeypatch):
    import poolc.commands.apply

    assert cli("plan", "examples", "--out", "plan.json").exit_code == 0
    monkeypatch.setattr(poolc.commands.apply, "MAX_PLAN_BYTES", 1000)
    result = cli("show", "plan.json")
    assert result.exit_code == 1 and "at most 1000 bytes" in result.stderr


def test_the_lock_message_names_every_command_that_holds_it(platform):
    _applied(platform)
    with state_lock("poolc.state.json"):
        result = cli("apply", "examples", "--output-dir", "deploy")
    assert result.exit_code == 1 and "state rm" in result.stderr and "internal error" not in result.stderr
