"""JSON Schemas: generated from the models (`poolc schema`, the staleness test) and
used to turn structural problems into diagnostics at the exact key or value.

At run time the committed schemas shipped in the package are read, not
regenerated, so `validate` pays neither pydantic's schema generation nor more
than one validator build per kind.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

from . import API_VERSION
from . import diagnostics as d
from .diagnostics import Diagnostic
from .load import Document
from .schema_messages import explain

DRAFT = "https://json-schema.org/draft/2020-12/schema"
KIND_FILES = {
    "ResourcePool": "resourcepool.schema.json",
    "Policy": "policy.schema.json",
    "Stack": "stack.schema.json",
    "Pipeline": "pipeline.schema.json",
    "Allocation": "allocation.schema.json",
    "Scenario": "scenario.schema.json",
}
ANY_FILE = "poolc.schema.json"


# --- generation --------------------------------------------------------------------

def _tidy(node: Any) -> Any:
    """Make pydantic's output read like a hand-written schema and match the models:
    no auto titles, no ``null`` branches (optional means absent), and dict keys
    constrained with ``propertyNames`` instead of open ``patternProperties``."""
    if isinstance(node, list):
        return [_tidy(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {k: _tidy(v) for k, v in node.items() if k != "title"}
    any_of = node.get("anyOf")
    if any_of and {"type": "null"} in any_of:
        rest = [b for b in any_of if b != {"type": "null"}]
        del node["anyOf"]
        node.pop("default", None)
        if len(rest) == 1:
            node.update(rest[0])
        else:
            node["anyOf"] = rest
    if node.get("type") == "object" and "patternProperties" in node \
            and "properties" not in node and "additionalProperties" not in node \
            and len(node["patternProperties"]) == 1:
        (pattern, value), = node.pop("patternProperties").items()
        names = node.setdefault("propertyNames", {})
        names["pattern"] = pattern
        node["additionalProperties"] = value
    if "discriminator" in node:  # OpenAPI keyword; JSON Schema tools ignore it
        del node["discriminator"]
    return node


def build_schemas() -> dict[str, dict]:
    """{file name: schema} generated from the models."""
    from .model import KINDS  # pydantic schema generation only when asked

    schemas: dict[str, dict] = {}
    all_defs: dict[str, Any] = {}
    for kind, model in KINDS.items():
        raw = _tidy(model.model_json_schema(ref_template="#/$defs/{model}"))
        defs = raw.pop("$defs", {})
        name = KIND_FILES[kind]
        schemas[name] = {"$schema": DRAFT,
                         "title": f"poolc v1 {kind}",
                         "description": f"A poolc/v1 {kind} document (reference: docs/format.md in the poolc "
                                        "repository).",
                         **raw, "$defs": dict(sorted(defs.items()))}
        for def_name, definition in defs.items():
            if all_defs.setdefault(def_name, definition) != definition:
                raise ValueError(f"two models generate different schemas named {def_name}")
        all_defs[kind] = {k: v for k, v in raw.items()}
    schemas[ANY_FILE] = {
        "$schema": DRAFT,
        "title": "poolc v1 document",
        "description": "Any poolc/v1 document, checked against the schema of its kind.",
        "type": "object",
        "required": ["apiVersion", "kind"],
        "properties": {"apiVersion": {"const": API_VERSION, "description": f"Always {API_VERSION} for this version."},
                       "kind": {"enum": list(KINDS), "description": "Which kind of document this is."}},
        "allOf": [{"if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
                   "then": {"$ref": f"#/$defs/{kind}"}} for kind in KINDS],
        "$defs": dict(sorted(all_defs.items())),
    }
    return schemas


def dump(schema: dict) -> str:
    return json.dumps(schema, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


# --- validation --------------------------------------------------------------------

@cache
def packaged_schema(name: str) -> dict:
    return json.loads(resources.files("poolc.schemas").joinpath(name).read_text("utf-8"))


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    """'pattern' as ECMA-262 reads it: Python's '$' also matches before a final
    newline, which would let "name\n" (a YAML block scalar) pass."""
    from jsonschema import ValidationError

    if not isinstance(instance, str):
        return
    regex = pattern[:-1] + r"\Z" if pattern.endswith("$") and not pattern.endswith("\\$") else pattern
    if not re.search(regex, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def _validator(kind: str) -> Any:
    from jsonschema import Draft202012Validator, validators

    strict = validators.extend(Draft202012Validator, {"pattern": _ecma_pattern})
    return strict(packaged_schema(KIND_FILES[kind]))


def _api_version_problem(doc: Document) -> Diagnostic:
    """S004 for a document the loader took as ours without apiVersion: poolc/v1. A
    look-alike (one of our kinds, apiVersion missing or misspelt) is told the exact
    line to write, since it would otherwise look fine and do nothing."""
    api, kind = doc.data.get("apiVersion"), doc.data.get("kind")
    if isinstance(api, str) and api.startswith("poolc/"):
        return doc.diagnostic(d.S004, f"unsupported apiVersion {api!r}; this poolc reads {API_VERSION}",
                              ("apiVersion",))
    if "apiVersion" not in doc.data:
        return doc.diagnostic(d.S004, f"this {kind} has no apiVersion, so it would be ignored; "
                              f"add 'apiVersion: {API_VERSION}'", ("kind",), key=True)
    return doc.diagnostic(d.S004, f"apiVersion {api!r} is not poolc's, so this {kind} would be ignored; "
                          f"write 'apiVersion: {API_VERSION}'", ("apiVersion",))


def closest_kind(written: str) -> str | None:
    """The kind meant by a misspelt one. First a kind that contains the written word
    or is contained in it, ignoring case (Pool -> ResourcePool, Stacks -> Stack,
    Alloc -> Allocation; at least 3 letters, the nearest in length wins); else the
    nearest by difflib's ratio on lower case (Pipline -> Pipeline, Polcy -> Policy)."""
    word = written.strip().lower()
    kinds = list(KIND_FILES)
    if len(word) >= 3:
        containing = [k for k in kinds if word in k.lower() or k.lower() in word]
        if containing:
            return min(containing, key=lambda k: (abs(len(k) - len(word)), k))
    close = difflib.get_close_matches(word, [k.lower() for k in kinds], n=1, cutoff=0.6)
    return next((k for k in kinds if k.lower() == close[0]), None) if close else None


def structural_diagnostics(doc: Document) -> list[Diagnostic]:
    """Envelope and schema problems of one document, each at its key or value."""
    data = doc.data
    if data.get("apiVersion") != API_VERSION:
        return [_api_version_problem(doc)]
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in KIND_FILES:
        if kind is None:
            return [doc.diagnostic(d.S002, "missing required field 'kind' (one of "
                                   f"{', '.join(KIND_FILES)})", ("apiVersion",), key=True)]
        if not isinstance(kind, str):
            return [doc.diagnostic(d.S004, f"kind must be a string, one of {', '.join(KIND_FILES)}", ("kind",))]
        close = closest_kind(kind)
        hint = f"; did you mean {close!r}?" if close else f" (one of {', '.join(KIND_FILES)})"
        return [doc.diagnostic(d.S004, f"unknown kind {kind!r}{hint}", ("kind",))]
    errors = sorted(_validator(kind).iter_errors(data), key=lambda e: (
        [str(p) for p in e.absolute_path], e.validator, str(e.message)))
    found: list[Diagnostic] = []
    for error in errors:
        for diag in explain(error, doc, packaged_schema(KIND_FILES[kind])):
            if diag not in found:
                found.append(diag)
    return found
