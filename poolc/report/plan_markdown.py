"""The plan as a pull-request comment (`poolc plan --format markdown`, `poolc show`).

A reviewer has ten seconds: the first screen says what the change does (with
`--base`: the inputs changed, steps whose fate changed, each policy's counts
before → after), who loses running work (a warning line), and why steps wait.
A change with no effect is one paragraph. Then the plan as a whole: where the
cluster will do otherwise (each such step once, with what really happens),
preemptions, queued and rejected steps, and, folded, pools, policies, the
solver's tiers and what `apply` writes (minimal diffs).

Names and amounts are people's: step ids rather than allocation names, the
pipeline's team, `4 GPU, 32 cores, 256 GiB`. GitHub refuses comments over
65,536 characters: every section gets a fair share of the budget (a small
section leaves what it does not use to the big ones), and a table that does
not fit ends after its last whole row with a line saying how many more rows
the full plan has. Nothing is cut inside a table or a diff.

A configuration with errors gets no plan: ``render_errors`` is the comment then.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from ..diagnostics import Diagnostic
from ..domain.amounts import Units
from ..domain.change import BaseComparison
from ..domain.plan import Plan, PlanChanges, PlannedRequest
from ..text import escape
from ..text.escape import md_code, md_fence, md_html
from . import consequences
from . import plan_view as view
from .objective import objective_rows, unproven_line
from .quantities import amounts, cell, key_name

LIMIT = 65_536
# What the sections may use together; the headline and the notes need the rest.
BUDGET = 60_000
MAX_ROWS = 200
MAX_NAMES = 10          # names listed in one line (the warning) before "and N more"
UNLIMITED = 10**9
_WHERE = "`poolc show PLANFILE --format json` or `poolc plan --format json` has them all"
BAR_WIDTH = 10


def _cell(text: object) -> str:
    """A table cell: pipes and line breaks would break the table."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    """Inline code that survives any run of backticks inside it (``poolc.text.escape``)."""
    return md_code(text)


def _who(person: view.Who) -> str:
    return _code(person.name)


def _team(person: view.Who) -> str:
    return _prose(person.team) if person.team else "-"


def _prose(text: object) -> str:
    """Text from a plan file in the comment's prose: emphasis, code and strikethrough
    characters escaped (``md_inert``'s zero-width spaces dropped first: ``md_text``
    places its own), #42: a pool or a message of ``__x__`` rendered bold."""
    return escape.md_text(str(text).replace("\u200b", ""))


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


def _names(people: Sequence[view.Who]) -> str:
    shown = ", ".join(f"{_code(p.name)}" + (f" ({_prose(p.team)})" if p.team else "") for p in people[:MAX_NAMES])
    return shown + (f" and {len(people) - MAX_NAMES} more" if len(people) > MAX_NAMES else "")


def _verdict(plan: Plan) -> str:
    solver = plan.solver
    proven = "proven optimal" if solver.status == "OPTIMAL" else f"{_prose(solver.status)}, gap {solver.gap:g}"
    runtime = ""
    if plan.runtime is not None:
        runtime = (" · the cluster (Kueue) agrees" if plan.runtime.agrees
                   else f" · **the cluster (Kueue) will do otherwise for {len(plan.runtime.differences)}**")
    return f"strategy `{solver.strategy}` ({proven}){runtime}"


def _verdict_lines(plan: Plan) -> list[str]:
    """The verdict, what was not proven or not checked, and who decides under `--submit all`."""
    lines = [_verdict(plan), "", *_not_proven(plan)]
    if plan.runtime is not None and plan.runtime.submit == "all" and plan.solver.strategy != "kueue":
        lines += ["> Every Job goes to Kueue (`--submit all`): Kueue, not this plan, decides which steps wait "
                  "and which running work it preempts. The plan to read is "
                  "`poolc plan --strategy kueue --submit all`.", ""]
    return lines


# --- the change ---------------------------------------------------------------------

def _warning(ended: Sequence[consequences.Ends], when: str) -> list[str]:
    """One line naming everyone whose running work ends, and how."""
    if not ended:
        return []
    shown = consequences.grouped(list(ended[:MAX_NAMES]), lambda who: _code(who.name)
                                 + (f" ({_prose(who.team)})" if who.team else ""))
    more = f"; and {len(ended) - MAX_NAMES} more" if len(ended) > MAX_NAMES else ""
    return [f"> [!WARNING]\n> **Running work ends {when}:** {shown}{more}.", ""]


def _how(e: consequences.Ends) -> str:
    return consequences.how(e)


def _change_head(plan: Plan, base: BaseComparison) -> list[str]:
    lines = [f"### poolc: {consequences.headline(plan, base)}", ""]
    lines += _warning(consequences.ended_work(plan, base), "when this change is applied")
    return lines


def _ended(plan: Plan, base: BaseComparison, budget: int) -> list[str]:
    ended = consequences.ended_work(plan, base)
    if not ended:
        return []
    rows = [[_who(e.who), _team(e.who), f"**{_how(e)}**", e.why] for e in ended]
    return [f"#### Running work that ends ({len(rows)})", "",
            *_table(["step", "team", "what happens", "why"], rows, "steps", budget), ""]


def _over(plan: Plan, base: BaseComparison, budget: int) -> list[str]:
    found = consequences.over_bounds(plan, base)
    if not found:
        return []
    rows = []
    for item in found:
        waiting = (f"; waiting on it now: {_names(list(item.waiting))}" if item.waiting
                   else "; no step of it waits now")
        held, new, over = (cell(item.key, x, plan.units) for x in (item.held, item.new, item.over))
        rows.append([f"{item.kind} {_code(item.name)}", key_name(item.key), held, f"{item.bound} {new}", f"**{over}**",
                     f"{consequences.nothing_stops(item)}; {consequences.holds_back(item, plan.units)}{waiting}"])
    return [f"#### Over a lowered limit, reservation or capacity ({len(rows)})", "",
            *_table(["", "resource", "holds", "now", "over", "what follows"], rows, "rows", budget), ""]


def _inputs(base: BaseComparison, units: Units, budget: int) -> list[str]:
    if not base.inputs:
        return []
    rows = [[kind, _code(name), what] for kind, name, what in (view.input_sentence(x, units) for x in base.inputs)]
    return [f"#### What changed ({len(rows)})", "", *_table(["", "name", "change"], rows, "inputs", budget), ""]


def _fates(plan: Plan, base: BaseComparison, budget: int) -> list[str]:
    fates = view.fate_changes(plan, base, frozenset(e.who.name for e in consequences.ended_work(plan, base)))
    if not fates:
        return []
    rows = [[_who(f.who), _team(f.who), f.before, f"**{f.after}**", f.why] for f in fates]
    return [f"#### Steps whose fate changed ({len(rows)})", "",
            *_table(["step", "team", "before", "now", "why"], rows, "steps", budget), ""]


def _policy_counts(plan: Plan, base: BaseComparison, budget: int) -> list[str]:
    lines: list[str] = []
    if base.policies:
        def moved(pair: tuple[int, int]) -> str:
            return str(pair[0]) if pair[0] == pair[1] else f"{pair[0]} → **{pair[1]}**"

        rows = [[_code(p.name), moved(p.admitted), moved(p.queued), moved(p.preempted)] for p in base.policies]
        lines += ["#### Per policy", "", *_table(["policy", "admitted", "queued", "preempted"], rows, "policies",
                                                 budget), ""]
    spared = view.spared_allocations(plan, base)
    if spared:
        lines += [f"No longer preempted (they keep running): {_names(spared)}.", ""]
    return lines


def no_changes(plan: Plan) -> str:
    """The whole comment for a change with no effect on the plan: one paragraph."""
    return (f"**poolc: no changes.** This change leaves the plan as it is on the base branch: "
            f"{view.counts(plan)}; no step's fate, no preemption and no policy's share changes.\n")


# --- the plan as a whole ------------------------------------------------------------

def _cluster(plan: Plan, budget: int) -> list[str]:
    rows = [[_who(x.who), _team(x.who), f"**{x.cluster}**", x.plan, x.why] for x in view.cluster_differences(plan)]
    if not rows:
        return []
    return [f"#### Where the cluster will do otherwise than the plan ({len(rows)})", "",
            "Each step below is listed only here: this is what will happen.", "",
            *_table(["step", "team", "the cluster", "the plan", "why"], rows, "steps", budget), ""]


def _preempted(plan: Plan, budget: int) -> list[str]:
    stopped = view.preempted(plan)
    if not stopped:
        return []
    rows = [[_who(s.who), _team(s.who), _prose(s.pool),
             ", ".join(_code(x) for x in s.for_[:5]) + (" …" if len(s.for_) > 5 else ""), _prose(s.why)]
            for s in stopped]
    return [f"#### Running work preempted ({len(rows)})", "",
            *_table(["step", "team", "pool", "to make room for", "why"], rows, "preemptions", budget), ""]


def _requests(title: str, requests: list[PlannedRequest], plan: Plan, budget: int, *, rule: bool) -> list[str]:
    if not requests:
        return []
    rows = [[_code(r.id), _prose(plan.team_of(r.id)) if plan.team_of(r.id) else "-",
             _prose(r.policy) if r.policy else "-", amounts(r.demand, plan.units),
             (f"[{r.reason}] " if rule and r.reason else "") + view.say(plan, r.message)] for r in requests]
    return [f"#### {title} ({len(requests)})", "",
            *_table(["step", "team", "policy", "demand", "why"], rows, "steps", budget), ""]


def _folded(summary: str, lines: list[str]) -> list[str]:
    if not lines:
        return []
    return [f"<details><summary>{summary}</summary>", "", *lines, "</details>", ""]


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
            rows.append([_prose(pool.name), key_name(key), cell(key, pool.capacity[key], plan.units),
                         cell(key, pool.used.get(key, 0), plan.units),
                         cell(key, pool.free.get(key, 0), plan.units), bar(pool.used.get(key, 0), pool.capacity[key])])
    if not rows:
        return []
    return _folded("Pools: capacity and use", _table(["pool", "resource", "capacity", "used", "free", ""], rows,
                                                      "rows", budget))


def _policies(plan: Plan, budget: int) -> list[str]:
    """Per policy and metered key: reserved, used (running and admitted), borrowed
    above the reserved share, limit; the bar is what it uses of its limit."""
    rows = [[_prose(policy.name), _prose(policy.pool), policy.priority, key_name(key),
             cell(key, policy.reserved[key], plan.units), cell(key, policy.used[key], plan.units),
             cell(key, policy.borrowed[key], plan.units), cell(key, policy.limit[key], plan.units),
             bar(policy.used[key], policy.limit[key])]
            for policy in plan.policies for key in policy.used]
    if not rows:
        return []
    return _folded("Policies: reserved, used, borrowed, limit", _table(
        ["policy", "pool", "priority", "resource", "reserved", "used", "borrowed", "limit", "of the limit"],
        rows, "rows", budget))


def _tiers(plan: Plan) -> list[str]:
    tiers = objective_rows(plan.solver)
    if not tiers:
        return []
    return _folded("What the solver maximised and minimised, tier by tier",
                   [*_table(["", "tier", "value"], [list(row) for row in tiers], "tiers", UNLIMITED), ""])


def _applying(plan: Plan, diffs: Mapping[str, str], budget: int) -> list[str]:
    """What `poolc apply` writes for this plan against the state: allocations that
    start and stop, generated files, minimal diffs folded."""
    changes = plan.changes or PlanChanges()
    allocations, files = changes.allocations, changes.files
    started, stopped, resized = allocations.added, allocations.removed, allocations.resized
    restarted = allocations.restarted + allocations.restart_unknown
    extra = "".join(f", {word}" for count, word in (
        (len(resized), f"releases {len(resized)} resized"),
        (len(allocations.restarted), f"restarts {len(allocations.restarted)} with a new Job"),
        (len(allocations.restart_unknown), f"may restart {len(allocations.restart_unknown)}")) if count)
    lines = [f"Applying it starts {len(started)}{extra} and stops {len(stopped)} running step(s) "
             f"({len(allocations.unchanged) - len(restarted)} keep running); {len(files)} generated file(s) "
             f"change; the state: {changes.state or 'unchanged'}.", ""]
    signs = {"create": "+", "update": "~", "delete": "-"}
    rows = [[signs.get(f.action, "?"), _code(f.path), f.action] for f in files]
    rows += [[sign, _code(view.who(plan, name).name), word(name)] for names, sign, word in
             ((started, "+", lambda _: "starts"), (stopped, "-", lambda _: "stops"),
              (resized, "~", lambda name: view.resized_word(plan, name)),
              (allocations.restarted, "~", lambda _: "restarts (new Job)"),
              (allocations.restart_unknown, "?", lambda _: "may restart (Job file changed)"))
             for name in names]
    if rows:
        lines += _table(["", "what", "change"], rows, "changes", budget)
        lines.append("")
    used = sum(len(x) + 1 for x in lines)
    blocks = [(f"<details><summary><code>{md_html(item.path)}</code></summary>\n\n"
               f"{md_fence(diffs[item.path].rstrip(), 'diff')}\n</details>\n")
              for item in files if diffs.get(item.path)]
    if used + sum(len(block) + 1 for block in blocks) > budget:
        used += 200                                          # room for the note
    for shown, block in enumerate(blocks):
        if used + len(block) + 1 > budget:
            lines.append(f"_The diffs of {len(blocks) - shown} more files are left out to stay under GitHub's "
                         "comment size; `poolc apply` writes them._")
            break
        lines.append(block)
        used += len(block) + 1
    return _folded("What <code>poolc apply</code> would write", lines)


def _external(plan: Plan, budget: int) -> list[str]:
    """Foreign work the cluster runs through poolc's queues: counted, never planned."""
    if not plan.external:
        return []
    rows = [[_code(x.name), _prose(x.policy), _prose(x.pool), amounts(x.holds, plan.units)] for x in plan.external]
    return [f"#### Running outside poolc ({len(rows)})", "",
            *_table(["workload", "policy", "pool", "holds"], rows, "foreign workloads", budget), ""]


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
    """The comment; always under GitHub's 65,536-character limit. Every string of the
    plan is input: made inert for Markdown first (``poolc.text.escape.md_inert``, which
    also bounds each field), the result passes the runner guard last."""
    return render_comment(plan, diffs=diffs)


def render_comment(plan: Plan, *, diffs: Mapping[str, str] | None = None, forecast: str | None = None) -> str:
    """The comment composed of its sections; ``forecast`` (another command's section,
    already rendered and escaped, outside the size budget) goes after the comment's
    lead: the title, the lines under it and, against a base plan, the inputs that
    changed (the forecast is what that change does in time and money)."""
    lead, rest = _composed(plan, diffs)
    if forecast is None:
        return escape.guard_lines("\n".join(lead + rest).rstrip() + "\n") if rest is not None else lead[0]
    if rest is None:                       # the one paragraph of a change with no effect
        return lead[0].rstrip("\n") + "\n\n" + forecast
    bottom = "\n".join(rest).rstrip()
    if not bottom:
        return escape.guard_lines("\n".join(lead).rstrip()) + "\n\n" + forecast
    return (escape.guard_lines("\n".join(lead).rstrip("\n")) + "\n\n" + forecast + "\n"
            + escape.guard_lines(bottom + "\n"))


def _composed(plan: Plan, diffs: Mapping[str, str] | None) -> tuple[list[str], list[str] | None]:
    """The comment's lines as its lead and the rest, each section within its share of
    the size budget; the whole comment as one text and None when the change has no effect."""
    plan = escape.deep(plan, escape.md_inert)
    base = plan.base
    if base is not None and base.no_effect:
        return [no_changes(plan)], None
    sections: list[Callable[[int], list[str]]] = []
    if base is not None:
        head = _change_head(plan, base)
        sections += [lambda budget: _inputs(base, plan.units, budget), lambda budget: _ended(plan, base, budget),
                     lambda budget: _over(plan, base, budget), lambda budget: _fates(plan, base, budget),
                     lambda budget: _policy_counts(plan, base, budget),
                     lambda budget: [f"#### The whole plan: {view.counts(plan)}", "", *_verdict_lines(plan)]]
    else:
        head = [f"### poolc plan: {view.counts(plan)}", ""]
        head += _warning(consequences.ended_work(plan), "when this plan is applied")
        head += _verdict_lines(plan)
    sections += [
        lambda budget: _cluster(plan, budget),
        lambda budget: _preempted(plan, budget),
        lambda budget: _requests("Queued", view.waiting(plan), plan, budget, rule=False),
        lambda budget: _requests("Rejected", plan.by_status("rejected"), plan, budget, rule=True),
        lambda budget: _external(plan, budget),
        lambda budget: _pools(plan, budget),
        lambda budget: _policies(plan, budget),
        lambda budget: _tiers(plan),
    ]
    if plan.changes is not None:
        sections.append(lambda budget: _applying(plan, diffs or {}, budget))
    sizes = [len("\n".join(section(UNLIMITED))) + 1 for section in sections]
    shares = _shares(sizes, BUDGET - len("\n".join(head)))
    parts = [section(share) for section, share in zip(sections, shares, strict=True)]
    leading = 1 if base is not None else 0      # against a base, the inputs that changed lead too
    lead = head + [line for part in parts[:leading] for line in part]
    return lead, [line for part in parts[leading:] for line in part]


def render_errors(errors: Sequence[Diagnostic], command: str) -> str:
    """The comment for a configuration with errors: no plan, each error with its
    place, rule and message, and the command that shows them locally."""
    count = len(errors)
    lines = [f"### poolc: {count} error{'s' if count != 1 else ''}, no plan", "",
             "The configuration has errors, so poolc made no plan (a plan of it would be a plan of "
             "another platform). Fix these first:", ""]
    used = sum(len(x) + 1 for x in lines) + 400
    for shown, x in enumerate(errors):
        line = (f"- {_code(f'{x.file}:{x.line}:{x.column}')} **{escape.md_text(x.rule)}** "
                f"{_cell(escape.md_text(x.message))}")
        if used + len(line) + 1 > BUDGET:
            lines.append(f"- _and {count - shown} more errors; run the command below to see them all._")
            break
        lines.append(line)
        used += len(line) + 1
    # a fence longer than any backtick run in the command: a crafted path cannot close it (#42)
    lines += ["", "Reproduce locally:", "", escape.md_fence(command, "sh")]
    return escape.guard_lines("\n".join(lines) + "\n")
