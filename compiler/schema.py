"""JSON Schemas: generated from the models (`poolc schema`, the staleness test) and
used to turn structural problems into diagnostics at the exact key or value.

At run time the committed schemas shipped in the package are read, not
regenerated, so `validate` pays neither pydantic's schema generation nor more
than one validator build per kind.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

from . import diagnostics as d
from .diagnostics import Diagnostic
from .load import Document
from .model import NEW_SPELLINGS, NO_MEANING, RESOURCE_MAP_KEY

DRAFT = "https://json-schema.org/draft/2020-12/schema"
KIND_FILES = {
    "ResourcePool": "resourcepool.schema.json",
    "Policy": "policy.schema.json",
    "Stack": "stack.schema.json",
    "Pipeline": "pipeline.schema.json",
    "Allocation": "allocation.schema.json",
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
        "properties": {"apiVersion": {"const": "poolc/v1", "description": "Always poolc/v1 for this version."},
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
    return json.loads(resources.files("compiler.schemas").joinpath(name).read_text("utf-8"))


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    """'pattern' as ECMA-262 reads it: Python's '$' also matches before a final
    newline, which would let "name\n" (a YAML block scalar) pass."""
    from jsonschema import ValidationError  # type: ignore[import-untyped]

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


_PATTERN_HELP = {
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": "a DNS-1123 label (lower-case letters, digits and '-', "
                                       "starting and ending with a letter or digit, at most 63 characters)",
    "^[a-z0-9]([-a-z0-9_]*[a-z0-9])?$": "a step name (lower-case letters, digits, '-' and '_', "
                                        "starting and ending with a letter or digit)",
    "^[a-z][a-z0-9_]{0,62}$": "a resource key ([a-z][a-z0-9_]*, at most 63 characters)",
}


def _describe_pattern(pattern: str) -> str:
    if pattern in _PATTERN_HELP:
        return _PATTERN_HELP[pattern]
    if "KiB" in pattern:
        return "a quantity with a unit, such as 16GB, 16GiB or 16Gi"
    if "[Tt ]" in pattern:
        return "an RFC 3339 timestamp with a time zone, such as 2026-11-20T10:00:00Z"
    if pattern.startswith("^arn:aws"):
        return "an IAM role ARN such as arn:aws:iam::123456789012:role/SageMakerRole"
    if pattern.startswith("^s3://"):
        return "an S3 URI such as s3://bucket/prefix/"
    if pattern.startswith("^ml\\."):
        return "a SageMaker instance type such as ml.g5.2xlarge"
    if pattern.startswith("^[a-z]{2}(-"):
        return "an AWS region such as us-east-1"
    return f"the pattern {pattern}"


_TYPE_NAMES = {"integer": "an integer", "number": "a number", "string": "a string",
               "boolean": "true or false", "object": "a mapping", "array": "a list", "null": "null"}


# Order matters: bool is an int in Python, but not in JSON.
_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
               (dict, "object"), (list, "array"))


def _type_of(value: Any) -> str:
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), "null")


def _where(path: tuple) -> str:
    """A readable name for the field at path, e.g. 'spec.steps.train.settings'."""
    return ".".join(str(p) for p in path) or "the document"


def _resolve(branch: dict, root: dict) -> dict:
    ref = branch.get("$ref", "")
    return root["$defs"][ref.rsplit("/", 1)[-1]] if ref.startswith("#/$defs/") else branch


def _branch_flavors(error: Any, root: dict) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for index, branch in enumerate(error.schema.get("oneOf", [])):
        const = _resolve(branch, root).get("properties", {}).get("flavor", {}).get("const")
        if const:
            found.append((index, const))
    return found


def _flavor_error(error: Any, path: tuple, doc: Document, root: dict) -> Iterator[Diagnostic]:
    """A component matched no flavor branch: name the unknown flavor, or explain
    the errors of the branch whose flavor it does name."""
    instance = error.instance
    branches = _branch_flavors(error, root)
    flavors = sorted(f for _, f in branches)
    flavor = instance.get("flavor")
    if not isinstance(flavor, str):
        if "flavor" in instance:
            yield doc.diagnostic(d.S003, f"flavor must be a string (one of {', '.join(flavors)})",
                                 path + ("flavor",))
        else:
            yield doc.diagnostic(d.S002, f"missing required field 'flavor' (one of {', '.join(flavors)})",
                                 path, key=True)
        return
    if flavor not in flavors:
        yield doc.diagnostic(d.S005, f"unknown flavor {flavor!r}; v1 supports {' and '.join(flavors)} here",
                             path + ("flavor",))
        return
    index = next(i for i, f in branches if f == flavor)
    for sub in error.context:
        if sub.relative_schema_path and sub.relative_schema_path[0] == index:
            yield from _explain(sub, doc, root)


def _explain(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    """One jsonschema error -> diagnostics with a message that names the fix."""
    path = tuple(error.absolute_path)
    kind = error.validator
    value = error.instance
    if kind == "additionalProperties" and isinstance(value, dict):
        known = sorted(error.schema.get("properties", {}))
        patterns = error.schema.get("patternProperties", {})
        for key in sorted(k for k in value if k not in known
                          and not any(re.search(p, k) for p in patterns)):
            if patterns:
                yield doc.diagnostic(d.S001, f"{key!r} is not a resource key: keys are lower-case "
                                     "[a-z][a-z0-9_]* (or the aliases cpu and memory)", path + (key,), key=True)
                continue
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known fields: {', '.join(known)}"
            yield doc.diagnostic(d.S001, f"unknown field {key!r} in {_where(path)}{hint}", path + (key,), key=True)
    elif kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else str(error.validator_value)
        yield doc.diagnostic(d.S002, f"missing required field {missing!r} in {_where(path)}", path, key=True)
    elif kind == "oneOf" and isinstance(value, dict) and _branch_flavors(error, root):
        yield from _flavor_error(error, path, doc, root)
    elif kind == "const" and path[-1:] == ("flavor",):
        yield doc.diagnostic(d.S005, f"flavor {value!r} cannot be used here: it must be "
                             f"{error.validator_value!r} (sagemaker is a step operator flavor only)", path)
    elif kind == "const" and path == ("apiVersion",):
        yield doc.diagnostic(d.S004, f"unsupported apiVersion {value!r}; this poolc reads poolc/v1", path)
    elif kind == "type":
        expected = error.validator_value
        expected = [expected] if isinstance(expected, str) else expected
        wanted = " or ".join(_TYPE_NAMES.get(t, t) for t in expected)
        yield doc.diagnostic(d.S003, f"{_where(path)} must be {wanted}, not {_TYPE_NAMES[_type_of(value)]}"
                             + (f" ({value!r})" if isinstance(value, (str, int, float)) else ""), path)
    elif kind == "pattern" and "propertyNames" in error.absolute_schema_path:
        # a key of a mapping (jsonschema reports it at the mapping): point at the key itself
        if error.validator_value == RESOURCE_MAP_KEY:
            yield doc.diagnostic(d.S001, f"{value!r} is not a resource key: keys are lower-case "
                                 "[a-z][a-z0-9_]* (or the aliases cpu and memory)", path + (value,), key=True)
        else:
            yield doc.diagnostic(d.S003, f"key {value!r} in {_where(path)} is not "
                                 f"{_describe_pattern(error.validator_value)}", path + (value,), key=True)
    elif kind == "pattern":
        yield doc.diagnostic(d.S003, f"{value!r} is not {_describe_pattern(error.validator_value)}", path)
    elif kind == "maxLength" and "propertyNames" in error.absolute_schema_path:
        yield doc.diagnostic(d.S003, f"key {value!r} in {_where(path)} is longer than "
                             f"{error.validator_value} characters", path + (value,), key=True)
    elif kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        words = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[kind]
        yield doc.diagnostic(d.S003, f"{_where(path)} must be {words} {error.validator_value:,}, not {value!r}", path)
    elif kind == "not" and path[-1:] and path[-1] in NO_MEANING:
        yield doc.diagnostic(d.S007, f"{path[-1]!r} (ZenML 0.98) has no meaning in poolc, which would "
                             "ignore it; remove it", path, key=True)
    elif kind == "enum" and path[-1:] == ("reclaim_tolerance",) and value == "coordinated":
        yield doc.diagnostic(d.S007, "reclaim_tolerance 'coordinated' (ZenML 0.98) has no meaning in poolc; "
                             "use 'none' (not preemptible) or 'any' (preemptible), or preemptible", path)
    elif kind == "not" and isinstance(value, dict):
        for alias, canonical in (("cpu", "mcpu"), ("memory", "memory_mb")):
            if alias in value and canonical in value:
                yield doc.diagnostic(d.S006, f"give either {alias} or {canonical}, not both",
                                     path + (alias,), key=True)
        for new, old in NEW_SPELLINGS.items():
            if new in value and old in value:
                yield doc.diagnostic(d.S006, f"give either {new} (ZenML 0.98) or {old}, not both: they are "
                                     "two spellings of one field", path + (new,), key=True)
    elif kind == "enum":
        options = ", ".join(repr(o) for o in error.validator_value)
        yield doc.diagnostic(d.S003, f"{_where(path)} must be one of {options}, not {value!r}", path)
    elif kind == "anyOf" and path[-1:] == ("shm",):
        yield doc.diagnostic(d.S003, f"{value!r} is not a quantity such as 1Gi, nor 'auto'", path)
    elif kind == "minProperties" and path[-1:] == ("steps",):
        yield doc.diagnostic(d.S003, "a pipeline needs at least one step", path)
    else:
        yield doc.diagnostic(d.S003, f"{_where(path)}: {error.message}", path)


def _api_version_problem(doc: Document) -> Diagnostic:
    """S004 for a document the loader took as ours without apiVersion: poolc/v1. A
    look-alike (one of our kinds, apiVersion missing or misspelt) is told the exact
    line to write, since it would otherwise look fine and do nothing."""
    api, kind = doc.data.get("apiVersion"), doc.data.get("kind")
    if isinstance(api, str) and api.startswith("poolc/"):
        return doc.diagnostic(d.S004, f"unsupported apiVersion {api!r}; this poolc reads poolc/v1", ("apiVersion",))
    if "apiVersion" not in doc.data:
        return doc.diagnostic(d.S004, f"this {kind} has no apiVersion, so it would be ignored; "
                              "add 'apiVersion: poolc/v1'", ("kind",), key=True)
    return doc.diagnostic(d.S004, f"apiVersion {api!r} is not poolc's, so this {kind} would be ignored; "
                          "write 'apiVersion: poolc/v1'", ("apiVersion",))


def structural_diagnostics(doc: Document) -> list[Diagnostic]:
    """Envelope and schema problems of one document, each at its key or value."""
    data = doc.data
    if data.get("apiVersion") != "poolc/v1":
        return [_api_version_problem(doc)]
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in KIND_FILES:
        if kind is None:
            return [doc.diagnostic(d.S002, "missing required field 'kind' (one of "
                                   f"{', '.join(KIND_FILES)})", ("apiVersion",), key=True)]
        if not isinstance(kind, str):
            return [doc.diagnostic(d.S004, f"kind must be a string, one of {', '.join(KIND_FILES)}", ("kind",))]
        close = difflib.get_close_matches(kind, list(KIND_FILES), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f" (one of {', '.join(KIND_FILES)})"
        return [doc.diagnostic(d.S004, f"unknown kind {kind!r}{hint}", ("kind",))]
    errors = sorted(_validator(kind).iter_errors(data), key=lambda e: (
        [str(p) for p in e.absolute_path], e.validator, str(e.message)))
    found: list[Diagnostic] = []
    for error in errors:
        for diag in _explain(error, doc, packaged_schema(KIND_FILES[kind])):
            if diag not in found:
                found.append(diag)
    return found


def schema_copy(name: str) -> dict:
    return copy.deepcopy(packaged_schema(name))
