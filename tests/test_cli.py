"""The `poolc validate` and `poolc schema` commands as a user runs them (docs/cli.md).

Exit codes, the four output formats, --quiet, missing paths, the import budget of
validate (no solver, no emitters, no schema generation) and the schema command.
Commands run in a subprocess through the installed entry point's code path.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from poolc import __version__
from poolc.schema import ANY_FILE, KIND_FILES

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
CONTEXT = str(FIXTURES / "context")
CLEAN = str(FIXTURES / "positive" / "pipeline-defaults.yaml")
WARNING_ONLY = str(FIXTURES / "negative" / "p006-custom-key.yaml")
ERRORS = str(FIXTURES / "negative" / "r003-too-big.yaml")          # 3 errors
MIXED = str(FIXTURES / "negative" / "k002-foreign-step-operator.yaml")  # 1 error, 1 warning
SARIF_SCHEMA = REPO.parent / "shared" / "oracles" / "sarif" / "sarif-schema-2.1.0.json"
DIAGNOSTIC_KEYS = {"file", "line", "column", "end_line", "end_column", "rule", "severity", "message"}
SUMMARY = re.compile(r"\d+ documents? in \d+ files?: \d+ errors?, \d+ warnings?; \d+ foreign documents? skipped")


def diagnostic_lines(stdout: str) -> list[str]:
    """The text format's diagnostic lines, without the source and caret lines under
    each (those start with a space: the line-number gutter)."""
    return [line for line in stdout.splitlines() if not line.startswith(" ")]


def poolc(*args: str, cwd: Path | str = REPO, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from poolc.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


# --- exit codes --------------------------------------------------------------------

def test_clean_exits_0_with_only_the_summary_line():
    proc = poolc("validate", CONTEXT, CLEAN)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == "7 documents in 2 files: 0 errors, 0 warnings; 0 foreign documents skipped\n"


def test_warnings_only_exit_0():
    proc = poolc("validate", WARNING_ONLY)
    assert proc.returncode == 0
    assert re.fullmatch(r".*p006-custom-key\.yaml:10:5: warning\[P006\] .+\n", proc.stdout.split("\n")[0] + "\n")
    assert proc.stderr.strip() == "1 document in 1 file: 0 errors, 1 warning; 0 foreign documents skipped"


def test_errors_exit_1_one_line_each():
    proc = poolc("validate", CONTEXT, ERRORS)
    assert proc.returncode == 1
    lines = diagnostic_lines(proc.stdout)
    assert len(lines) == 3 and all(re.match(r".+\.yaml:\d+:\d+: error\[R003\] .+", x) for x in lines)
    assert len(proc.stdout.splitlines()) == 9  # each with its source line and caret
    assert SUMMARY.fullmatch(proc.stderr.strip()) and ": 3 errors, 0 warnings;" in proc.stderr


def test_missing_path_exits_1_with_y001(tmp_path: Path):
    proc = poolc("validate", str(tmp_path / "nope.yaml"))
    assert proc.returncode == 1
    assert proc.stdout == f"{tmp_path}/nope.yaml:1:1: error[Y001] no such file or directory\n"  # no source: no caret


def test_default_path_is_the_current_directory(tmp_path: Path):
    (tmp_path / "pool.yaml").write_text("apiVersion: poolc/v1\nkind: ResourcePool\nmetadata: {name: x}\n"
                                        "spec:\n  capacty: {}\n", encoding="utf-8")
    proc = poolc("validate", cwd=tmp_path)
    assert proc.returncode == 1
    assert [line.split(" ")[0] for line in diagnostic_lines(proc.stdout)] == ["pool.yaml:4:1:", "pool.yaml:5:3:"]


def test_empty_directory_is_clean_but_says_it_read_nothing(tmp_path: Path):
    proc = poolc("validate", str(tmp_path))
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == "0 documents in 0 files: 0 errors, 0 warnings; 0 foreign documents skipped\n"


def test_output_is_deterministic():
    first, second = poolc("validate", REPO / "examples", CONTEXT, ERRORS, MIXED), \
        poolc("validate", REPO / "examples", CONTEXT, ERRORS, MIXED)
    assert first.stdout == second.stdout and first.stdout


# --- formats -----------------------------------------------------------------------

def test_json_format_shape():
    proc = poolc("validate", "--format", "json", CONTEXT, MIXED)
    assert proc.returncode == 1 and SUMMARY.fullmatch(proc.stderr.strip())
    report = json.loads(proc.stdout)
    assert list(report) == ["diagnostics"]
    diags = report["diagnostics"]
    assert [(d["rule"], d["severity"]) for d in diags] == [("R005", "warning"), ("K002", "error")]
    for diag in diags:
        assert set(diag) == DIAGNOSTIC_KEYS
        assert diag["file"] == MIXED.replace(os.sep, "/")
        assert all(isinstance(diag[k], int) and diag[k] >= 1 for k in ("line", "column", "end_line", "end_column"))


def test_json_format_when_clean():
    proc = poolc("validate", "--format", "json", CONTEXT, CLEAN)
    assert (proc.returncode, json.loads(proc.stdout)) == (0, {"diagnostics": []})


def test_github_format():
    proc = poolc("validate", "--format", "github", CONTEXT, MIXED)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    for line, (severity, rule) in zip(lines, [("warning", "R005"), ("error", "K002")], strict=True):
        match = re.fullmatch(r"::(error|warning) file=([^,]+),line=(\d+),col=(\d+),endLine=(\d+),"
                             r"endColumn=(\d+),title=([A-Z]\d{3})::(.+)", line)
        assert match, line
        assert (match[1], match[7]) == (severity, rule)
        assert match[2] == MIXED.replace(":", "%3A").replace(",", "%2C")


def test_sarif_format():
    proc = poolc("validate", "--format", "sarif", CONTEXT, MIXED)
    assert proc.returncode == 1
    log = json.loads(proc.stdout)
    assert log["version"] == "2.1.0"
    results = log["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [("R005", "warning"), ("K002", "error")]
    region = results[1]["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (34, 22)
    if SARIF_SCHEMA.is_file():
        import jsonschema

        jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_every_format_reports_the_same_findings(fmt: str):
    proc = poolc("validate", "--format", fmt, CONTEXT, ERRORS, MIXED)
    assert proc.returncode == 1
    assert len(re.findall(r"R003|K002|R005", proc.stdout)) >= 5


# --- --quiet -----------------------------------------------------------------------

def test_quiet_shows_errors_only_and_no_summary():
    proc = poolc("validate", "--quiet", CONTEXT, MIXED)
    assert proc.returncode == 1
    assert proc.stderr == ""
    assert [re.search(r"\[(\w+)\]", x)[1] for x in diagnostic_lines(proc.stdout)] == ["K002"]


def test_quiet_with_warnings_only_is_silent():
    proc = poolc("validate", "-q", WARNING_ONLY)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_quiet_json_keeps_the_shape():
    proc = poolc("validate", "-q", "--format", "json", CONTEXT, MIXED)
    assert [d["rule"] for d in json.loads(proc.stdout)["diagnostics"]] == ["K002"]


def test_no_color_is_accepted():
    assert poolc("validate", "--no-color", CONTEXT, CLEAN).returncode == 0


# --- internal errors ---------------------------------------------------------------

INJECT = ("import poolc.commands.validate as v\n"
          "def boom(paths, **options):\n    raise RuntimeError('injected fault')\n"
          "v.validate_paths = boom\n"
          "from poolc.cli import main\nmain()\n")


def test_internal_error_is_one_line_and_exit_3():
    """Fault injection: the guard must turn any exception into one line and exit 3."""
    proc = subprocess.run([sys.executable, "-c", INJECT, "validate", CONTEXT], capture_output=True, text=True,
                          timeout=60, cwd=REPO, env={k: v for k, v in os.environ.items() if k != "POOLC_DEBUG"})
    assert proc.returncode == 3
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "poolc: internal error: RuntimeError: injected fault (please report it; set POOLC_DEBUG=1 for a traceback)"]


def test_poolc_debug_shows_the_traceback():
    proc = subprocess.run([sys.executable, "-c", INJECT, "validate", CONTEXT], capture_output=True, text=True,
                          timeout=60, cwd=REPO, env={**os.environ, "POOLC_DEBUG": "1"})
    assert "Traceback" in proc.stderr and "RuntimeError: injected fault" in proc.stderr
    assert proc.returncode != 3


# --- what validate imports -----------------------------------------------------------

IMPORT_BUDGET = """
import sys
import pydantic
generated = []
original = pydantic.BaseModel.model_json_schema.__func__
def spy(cls, *args, **kwargs):
    generated.append(cls.__name__)
    return original(cls, *args, **kwargs)
pydantic.BaseModel.model_json_schema = classmethod(spy)

from poolc.cli import main
codes = []
for args in (["validate", "examples"], ["validate", "--format", "sarif", "tests/fixtures"],
             ["validate", "tests/fixtures/context", "tests/fixtures/negative/r006-no-instance-fits.yaml"]):
    try:
        main(args, standalone_mode=False)
    except SystemExit as exit:
        codes.append(exit.code)
assert codes == [0, 1, 1], codes
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("ortools", "pyscipopt", "rich")
               or m.startswith(("poolc.planner.optimal", "poolc.planner.mip", "poolc.planner.zenml",
                                "poolc.targets.kube", "poolc.targets.sagemaker", "poolc.commands.apply",
                                "poolc.state.records")))
assert heavy == [], heavy
assert generated == [], generated
print("ok")
"""


def test_validate_imports_no_solver_no_emitters_and_generates_no_schema():
    proc = subprocess.run([sys.executable, "-c", IMPORT_BUDGET], capture_output=True, text=True, timeout=120,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("ok")


ONE_FILE = """
import sys
from poolc.console import main
try:
    main(["validate", "examples/pools/cpu-batch.yaml"], standalone_mode=False)
except SystemExit as exit:
    assert exit.code == 0, exit.code
from poolc import model
built = sorted(name for name, cls in vars(model).items()
               if isinstance(cls, type) and issubclass(cls, model.BaseModel) and cls.__pydantic_complete__)
print(built)
print(sorted(m for m in sys.modules if m.startswith("poolc.domain.plan")))
"""


def test_a_one_file_validate_builds_only_its_kinds_models():
    """Start-up (#43): a pool file's validate builds the ResourcePool model's validator and no
    other kind's (pydantic's deferred build; no default value that builds one at import), and
    never imports the plan's modules (the command line's choices come from poolc.vocabulary)."""
    proc = subprocess.run([sys.executable, "-c", ONE_FILE], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    built, plan_modules = proc.stdout.splitlines()
    assert built == "['ResourcePool']"
    assert plan_modules == "[]"

# --- poolc schema ---------------------------------------------------------------------

def test_schema_without_kind_prints_valid_json():
    proc = poolc("schema")
    assert proc.returncode == 0
    json.loads(proc.stdout)


@pytest.mark.parametrize("kind", ["pipeline", "Pipeline", "resourcepool", "policy", "stack", "allocation", "poolc"])
def test_schema_of_one_kind(kind: str):
    proc = poolc("schema", kind)
    assert proc.returncode == 0
    name = f"{kind.lower()}.schema.json"
    assert json.loads(proc.stdout) == json.loads((REPO / "schemas" / name).read_text(encoding="utf-8"))
    assert proc.stdout == (REPO / "schemas" / name).read_text(encoding="utf-8")


def test_schema_unknown_kind_is_a_usage_error():
    proc = poolc("schema", "pipelines")
    assert proc.returncode == 2
    assert "unknown kind 'pipelines'" in proc.stderr and "Traceback" not in proc.stderr


def test_schema_output_dir_writes_every_file(tmp_path: Path):
    proc = poolc("schema", "--output-dir", str(tmp_path / "out"))
    assert proc.returncode == 0
    names = sorted([*KIND_FILES.values(), ANY_FILE])
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == names
    assert proc.stdout.splitlines() == [str(tmp_path / "out" / n) for n in names]
    for name in names:
        assert (tmp_path / "out" / name).read_bytes() == (REPO / "schemas" / name).read_bytes()


def test_version():
    proc = poolc("--version")
    assert proc.returncode == 0 and re.fullmatch(r"poolc, version \d+\.\d+\.\d+\S*\n", proc.stdout)


# --- the summary line, standard input, rule options (docs/cli.md#poolc-validate) ------

def test_helm_only_directory_says_nothing_was_ours(tmp_path: Path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "deployment.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n---\n"
        "apiVersion: v1\nkind: Service\nmetadata: {name: x}\n", encoding="utf-8")
    (tmp_path / "values.yaml").write_text("replicaCount: 1\n", encoding="utf-8")
    proc = poolc("validate", str(tmp_path))
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == "0 documents in 2 files: 0 errors, 0 warnings; 3 foreign documents skipped\n"


def test_summary_counts_foreign_documents_beside_ours(tmp_path: Path):
    (tmp_path / "mixed.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n"
        "apiVersion: poolc/v1\nkind: ResourcePool\nmetadata: {name: p}\nspec: {capacity: {gpu: 1}}\n",
        encoding="utf-8")
    proc = poolc("validate", str(tmp_path))
    assert proc.stderr == "1 document in 1 file: 0 errors, 0 warnings; 1 foreign document skipped\n"


def test_quiet_has_no_summary_line():
    assert poolc("validate", "-q", CONTEXT, CLEAN).stderr == ""


def _stdin(text: str, *args: str, cwd: Path | str = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from poolc.cli import main; main()", "validate", *args],
                          input=text, capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_dash_reads_standard_input():
    text = Path(MIXED).read_text(encoding="utf-8")
    proc = _stdin(text, CONTEXT, "-")
    assert proc.returncode == 1
    assert [line.split(" ")[0] for line in diagnostic_lines(proc.stdout)] == ["<stdin>:25:5:", "<stdin>:34:22:"]
    assert proc.stderr.startswith("9 documents in 2 files:")


def test_dash_with_nothing_of_ours_on_standard_input():
    proc = _stdin("just: yaml\n", "-")
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == "0 documents in 1 file: 0 errors, 0 warnings; 1 foreign document skipped\n"


def test_disable_drops_a_rule():
    proc = poolc("validate", "--disable", "P006", WARNING_ONLY)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert ": 0 errors, 0 warnings;" in proc.stderr
    proc = poolc("validate", "--disable", "R005", CONTEXT, MIXED)
    assert proc.returncode == 1 and "K002" in proc.stdout and "R005" not in proc.stdout


def test_disable_refuses_unknown_and_structural_rules():
    proc = poolc("validate", "--disable", "P999", WARNING_ONLY)
    assert proc.returncode == 2 and "unknown rule 'P999'" in proc.stderr and "Traceback" not in proc.stderr
    proc = poolc("validate", "--disable", "S001", WARNING_ONLY)
    assert proc.returncode == 2 and "cannot be disabled" in proc.stderr
    # #42: error rules neither (only warnings), from the command line or a pull request's pyproject
    proc = poolc("validate", "--disable", "k002", CONTEXT, MIXED)
    assert proc.returncode == 2 and "rule K002 is an error and cannot be disabled" in proc.stderr


def test_error_on_warning_shows_and_counts_warnings_as_errors():
    proc = poolc("validate", "--error-on-warning", WARNING_ONLY)
    assert proc.returncode == 1
    assert "error[P006]" in diagnostic_lines(proc.stdout)[0]
    assert ": 1 error, 0 warnings;" in proc.stderr
    proc = poolc("validate", "--error-on-warning", "--format", "json", WARNING_ONLY)
    assert json.loads(proc.stdout)["diagnostics"][0]["severity"] == "error"


def _project(tmp_path: Path, table: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'x'\n\n[tool.poolc]\n{table}", encoding="utf-8")
    (tmp_path / "config" / "pools").mkdir(parents=True)
    (tmp_path / "config" / "pools" / "p.yaml").write_text(Path(WARNING_ONLY).read_text(encoding="utf-8"),
                                                           encoding="utf-8")
    return tmp_path / "config"


def test_pyproject_tool_poolc_is_read_from_a_parent_directory(tmp_path: Path):
    cwd = _project(tmp_path, 'disable = ["P006"]\n')
    proc = poolc("validate", cwd=cwd)
    assert (proc.returncode, proc.stdout) == (0, "")
    cwd = _project(tmp_path / "b", "error-on-warning = true\n")
    proc = poolc("validate", cwd=cwd)
    assert proc.returncode == 1 and "error[P006]" in proc.stdout


def test_command_line_wins_over_pyproject(tmp_path: Path):
    cwd = _project(tmp_path, "error-on-warning = true\n")
    proc = poolc("validate", "--no-error-on-warning", cwd=cwd)
    assert proc.returncode == 0 and "warning[P006]" in proc.stdout


@pytest.mark.parametrize("table, words", [
    ('disable = "P006"\n', "must be a list"),
    ('disable = ["P06"]\n', "unknown rule 'P06'"),
    ("error-on-warning = 'yes'\n", "must be true or false"),
    ("colour = true\n", "unknown key 'colour'"),
    ("disable = [\n", "cannot read [tool.poolc]"),
])
def test_bad_pyproject_is_a_clear_error(tmp_path: Path, table: str, words: str):
    cwd = _project(tmp_path, table)
    proc = poolc("validate", cwd=cwd)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("poolc: ") and "pyproject.toml" in proc.stderr and words in proc.stderr


def test_caret_under_the_offending_value():
    proc = poolc("validate", CONTEXT, MIXED)
    lines = proc.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "error[K002]" in line)
    source, caret = lines[at + 1], lines[at + 2]
    assert re.fullmatch(r" +34 \| +step_operator: other-op", source), source
    assert caret.index("^") == source.index("other-op") and caret.endswith("^" + "~" * (len("other-op") - 1))


def test_severities_are_coloured_only_on_a_terminal():
    """--no-color is not decoration: on a terminal text diagnostics are coloured,
    with --no-color (or NO_COLOR, or a pipe) they are not."""
    from poolc.views.colour import coloured as _coloured

    line = "a.yaml:1:2: error[R001] too small\n   1 | x: error[R001]\n"
    coloured = _coloured(line)
    assert "\x1b[" in coloured and coloured.count("\x1b[1m") == 1   # the diagnostic line only, not the source
    assert "\x1b[" not in poolc("validate", CONTEXT, MIXED).stdout      # a pipe is no terminal


def _installed(*args: str, before: str = "") -> subprocess.CompletedProcess:
    """The installed `poolc` entry point (`run`), with ``before`` run first."""
    return subprocess.run([sys.executable, "-c", f"{before}from poolc.cli import run; run()", *args],
                          capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.parametrize(("path", "code"), [(CLEAN, 0), (ERRORS, 1)])
def test_the_installed_command_skips_the_teardown_but_not_the_exit_handlers(path, code):
    # `run` leaves with os._exit once main is done: the exit code, everything
    # printed and the atexit handlers (coverage, the benchmarks' own timers) must survive it
    out = _installed("validate", "--format", "json", CONTEXT, path,
                     before="import atexit; atexit.register(lambda: print('handler ran')); ")
    assert out.returncode == code
    report, _, last = out.stdout.rpartition("}")
    assert last.strip() == "handler ran"
    assert len(json.loads(report + "}")["diagnostics"]) == (0 if code == 0 else 3)
    assert "documents in" in out.stderr


def test_the_installed_command_exits_normally_under_a_profiler(tmp_path):
    # python -m cProfile writes its results after the program returns: os._exit would lose them
    stats = tmp_path / "poolc.prof"
    out = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(stats), "-m", "poolc.cli",
                          "validate", "--quiet", CONTEXT, CLEAN],
                         capture_output=True, text=True, timeout=120, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr
    assert stats.stat().st_size > 0


def test_the_installed_command_keeps_click_usage_errors_and_version():
    assert _installed("--version").stdout.strip() == "poolc, version " + __version__
    bad = _installed("validate", "--format", "yaml", CLEAN)
    assert bad.returncode == 2 and "Invalid value for '--format'" in bad.stderr


def test_a_run_collects_garbage_less_often():
    # a large plan's millions of long-lived objects are walked again by every
    # collection at the default threshold (700); the CLI raises it once per run
    out = subprocess.run(
        [sys.executable, "-c", "import atexit, gc; from poolc.cli import main, GC_YOUNG_THRESHOLD; "
         "atexit.register(lambda: print(gc.get_threshold() == (GC_YOUNG_THRESHOLD, 10, 10))); main()",
         "validate", "--quiet", CONTEXT, CLEAN],
        capture_output=True, text=True, timeout=120, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0 and out.stdout.strip().endswith("True")
