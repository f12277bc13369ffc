"""Which YAML documents are poolc's: decided on the composed node (or, before
parsing, on the text), so foreign YAML (Helm templates, CloudFormation, another
tool's Policy) is never judged.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from ruamel.yaml.nodes import MappingNode, ScalarNode

POOLC_KINDS = ("ResourcePool", "Policy", "Stack", "Pipeline", "Allocation", "Scenario")


def node_is_ours(node: Any) -> bool:
    """A document is ours when it is a mapping whose apiVersion starts with poolc/,
    or a look-alike (see _looks_like_ours); decided on the node, before building,
    so foreign YAML is never judged."""
    if not isinstance(node, MappingNode):
        return False
    top = {key.value: value for key, value in node.value if isinstance(key, ScalarNode)}
    api = top.get("apiVersion")
    if isinstance(api, ScalarNode) and api.value.startswith("poolc/"):
        return True
    return _looks_like_ours(top, api)


def _looks_like_ours(top: dict[str, Any], api: Any) -> bool:
    """One of our kinds with a spec, whose apiVersion is missing or a misspelling of
    poolc/v1 (poolc.dev/v1, pool/v1, v1): read as ours, so the schema reports the
    apiVersion instead of the whole document being skipped without a word. A real
    foreign apiVersion (kyverno.io/v1 Policy, tekton.dev/v1 Pipeline) stays foreign."""
    kind = top.get("kind")
    if not (isinstance(kind, ScalarNode) and kind.value in POOLC_KINDS and "spec" in top):
        return False
    if not isinstance(api, ScalarNode) or "/" not in api.value:
        return True
    group = api.value.split("/", 1)[0].lower()
    return group.startswith("pool") or bool(difflib.get_close_matches(group, ["poolc"], n=1, cutoff=0.6))

_LOOKALIKE = re.compile(r"""kind["']?\s*:\s*["']?(?:""" + "|".join(POOLC_KINDS) + r")\b")


def mentions_poolc(text: str) -> bool:
    """Cheap pre-filter: only a file that names poolc/ or one of our kinds is parsed."""
    return "poolc/" in text or _LOOKALIKE.search(text) is not None

OURS = re.compile(r"""apiVersion["']?\s*:\s*["']?poolc/""")

_SEPARATOR = re.compile(r"^---", re.MULTILINE)


def foreign_count(text: str) -> int:
    """Documents in a file that is not parsed: its non-blank parts between '---' lines."""
    return sum(1 for part in _SEPARATOR.split(text) if part.strip())
