"""`poolc validate` against fixture files, in the style of check-jsonschema and yamllint.

tests/fixtures/positive/*.yaml must validate clean (no errors, no warnings).
tests/fixtures/negative/*.yaml carry their expectation in a leading comment block:

    # expect: 14:9 error R004      one line per expected diagnostic (line:col severity rule)
    # context: platform            validate tests/fixtures/context/platform.yaml first
    # xfail: BUG ...               a known compiler bug; the test is xfail(strict=True)

and the test asserts the EXACT multiset of (file, line, column, severity, rule):
a missing, extra or misplaced diagnostic fails, and so does one that lands in a
context file. Hostile inputs that must not be committed (an 8 MiB file, bytes
that are not UTF-8) are generated in tmp_path by the cases at the bottom.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from poolc.commands.validate import validate_paths
from poolc.diagnostics import RULES
from poolc.load import MAX_FILE_BYTES

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
CONTEXT = FIXTURES / "context"

_EXPECT = re.compile(r"^# expect: (\d+):(\d+) (error|warning) ([A-Z]\d{3})\s*$")
_CONTEXT = re.compile(r"^# context: ([a-z0-9-]+)\s*$")
_XFAIL = re.compile(r"^# xfail: (BUG .+)$")

# (file, line, column, severity, rule); file is "" for the fixture itself.
Key = tuple[str, int, int, str, str]


@dataclass
class Header:
    expected: Counter = field(default_factory=Counter)
    contexts: list[Path] = field(default_factory=list)
    xfail: str | None = None


def read_header(path: Path) -> Header:
    """Parse the leading comment block. A line that starts like a directive but does
    not parse is an error, so a typo in an expectation can never pass silently."""
    header = Header()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        if line.startswith("# expect:"):
            match = _EXPECT.match(line)
            if not match:
                raise ValueError(f"{path}: malformed expectation {line!r}")
            header.expected[("", int(match[1]), int(match[2]), match[3], match[4])] += 1
        elif line.startswith("# context:"):
            match = _CONTEXT.match(line)
            if not match or not (CONTEXT / f"{match[1]}.yaml").is_file():
                raise ValueError(f"{path}: unknown context {line!r}")
            header.contexts.append(CONTEXT / f"{match[1]}.yaml")
        elif line.startswith("# xfail:"):
            match = _XFAIL.match(line)
            if not match:
                raise ValueError(f"{path}: an xfail line must say '# xfail: BUG <what and where>'")
            header.xfail = match[1]
    return header


def _as_given(path: Path) -> str:
    """The spelling validate_paths reports a file under (normalized, '/' separators)."""
    return os.path.normpath(str(path)).replace(os.sep, "/")


def actual_diagnostics(path: Path, contexts: list[Path]) -> Counter:
    result = validate_paths([_as_given(p) for p in [*contexts, path]])
    own = _as_given(path)
    return Counter((("" if d.file == own else d.file), d.line, d.column, d.severity, d.rule)
                   for d in result.diagnostics)


def mismatches(path: Path, expected: Counter, contexts: list[Path]) -> list[str]:
    """Human-readable differences between expected and actual diagnostics ([] = exact match)."""
    actual = actual_diagnostics(path, contexts)
    problems = []
    for key in sorted((expected - actual).elements()):
        problems.append(f"missing:    {_fmt(key)}")
    for key in sorted((actual - expected).elements()):
        problems.append(f"unexpected: {_fmt(key)}")
    return problems


def _fmt(key: Key) -> str:
    file, line, col, severity, rule = key
    return f"{file + ':' if file else ''}{line}:{col} {severity} {rule}"


def check_fixture(path: Path) -> list[str]:
    header = read_header(path)
    if path.parent.name == "negative" and not header.expected:
        return ["a negative fixture needs at least one '# expect:' line"]
    if path.parent.name == "positive" and header.expected:
        return ["a positive fixture must not expect diagnostics"]
    return mismatches(path, header.expected, header.contexts)


def _params(folder: str) -> list:
    params = []
    for path in sorted((FIXTURES / folder).glob("*.yaml")):
        reason = read_header(path).xfail
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(path, id=path.stem, marks=marks))
    return params


# --- committed fixtures ----------------------------------------------------------

def test_context_files_are_clean():
    """Context must add nothing: every diagnostic of a fixture run is then the fixture's."""
    result = validate_paths([_as_given(CONTEXT)])
    assert result.diagnostics == []
    assert len(result.config.pools) >= 1 and len(result.config.stacks) >= 1


@pytest.mark.parametrize("path", _params("positive"))
def test_positive_fixture(path: Path):
    assert check_fixture(path) == []


@pytest.mark.parametrize("path", _params("negative"))
def test_negative_fixture(path: Path):
    assert check_fixture(path) == []


def test_positive_fixtures_together_with_context():
    """Cross-file rules (unique names, reserved sums) hold for the whole positive set."""
    known_bad = {p for p in (FIXTURES / "positive").glob("*.yaml") if read_header(p).xfail}
    files = [_as_given(p) for p in sorted((FIXTURES / "positive").glob("*.yaml")) if p not in known_bad]
    result = validate_paths([_as_given(CONTEXT), *files])
    assert [d.as_text() for d in result.diagnostics] == []


def test_examples_have_no_errors():
    result = validate_paths([_as_given(REPO / "examples")])
    assert result.ok, [d.as_text() for d in result.diagnostics]
    assert {d.rule for d in result.diagnostics} <= {"P006"}


def _message_params() -> list:
    params = []
    for path in sorted((FIXTURES / "negative").glob("*.yaml")):
        params.append(pytest.param(path, id=path.stem))
    return params


@pytest.mark.parametrize("path", _message_params())
def test_messages_read_as_one_clean_sentence(path: Path):
    """One sentence per diagnostic (docs/cli.md#diagnostics): no line breaks, no doubled quotes, no 'None'."""
    header = read_header(path)
    for diag in validate_paths([_as_given(p) for p in [*header.contexts, path]]).diagnostics:
        message = diag.message
        assert message == message.strip() and "\n" not in message, message
        assert "''" not in message and "None" not in message, message
        assert len(message) >= 20, message


# --- the harness itself must be able to fail -------------------------------------

def _copy_fixture_tree(tmp_path: Path) -> Path:
    root = tmp_path / "fixtures"
    shutil.copytree(FIXTURES / "context", root / "context")
    shutil.copytree(FIXTURES / "negative", root / "negative")
    return root


def _check_tree(root: Path) -> dict[str, list[str]]:
    """Run the same comparison over a copied fixture dir; {stem: problems} of failing files."""
    failing = {}
    for path in sorted((root / "negative").glob("*.yaml")):
        header = read_header(path)
        if header.xfail:
            continue
        contexts = [root / "context" / c.name for c in header.contexts]
        problems = (["no expectation"] if not header.expected
                    else mismatches(path, header.expected, contexts))
        if problems:
            failing[path.stem] = problems
    return failing


def test_harness_passes_on_an_unchanged_copy(tmp_path: Path):
    assert _check_tree(_copy_fixture_tree(tmp_path)) == {}


def test_harness_fails_when_one_expectation_is_missing(tmp_path: Path):
    root = _copy_fixture_tree(tmp_path)
    victim = root / "negative" / "p003-above-capacity.yaml"
    lines = victim.read_text(encoding="utf-8").splitlines(keepends=True)
    dropped = next(i for i, line in enumerate(lines) if line.startswith("# expect: 26:10"))
    # Keep line numbers: replace the expectation by a plain comment line.
    lines[dropped] = "# (expectation removed)\n"
    victim.write_text("".join(lines), encoding="utf-8")
    assert _check_tree(root) == {"p003-above-capacity": ["unexpected: 26:10 error P003"]}


def test_harness_fails_on_a_wrong_column_or_severity(tmp_path: Path):
    root = _copy_fixture_tree(tmp_path)
    victim = root / "negative" / "r004-non-preemptible.yaml"
    text = victim.read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if x.startswith("# expect:"))
    line_no, col = _EXPECT.match(line).group(1, 2)
    victim.write_text(text.replace(line, f"# expect: {line_no}:{int(col) + 1} warning R004"), encoding="utf-8")
    assert _check_tree(root) == {"r004-non-preemptible": [
        f"missing:    {line_no}:{int(col) + 1} warning R004",
        f"unexpected: {line_no}:{col} error R004"]}


def test_harness_rejects_malformed_expectations(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("# expect: 3 error R004\napiVersion: poolc/v1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="malformed expectation"):
        read_header(bad)


def test_harness_counts_duplicates(tmp_path: Path):
    """Two identical (line, col, rule) diagnostics need two expectation lines."""
    path = FIXTURES / "negative" / "r001-zero-memory.yaml"
    header = read_header(path)
    assert mismatches(path, header.expected, header.contexts) == []
    doubled = header.expected + Counter({next(iter(header.expected)): 1})
    assert mismatches(path, doubled, header.contexts) != []


# --- generated hostile input (not committed) -------------------------------------

HEAD = "apiVersion: poolc/v1\nkind: ResourcePool\nmetadata: {name: generated}\nspec:\n  capacity: {gpu: 1}\n"


@dataclass(frozen=True)
class Generated:
    """A file written in tmp_path as bytes, and the diagnostics it must produce."""

    name: str
    make: Callable[[], bytes]
    expected: tuple[tuple[int, int, str, str], ...]
    xfail: str | None = None


def _too_large() -> bytes:
    body = HEAD.encode()
    padding = b"# " + b"x" * 1022 + b"\n"
    return body + padding * (MAX_FILE_BYTES // len(padding) + 1)


def _exactly_max() -> bytes:
    body = HEAD.encode()
    return body + b"#" * (MAX_FILE_BYTES - len(body) - 1) + b"\n"


GENERATED = [
    Generated("over-8-mib", _too_large, ((1, 1, "error", "Y007"),)),
    Generated("exactly-8-mib", _exactly_max, ()),
    Generated("latin-1-byte", lambda: HEAD.replace("generated", "caf\xe9").encode("latin-1"),
              ((3, 21, "error", "Y001"),)),
    Generated("invalid-utf8-later-line", lambda: HEAD.encode() + b"  # \x80\x81 stray bytes\n",
              ((6, 5, "error", "Y001"),)),
    Generated("utf-16-le-bom", lambda: HEAD.encode("utf-16"), ((1, 1, "error", "Y001"),)),
    Generated("utf-16-be-bom", lambda: b"\xfe\xff" + HEAD.encode("utf-16-be"), ((1, 1, "error", "Y001"),)),
    Generated("utf-8-bom", lambda: b"\xef\xbb\xbf" + HEAD.encode(), ()),
    Generated("crlf-line-ends", lambda: HEAD.replace("\n", "\r\n").encode()
              + b"  capacty: {}\r\n", ((6, 3, "error", "S001"),)),
    # NUL bytes are valid UTF-8: without a BOM, UTF-16 must be recognised another way.
    Generated("utf-16-le-without-bom", lambda: HEAD.encode("utf-16-le"), ((1, 1, "error", "Y001"),)),
    Generated("utf-16-be-without-bom", lambda: HEAD.encode("utf-16-be"), ((1, 1, "error", "Y001"),)),
    Generated("nul-byte", lambda: HEAD.encode() + b"  x: \x00\n", ((6, 6, "error", "Y002"),)),
    Generated("bell-in-a-quoted-string", lambda: HEAD.replace("generated", "'gen\x07'").encode(),
              ((3, 22, "error", "Y002"),)),
]


def _generated_params() -> list:
    return [pytest.param(case, id=case.name,
                         marks=[pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else [])
            for case in GENERATED]


@pytest.mark.parametrize("case", _generated_params())
def test_generated_hostile_file(case: Generated, tmp_path: Path):
    path = tmp_path / f"{case.name}.yaml"
    path.write_bytes(case.make())
    expected = Counter(("", *key) for key in case.expected)
    assert mismatches(path, expected, []) == []


def test_file_over_the_limit_is_not_read(tmp_path: Path):
    """The size guard runs before reading: a sparse 64 GiB file is refused at once."""
    path = tmp_path / "sparse.yaml"
    with open(path, "wb") as handle:
        handle.truncate(64 * 1024**3)
    result = validate_paths([str(path)])
    assert [(d.rule, d.line, d.column) for d in result.diagnostics] == [("Y007", 1, 1)]


def test_missing_path_is_y001(tmp_path: Path):
    missing = _as_given(tmp_path / "nope.yaml")
    result = validate_paths([missing])
    assert [(d.file, d.rule, d.severity) for d in result.diagnostics] == [(missing, "Y001", "error")]


@pytest.mark.parametrize("opener, closer", [("[", "]"), ("{a: ", "}")])
def test_deep_flow_nesting_does_not_crash_the_process(tmp_path: Path, opener: str, closer: str):
    """Run in a subprocess: the failure mode was a dead interpreter (SIGSEGV, C stack
    overflow in the composer at ~50,000 levels), not an exception."""
    path = tmp_path / "deep.yaml"
    depth = 1_000_000 if opener == "[" else 200_000
    path.write_text(HEAD + "x: " + opener * depth + closer * depth + "\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", "from poolc.cli import main; main()", "validate", str(path)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert (proc.returncode, proc.stdout.count("Y006")) == (1, 1), (proc.returncode, proc.stderr[-300:])
    assert f"{_as_given(path)}:6:{4 + 64 * len(opener)}:" in proc.stdout


def test_deep_nesting_in_foreign_yaml_is_skipped(tmp_path: Path):
    path = tmp_path / "foreign.yaml"
    path.write_text("note: poolc/ is mentioned\nx: " + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    assert validate_paths([str(path)]).diagnostics == []


def test_moderately_deep_nesting_is_y006(tmp_path: Path):
    """10,000 levels stay below the crash and are refused by the depth guard."""
    path = tmp_path / "deep.yaml"
    path.write_text(HEAD + "x: " + "[" * 10_000 + "]" * 10_000 + "\n", encoding="utf-8")
    expected = Counter({("", 6, 68, "error", "Y006"): 1})
    assert mismatches(path, expected, []) == []


# --- foreign YAML in a directory ---------------------------------------------------

FOREIGN = {
    "charts/app/templates/deployment.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ include \"app.fullname\" . }}\n"
        "  labels:\n    {{- include \"app.labels\" . | nindent 4 }}\nspec:\n"
        "  replicas: {{ .Values.replicaCount }}\n"),
    "cloudformation/bucket.yml": (
        "AWSTemplateFormatVersion: '2010-09-09'\nResources:\n  Bucket:\n    Type: AWS::S3::Bucket\n"
        "    Properties:\n      BucketName: !Ref Name\n      Arn: !GetAtt Bucket.Arn\n"),
    "k8s/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n",
    "notes/not-yaml.yaml": "{{{ this is not yaml at all ]]]\n\t\n",
    "README.md": "apiVersion: poolc/v1 - not a YAML file name, never read\n",
}


def test_foreign_yaml_in_a_directory_is_skipped_silently(tmp_path: Path):
    for rel, text in FOREIGN.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    (tmp_path / "pools").mkdir()
    (tmp_path / "pools" / "v9.yaml").write_text(HEAD.replace("poolc/v1", "poolc/v9"), encoding="utf-8")
    result = validate_paths([_as_given(tmp_path)])
    assert [(Path(d.file).relative_to(tmp_path).as_posix(), d.line, d.column, d.rule)
            for d in result.diagnostics] == [("pools/v9.yaml", 1, 13, "S004")]


def test_hidden_directories_are_not_searched(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "broken.yaml").write_text(HEAD + "  capacty: {}\n", encoding="utf-8")
    assert validate_paths([_as_given(tmp_path)]).diagnostics == []


# --- every rule that files can trigger is covered ------------------------------------

# Rules no file can trigger, with the reason (none so far).
NOT_FROM_FILES: dict[str, str] = {
    "T001": "found by the plan's runtime check, not by validate: tests/test_kueue_replay.py",
    "A003": "the plan against the state, not validate: tests/test_observe.py",
    "O001": "the cluster's reports, not the configuration: tests/test_observe_reports.py",
    "O002": "the cluster's reports, not the configuration: tests/test_observe.py",
    "O003": "the cluster's reports, not the configuration: tests/test_observe.py",
    "F001": "found by plan --forecast against its --horizon, not by validate: tests/test_forecast.py",
    "S007": "retired in v1.2 (ZenML 0.98 fields are accepted), never emitted",
    **{rule: "found in the Python or run-configuration file a Pipeline's spec.source names, which a YAML "
       "fixture cannot hold: tests/test_sources.py, tests/test_source_corpus.py, tests/test_source_paths.py"
       for rule in ("C001", "C002", "C003", "C004", "C005", "C006", "C007")},
}


def test_every_rule_has_a_fixture():
    covered = set()
    for path in (FIXTURES / "negative").glob("*.yaml"):
        header = read_header(path)
        if not header.xfail:
            covered |= {key[4] for key in header.expected}
    covered |= {key[3] for case in GENERATED if not case.xfail for key in case.expected}
    covered.add("Y001")  # test_missing_path_is_y001
    assert set(RULES) - set(NOT_FROM_FILES) - covered == set()
    assert covered - set(RULES) == set(), "a fixture expects a rule id that is not registered"


# --- hints and did-you-mean: the words, not only the position --------------------

HINTS = [
    ("s003-quantity-needs-unit", 25, 19, "16 needs a unit: write 16GB or 16Gi"),
    ("s003-quantity-needs-unit", 14, 13, "512 needs a unit: write 512GB or 512Gi"),
    ("s003-quantity-needs-unit", 27, 16, "1 needs a unit"),
    ("s003-bad-timestamp", 11, 21, "such as 2026-11-20T10:00:00Z"),
    ("s001-misplaced-resource-fields", 15, 7, "belongs in spec.steps.train.settings.resources.preemptible"),
    ("s001-misplaced-resource-fields", 20, 9, "belongs in spec.steps.evaluate.settings.resources.memory"),
    ("s001-misplaced-resource-fields", 23, 7, "belongs in spec.steps.package.settings.resources"),
    ("s003-mis-indented-settings", 13, 7, "probably mis-indented"),
    ("s004-kind-did-you-mean", 6, 7, "did you mean 'ResourcePool'?"),
    ("s004-kind-did-you-mean", 11, 7, "did you mean 'Pipeline'?"),
    ("n002-did-you-mean", 13, 9, "did you mean 'gpu-pool'?"),
    ("n002-did-you-mean", 14, 12, "did you mean 'team-k8s'?"),
    ("n002-did-you-mean", 20, 10, "did you mean 'team-stack'?"),
    ("n002-did-you-mean", 29, 9, "did you mean 'sm-quota'?"),
    ("n002-did-you-mean", 30, 12, "did you mean 'team-gpu-op'?"),
    ("n002-did-you-mean", 39, 22, "did you mean 'team-gpu-op'?"),
    # cascades: the one real error, at its own line:col (the header expects nothing else)
    ("s006-broken-pool-no-cascade", 12, 5, "give either cpu or mcpu, not both"),
    ("n002-broken-stack-no-cascade", 11, 13, "flavor 'kubernets' cannot be used here"),
]


@pytest.mark.parametrize("stem, line, column, words", HINTS, ids=[f"{s}:{n}:{c}" for s, n, c, _ in HINTS])
def test_hint_message(stem: str, line: int, column: int, words: str):
    """The hint is on the diagnostic at that exact line:col (the fixture's header
    expects it there too)."""
    path = FIXTURES / "negative" / f"{stem}.yaml"
    header = read_header(path)
    assert any(key[1:3] == (line, column) for key in header.expected), "the fixture must expect it here"
    result = validate_paths([_as_given(p) for p in [*header.contexts, path]])
    messages = [d.message for d in result.diagnostics
                if (d.line, d.column) == (line, column) and d.file == _as_given(path)]
    assert any(words in m for m in messages), messages
    assert not any("must be a string" in m or "[0-9]{4}" in m for m in messages), messages


def test_kind_suggestion_rule():
    from poolc.schema import closest_kind

    assert [closest_kind(k) for k in ("Pool", "pool", "Pipline", "Stacks", "Alloc", "Polcy", "Quota")] == [
        "ResourcePool", "ResourcePool", "Pipeline", "Stack", "Allocation", "Policy", None]


CASCADE_POOL = """apiVersion: poolc/v1
kind: ResourcePool
metadata:
  name: onprem-gpus
spec:
  capacity:
    gpu: 16
    cpu: 512
    mcpu: 512000
    step_run: 24
"""


def test_broken_pool_causes_no_cascade_across_files(tmp_path: Path):
    """The issue's case: one bad pool line, policies and allocations on that pool in
    other files: exactly one diagnostic, the pool's own S006."""
    shutil.copytree(REPO / "examples", tmp_path / "repo")
    root = tmp_path / "repo"
    for path in root.rglob("*.yaml"):
        path.write_text(path.read_text(encoding="utf-8").replace("datacenter-one", "onprem-gpus"), encoding="utf-8")
    (root / "pools" / "datacenter-one.yaml").write_text(CASCADE_POOL, encoding="utf-8")
    result = validate_paths([_as_given(root)])
    assert [(d.file, d.line, d.column, d.rule) for d in result.diagnostics] == [
        (_as_given(root / "pools" / "datacenter-one.yaml"), 8, 5, "S006")]
    assert any("onprem-gpus" in p.read_text(encoding="utf-8") for p in (root / "policies").glob("*.yaml"))
    assert any("onprem-gpus" in p.read_text(encoding="utf-8") for p in (root / "state").glob("*.yaml"))
