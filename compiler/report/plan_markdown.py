"""The plan as a pull-request comment (`poolc plan --format markdown`, `poolc show`).

A headline a reviewer reads first (counts, strategy, proven or not, whether the
cluster agrees), then per pool and per policy what is reserved, used, borrowed
and the limit with a bar per key, the changes (allocations and generated files,
diffs folded in ``<details>``), queued steps with their reasons, preemptions,
runtime differences and rejected steps. GitHub refuses comments over 65,536
characters, so long sections are cut with a note saying how many rows are left
out; the whole plan is always in the JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..domain.plan import Plan, PlannedRequest

LIMIT = 65_536
# What the sections may use together; the headline and the notes need the rest.
BUDGET = 60_000
MAX_ROWS = 200
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


def _table(header: Iterable[str], rows: Sequence[Sequence[object]], what: str) -> list[str]:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows[:MAX_ROWS]]
    if len(rows) > MAX_ROWS:
        lines.append(f"\n_{len(rows) - MAX_ROWS} more {what} not shown; `poolc plan --format json` has them all._")
    return lines


def _headline(plan: Plan) -> list[str]:
    counts = {s: len(plan.by_status(s)) for s in ("allocated", "queued", "rejected")}
    solver = plan.solver
    proven = "proven optimal" if solver.status == "OPTIMAL" else f"{solver.status}, gap {solver.gap:g}"
    runtime = ""
    if plan.runtime is not None:
        runtime = (" · the cluster (Kueue) agrees" if plan.runtime.agrees
                   else f" · **the cluster (Kueue) differs on {len(plan.runtime.differences)}**")
    return [f"### poolc plan: {counts['allocated']} allocated, {counts['queued']} queued, "
            f"{counts['rejected']} rejected, {len(plan.preempted)} preempted",
            "", f"strategy `{solver.strategy}` ({proven}){runtime}", ""]


def _pools(plan: Plan) -> list[str]:
    rows = []
    for pool in plan.pools:
        for key in sorted(pool.capacity):
            rows.append([pool.name, key, pool.capacity[key], pool.used.get(key, 0), pool.free.get(key, 0),
                         bar(pool.used.get(key, 0), pool.capacity[key])])
    return ["#### Pools", "", *_table(["pool", "key", "capacity", "used", "free", ""], rows, "rows"), ""]


def _policies(plan: Plan) -> list[str]:
    """Per policy and key: what its allocated steps use and borrow (reserve and
    limit live in the configuration, not in the plan, so they are shown when a
    policy table is given by the caller)."""
    used: dict[tuple[str, str], int] = {}
    borrowed: dict[tuple[str, str], int] = {}
    pools: dict[str, str] = {}
    by_name = {p.name: p for p in plan.pools}
    for request in plan.requests:
        if request.status != "allocated" or request.policy is None or request.pool is None:
            continue
        pools[request.policy] = request.pool
        capacity = by_name[request.pool].capacity if request.pool in by_name else {}
        for key, units in request.demand.items():
            if key in capacity:
                used[request.policy, key] = used.get((request.policy, key), 0) + units
        for key, units in request.borrowed.items():
            borrowed[request.policy, key] = borrowed.get((request.policy, key), 0) + units
    rows = []
    for (policy, key), units in sorted(used.items()):
        pool = by_name[pools[policy]]
        reserved_part = units - borrowed.get((policy, key), 0)
        rows.append([policy, pool.name, key, units, reserved_part, borrowed.get((policy, key), 0),
                     bar(units, pool.capacity.get(key, 0))])
    if not rows:
        return []
    return ["#### Policies", "", "What each policy's allocated steps use (new and already running), inside "
            "its reserved share and borrowed above it; the bar is the share of the pool.", "",
            *_table(["policy", "pool", "key", "used", "in reserve", "borrowed", "of the pool"], rows, "rows"), ""]


def _changes(plan: Plan, diffs: Mapping[str, str], budget: int) -> list[str]:
    changes = plan.changes or {}
    allocations = changes.get("allocations", {})
    files = changes.get("files", [])
    lines = ["#### Changes", ""]
    summary = ", ".join(f"{len(allocations.get(k, []))} {k}" for k in ("added", "removed", "resized"))
    lines.append(f"Allocations: {summary}, {len(allocations.get('unchanged', []))} unchanged. "
                 f"Generated files: {len(files)} to change. State: {changes.get('state') or 'unchanged'}.")
    lines.append("")
    signs = {"create": "+", "update": "~", "delete": "-"}
    rows = [[signs.get(f["action"], "?"), f"`{f['path']}`", f["action"]] for f in files]
    rows += [[sign, f"`{name}`", f"allocation {word}"] for key, sign, word in
             (("added", "+", "added"), ("removed", "-", "removed"), ("resized", "~", "resized"))
             for name in allocations.get(key, [])]
    if rows:
        lines += _table(["", "what", "change"], rows, "changes")
        lines.append("")
    used = sum(len(x) + 1 for x in lines)
    shown = 0
    for item in files:
        diff = diffs.get(item["path"])
        if not diff:
            continue
        block = (f"<details><summary><code>{item['path']}</code></summary>\n\n"
                 f"```diff\n{diff.rstrip()}\n```\n</details>\n")
        if used + len(block) > budget:
            lines.append(f"_The diffs of {sum(1 for f in files if diffs.get(f['path'])) - shown} more files are "
                         "left out to stay under GitHub's comment size._")
            break
        lines.append(block)
        used += len(block)
        shown += 1
    return lines


def _requests(title: str, requests: list[PlannedRequest], with_reason: bool) -> list[str]:
    if not requests:
        return []
    rows = [[f"`{r.id}`", r.policy or "-", " ".join(f"{k}={v}" for k, v in sorted(r.demand.items())),
             (f"[{r.reason}] " if with_reason and r.reason else "") + r.message] for r in requests]
    return [f"#### {title} ({len(requests)})", "", *_table(["step", "policy", "demand", "why"], rows, "steps"), ""]


def _preempted(plan: Plan) -> list[str]:
    if not plan.preempted:
        return []
    rows = [[f"`{p.id}`", p.pool, ", ".join(f"`{x}`" for x in p.for_[:5]) + (" …" if len(p.for_) > 5 else ""),
             p.message] for p in plan.preempted]
    return [f"#### Preempted ({len(plan.preempted)})", "",
            *_table(["allocation", "pool", "for", "why"], rows, "preemptions"), ""]


def _runtime(plan: Plan) -> list[str]:
    if plan.runtime is None or plan.runtime.agrees:
        return []
    rows = [[f"`{x.id}`", x.plan, x.cluster, x.message] for x in plan.runtime.differences]
    return [f"#### Where the cluster will differ ({len(rows)})", "",
            *_table(["step or allocation", "plan", "cluster", "why"], rows, "differences"), ""]


def render_markdown(plan: Plan, *, diffs: Mapping[str, str] | None = None) -> str:
    """The comment; always under GitHub's 65,536-character limit."""
    head = _headline(plan)
    body = [*_runtime(plan), *_requests("Rejected", plan.by_status("rejected"), True),
            *_requests("Queued", plan.by_status("queued"), False), *_preempted(plan), *_pools(plan),
            *_policies(plan)]
    text = "\n".join(head + body)
    if len(text) > BUDGET:
        text = text[:BUDGET].rsplit("\n", 1)[0] + "\n\n_The comment is cut here to stay under GitHub's size limit; " \
               "`poolc plan --format json` has the whole plan._"
    if plan.changes is not None:
        text += "\n" + "\n".join(_changes(plan, diffs or {}, max(0, BUDGET - len(text))))
    text = text.rstrip() + "\n"
    return text if len(text) < LIMIT else text[:LIMIT - 200].rsplit("\n", 1)[0] + "\n\n_(cut)_\n"
