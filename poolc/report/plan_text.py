"""The plan as text for people. With a base plan (`plan --base`) it leads with
what the change does (inputs changed, steps whose fate changed, each policy's
counts before -> after, running work that ends and bounds lowered below use, a
warning line naming every step whose running work ends); a
change with no effect is one paragraph. Then the plan: the solver's verdict,
pools and policies in users' units, steps by status (each step whose fate the
cluster decides otherwise listed once, with what really happens), preemptions
and what apply changes against the state.

Rendered with rich at a fixed width of 100 columns and recorded, so the text is
the same on every terminal and in CI logs; colour only when asked for. Nothing
time-dependent is printed (timings go to stderr with --verbose).
"""

from __future__ import annotations

import io
from collections.abc import Mapping

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..domain.change import BaseComparison
from ..domain.plan import Plan, PlanChanges
from ..text import escape
from ..vocabulary import RequestStatus
from . import consequences
from . import plan_view as view
from .objective import objective_rows, proofs
from .quantities import amounts, cell, key_name

WIDTH = 100
_STATUSES: tuple[tuple[RequestStatus, str], ...] = (("allocated", "green"), ("queued", "yellow"), ("rejected", "red"))


def _indented(content: Text | Table | str, left: int) -> Padding:
    """Wrapped lines keep the indent (a long message stays readable)."""
    return Padding(Text(content) if isinstance(content, str) else content, (0, 0, 0, left))


# columns of sentences, which wrap at spaces; every other column holds a name or a
# number and is never wrapped (a name cut mid-word reads as two names)
_PROSE = {"what"}


def _table(*columns: str) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold", no_wrap=column not in _PROSE)
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
        table = _table("resource", "capacity", "used", "free")
        for column in table.columns[1:]:
            column.justify = "right"
        for key in pool.capacity:
            free = pool.free[key]
            capacity, used, left = (cell(key, x, plan.units) for x in (pool.capacity[key], pool.used[key], free))
            table.add_row(key_name(key), capacity, used, Text(left, style="red" if free < 0 else ""))
        console.print(_indented(Text(pool.name, style="bold"), 2))
        console.print(_indented(table, 4))
        console.print()


def _policies(console: Console, plan: Plan) -> None:
    """Per policy and metered key: reserved, used (running and admitted),
    borrowed above the reserved share, limit."""
    if not plan.policies:
        return
    console.print(Text("Policies", style="bold underline"))
    table = _table("policy", "pool", "priority", "resource", "reserved", "used", "borrowed", "limit")
    for column in table.columns[2:]:
        column.justify = "left" if column.header == "resource" else "right"
    for policy in plan.policies:
        for i, key in enumerate(policy.used):
            first = i == 0
            table.add_row(policy.name if first else "", policy.pool if first else "",
                          str(policy.priority) if first else "", key_name(key),
                          *(cell(key, x[key], plan.units) for x in (policy.reserved, policy.used, policy.borrowed,
                                                                     policy.limit)))
    console.print(_indented(table, 2))
    console.print()


def _requests(console: Console, plan: Plan) -> None:
    decided = {x.who.name for x in view.cluster_differences(plan)}
    for status, style in _STATUSES:
        found = view.waiting(plan) if status == "queued" else \
            [r for r in plan.by_status(status) if r.id not in decided]
        console.print(Text(f"{status.capitalize()} ({len(found)})", style=f"bold underline {style}"))
        if not found:
            console.print("  none")
        for request in found:
            place = f"{request.pool} via {request.policy}" if request.pool else \
                ("outside every pool" if request.reason == "UNMANAGED" else
                 f"waits in {request.policy}" if request.policy else "-")
            kind = "" if request.preemptible else ", non-preemptible"
            team = plan.team_of(request.id)
            team = None if team == request.requester else team        # the requester is said next to it
            console.print(_indented(Text.assemble((request.id, "bold"), f" ({team})" if team else "",
                                                  f"  {request.requester or '-'}{kind}  {place}"), 2))
            console.print(_indented(f"demand  {amounts(request.demand, plan.units)}", 6))
            # a queued step's reason is the first rule its message names already
            reason = request.reason if status != "queued" else None
            why = f"[{reason}] " if reason else ""
            message = view.say(plan, request.message)
            if reason and message.lower().startswith(f"{reason.lower()}: "):
                message = message[len(reason) + 2:]   # "unmanaged: ...": the tag says it once
            console.print(_indented(Text(f"{why}{message}", style=style), 6))
        console.print()


def _preemptions(console: Console, plan: Plan) -> None:
    stopped = view.preempted(plan)
    console.print(Text(f"Running work preempted ({len(stopped)})", style="bold underline"))
    if not stopped:
        console.print("  none")
    for victim in stopped:
        console.print(_indented(Text.assemble((victim.who.label(), "bold"), f"  in pool {victim.pool}"), 2))
        console.print(_indented(Text(victim.why, style="magenta"), 6))
    console.print()


_FILE_SIGN = {"create": ("+", "green"), "delete": ("-", "red"), "update": ("~", "yellow")}
# A pull request with a thousand new Jobs must not print a thousand diffs.
MAX_DIFF_LINES = 40
MAX_DIFFS = 20


def _changes(console: Console, plan: Plan, changes: PlanChanges, diffs: Mapping[str, str]) -> None:
    allocations = changes.allocations
    added, removed = allocations.added, allocations.removed
    resized, unchanged = allocations.resized, allocations.unchanged
    files = changes.files
    console.print(Text("Changes", style="bold underline"))
    restarted, unknown = allocations.restarted, allocations.restart_unknown
    extra = "".join(f"{count} {word}, " for count, word in ((len(resized), "released resized"),
                                                              (len(restarted), "restart with a new Job"),
                                                              (len(unknown), "may restart")) if count)
    console.print(f"  running steps: {len(added)} start, {len(removed)} stop, {extra}"
                  f"{len(unchanged) - len(restarted) - len(unknown)} keep running")
    for name in added:
        console.print(Text(f"  + {view.who(plan, name).label()} starts", style="green"))
    for name in removed:
        console.print(Text(f"  - {view.who(plan, name).label()} stops", style="red"))
    for name in resized:
        console.print(Text(f"  ~ {view.who(plan, name).label()} {view.resized_word(plan, name)}", style="yellow"))
    for name in restarted:
        console.print(Text(f"  ~ {view.who(plan, name).label()} restarts (new Job)", style="yellow"))
    for name in unknown:
        console.print(Text(f"  ? {view.who(plan, name).label()} may restart (Job file changed)", style="yellow"))
    counts = {action: sum(1 for f in files if f.action == action) for action in _FILE_SIGN}
    console.print(f"  generated files: {counts['create']} to create, {counts['update']} to update, "
                  f"{counts['delete']} to delete")
    for item in files:
        sign, style = _FILE_SIGN[item.action]
        console.print(Text(f"  {sign} {item.path}", style=style))
    shown = 0
    for item in files:
        diff = diffs.get(item.path)
        if not diff or shown >= MAX_DIFFS:
            continue
        shown += 1
        lines = diff.splitlines()
        for line in lines[:MAX_DIFF_LINES]:
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
            console.print(Text(f"    {line}", style=style))
        if len(lines) > MAX_DIFF_LINES:
            console.print(f"    ... {len(lines) - MAX_DIFF_LINES} more lines")
    hidden = sum(1 for item in files if diffs.get(item.path)) - shown
    if hidden > 0:
        console.print(f"  ... and the diffs of {hidden} more files")
    state = changes.state
    console.print(f"  state: {'will be ' + ('created' if state == 'create' else 'updated') if state else 'unchanged'}")
    console.print()


def _runtime(console: Console, plan: Plan) -> None:
    """What the cluster will do with what apply writes, where it differs from the
    plan: each such step once (it is left out of the lists above)."""
    runtime = plan.runtime
    assert runtime is not None
    console.print(Text(f"What the cluster will do ({runtime.engine})", style="bold underline"))
    if runtime.stopped:
        console.print(_indented(f"stopped: {runtime.stopped}", 2), style="yellow")
    elif runtime.agrees:
        console.print("  agrees with the plan on every Kubernetes request and running allocation")
    for difference in view.cluster_differences(plan):
        console.print(Text(f"  ! {difference.who.label()}  {difference.cluster} (the plan: {difference.plan})",
                           style="yellow"))
        console.print(_indented(difference.why, 6))
    for note in runtime.notes:
        console.print(_indented(f"note: {note}", 2))
    console.print()


def _warning(ended: list[consequences.Ends], when: str) -> Text | None:
    if not ended:
        return None
    shown = consequences.grouped(ended[:10], lambda who: who.label())
    more = f"; and {len(ended) - 10} more" if len(ended) > 10 else ""
    return Text(f"WARNING: running work ends {when}: {shown}{more}", style="bold red")


def _change(console: Console, plan: Plan, base: BaseComparison) -> None:
    """What the change does against the base plan, first."""
    console.print(Text(f"Change: {consequences.headline(plan, base)}", style="bold"))
    ended = consequences.ended_work(plan, base)
    warning = _warning(ended, "when this change is applied")
    if warning is not None:
        console.print(warning)
    console.print()
    if base.inputs:
        console.print(Text(f"What changed ({len(base.inputs)})", style="bold underline"))
        for kind, name, what in (view.input_sentence(x, plan.units) for x in base.inputs):
            console.print(_indented(f"{kind} {name}: {what}", 2))
        console.print()
    if ended:
        console.print(Text(f"Running work that ends ({len(ended)})", style="bold underline"))
        for e in ended:
            how = "is preempted" if e.how == consequences.PREEMPTED else f"{e.how} ({e.cause})"
            console.print(_indented(Text.assemble((e.who.label(), "bold"), f"  {how}"), 2))
            console.print(_indented(e.why, 6))
        console.print()
    over = consequences.over_bounds(plan, base)
    if over:
        console.print(Text(f"Over a lowered limit, reservation or capacity ({len(over)})", style="bold underline"))
        for item in over:
            waiting = (f"; waiting on it now: {', '.join(w.label() for w in item.waiting)}" if item.waiting
                       else "; no step of it waits now")
            console.print(_indented(Text(consequences.over_sentence(item, plan.units), style="bold"), 2))
            console.print(_indented(f"{consequences.holds_back(item, plan.units)}{waiting}", 6))
        console.print()
    fates = view.fate_changes(plan, base, frozenset(e.who.name for e in ended))
    if fates:
        console.print(Text(f"Steps whose fate changed ({len(fates)})", style="bold underline"))
        for fate in fates:
            console.print(_indented(Text.assemble((fate.who.label(), "bold"), f"  {fate.before} → {fate.after}"), 2))
            if fate.why:
                console.print(_indented(fate.why, 6))
        console.print()
    if base.policies:
        console.print(Text("Per policy (before → now)", style="bold underline"))
        table = _table("policy", "admitted", "queued", "preempted")
        for p in base.policies:
            table.add_row(p.name, *(f"{a} → {b}" if a != b else str(a) for a, b in (p.admitted, p.queued,
                                                                                  p.preempted)))
        console.print(_indented(table, 2))
        console.print()
    if view.spared_allocations(plan, base):
        spared = ", ".join(who.label() for who in view.spared_allocations(plan, base))
        console.print(_indented(f"no longer preempted (they keep running): {spared}", 2))
        console.print()


def _external(console: Console, plan: Plan) -> None:
    """Foreign work the cluster runs through poolc's queues: counted, never planned."""
    if not plan.external:
        return
    console.print(Text("Running outside poolc (admitted through poolc's queues)", style="bold underline"))
    for item in plan.external:
        console.print(Text(f"  {item.name}  policy {item.policy}, pool {item.pool}: {amounts(item.holds, plan.units)}"))
    console.print()


def render_plan(plan: Plan, *, color: bool, diffs: Mapping[str, str] | None = None) -> str:
    """The text plan, as people read it in a terminal or a CI log; ``diffs``: the
    unified diff of each generated file known on disk (`poolc plan` has them; a
    saved plan does not)."""
    plan = escape.deep(plan, escape.text)   # every string is input: one line, no runner command, bounded
    diffs = {escape.text(path): "\n".join(escape.block(diff)) for path, diff in (diffs or {}).items()}
    console = Console(file=io.StringIO(), record=True, width=WIDTH, color_system="standard" if color else None,
                      force_terminal=color, no_color=not color, highlight=False, emoji=False, markup=False,
                      soft_wrap=False, legacy_windows=False)
    base = plan.base
    if base is not None and base.no_effect:
        return (f"No changes: this change leaves the plan as it is on the base branch: {view.counts(plan)}; "
                "no step's fate, no preemption and no policy's share changes.\n")
    solver = plan.solver
    tiers = objective_rows(solver)
    if base is not None:
        _change(console, plan, base)
    objective = "" if tiers else f", objective {' '.join(str(v) for v in solver.objective) or '-'}"
    console.print(Text(f"Plan: strategy {solver.strategy}, status {solver.status}, gap {solver.gap:g}{objective}",
                       style="bold"))
    console.print(f"inputs {plan.inputs_digest}")
    console.print(f"{len(plan.requests)} steps: {view.counts(plan)}")
    if base is None:
        warning = _warning(consequences.ended_work(plan), "when this plan is applied")
        if warning is not None:
            console.print(warning)
    console.print()
    _objective(console, tiers, proofs(solver))
    _pools(console, plan)
    _policies(console, plan)
    if plan.runtime is not None:
        _runtime(console, plan)
    _requests(console, plan)
    _preemptions(console, plan)
    _external(console, plan)
    if plan.changes is not None:
        _changes(console, plan, plan.changes, diffs or {})
    text = console.export_text(styles=color)
    return escape.guard_lines("".join(line.rstrip() + "\n" for line in text.splitlines()))
