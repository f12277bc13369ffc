"""The plan as a pull-request comment (`poolc plan --format markdown`, `poolc show`).

A headline a reviewer reads first (counts, strategy, proven or not, whether the
cluster agrees), then per pool and per policy what is reserved, used, borrowed
and the limit with a bar per key, the changes (allocations and generated files,
diffs folded in ``<details>``), queued steps with their reasons, preemptions,
runtime differences and rejected steps. GitHub refuses comments over 65,536
characters: every section gets a fair share of the budget (a small section
leaves what it does not use to the big ones), and a table that does not fit ends
after its last whole row with a line saying how many more rows the full plan
has. Nothing is cut inside a table or a diff.

Every string from the plan is input (a saved plan, or names, messages and
generated files from the repository): it goes into the comment only through
``poolc.escape`` (``md_code`` for names, ``md_text`` for prose, ``md_html`` and
``md_fence`` for the folded diffs), which also bounds each field, so no field
can take more than its share of the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from ..domain.plan import Plan, PlannedRequest
from ..escape import guard_lines, md_code, md_fence, md_html, md_text
from .objective import objective_rows, unproven_line

LIMIT = 65_536
# What the sections may use together; the headline and the notes need the rest.
BUDGET = 60_000
MAX_ROWS = 200
UNLIMITED = 10**9
_WHERE = "`poolc show PLANFILE --format json` or `poolc plan --format json` has them all"
BAR_WIDTH = 10


def _cell(text: object) -> str:
    """A table cell: pipes and line breaks would break the table."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def bar(used: int, total: int) -> str:
    """``▓▓▓▓░░░░░░ 40%`` of ``used`` in ``total`` (over 100% when over capacity)."""
    if total <= 0:
        return "n/a" if used <= 0 else "over (capacity 0)"
    share = used / total
    filled = max(0, min(BAR_WIDTH, round(share * BAR_WIDTH)))
    return "▓" * filled + "░" * (BAR_WIDTH - filled) + f" {share:.0%}"


def _table(header: Iterable[str], rows: Sequence[Sequence[object]], what: str, budget: int) -> list[str]:
    """Whole rows while they fit ``budget`` characters (and at most MAX_ROWS), then
    one line saying how many more there are and where they are."""
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    cells = ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows[:MAX_ROWS]]
    used = sum(len(line) + 1 for line in lines)
    if len(rows) <= MAX_ROWS and used + sum(len(line) + 1 for line in cells) <= budget:
        return lines + cells
    used += 200                                              # room for the note
    for line in cells:
        if used + len(line) + 1 > budget:
            break
        lines.append(line)
        used += len(line) + 1
    shown = len(lines) - 2
    lines.append(f"\n_{len(rows) - shown} more {what} not shown to stay under GitHub's comment size; {_WHERE}._")
    return lines


def _headline(plan: Plan) -> list[str]:
    counts = {s: len(plan.by_status(s)) for s in ("allocated", "queued", "rejected")}
    solver = plan.solver
    proven = "proven optimal" if solver.status == "OPTIMAL" else f"{md_text(solver.status)}, gap {solver.gap:g}"
    runtime = ""
    if plan.runtime is not None:
        runtime = (" · the cluster (Kueue) agrees" if plan.runtime.agrees
                   else f" · **the cluster (Kueue) differs on {len(plan.runtime.differences)}**")
    lines = [f"### poolc plan: {counts['allocated']} allocated, {counts['queued']} queued, "
             f"{counts['rejected']} rejected, {len(plan.preempted)} preempted",
             "", f"strategy {md_code(solver.strategy)} ({proven}){runtime}", "", *_not_proven(plan)]
    if plan.runtime is not None and plan.runtime.submit == "all" and solver.strategy != "kueue":
        lines += ["> Every Job goes to Kueue (`--submit all`): Kueue, not this plan, decides which steps wait "
                  "and which running work it preempts. The plan to read is "
                  "`poolc plan --strategy kueue --submit all`.", ""]
    tiers = objective_rows(solver)
    if tiers:
        lines += ["<details><summary>What the solver maximised and minimised, tier by tier</summary>", "",
                  *_table(["", "tier", "value"], [list(row) for row in tiers], "tiers", UNLIMITED), "",
                  "</details>", ""]
    return lines


def _not_proven(plan: Plan) -> list[str]:
    """What was not proven or not checked: the tiers the solver did not prove, and
    a runtime check its work bound stopped, one line each, if any."""
    lines = [unproven_line(plan.solver) or ""]
    if plan.runtime is not None and plan.runtime.stopped:
        lines.append(f"The runtime check stopped: {plan.runtime.stopped}.")
    return [x for line in lines if line for x in (line, "")]


def _pools(plan: Plan, budget: int) -> list[str]:
    rows = []
    for pool in plan.pools:
        for key in sorted(pool.capacity):
            rows.append([md_text(pool.name), md_text(key), pool.capacity[key], pool.used.get(key, 0),
                         pool.free.get(key, 0),
                         bar(pool.used.get(key, 0), pool.capacity[key])])
    return ["#### Pools", "", *_table(["pool", "key", "capacity", "used", "free", ""], rows, "rows", budget), ""]


def _policies(plan: Plan, budget: int) -> list[str]:
    """Per policy and metered key: reserved, used (running and admitted), borrowed
    above the reserved share, limit; the bar is what it uses of its limit."""
    rows = [[md_text(policy.name), md_text(policy.pool), policy.priority, md_text(key), policy.reserved[key],
             policy.used[key],
             policy.borrowed[key], policy.limit[key], bar(policy.used[key], policy.limit[key])]
            for policy in plan.policies for key in policy.used]
    if not rows:
        return []
    return ["#### Policies", "",
            *_table(["policy", "pool", "priority", "key", "reserved", "used", "borrowed", "limit", "of the limit"],
                    rows, "rows", budget), ""]


def _changes(plan: Plan, diffs: Mapping[str, str], budget: int) -> list[str]:
    changes = plan.changes or {}
    allocations = changes.get("allocations", {})
    files = changes.get("files", [])
    lines = ["#### Changes", ""]
    summary = ", ".join(f"{len(allocations.get(k, []))} {k}" for k in ("added", "removed", "resized"))
    lines.append(f"Allocations: {summary}, {len(allocations.get('unchanged', []))} unchanged. "
                 f"Generated files: {len(files)} to change. State: {md_text(changes.get('state') or 'unchanged')}.")
    lines.append("")
    signs = {"create": "+", "update": "~", "delete": "-"}
    rows = [[signs.get(f["action"], "?"), md_code(f["path"]), md_text(f["action"])] for f in files]
    rows += [[sign, md_code(name), f"allocation {word}"] for key, sign, word in
             (("added", "+", "added"), ("removed", "-", "removed"), ("resized", "~", "resized"))
             for name in allocations.get(key, [])]
    if rows:
        lines += _table(["", "what", "change"], rows, "changes", budget)
        lines.append("")
    used = sum(len(x) + 1 for x in lines)
    blocks = [(f"<details><summary><code>{md_html(item['path'])}</code></summary>\n\n"
               f"{md_fence(diffs[item['path']].rstrip(), 'diff')}\n</details>\n")
              for item in files if diffs.get(item["path"])]
    if used + sum(len(block) + 1 for block in blocks) > budget:
        used += 200                                          # room for the note
    for shown, block in enumerate(blocks):
        if used + len(block) + 1 > budget:
            lines.append(f"_The diffs of {len(blocks) - shown} more files are left out to stay under GitHub's "
                         "comment size; `poolc apply` writes them._")
            break
        lines.append(block)
        used += len(block) + 1
    return lines


def _requests(title: str, requests: list[PlannedRequest], with_reason: bool, budget: int) -> list[str]:
    if not requests:
        return []
    rows = [[md_code(r.id), md_text(r.policy) if r.policy else "-",
             md_text(" ".join(f"{k}={v}" for k, v in sorted(r.demand.items()))),
             md_text((f"[{r.reason}] " if with_reason and r.reason else "") + r.message)] for r in requests]
    return [f"#### {title} ({len(requests)})", "",
            *_table(["step", "policy", "demand", "why"], rows, "steps", budget), ""]


def _preempted(plan: Plan, budget: int) -> list[str]:
    if not plan.preempted:
        return []
    rows = [[md_code(p.id), md_text(p.pool),
             ", ".join(md_code(x) for x in p.for_[:5]) + (" …" if len(p.for_) > 5 else ""),
             md_text(p.message)] for p in plan.preempted]
    return [f"#### Preempted ({len(plan.preempted)})", "",
            *_table(["allocation", "pool", "for", "why"], rows, "preemptions", budget), ""]


def _external(plan: Plan, budget: int) -> list[str]:
    if not plan.external:
        return []
    rows = [[md_code(x.name), md_text(x.policy), md_text(x.pool),
             md_text(", ".join(f"{k}={v}" for k, v in sorted(x.holds.items())))]
            for x in plan.external]
    return [f"#### Running outside poolc ({len(rows)})", "",
            *_table(["workload", "policy", "pool", "holds"], rows, "foreign workloads", budget), ""]


def _runtime(plan: Plan, budget: int) -> list[str]:
    if plan.runtime is None or plan.runtime.agrees:
        return []
    rows = [[md_code(x.id), md_text(x.plan), md_text(x.cluster), md_text(x.message)] for x in plan.runtime.differences]
    return [f"#### Where the cluster will differ ({len(rows)})", "",
            *_table(["step or allocation", "plan", "cluster", "why"], rows, "differences", budget), ""]


def _shares(sizes: list[int], budget: int) -> list[int]:
    """Max-min fair split of ``budget``: the smallest sections get all they need,
    the rest share what is left equally."""
    shares = [0] * len(sizes)
    left, waiting = budget, len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: (sizes[i], i)):
        shares[i] = min(sizes[i], left // waiting)
        left -= shares[i]
        waiting -= 1
    return shares


def render_markdown(plan: Plan, *, diffs: Mapping[str, str] | None = None) -> str:
    """The comment; always under GitHub's 65,536-character limit."""
    sections: list[Callable[[int], list[str]]] = [
        lambda budget: _runtime(plan, budget),
        lambda budget: _requests("Rejected", plan.by_status("rejected"), True, budget),
        lambda budget: _requests("Queued", plan.by_status("queued"), False, budget),
        lambda budget: _preempted(plan, budget),
        lambda budget: _external(plan, budget),
        lambda budget: _pools(plan, budget),
        lambda budget: _policies(plan, budget),
    ]
    if plan.changes is not None:
        sections.append(lambda budget: _changes(plan, diffs or {}, budget))
    head = _headline(plan)
    sizes = [len("\n".join(section(UNLIMITED))) + 1 for section in sections]
    shares = _shares(sizes, BUDGET - len("\n".join(head)))
    body = [line for section, share in zip(sections, shares, strict=True) for line in section(share)]
    return guard_lines("\n".join(head + body).rstrip() + "\n")
