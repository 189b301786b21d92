"""Latency compiler: per-pair one-way links → link classes per source region.

Chaos Mesh gives each targeted rule on a pod its own tc band selected by an
ipset of target IPs, and a pod interface holds at most 13 of them. Grouping
destinations that share identical shaping into one *class* keeps the rule
count at the number of distinct classes leaving a region, not the number of
regions.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from wanwide.core.plan.errors import Problems
from wanwide.core.plan.links import LinkMap, OneWay

MAX_TARGETED_RULES = 13


@dataclass(frozen=True)
class LinkClass:
    """Traffic from ``src`` to every region of ``dsts`` gets ``shaping``."""

    src: str
    index: int
    shaping: OneWay
    dsts: tuple[str, ...]


def classes_of(links: LinkMap, regions: list[str], src: str, include_noop: bool = False,
               order: dict[str, int] | None = None) -> list[LinkClass]:
    """``src``'s link classes (no-op links left out unless asked), in a stable order: the order of each
    class's first destination in ``regions``."""
    order = order if order is not None else {r: i for i, r in enumerate(regions)}
    by_shape: dict[OneWay, list[str]] = defaultdict(list)
    same: dict[int, list[str] | None] = {}  # most links share one object: hash each object once, not each link
    for dst in regions:
        if dst == src:
            continue
        shaping = links[(src, dst)]
        group = same.get(id(shaping), False)
        if group is False:
            group = same[id(shaping)] = by_shape[shaping] if include_noop or not shaping.is_noop else None
        if group is not None:
            group.append(dst)
    groups = sorted(by_shape.items(), key=lambda kv: order[kv[1][0]])
    return [LinkClass(src, i, s, tuple(d)) for i, (s, d) in enumerate(groups)]


def classes(links: LinkMap, regions: list[str], include_noop: bool = False) -> dict[str, list[LinkClass]]:
    """Source region → its link classes (:func:`classes_of`)."""
    order = {r: i for i, r in enumerate(regions)}
    return {src: classes_of(links, regions, src, include_noop, order) for src in regions}


def check_rule_budget(
    cls: dict[str, list[LinkClass]], rules_per_class: int, problems: Problems, field: str = "spec.network",
    obj: str = "",
) -> None:
    """At most 13 targeted rules on any pod, else an error naming the region."""
    for src, lst in cls.items():
        n = len(lst) * rules_per_class
        if n > MAX_TARGETED_RULES:
            problems.add(
                field,
                f"region {src!r} needs {n} targeted Chaos Mesh rules ({len(lst)} distinct link classes"
                + (f" × {rules_per_class} target kinds" if rules_per_class > 1 else "")
                + f"), more than the {MAX_TARGETED_RULES} a pod supports: use coarser groups "
                "(intraGroup/interGroup links) or fewer distinct per-pair overrides",
                obj,
            )


def applied(cls: dict[str, list[LinkClass]], regions: list[str]) -> LinkMap:
    """What the classes apply, back as a per-pair map (for tests and the lab)."""
    out: LinkMap = {(a, b): OneWay() for a in regions for b in regions if a != b}
    for lst in cls.values():
        for c in lst:
            for d in c.dsts:
                out[(c.src, d)] = c.shaping
    return out
