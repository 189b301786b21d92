"""The lab's layout policy: how a shared deployment's WAN is wired (a link per pair, or hubs) so that every
trial on it can be re-shaped to its own links (core/plan/layout.py plans a layout; docs/lab-layout.md)."""

from __future__ import annotations

from wanwide.core.plan.layout import Layout, plan_layout
from wanwide.core.plan.links import OneWay
from wanwide.core.plan.trial import TrialPlan

HUB_MIN_RTT_MS = 40.0
"""Below this RTT a WAN stays a mesh under ``auto``: through a hub a pair crosses two shaped hops each way
instead of one, ~0.3 ms more per hop with wirefilter — more than the lab's tolerance (max(1 ms, 5 %))
allows below 40 ms."""


def group_layout(group: list[TrialPlan], prefer: str) -> str:
    """The layout a deployment is wired with: one that every trial on it can be re-shaped to (auto: the
    fewest links for the first trial, unless another trial needs other hubs or direct pairs, or some pair's
    RTT is below :data:`HUB_MIN_RTT_MS`: then mesh)."""
    if prefer != "auto":
        return prefer
    first = group[0]
    if any(0 < p.links[(a, b)].delay_ms + p.links[(b, a)].delay_ms < HUB_MIN_RTT_MS
           for p in group for (a, b) in p.links if a != b):
        return "mesh"
    groups = {r.name: r.group for r in first.regions}

    def layout_of(p: TrialPlan, kind: str = "auto") -> Layout:
        full = {(a, b): p.links.get((a, b), OneWay()) for a in p.region_names for b in p.region_names if a != b}
        return plan_layout(full, p.region_names, groups, prefer=kind)

    kind = layout_of(first).kind
    try:
        same = all(layout_of(p, kind).structure() == layout_of(first, kind).structure() for p in group[1:])
    except ValueError:  # another trial's links cannot be given through these hubs
        same = False
    return kind if same else "mesh"


def trial_layouts(groups: list[list[TrialPlan]], prefer: str) -> dict[tuple[str, str], str]:
    """(Benchmark, trial) → the layout of the deployment its group shares: every trial of a group, since the
    one that deploys is the first not yet complete (a resumed run), and by Benchmark too, since a campaign's
    Benchmarks have the same trial ids (keyed by trial alone, a 45-region deployment got a 3-region
    group's mesh: 990 links)."""
    return {(p.benchmark, p.id): kind for g in groups for kind in [group_layout(g, prefer)] for p in g}


__all__ = ["HUB_MIN_RTT_MS", "group_layout", "trial_layouts"]
