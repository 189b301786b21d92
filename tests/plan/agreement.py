"""Where the planner may refuse what the API server admits: cross-field and cross-object rules.

The rule the corpus test enforces: the API server refuses => the planner refuses, always.
The planner refuses while the API server admits only for the problems below, each a rule the
CRD schema cannot state (the operator then marks the Benchmark Invalid: Failed=True,
reason InvalidSpec). Anything else the planner alone refuses is a disagreement.
"""

from __future__ import annotations

import re

_REGIONS = ("the regions are known only once resolved: listed inline, generated as <prefix>1…N (resized by "
            "spec.matrix.regions per trial) or listed in a separate Topology object, which CEL cannot read")

# (key, regex over one problem of the planner's message, why the CRD cannot check it)
SEMANTIC: list[tuple[str, str, str]] = [
    ("unknown-region", r"unknown region '[^']*'", f"a field names a region of the trial's topology; {_REGIONS}"),
    ("too-few-regions", r"(galera|cockroachdb) needs at least \d regions",
     f"the backend's minimum depends on the number of regions of each trial; {_REGIONS}"),
    ("matrix-regions-over-list", r"regions asked but the topology lists only",
     "spec.matrix.regions against the length of a list that may live in another Topology object"),
    ("partition-everything", r"a partition must leave at least one region on the other side",
     f"a partition compared with the whole region set of each trial; {_REGIONS}"),
    ("override-twice", r"is already set by overrides\[",
     "a link given twice, counting a symmetric override as both directions: a pairwise check over up to "
     "2000 overrides (not tried in CEL: its estimated cost grows with the square of maxItems)"),
    ("rule-budget", r"targeted Chaos Mesh rules",
     "the Chaos Mesh rules per pod follow from the resolved link classes of each trial"),
    ("topology-not-found", r"Topology '[^']*' not found", "another object (spec.topologyRef)"),
    ("topology-invalid", r"^Topology/", "the referenced Topology's own problems, reported with the Benchmark"),
    ("budget-topology-ref", r"regions in all|directed links in all",
     "a Benchmark's regions and links summed over its trials, when the region count comes from a separate "
     "Topology object (spec.topologyRef without spec.matrix.regions), which CEL cannot read"),
    ("free-form-size", r"KiB as JSON|nests deeper than \d+ levels|is not a JSON value|is not text: quote it",
     "the size and depth of a free-form value (chart values, scenario arguments, affinity): CEL sees neither "
     "(the API server refuses only a whole object over 1.5 MiB)"),
    ("map-keys", r"is not a label key|is not a resource name|not a valid label key|keys such as evs\.",
     "the keys of a map (node selectors, resources, monitoring labels): CEL estimates each key at the size of "
     "the whole request, so a rule over them exceeds the cost budget of a CRD"),
]

_SPLIT = re.compile(r"; (?=(?:\S+:\d+: )?(?:Benchmark|Topology)/)")


def problems(message: str) -> list[str]:
    """The problems of one planner error line (``file:line: Benchmark/x: field: what; …``)."""
    return [p for p in _SPLIT.split(message) if p]


def semantic_keys(message: str) -> list[str | None]:
    """For each problem, the SEMANTIC key it matches (None: a problem the schema should have caught)."""
    out: list[str | None] = []
    for p in problems(message):
        body = re.sub(r"^\S+:\d+: ", "", p)
        out.append(next((k for k, rx, _ in SEMANTIC if re.search(rx, body)), None))
    return out
