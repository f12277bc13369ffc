"""A SARIF 2.1.0 log, the format code-scanning services (e.g. GitHub) ingest.

One run, one result per diagnostic, one rule descriptor per rule id used.
Nothing machine- or time-dependent goes in, so the same input gives the same bytes.
"""

from __future__ import annotations

import json
import os
from pathlib import PurePosixPath, PureWindowsPath
from urllib.parse import quote

from poolc import __version__
from poolc.diagnostics import RULES, Diagnostic
from poolc.report import ordered
from poolc.text.escape import json_text

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
# Where users learn about the tool; shown by SARIF viewers next to the tool name.
INFORMATION_URI = "https://github.com/poolc/poolc"
SRCROOT = "%SRCROOT%"


def artifact_location(file: str, windows: bool = os.sep == "\\") -> dict:
    """A relative path becomes a URI under %SRCROOT%, an absolute one a file: URI, each
    percent-encoded so that it names the very file: a backslash separates directories
    only where the platform says so (``windows``); elsewhere it is part of a file
    name. Windows paths: ``C:\\r\\p.yaml`` -> ``file:///C:/r/p.yaml``, a share
    ``\\\\host\\share\\p.yaml`` -> ``file://host/share/p.yaml``."""
    if windows:
        path = file.replace("\\", "/")
        if path.startswith("//") and not path.startswith("///"):          # \\host\share\...: the host is the authority
            host, _, rest = path[2:].partition("/")
            return {"uri": f"file://{quote(host, safe='')}/{quote(rest, safe='/')}"}
        if PureWindowsPath(file).is_absolute() or path.startswith("/"):
            drive = PureWindowsPath(file).drive
            rest = path[len(drive):] if drive else path
            return {"uri": "file:///" + (drive if drive else "") + quote(rest if drive else rest.lstrip("/"),
                                                                      safe="/")}
        if PureWindowsPath(file).drive:   # C:relative: relative to a drive's current directory, not to the root
            path = path[len(PureWindowsPath(file).drive):]
    else:
        path = file
        if PurePosixPath(path).is_absolute():
            return {"uri": "file://" + quote(path, safe="/")}
    while path.startswith("./"):
        path = path[2:]
    return {"uri": quote(path, safe="/"), "uriBaseId": SRCROOT}


def region(d: Diagnostic) -> dict:
    """SARIF's region is 1-based with an exclusive end column, like Diagnostic's.

    Positions are clamped so that a malformed diagnostic still yields a log the
    schema accepts and the end never lies before the start.
    """
    start_line, start_column = max(d.line, 1), max(d.column, 1)
    end_line = max(d.end_line, start_line)
    end_column = max(d.end_column, 1)
    if end_line == start_line:
        end_column = max(end_column, start_column)
    return {"startLine": start_line, "startColumn": start_column, "endLine": end_line, "endColumn": end_column}


def descriptor(rule_id: str, fallback_level: str) -> dict:
    rule = RULES.get(rule_id)
    if rule is None:  # not registered: still a valid descriptor, just without a summary
        return {"id": rule_id, "defaultConfiguration": {"level": fallback_level}}
    return {
        "id": rule_id,
        "shortDescription": {"text": rule.summary},
        "defaultConfiguration": {"level": rule.severity},
    }


def log(diagnostics: list[Diagnostic]) -> dict:
    items = ordered(diagnostics)
    levels: dict[str, str] = {}
    for d in items:
        levels.setdefault(d.rule, d.severity)
    rule_ids = sorted(levels)
    index = {rule_id: i for i, rule_id in enumerate(rule_ids)}
    results = [
        {
            "ruleId": d.rule,
            "ruleIndex": index[d.rule],
            "level": d.severity,
            "message": {"text": d.message},
            "locations": [
                {"physicalLocation": {"artifactLocation": artifact_location(d.file), "region": region(d)}}
            ],
        }
        for d in items
    ]
    driver = {
        "name": "poolc",
        "informationUri": INFORMATION_URI,
        "version": __version__,
        "rules": [descriptor(rule_id, levels[rule_id]) for rule_id in rule_ids],
    }
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        # Columns count characters (code points) of the decoded YAML, not UTF-16 units.
        "runs": [{"tool": {"driver": driver}, "columnKind": "unicodeCodePoints", "results": results}],
    }


def render(diagnostics: list[Diagnostic]) -> str:
    return json_text(json.dumps(log(diagnostics), indent=2, sort_keys=True) + "\n")
