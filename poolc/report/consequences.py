"""What a plan does to work that runs and work that waits, beyond each step's
fate: the first screen of the change (text, comment, annotations) says it.

Two kinds of consequence:

- running work that ends: preempted, stopped (its step was resized, is no
  longer admitted by its policy, or is gone) or restarted (its Job changes, so
  apply replaces it and the running pod stops);
- a policy or pool the change leaves over a new limit, reservation or
  capacity. Kueue does not stop admitted work when quota shrinks, so nothing is
  stopped: the policy stays over until enough of its work ends, and what needs
  the key waits until then.

Both are read from the plan (its changes against the state, its policies' and
pools' use) and, for a change, its ``base`` section, so a saved plan says the
same through `poolc show`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..domain.amounts import Units
from ..domain.change import BaseComparison
from ..domain.plan import Plan, Preemption
from ..domain.said import released_because, said
from .plan_view import Who, cluster_differences, moves, preempted, say, who
from .quantities import key_word

PREEMPTED, STOPS, RESTARTS, MAY_RESTART = "preempted", "stops", "restarts", "may restart"


@dataclass(frozen=True)
class Ends:
    """Running work that ends when the plan is applied."""

    who: Who
    how: str                  # preempted | stops | restarts | may restart
    cause: str                # a word or two for the headline: preempted, resized, no longer admitted, ...
    why: str                  # the sentence a reviewer reads


def _released(plan: Plan, step: str | None) -> tuple[str, str]:
    """(cause, why) of a released allocation, from its step's message."""
    request = next((r for r in plan.requests if r.id == step), None)
    if request is None:
        return "removed", "its step is no longer in the configuration, so apply deletes its Job"
    because, rest = released_because(request.message) or (said("its request changed"), request.message)
    cause = "resized" if because.text.startswith("it now asks") else \
        "no longer admitted" if "no longer admits" in because.text else "changed"
    after = {"allocated": said("it restarts at once"), "queued": said("the step waits: ", rest),
             "rejected": said(f"the step is rejected: [{request.reason}] ", rest)}[request.status]
    return cause, say(plan, said("its running allocation is released because ", because, "; ", after))


def ended_work(plan: Plan, base: BaseComparison | None = None) -> list[Ends]:
    """Everyone whose running work ends, each once; with ``base``: only what the
    change adds to what the base branch's plan does already."""
    found: dict[str, Ends] = {}
    only = None if base is None else set(base.preempted.added) | set(base.ends.added)
    victims = {p.id: p for p in plan.preempted}
    for stopped in preempted(plan):
        name = stopped.who.allocation or stopped.who.name
        if only is None or name in only:
            found[name] = Ends(stopped.who, PREEMPTED, PREEMPTED, stopped.why + _stop_object(plan, victims.get(name)))
    for difference in cluster_differences(plan):
        if difference.cluster == "is preempted" and (only is None or difference.who.name in only
                                                      or difference.who.allocation in only):
            found[difference.who.allocation or difference.who.name] = Ends(difference.who, PREEMPTED, PREEMPTED,
                                                                           "the cluster preempts it: " + difference.why)
    changes = plan.changes
    if changes is None:
        return list(found.values())
    a = changes.allocations
    for name in (*a.resized, *(x for x in a.removed if x not in victims)):
        if only is not None and name not in only:
            continue
        person = who(plan, name)
        cause, why = _released(plan, plan.step_of_allocation(name))
        if name in a.removed and plan.step_of_allocation(name) is None:
            cause, why = "removed", "it is no longer in the configuration or the state keeps it no longer"
        restarts = any(r.id == person.name and r.status == "allocated" for r in plan.requests)
        found.setdefault(name, Ends(person, RESTARTS if restarts else STOPS, cause, why))
    for name in a.restarted:
        if only is None or name in only:
            found.setdefault(name, Ends(who(plan, name), RESTARTS, "new Job",
                                        "its Job changes (image, command or runtime), so apply replaces it: the "
                                        "running pod stops and the step starts again from the beginning"))
    for name in a.restart_unknown:
        if only is None or name in only:
            found.setdefault(name, Ends(who(plan, name), MAY_RESTART, "Job file changed",
                                        "its Job file changes and poolc cannot read the one apply wrote (no "
                                        "output directory): if the Job's name changes, apply replaces it and the "
                                        "running pod stops; pass --output-dir to know"))
    order = {PREEMPTED: 0, STOPS: 1, RESTARTS: 2, MAY_RESTART: 3}
    return sorted(found.values(), key=lambda e: (order[e.how], e.who.name))


def _stop_object(plan: Plan, victim: Preemption | None) -> str:
    """How apply stops a victim in gate mode: a stop object, or none when its Workload is unknown."""
    if victim is None or plan.runtime is None or plan.runtime.submit != "gate":
        return ""
    if victim.workload is not None:
        return f"; apply stops it with a stop object (its Kueue Workload {victim.workload}, deactivated)"
    return ("; its Kueue Workload is unknown, so apply writes no stop object for it "
            "(`poolc state import --kueue` records it)")


@dataclass(frozen=True)
class OverBound:
    """A policy (or pool) whose running and admitted work holds more of a key than a
    bound the change lowered: its limit, its reserved share, or the pool's capacity."""

    kind: str                 # policy | pool
    name: str
    bound: str                # limit | reserved | capacity
    key: str
    held: int
    old: int | None
    new: int
    waiting: tuple[Who, ...]  # queued steps that need the key there

    @property
    def over(self) -> int:
        return self.held - self.new


_FIELD = re.compile(r"^spec\.(limit|reserved|capacity)\.([a-z][a-z0-9_]*)$")


def over_bounds(plan: Plan, base: BaseComparison) -> list[OverBound]:
    """Every bound the change lowered below what is held, with the steps it holds back."""
    policies = {q.name: q for q in plan.policies}
    pools = {p.name: p for p in plan.pools}
    found = []
    for change in base.inputs:
        for path, (old, new) in change.fields.items():
            match = _FIELD.match(path)
            if match is None or not isinstance(new, int) or (isinstance(old, int) and old <= new):
                continue
            bound, key = match[1], match[2]
            if change.kind == "Policy" and change.name in policies and bound != "capacity":
                q = policies[change.name]
                held = q.used.get(key, 0)
                names = {q.name}
            elif change.kind == "ResourcePool" and change.name in pools and bound == "capacity":
                held = pools[change.name].used.get(key, 0)
                names = {x.name for x in plan.policies if x.pool == change.name}
            else:
                continue
            if held <= new:
                continue
            waiting = tuple(who(plan, r.id) for r in plan.by_status("queued")
                            if r.policy in names and r.demand.get(key, 0) > 0)
            found.append(OverBound("policy" if change.kind == "Policy" else "pool", change.name, bound, key, held,
                                   old if isinstance(old, int) else None, new, waiting))
    return found


def nothing_stops(item: OverBound) -> str:
    """Why nothing is stopped, and until when the bound holds work back."""
    if item.bound == "reserved":
        return ("its work above the share keeps running but now borrows, so a higher-priority policy's step may "
                "preempt it; a non-preemptible step of this policy runs only inside the share")
    return "nothing is stopped: Kueue does not stop admitted work when quota shrinks"


def over_sentence(item: OverBound, units: Units) -> str:
    """``policy p holds 12 GPU, 4 GPU over its new limit of 8 GPU (was 16 GPU)``; the
    names of the steps it holds back are the renderer's to list."""
    what = {"limit": "limit", "reserved": "reserved share", "capacity": "capacity"}[item.bound]
    over = "above" if item.bound == "reserved" else "over"
    was = f" (was {units.amount(item.key, item.old)})" if item.old is not None else ""
    held, by, new = (units.amount(item.key, x) for x in (item.held, item.over, item.new))
    return f"{item.kind} {item.name} holds {held}, {by} {over} its new {what} of {new}{was}; {nothing_stops(item)}"


def holds_back(item: OverBound, units: Units) -> str:
    """What the bound holds back until enough work ends, without the names."""
    free = units.amount(item.key, item.over)
    if item.bound == "reserved":
        return f"until {free} of its work ends, its waiting steps that need {key_word(item.key)} can only borrow"
    where = "its steps" if item.kind == "policy" else "steps on it"
    return f"none of {where} that need {key_word(item.key)} can start until {free} of its work ends"


def how(e: Ends) -> str:
    """``is preempted``, ``stops (resized)``, ``restarts (new Job)``."""
    return "is preempted" if e.how == PREEMPTED else f"{e.how} ({e.cause})"


def grouped(ended: list[Ends], label: Callable[[Who], str]) -> str:
    """The warning's list, one group per way the work ends: ``is preempted: a (vision),
    b (vision); restarts (new Job): c (ranking)``; at most ``limit`` names in all."""
    groups: dict[str, list[str]] = {}
    for e in ended:
        groups.setdefault(how(e), []).append(label(e.who))
    return "; ".join(f"{way}: {', '.join(names)}" for way, names in groups.items())


def headline(plan: Plan, base: BaseComparison) -> str:
    """One line: what the change does, the loss of running work first, then bounds
    left below use, then each move of a step's fate not said already."""
    if base.no_effect:
        return "no changes"
    ended = ended_work(plan, base)
    parts = []
    stops = [e for e in ended if e.how in (PREEMPTED, STOPS)]
    if stops:
        parts.append(f"stops {_count(plan, stops)} ({_causes(stops)})")
    for way in (RESTARTS, MAY_RESTART):
        restarts = [e for e in ended if e.how == way]
        if restarts:
            parts.append(f"{way} {_count(plan, restarts)} ({_causes(restarts)})")
    for item in over_bounds(plan, base):
        what = {"limit": "its limit", "reserved": "its reserved share", "capacity": "its capacity"}[item.bound]
        by = plan.units.amount(item.key, item.over)
        parts.append(f"{item.kind} {item.name} {by} above {what}" if item.bound == "reserved"
                     else f"{item.kind} {item.name} {by} over {what}, nothing stopped")
    covered = {e.who.name for e in ended}
    parts += moves(plan, base, covered)
    if base.preempted.removed:
        spared = base.preempted.removed
        noun = "step" if all(plan.step_of_allocation(n) for n in spared) else "allocation"
        parts.append(f"{len(spared)} running {noun}{'s' if len(spared) != 1 else ''} no longer preempted")
    if not parts:
        changed = len(base.inputs)
        parts.append(f"{changed} input{'s' if changed != 1 else ''} changed, no step's fate")
    return ", ".join(parts)


def _count(plan: Plan, ended: list[Ends]) -> str:
    noun = "step" if all(e.who.allocation is None or plan.step_of_allocation(e.who.allocation) for e in ended) \
        else "allocation"
    return f"{len(ended)} running {noun}{'s' if len(ended) != 1 else ''}"


def _causes(ended: list[Ends]) -> str:
    counted: dict[str, int] = {}
    for e in ended:
        counted[e.cause] = counted.get(e.cause, 0) + 1
    if len(counted) == 1:
        return next(iter(counted))
    return ", ".join(f"{n} {cause}" for cause, n in counted.items())
