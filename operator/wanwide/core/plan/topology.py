"""Resolve a Topology for one trial: the region list and every ordered pair's link."""

from __future__ import annotations

from dataclasses import dataclass

from wanwide.core.api.topology import HOSTNAME_LABEL, Link, Network, Region, TopologySpec
from wanwide.core.api.units import mbit, ms, pct
from wanwide.core.plan.errors import Problems
from wanwide.core.plan.links import LinkMap, OneWay


@dataclass(frozen=True)
class ResolvedRegion:
    name: str
    group: str
    node_selector: dict[str, str] | None


def _selector(spec: TopologySpec, index: int, name: str, explicit: dict[str, str] | None) -> dict[str, str] | None:
    """The nodes region ``index`` (named ``name``) runs on: its own nodeSelector, else the placement's."""
    if explicit:
        return dict(explicit)
    p = spec.placement
    if p.mode == "regionLabel":
        return {p.label: name}
    if p.mode == "nodes" and p.nodes:
        return {HOSTNAME_LABEL: p.nodes[index % len(p.nodes)]}
    return None


def spread_key(spec: TopologySpec) -> str:
    """The node label a replicated database spreads its members over (one per region where it can)."""
    return spec.placement.label if spec.placement.mode == "regionLabel" else HOSTNAME_LABEL


def regions(spec: TopologySpec, count: int | None = None, problems: Problems | None = None) -> list[ResolvedRegion]:
    """The regions of a trial; ``count`` (a matrix point) overrides generate.count or truncates the list."""
    problems = problems or Problems()
    if count is not None and count < 1:
        problems.add("spec.matrix.regions", f"{count} regions asked: a trial needs at least 1 region, raise the value")
        return []
    if spec.generate is not None:
        g = spec.generate
        n = count if count is not None else g.count
        k = min(g.groups, n)
        return [
            ResolvedRegion(name, f"{g.group_prefix}{(i * k) // n + 1}", _selector(spec, i, name, None))
            for i, name in ((i, f"{g.prefix}{i + 1}") for i in range(n))
        ]
    listed: list[Region] = list(spec.regions or [])
    if count is not None:
        if count > len(listed):
            problems.add(
                "spec.matrix.regions",
                f"{count} regions asked but the topology lists only {len(listed)}: "
                "use spec.generate in the Topology or lower the matrix value",
            )
            return []
        listed = listed[:count]
    return [ResolvedRegion(r.name, r.group or r.name, _selector(spec, i, r.name, r.node_selector))
            for i, r in enumerate(listed)]


def _overlay(base: Link, top: Link | None) -> Link:
    if top is None:
        return base
    return Link(
        rtt=top.rtt if top.rtt is not None else base.rtt,
        jitter=top.jitter if top.jitter is not None else base.jitter,
        loss=top.loss if top.loss is not None else base.loss,
        rate=top.rate if top.rate is not None else base.rate,
    )


def _one_way(link: Link) -> OneWay:
    return OneWay(
        delay_ms=round(ms(link.rtt) / 2, 3),
        jitter_ms=ms(link.jitter),
        loss_pct=pct(link.loss),
        rate_mbit=mbit(link.rate),
    )


def check_network(
    network: Network, names: set[str], problems: Problems, field: str = "spec.network", obj: str = ""
) -> None:
    """Overrides must name regions that exist and be given once per direction (``field``: the network's path)."""
    seen: dict[tuple[str, str], int] = {}
    for i, o in enumerate(network.overrides):
        for end, value in (("from", o.from_), ("to", o.to)):
            if value not in names:
                problems.add(
                    f"{field}.overrides[{i}].{end}",
                    f"unknown region {value!r}: use one of {', '.join(sorted(names)[:10])}"
                    + (" …" if len(names) > 10 else ""),
                    obj,
                )
        directions = [(o.from_, o.to)] if o.one_way else [(o.from_, o.to), (o.to, o.from_)]
        for d in directions:
            if d in seen:
                problems.add(
                    f"{field}.overrides[{i}]",
                    f"the link {d[0]}→{d[1]} is already set by overrides[{seen[d]}]: keep one of them",
                    obj,
                )
            seen[d] = i


def links(network: Network, rs: list[ResolvedRegion]) -> LinkMap:
    """One-way shaping for every ordered pair of distinct regions (n² pairs, few distinct links: each
    distinct one is computed once)."""
    overrides: dict[tuple[str, str], Link] = {}
    for o in network.overrides:
        overrides[(o.from_, o.to)] = o
        if not o.one_way:
            overrides.setdefault((o.to, o.from_), o)
    base = {same: _overlay(network.default, network.intra_group if same else network.inter_group)
            for same in (True, False)}
    plain = {same: _one_way(link) for same, link in base.items()}
    out: LinkMap = {(a.name, b.name): plain[a.group == b.group] for a in rs for b in rs if a.name != b.name}
    groups = {r.name: r.group for r in rs}
    for (a, b), o in overrides.items():
        if (a, b) in out:  # an override of a region the trial has (the others are refused by check_network)
            same = groups[a] == groups[b]
            out[(a, b)] = _one_way(_overlay(base[same], o))
    return out


def rtt_summary(lm: LinkMap) -> str:
    """``RTT 20–150ms over 3 classes`` (for status and `kubectl get -o wide`)."""
    if not lm:
        return "single region: no links"
    rtts = sorted({round(v.delay_ms + lm[(b, a)].delay_ms, 3) for (a, b), v in lm.items()})
    lo, hi = rtts[0], rtts[-1]
    span = f"{lo:g}ms" if lo == hi else f"{lo:g}–{hi:g}ms"
    return f"RTT {span}, {len(set(lm.values()))} link classes, {len(lm)} directed links"
