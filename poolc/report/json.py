"""``{"diagnostics": [...]}`` for tools that read poolc's findings.

ASCII-only with sorted keys, so the bytes are the same on every machine and locale.
"""

from __future__ import annotations

import json

from poolc.diagnostics import Diagnostic
from poolc.report import ordered
from poolc.text.escape import json_text


def render(diagnostics: list[Diagnostic]) -> str:
    doc = {"diagnostics": [d.as_dict() for d in ordered(diagnostics)]}
    return json_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
