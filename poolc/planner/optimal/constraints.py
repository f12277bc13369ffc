"""The constraints of a part's model, listed by rule name, each with its meaning.

`Built.rows` records the rows each rule added under these names (`recording`),
so a test, a benchmark or a reader of `--verbose` can ask what a rule costs and
`loop`/`reopening` can clear exactly the rows of one rule. The rules themselves
are written in `build` (class size), `rules` (H1-H3, Z), `short_keys` (H5),
`dominance` (the two exact cuts) and `tiers` (the prefix sums); docs/planning.md
states them for users.
"""

from __future__ import annotations

RULES: dict[str, str] = {
    "class size": "a class admits at most its members; in-share at most what it admits",
    "capacity": "H1: per pool and key, admitted plus kept holdings fit the capacity, or nothing needing it is admitted",
    "short keys": "H5: a governed victim class is preempted only while a key it borrows on is short",
    "limit": "H2: per policy and key, admitted plus kept holdings stay within the policy's limit",
    "non-preemptible share": "H3: non-preemptible admissions and holdings stay within the reserved share",
    "in-share reserve": "Z: admissions counted in-share, with the policy's holdings, fit its reserved share",
    "victim dominance": "cut: a lone victim goes only after every later-started, larger one of its policy",
    "request dominance": ("cut: a class admits through a policy only members older than the first"
                          " one a dominating class leaves out"),
    "request dominance literals": "the definitions of the literals the request dominance rows are enforced by",
    "prefix sums": "FIFO's and start rank's credit: concave prefix sums of a count, one segment per row",
}
