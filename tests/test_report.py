"""The four diagnostic reporters: exact bytes for a small set, escaping, and valid empty output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from poolc import __version__
from poolc.diagnostics import Diagnostic
from poolc.report import FORMATS, render, summary
from poolc.report.github import escape_data, escape_property
from poolc.report.sarif import artifact_location

REPO = Path(__file__).resolve().parent.parent
SARIF_ORACLES = REPO / ".." / "shared" / "oracles" / "sarif"

R004_MSG = "step 'train_model' asks gpu=4, but policy 'prod' reserves only gpu=2"
S001_MSG = "unknown field 'nmae'; did you mean 'name'?"
P006_MSG = "key 'fpga' is not enforced by Kueue"

# Deliberately out of order: every format must sort by (file, line, column, rule, message).
DIAGS = [
    Diagnostic("pools/dc1.yaml", 3, 5, 3, 12, "P006", "warning", P006_MSG),
    Diagnostic("pipelines/train.yaml", 14, 9, 14, 20, "R004", "error", R004_MSG),
    Diagnostic("pipelines/train.yaml", 2, 1, 2, 5, "S001", "error", S001_MSG),
]


def sarif_schema() -> dict | None:
    found = sorted(SARIF_ORACLES.glob("*.json")) if SARIF_ORACLES.is_dir() else []
    return json.loads(found[0].read_text(encoding="utf-8")) if found else None


def validate_sarif(text: str) -> dict:
    schema = sarif_schema()
    if schema is None:
        pytest.skip(f"OASIS SARIF 2.1.0 schema not found in {SARIF_ORACLES.resolve()}")
    log = json.loads(text)
    validator_cls = jsonschema.validators.validator_for(schema)
    validator_cls.check_schema(schema)
    validator_cls(schema, format_checker=validator_cls.FORMAT_CHECKER).validate(log)
    return log


def test_formats_registry_names_the_four_formats():
    assert sorted(FORMATS) == ["github", "json", "sarif", "text"]
    for name, renderer in FORMATS.items():
        assert renderer(DIAGS) == render(name, DIAGS)


def test_unknown_format_is_a_value_error():
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        render("xml", DIAGS)


def test_importing_the_package_does_not_import_the_formats():
    code = (
        "import sys, poolc.report\n"
        "print(sorted(m for m in sys.modules if m.startswith('poolc.report.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_text_is_sorted_compiler_style_lines():
    assert render("text", DIAGS) == (
        f"pipelines/train.yaml:2:1: error[S001] {S001_MSG}\n"
        f"pipelines/train.yaml:14:9: error[R004] {R004_MSG}\n"
        f"pools/dc1.yaml:3:5: warning[P006] {P006_MSG}\n"
    )


def test_text_breaks_ties_on_rule_then_message():
    same_spot = [
        Diagnostic("a.yaml", 1, 1, 1, 2, "S002", "error", "b"),
        Diagnostic("a.yaml", 1, 1, 1, 2, "S001", "error", "z"),
        Diagnostic("a.yaml", 1, 1, 1, 2, "S002", "error", "a"),
    ]
    assert render("text", same_spot) == (
        "a.yaml:1:1: error[S001] z\na.yaml:1:1: error[S002] a\na.yaml:1:1: error[S002] b\n"
    )


def test_summary_counts_errors_warnings_and_files():
    assert summary(DIAGS) == "2 errors, 1 warning in 2 files"
    assert summary(DIAGS[:1]) == "0 errors, 1 warning in 1 file"
    assert summary([]) == ""


def test_json_exact():
    assert render("json", DIAGS) == (
        "{\n"
        '  "diagnostics": [\n'
        "    {\n"
        '      "column": 1,\n'
        '      "end_column": 5,\n'
        '      "end_line": 2,\n'
        '      "file": "pipelines/train.yaml",\n'
        '      "line": 2,\n'
        f'      "message": {json.dumps(S001_MSG)},\n'
        '      "rule": "S001",\n'
        '      "severity": "error"\n'
        "    },\n"
        "    {\n"
        '      "column": 9,\n'
        '      "end_column": 20,\n'
        '      "end_line": 14,\n'
        '      "file": "pipelines/train.yaml",\n'
        '      "line": 14,\n'
        f'      "message": {json.dumps(R004_MSG)},\n'
        '      "rule": "R004",\n'
        '      "severity": "error"\n'
        "    },\n"
        "    {\n"
        '      "column": 5,\n'
        '      "end_column": 12,\n'
        '      "end_line": 3,\n'
        '      "file": "pools/dc1.yaml",\n'
        '      "line": 3,\n'
        f'      "message": {json.dumps(P006_MSG)},\n'
        '      "rule": "P006",\n'
        '      "severity": "warning"\n'
        "    }\n"
        "  ]\n"
        "}\n"
    )


def test_json_is_the_same_whatever_the_input_order():
    assert render("json", DIAGS) == render("json", list(reversed(DIAGS)))


def test_github_exact():
    assert render("github", DIAGS) == (
        "::error file=pipelines/train.yaml,line=2,col=1,endLine=2,endColumn=5,title=S001::" + S001_MSG + "\n"
        "::error file=pipelines/train.yaml,line=14,col=9,endLine=14,endColumn=20,title=R004::" + R004_MSG + "\n"
        "::warning file=pools/dc1.yaml,line=3,col=5,endLine=3,endColumn=12,title=P006::" + P006_MSG + "\n"
    )


def test_github_escapes_properties_and_message():
    nasty = Diagnostic("dir,1/a:b%.yaml", 4, 2, 4, 3, "S003", "error", "50% of gpu: 2, ok\nsecond line\r")
    assert render("github", [nasty]) == (
        "::error file=dir%2C1/a%3Ab%25.yaml,line=4,col=2,endLine=4,endColumn=3,title=S003"
        "::50%25 of gpu: 2, ok%0Asecond line%0D\n"
    )


def test_github_escape_order_does_not_double_escape():
    assert escape_data("%0A") == "%250A"
    assert escape_property("a:b,c%\r\n") == "a%3Ab%2Cc%25%0D%0A"


def test_sarif_exact_and_valid():
    log = validate_sarif(render("sarif", DIAGS))

    def result(rule, index, level, msg, start, end):
        return {
            "ruleId": rule,
            "ruleIndex": index,
            "level": level,
            "message": {"text": msg},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": start[0], "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": start[1], "startColumn": start[2], "endLine": end[0], "endColumn": end[1]},
            }}],
        }

    assert log == {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "poolc",
                "informationUri": "https://github.com/poolc/poolc",
                "version": __version__,
                "rules": [
                    {"id": "P006",
                     "shortDescription": {"text": "custom resource key is not enforced by Kueue at runtime"},
                     "defaultConfiguration": {"level": "warning"}},
                    {"id": "R004",
                     "shortDescription": {"text": "non-preemptible step asks more than every reserved share"},
                     "defaultConfiguration": {"level": "error"}},
                    {"id": "S001", "shortDescription": {"text": "unknown field"},
                     "defaultConfiguration": {"level": "error"}},
                ],
            }},
            "columnKind": "unicodeCodePoints",
            "results": [
                result("S001", 2, "error", S001_MSG, ("pipelines/train.yaml", 2, 1), (2, 5)),
                result("R004", 1, "error", R004_MSG, ("pipelines/train.yaml", 14, 9), (14, 20)),
                result("P006", 0, "warning", P006_MSG, ("pools/dc1.yaml", 3, 5), (3, 12)),
            ],
        }],
    }


def test_sarif_is_byte_identical_whatever_the_input_order():
    assert render("sarif", DIAGS) == render("sarif", list(reversed(DIAGS)))


def test_sarif_odd_paths_positions_and_unknown_rules_stay_valid():
    odd = [
        Diagnostic("./my dir\\ü.yaml", 0, 0, 0, 0, "Y001", "error", "file cannot be read"),
        Diagnostic("/abs/pools.yaml", 5, 7, 5, 3, "X999", "warning", "unregistered rule"),
    ]
    log = validate_sarif(render("sarif", odd))
    run = log["runs"][0]
    assert run["tool"]["driver"]["rules"][1] == {"id": "Y001", "shortDescription": {
        "text": "file cannot be read or is not valid UTF-8"}, "defaultConfiguration": {"level": "error"}}
    assert run["tool"]["driver"]["rules"][0] == {"id": "X999", "defaultConfiguration": {"level": "warning"}}
    locations = [r["locations"][0]["physicalLocation"] for r in run["results"]]
    # "./my dir..." sorts before "/abs/..." ('.' < '/').
    # on POSIX a backslash is part of the file's name, not a separator: the URI keeps it (escaped), so it
    # names the file that exists (test_untrusted covers a Windows path's separators)
    assert locations[0]["artifactLocation"] == {"uri": "my%20dir%5C%C3%BC.yaml", "uriBaseId": "%SRCROOT%"}
    assert locations[0]["region"] == {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1}
    assert locations[1]["artifactLocation"] == {"uri": "file:///abs/pools.yaml"}
    assert locations[1]["region"] == {"startLine": 5, "startColumn": 7, "endLine": 5, "endColumn": 7}


def test_artifact_location_of_windows_absolute_path():
    """On Windows a backslash separates directories; elsewhere it is part of a name."""
    assert artifact_location("C:\\repo\\a.yaml", windows=True) == {"uri": "file:///C:/repo/a.yaml"}
    assert artifact_location("C:\\repo\\a.yaml", windows=False) == {"uri": "C%3A%5Crepo%5Ca.yaml",
                                                                      "uriBaseId": "%SRCROOT%"}


def test_empty_text_and_github_render_nothing():
    assert render("text", []) == ""
    assert render("github", []) == ""


def test_empty_json():
    assert json.loads(render("json", [])) == {"diagnostics": []}
    assert render("json", []) == '{\n  "diagnostics": []\n}\n'


def test_empty_sarif_is_a_valid_run_without_results():
    log = validate_sarif(render("sarif", []))
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["tool"]["driver"]["rules"] == []
