"""Render the rule table (docs/rules.md) from the registry, so the docs cannot drift.

Run `python -m compiler.rules_doc > docs/rules.md`; tests/test_docs.py fails when
the committed table is stale.
"""

from __future__ import annotations

from .diagnostics import RULES

_FAMILIES = {
    "yaml": "Reading YAML (the loader's guards)",
    "structure": "Structure (the JSON Schemas)",
    "names": "Names and references",
    "pools": "Pools and policies",
    "stacks": "Stacks and components",
    "requests": "Requests built from steps",
    "state": "Running allocations",
    "targets": "What the cluster will do (the runtime check every plan runs)",
}


def render() -> str:
    lines = ["# poolc rules", "",
             "Every diagnostic carries one of these stable ids. Severities are the defaults; an",
             "`error` makes `poolc validate` exit 1, a `warning` does not. Positions are 1-based",
             "`line:column` of the offending key or value (`end_line`/`end_column` in JSON",
             "output delimit it; the end column is exclusive).", ""]
    for family, title in _FAMILIES.items():
        lines += [f"## {title}", "", "| id | severity | what it means |", "| --- | --- | --- |"]
        for rule in sorted(RULES.values(), key=lambda r: r.id):
            if rule.family == family:
                lines.append(f"| `{rule.id}` | {rule.severity} | {rule.summary} |")
        lines.append("")
    lines += ["## The checks, as documented in their code", "",
              "Each semantic check is a small function in `compiler/checks/`; its docstring is its",
              "documentation and is copied here.", ""]
    from .checks import CHECKS, Context, run_checks
    from .config import Config

    run_checks(Context(Config()))  # imports every check module, so CHECKS is complete
    for fn in CHECKS:
        doc = " ".join((fn.__doc__ or "").split())
        lines.append(f"- `{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}`: {doc}")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(), end="")
