"""The plan as text for people: pool tables, steps by status, preemptions, the
solver's verdict and what changes against the state.

Rendered with rich at a fixed width of 100 columns and recorded, so the text is
the same on every terminal and in CI logs; colour only when asked for. Nothing
time-dependent is printed (timings go to stderr with --verbose).

Every string of the plan came from input (a saved plan, or names and messages
from the repository): the console reads no markup, and each string is escaped
for a text channel first (``poolc.escape.text``), diffs line by line.
"""

from __future__ import annotations

import io
from collections.abc import Mapping

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from .. import escape
from ..domain.plan import Plan, Runtime
from .objective import objective_rows, proofs

WIDTH = 100
_STATUSES = (("allocated", "green"), ("queued", "yellow"), ("rejected", "red"))


def _amounts(amounts: Mapping[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(amounts.items())) or "-"


def _indented(content: Text | Table | str, left: int) -> Padding:
    """Wrapped lines keep the indent (a long message stays readable)."""
    return Padding(Text(content) if isinstance(content, str) else content, (0, 0, 0, left))


def _table(*columns: str) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _objective(console: Console, tiers: list[tuple[str, str, int]], proven: list[str]) -> None:
    """Each tier in the order it was optimised, the ones above held at their values;
    with a proof column (`proofs`) when some tier is not proven."""
    if not tiers:
        return
    console.print(Text("Objective, in order (each tier optimised with the ones above held)", style="bold underline"))
    table = _table("", "what", "value", *(["proof"] if proven else []))
    table.columns[2].justify = "right"
    for row, (goal, what, value) in enumerate(tiers):
        table.add_row(goal, what, str(value), *([proven[row]] if proven else []))
    console.print(_indented(table, 2))
    console.print()


def _pools(console: Console, plan: Plan) -> None:
    console.print(Text("Pools", style="bold underline"))
    if not plan.pools:
        console.print("  (no pools)")
    for pool in plan.pools:
        table = _table("key", "capacity", "used", "free")
        for column in table.columns[1:]:
            column.justify = "right"
        for key in pool.capacity:
            free = pool.free[key]
            table.add_row(key, str(pool.capacity[key]), str(pool.used[key]),
                          Text(str(free), style="red" if free < 0 else ""))
        console.print(_indented(Text(pool.name, style="bold"), 2))
        console.print(_indented(table, 4))
        console.print()


def _policies(console: Console, plan: Plan) -> None:
    """Per policy and metered key: reserved, used (running and admitted),
    borrowed above the reserved share, limit."""
    if not plan.policies:
        return
    console.print(Text("Policies", style="bold underline"))
    table = _table("policy", "pool", "priority", "key", "reserved", "used", "borrowed", "limit")
    for column in table.columns[2:]:
        column.justify = "left" if column.header == "key" else "right"
    for policy in plan.policies:
        for i, key in enumerate(policy.used):
            first = i == 0
            table.add_row(policy.name if first else "", policy.pool if first else "",
                          str(policy.priority) if first else "", key, str(policy.reserved[key]),
                          str(policy.used[key]), str(policy.borrowed[key]), str(policy.limit[key]))
    console.print(_indented(table, 2))
    console.print()


def _requests(console: Console, plan: Plan) -> None:
    for status, style in _STATUSES:
        found = plan.by_status(status)
        console.print(Text(f"{status.capitalize()} ({len(found)})", style=f"bold underline {style}"))
        if not found:
            console.print("  none")
        for request in found:
            place = f"{request.pool} via {request.policy}" if request.pool else \
                ("outside every pool" if request.reason == "UNMANAGED" else
                 f"waits in {request.policy}" if request.policy else "-")
            kind = "" if request.preemptible else ", non-preemptible"
            console.print(_indented(Text.assemble((request.id, "bold"),
                                                  f"  {request.requester or '-'}{kind}  {place}"), 2))
            console.print(_indented(f"demand  {_amounts(request.demand)}", 6))
            # a queued step's reason is the first rule its message names already
            why = f"[{request.reason}] " if request.reason and status != "queued" else ""
            console.print(_indented(Text(f"{why}{request.message}", style=style), 6))
        console.print()


def _preemptions(console: Console, plan: Plan) -> None:
    console.print(Text(f"Preempted ({len(plan.preempted)})", style="bold underline"))
    if not plan.preempted:
        console.print("  none")
    for victim in plan.preempted:
        console.print(_indented(Text.assemble((victim.id, "bold"), f"  in pool {victim.pool}"), 2))
        console.print(_indented(Text(victim.message, style="magenta"), 6))
    console.print()


_FILE_SIGN = {"create": ("+", "green"), "delete": ("-", "red"), "update": ("~", "yellow")}
# A pull request with a thousand new Jobs must not print a thousand diffs.
MAX_DIFF_LINES = 40
MAX_DIFFS = 20


def _changes(console: Console, changes: Mapping, diffs: Mapping[str, str]) -> None:
    allocations = changes.get("allocations", {})
    added, removed = allocations.get("added", []), allocations.get("removed", [])
    resized, unchanged = allocations.get("resized", []), allocations.get("unchanged", [])
    files = changes.get("files", [])
    console.print(Text("Changes", style="bold underline"))
    console.print(f"  allocations: {len(added)} new, {len(removed)} removed, {len(resized)} resized, "
                  f"{len(unchanged)} unchanged")
    for name in added:
        console.print(Text(f"  + {name}", style="green"))
    for name in removed:
        console.print(Text(f"  - {name}", style="red"))
    for name in resized:
        console.print(Text(f"  ~ {name}", style="yellow"))
    counts = {action: sum(1 for f in files if f["action"] == action) for action in _FILE_SIGN}
    console.print(f"  generated files: {counts['create']} to create, {counts['update']} to update, "
                  f"{counts['delete']} to delete")
    for item in files:
        sign, style = _FILE_SIGN[item["action"]]
        console.print(Text(f"  {sign} {item['path']}", style=style))
    shown = 0
    for item in files:
        diff = diffs.get(item["path"])
        if not diff or shown >= MAX_DIFFS:
            continue
        shown += 1
        lines = diff.splitlines()
        for line in lines[:MAX_DIFF_LINES]:
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
            console.print(Text(f"    {line}", style=style))
        if len(lines) > MAX_DIFF_LINES:
            console.print(f"    ... {len(lines) - MAX_DIFF_LINES} more lines")
    hidden = sum(1 for item in files if diffs.get(item["path"])) - shown
    if hidden > 0:
        console.print(f"  ... and the diffs of {hidden} more files")
    state = changes.get("state")
    console.print(f"  state: {'will be ' + ('created' if state == 'create' else 'updated') if state else 'unchanged'}")
    console.print()


def _runtime(console: Console, runtime: Runtime) -> None:
    """What the cluster will do with what apply writes, where it differs from the plan."""
    console.print(Text(f"What the cluster will do ({runtime.engine})", style="bold underline"))
    if runtime.stopped:
        console.print(_indented(f"stopped: {runtime.stopped}", 2), style="yellow")
    elif runtime.agrees:
        console.print("  agrees with the plan on every Kubernetes request and running allocation")
    for difference in runtime.differences:
        console.print(Text(f"  ! {difference.id}  plan: {difference.plan}, cluster: {difference.cluster}",
                           style="yellow"))
        console.print(_indented(difference.message, 6))
    for note in runtime.notes:
        console.print(_indented(f"note: {note}", 2))
    console.print()


def _external(console: Console, plan: Plan) -> None:
    """Foreign work the cluster runs through poolc's queues: counted, never planned."""
    if not plan.external:
        return
    console.print(Text("Running outside poolc (admitted through poolc's queues)", style="bold underline"))
    for item in plan.external:
        holds = ", ".join(f"{k}={v}" for k, v in sorted(item.holds.items()))
        console.print(Text(f"  {item.name}  policy {item.policy}, pool {item.pool}: {holds}"))
    console.print()


def render_plan(plan: Plan, *, color: bool, diffs: Mapping[str, str] | None = None) -> str:
    """The text plan, as people read it in a terminal or a CI log; ``diffs``: the
    unified diff of each generated file known on disk (`poolc plan` has them; a
    saved plan does not)."""
    plan = escape.deep(plan, escape.text)
    diffs = {escape.text(path): "\n".join(escape.block(diff)) for path, diff in (diffs or {}).items()}
    console = Console(file=io.StringIO(), record=True, width=WIDTH, color_system="standard" if color else None,
                      force_terminal=color, no_color=not color, highlight=False, emoji=False, markup=False,
                      soft_wrap=False, legacy_windows=False)
    solver = plan.solver
    tiers = objective_rows(solver)
    objective = "" if tiers else f", objective {' '.join(str(v) for v in solver.objective) or '-'}"
    console.print(Text(f"Plan: strategy {solver.strategy}, status {solver.status}, gap {solver.gap:g}{objective}",
                       style="bold"))
    console.print(f"inputs {plan.inputs_digest}")
    counts = ", ".join(f"{len(plan.by_status(s))} {s}" for s, _ in _STATUSES)
    console.print(f"{len(plan.requests)} steps: {counts}; {len(plan.preempted)} preempted")
    console.print()
    _objective(console, tiers, proofs(solver))
    _pools(console, plan)
    _policies(console, plan)
    _requests(console, plan)
    _preemptions(console, plan)
    _external(console, plan)
    if plan.runtime is not None:
        _runtime(console, plan.runtime)
    if plan.changes is not None:
        _changes(console, plan.changes, diffs or {})
    text = console.export_text(styles=color)
    return escape.guard_lines("".join(line.rstrip() + "\n" for line in text.splitlines()))
