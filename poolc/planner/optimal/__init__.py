"""Planning strategy `optimal` (docs/planning.md#tiers) on OR-Tools CP-SAT.

Why it is shaped this way (docs/solver.md has the measurements):

* Identical requests (same requester, demand, preemptible flag) are one *class*
  with an integer count per eligible policy, and identical victims (same policy,
  same metered holdings) one *victim class* with a preempted count (`classes`):
  thousands of requests from a few dozen shapes become a few thousand integers,
  and the symmetric 0/1 choices that would stall the proof disappear.
* The lexicographic objective is solved tier by tier (`loop`): each tier's value
  is then fixed as a constraint and the solution hinted into the next solve.
  CP-SAT proves small integer tiers fast; one big weighted objective would not.
* Counts are handed out afterwards (`hand_out`): inside a class the lowest
  arrival ranks are admitted first, inside a victim class the most recently
  started allocation is preempted first. Tiers 3 and 4 are modelled as the
  concave prefix sums those hand-outs achieve (`tiers`), so the hand-out is
  exactly optimal for them.
* Two redundant, exact strengthenings keep the proofs short at scale: the convex
  hull of each "admits nothing or fits" disjunction (`rules.cap_rule`), and a
  dominance cut among one policy's victims (`dominance`). A third, among one
  policy's request classes, is added only when the FIFO tier resists its first
  two attempts, and cleared once FIFO is fixed.
* Each count tier is solved on a restricted copy of the model: admissions below
  the tier's priority only in Z, victims below it all preempted
  (`hints.restricted`). Exact, and it removes choices that cannot matter yet.
* The start-rank tier is solved with the preference tier folded in (weighted,
  exactly lexicographic; `folds`): one proof for both. So is each "preempted at
  v" tier with the "admitted at p" tier after it, on the restricted copy of the
  second. On a large part the fold's hint is first polished: its objective with
  the admissions fixed (`loop.polished`).
* A tier not proven by its first attempt gets its kind's retry strategy
  (`retries`); a count tier or FIFO goes once to SCIP (`planner/mip.py`): on
  platforms of many shapes it proves at the root node tiers CP-SAT stops on
  after its whole share. Node and LP-iteration limits, one thread, and CP-SAT
  checks its answer before it is used.
* Independent parts (`planner/decompose.py`): pools that no request class can
  choose between are planned as separate models, one after the other, each
  with the global tier list; tier values add up (`parts`). Exact, and smaller
  models prove faster.
* The FIFO prefix sums get one segment per count a class can reach (bounded by
  capacity and limits), not one per member: on a large platform most classes
  can admit far fewer than they have members.
* Determinism: one worker, a fixed seed, a deterministic-time budget (never a
  wall clock), a model built in canonical (sorted) order, and a canonical
  hand-out. Same Problem and settings, same Solution. Each tier gets a fair
  share of the budget left (time an easy tier leaves unused passes on); a tier
  stopped by its share keeps its best value and the Solution says FEASIBLE,
  with `gap` the largest |bound - value| / max(1, |value|) over the tiers.
  Every tuning knob is one frozen `SolverSettings` value (`settings`).

Objective layout (``Solution.objective``), every value an integer:

    [ |Z|,
      for j = 0..m:  (admitted at p_j, only if j >= 1),
                     (preempted at v, for each victim priority v with
                      p_(j+1) <= v < p_j, highest first),
      FIFO sum       = sum over admitted requests of (N - arrival rank),
      start-rank sum = sum over preempted allocations of their start rank,
      preference     = sum over admitted requests of (n_i - t), where t is the
                       index of its policy among its n_i eligible policies
                       ordered by priority (desc) then pool name ]

p_1 > ... > p_m are the distinct priorities of policies through which some
request is eligible; victim priorities are those of the policies of
preemptible, borrowing running allocations. N = max(number of requests,
highest rank + 1).

Hard rules with the "already over" caveat read as: on every (pool, key),
(policy, key) and, for the non-preemptible share, (policy, key)::

    admitted_k <= max(0, bound_k - kept_k)

i.e. a key whose kept holdings exceed its bound admits nothing that needs it,
unless the plan preempts enough to bring it back under. The in-share set Z obeys
the same form with bound = reserved.

The modules, bottom up: `settings`, `classes`, `model` (the model of one part
and its values), `short_keys`, `rules`, `dominance`, `tiers`, `build`, `run`
(what the steps carry), `hints`, `attempts`, `folds`, `retries`, `loop`,
`reopening`, `hand_out`, `parts` (`solve`).
"""

from __future__ import annotations

from .parts import solve
from .settings import SolverSettings

__all__ = ["SolverSettings", "solve"]
