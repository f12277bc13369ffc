"""jsonschema errors in words: each keyword's error becomes a diagnostic at the
offending key or value, with a message that names the fix (a table from keyword
to a small function, so a new message touches one function)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator
from typing import Any

from . import API_VERSION
from . import diagnostics as d
from .diagnostics import Diagnostic
from .load import Document
from .model import NEW_SPELLINGS, RESOURCE_MAP_KEY

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
    if "[Tt ]" in pattern or "[Tt]" in pattern:
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
    found = []
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
            yield from explain(sub, doc, root)


Explainer = Callable[[Any, Document, dict], Iterator[Diagnostic]]


def _resource_fields(root: dict) -> set[str]:
    return set(root.get("$defs", {}).get("ResourceSettings", {}).get("properties", {}))


def _belongs(path: tuple, key: str, root: dict) -> tuple | None:
    """Where a field written in the wrong place belongs: a ResourceSettings field
    directly under a step (or a pipeline's spec) or directly under settings."""
    fields = _resource_fields(root)
    if not fields or doc_kind(root) != "Pipeline":
        return None
    at_step = len(path) == 3 and path[:2] == ("spec", "steps")
    at_settings = path[-1:] == ("settings",) and (path == ("spec", "settings") or len(path) == 4)
    if (at_step or path == ("spec",)) and key == "resources":
        return path + ("settings", "resources")
    if (at_step or path == ("spec",)) and key in fields:
        return path + ("settings", "resources", key)
    if at_settings and key in fields:
        return path + ("resources", key)
    return None


def doc_kind(root: dict) -> str:
    """The kind a schema is for, from its title ('poolc v1 Pipeline')."""
    return str(root.get("title", "")).rsplit(" ", 1)[-1]


def _additional_properties(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    value, path = error.instance, tuple(error.absolute_path)
    if not isinstance(value, dict):
        return
    known = sorted(error.schema.get("properties", {}))
    patterns = error.schema.get("patternProperties", {})
    for key in sorted(k for k in value if k not in known and not any(re.search(p, k) for p in patterns)):
        home = None if patterns else _belongs(path, key, root)
        if home is not None:
            yield doc.diagnostic(d.S001, f"{key!r} cannot stand directly in {_where(path)}: it belongs in "
                                 f"{_where(home)} (move it there, indented under "
                                 f"{'resources' if home[-1] != 'resources' else 'settings'}:)",
                                 path + (key,), key=True)
            continue
        if patterns:
            yield doc.diagnostic(d.S001, f"{key!r} is not a resource key: keys are lower-case "
                                 "[a-z][a-z0-9_]* (or the aliases cpu and memory)", path + (key,), key=True)
            continue
        close = difflib.get_close_matches(key, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known fields: {', '.join(known)}"
        yield doc.diagnostic(d.S001, f"unknown field {key!r} in {_where(path)}{hint}", path + (key,), key=True)


def _required(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    path = tuple(error.absolute_path)
    missing = error.message.split("'")[1] if "'" in error.message else str(error.validator_value)
    yield doc.diagnostic(d.S002, f"missing required field {missing!r} in {_where(path)}", path, key=True)


EXPECTATIONS = "state, starts_within, never_preempted, gpu_hours, utilisation or no_preemption_loop"


def _one_of(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    path = tuple(error.absolute_path)
    if isinstance(error.instance, dict) and _branch_flavors(error, root):
        yield from _flavor_error(error, path, doc, root)
    elif doc_kind(root) == "Scenario" and path[:2] == ("spec", "arrivals") and isinstance(error.instance, dict):
        yield doc.diagnostic(d.S002, "an arrival names what arrives: give step (<pipeline>/<step>) or pipeline, "
                             "one of them", path, key=True)
    else:
        yield from _generic(error, doc, root)


def _const(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    value, path = error.instance, tuple(error.absolute_path)
    if path[-1:] == ("flavor",):
        yield doc.diagnostic(d.S005, f"flavor {value!r} cannot be used here: it must be "
                             f"{error.validator_value!r} (sagemaker is a step operator flavor only)", path)
    elif path == ("apiVersion",):
        yield doc.diagnostic(d.S004, f"unsupported apiVersion {value!r}; this poolc reads {API_VERSION}", path)
    else:
        yield from _generic(error, doc, root)


def _wants_quantity(schema: Any) -> bool:
    """A schema for a byte quantity such as 16Gi (its pattern names the units)."""
    return "KiB" in str(schema)


def _needs_unit(value: Any) -> str:
    number = f"{value:g}" if isinstance(value, float) else str(value)
    return f"{number} needs a unit: write {number}GB or {number}Gi (a bare number of bytes is not accepted)"


def _empty_mapping(path: tuple, doc: Document) -> str:
    """A mapping whose value is null: the usual cause is that its lines are not
    indented under its key (they became its siblings, or the document ended)."""
    key = path[-1]
    line, col = doc.span(path, key=True)[:2]
    siblings = [doc.keys[p] for p in doc.keys if len(p) == len(path) and p[:-1] == path[:-1] and p != path]
    if any(s[0] == line + 1 and s[1] == col for s in siblings) or any(s[0] > line and s[1] < col
                                                                       for s in doc.keys.values()):
        return (f"{_where(path)} is empty: the line after '{key}:' is not indented under it, so it is "
                f"not part of {key}; probably mis-indented: indent the lines that belong to {key} "
                f"further than '{key}:' (column {col})")
    return (f"{_where(path)} is empty; give it a mapping (indent its fields under '{key}:') or remove it")


def _type(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    value, path = error.instance, tuple(error.absolute_path)
    expected = error.validator_value
    expected = [expected] if isinstance(expected, str) else expected
    if "string" in expected and isinstance(value, (int, float)) and not isinstance(value, bool) \
            and _wants_quantity(error.schema):
        yield doc.diagnostic(d.S003, f"{_where(path)}: {_needs_unit(value)}", path)
        return
    if value is None and expected == ["object"] and path and isinstance(path[-1], str):
        yield doc.diagnostic(d.S003, _empty_mapping(path, doc), path, key=True)
        return
    wanted = " or ".join(_TYPE_NAMES.get(t, t) for t in expected)
    yield doc.diagnostic(d.S003, f"{_where(path)} must be {wanted}, not {_TYPE_NAMES[_type_of(value)]}"
                         + (f" ({value!r})" if isinstance(value, (str, int, float)) else ""), path)


def _pattern(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    value, path = error.instance, tuple(error.absolute_path)
    if "propertyNames" not in error.absolute_schema_path:
        described = _describe_pattern(error.validator_value)
        if described.startswith("the pattern"):  # never show a long regex: name the field instead
            described = (f"a valid value for {_where(path)}" if len(error.validator_value) > 40 else described)
        shown = repr(value) if len(repr(value)) <= 80 else f"{repr(value)[:60]}…' ({len(value):,} characters)"
        yield doc.diagnostic(d.S003, f"{shown} is not {described}", path)
    elif error.validator_value == RESOURCE_MAP_KEY:
        # a key of a mapping (jsonschema reports it at the mapping): point at the key itself
        yield doc.diagnostic(d.S001, f"{value!r} is not a resource key: keys are lower-case "
                             "[a-z][a-z0-9_]* (or the aliases cpu and memory)", path + (value,), key=True)
    else:
        yield doc.diagnostic(d.S003, f"key {value!r} in {_where(path)} is not "
                             f"{_describe_pattern(error.validator_value)}", path + (value,), key=True)


def _max_length(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    value, path = error.instance, tuple(error.absolute_path)
    if "propertyNames" in error.absolute_schema_path:
        yield doc.diagnostic(d.S003, f"key {value!r} in {_where(path)} is longer than "
                             f"{error.validator_value} characters", path + (value,), key=True)
    else:
        yield from _generic(error, doc, root)


_BOUND_WORDS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}


def _bound(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    path = tuple(error.absolute_path)
    yield doc.diagnostic(d.S003, f"{_where(path)} must be {_BOUND_WORDS[error.validator]} "
                         f"{error.validator_value:,}, not {error.instance!r}", path)


def _not(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    value, path = error.instance, tuple(error.absolute_path)
    if not isinstance(value, dict):
        yield from _generic(error, doc, root)
        return
    for alias, canonical in (("cpu", "mcpu"), ("memory", "memory_mb")):
        if alias in value and canonical in value:
            yield doc.diagnostic(d.S006, f"give either {alias} or {canonical}, not both", path + (alias,), key=True)
    for new, old in NEW_SPELLINGS.items():
        if new in value and old in value:
            yield doc.diagnostic(d.S006, f"give either {new} (ZenML 0.98) or {old}, not both: they are "
                                 "two spellings of one field", path + (new,), key=True)


def _enum(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    path = tuple(error.absolute_path)
    options = ", ".join(repr(o) for o in error.validator_value)
    yield doc.diagnostic(d.S003, f"{_where(path)} must be one of {options}, not {error.instance!r}", path)


def _any_of(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    path = tuple(error.absolute_path)
    if path[-1:] == ("shm",) and isinstance(error.instance, (int, float)) and not isinstance(error.instance, bool):
        yield doc.diagnostic(d.S003, f"{_where(path)}: {_needs_unit(error.instance)}, or write 'auto'", path)
    elif path[-1:] == ("shm",):
        yield doc.diagnostic(d.S003, f"{error.instance!r} is not a quantity such as 1Gi, nor 'auto'", path)
    elif path[-1:] == ("spec",) and isinstance(error.instance, dict):
        yield doc.diagnostic(d.S002, "missing required field 'steps' in spec (or a source to take the steps "
                             "from: spec.source)", path, key=True)
    elif doc_kind(root) == "Scenario" and isinstance(error.instance, dict):
        yield doc.diagnostic(d.S002, f"{_where(path)}: give at_least or at_most (or both)", path, key=True)
    elif path[-1:] == ("source",) and isinstance(error.instance, dict):
        yield doc.diagnostic(d.S002, "spec.source names no file: give zenml_config, python (with pipeline) or "
                             "flyte", path, key=True)
    else:
        yield from _generic(error, doc, root)


def _max_properties(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    path = tuple(error.absolute_path)
    if doc_kind(root) == "Scenario" and path[:2] == ("spec", "expect"):
        keys = sorted(error.instance) if isinstance(error.instance, dict) else []
        yield doc.diagnostic(d.S003, f"an expectation is one check, this one has {len(keys)} ({', '.join(keys)}): "
                             "write each as its own '- ' item", path + tuple(keys[1:2]), key=True)
    else:
        yield from _generic(error, doc, root)


def _min_properties(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    path = tuple(error.absolute_path)
    if doc_kind(root) == "Scenario" and path[:2] == ("spec", "expect"):
        yield doc.diagnostic(d.S002, f"an empty expectation: give one of {EXPECTATIONS}", path)
    elif path[-1:] == ("steps",):
        yield doc.diagnostic(d.S003, "a pipeline needs at least one step", path)
    else:
        yield from _generic(error, doc, root)


def _dependent_required(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    path = tuple(error.absolute_path)
    given = next((k for k, needs in error.validator_value.items() if k in error.instance
                  and any(n not in error.instance for n in needs)), None)
    if given in ("python", "pipeline"):
        yield doc.diagnostic(d.S002, "spec.source: python and pipeline go together (the file, and the name of "
                             "the ZenML pipeline in it)", path + (given,), key=True)
    else:
        yield from _generic(error, doc, root)


def _generic(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    path = tuple(error.absolute_path)
    yield doc.diagnostic(d.S003, f"{_where(path)}: {error.message}", path)


# jsonschema keyword -> the function that words its error for a user.
EXPLAINERS: dict[str, Explainer] = {
    "additionalProperties": _additional_properties,
    "required": _required,
    "oneOf": _one_of,
    "const": _const,
    "type": _type,
    "pattern": _pattern,
    "maxLength": _max_length,
    "minimum": _bound, "exclusiveMinimum": _bound, "maximum": _bound, "exclusiveMaximum": _bound,
    "not": _not,
    "enum": _enum,
    "anyOf": _any_of,
    "minProperties": _min_properties,
    "maxProperties": _max_properties,
    "dependentRequired": _dependent_required,
}


def explain(error: Any, doc: Document, root: dict) -> Iterator[Diagnostic]:
    """One jsonschema error -> diagnostics with a message that names the fix."""
    return EXPLAINERS.get(error.validator, _generic)(error, doc, root)
