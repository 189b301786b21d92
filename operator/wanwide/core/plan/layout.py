"""How a one-machine WAN is wired: a full mesh, or hubs that give every pair the same shaping with far
fewer links (issue 26: 45 regions are 990 mesh links, 45 spokes through one hub).

A hub is a forwarding node; traffic from region ``a`` to ``b`` crosses the hops of its path and each
hop shapes it. Shaping composes exactly, hop after hop, for what the studies use: delays add, losses
of independent hops multiply (1 − p = Π(1 − pᵢ)). It does not compose exactly for jitter (the sum of
two jittered hops has another distribution) nor for rate (a spoke's rate is shared by every flow
leaving the region, a mesh link's by one pair): a class with either stays on direct links. So do
pairs whose shaping differs from their class (per-pair overrides): on their own link, exact.

:func:`plan_layout` chooses; :meth:`Layout.effective` recomposes each pair's shaping from the hops
and the tests hold every pair equal to the request (delay exact, loss to 1e-9).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wanwide.core.plan.links import LinkMap, OneWay, Pair

HUB = "_hub"  # a region name starts with a letter or digit: no region is called like a hub
LOSS_EPS = 1e-9


def hub_of(group: str) -> str:
    return f"_hub-{group}"


@dataclass(frozen=True)
class Edge:
    """One link between two nodes (regions or hubs), shaped each way."""

    a: str
    b: str
    a_to_b: OneWay
    b_to_a: OneWay


@dataclass(frozen=True)
class Layout:
    kind: str  # mesh | star | two-level
    regions: tuple[str, ...]
    edges: tuple[Edge, ...]
    direct: frozenset[frozenset[str]]  # region pairs on a link of their own
    group_of: Mapping[str, str] | None = None  # two-level: each region's group

    def structure(self) -> tuple[str, frozenset[tuple[str, str]], frozenset[frozenset[str]]]:
        """What the wiring is made of, shaping aside: two layouts with the same structure are one network
        re-shaped."""
        return self.kind, frozenset((e.a, e.b) for e in self.edges), self.direct

    def first_hub(self, a: str, b: str) -> str | None:
        """The hub traffic from ``a`` to ``b`` enters first (None: a direct link)."""
        p = self.path(a, b)
        return p[1] if len(p) > 2 else None

    @property
    def hubs(self) -> list[str]:
        seen = dict.fromkeys(n for e in self.edges for n in (e.a, e.b) if n not in self.regions)
        return list(seen)

    def path(self, a: str, b: str) -> list[str]:
        """The nodes traffic from ``a`` to ``b`` crosses, both ends included."""
        if frozenset((a, b)) in self.direct:
            return [a, b]
        if self.kind == "star":
            return [a, HUB, b]
        assert self.group_of is not None
        ga, gb = self.group_of[a], self.group_of[b]
        if ga == gb:
            return [a, hub_of(ga), b]
        return [a, hub_of(ga), HUB, hub_of(gb), b]

    def hop(self, x: str, y: str) -> OneWay:
        for e in self.edges:
            if (e.a, e.b) == (x, y):
                return e.a_to_b
            if (e.b, e.a) == (x, y):
                return e.b_to_a
        raise KeyError((x, y))

    def effective(self, a: str, b: str) -> OneWay:
        """The shaping traffic from ``a`` to ``b`` meets, composed over its path's hops."""
        p = self.path(a, b)
        return compose([self.hop(x, y) for x, y in zip(p, p[1:], strict=False)])


def compose(hops: Sequence[OneWay]) -> OneWay:
    """Hops one after the other: delays add, independent losses multiply; jitter and rate are only
    composed where one hop carries them (the layouts never put them on two)."""
    keep = 1.0
    for h in hops:
        keep *= 1 - h.loss_pct / 100
    rates = [h.rate_mbit for h in hops if h.rate_mbit is not None]
    return OneWay(delay_ms=sum(h.delay_ms for h in hops),
                  jitter_ms=math.sqrt(sum(h.jitter_ms ** 2 for h in hops)),
                  loss_pct=(1 - keep) * 100, rate_mbit=min(rates) if rates else None)


def _half(delay_ms: float) -> tuple[float, float]:
    """A delay as two hops that add up to it: whole milliseconds when it is whole (a shaper that keeps
    whole milliseconds, like wirefilter, then gives each hop exactly), halves otherwise."""
    if float(delay_ms).is_integer():
        first = float(math.floor(delay_ms / 2))
        return first, delay_ms - first
    return delay_ms / 2, delay_ms / 2


def _split(total: OneWay) -> tuple[OneWay, OneWay] | None:
    """Two hops that, one after the other, give ``total`` (None when it cannot be exact)."""
    if total.jitter_ms or total.rate_mbit is not None:
        return None
    first, second = _half(total.delay_ms)
    loss = (1 - math.sqrt(1 - total.loss_pct / 100)) * 100
    return OneWay(delay_ms=first, loss_pct=loss), OneWay(delay_ms=second, loss_pct=loss)


def _between(outer: OneWay, inner: OneWay) -> tuple[OneWay, OneWay] | None:
    """The hops group hub → core and core → group hub with ``inner + c1 + c2 == outer`` (two-level)."""
    if outer.jitter_ms or inner.jitter_ms or outer.rate_mbit is not None or inner.rate_mbit is not None:
        return None
    if outer.delay_ms < inner.delay_ms or outer.loss_pct < inner.loss_pct or inner.loss_pct >= 100:
        return None
    keep = (1 - outer.loss_pct / 100) / (1 - inner.loss_pct / 100)
    return _split(OneWay(delay_ms=outer.delay_ms - inner.delay_ms, loss_pct=(1 - keep) * 100))


def _same(x: OneWay, y: OneWay) -> bool:
    return (math.isclose(x.delay_ms, y.delay_ms, abs_tol=1e-9) and math.isclose(x.jitter_ms, y.jitter_ms, abs_tol=1e-9)
            and abs(x.loss_pct - y.loss_pct) <= LOSS_EPS and x.rate_mbit == y.rate_mbit)


def mesh(links: LinkMap, regions: Sequence[str]) -> Layout:
    pairs = [(a, b) for i, a in enumerate(regions) for b in regions[i + 1:]]
    return Layout("mesh", tuple(regions), tuple(Edge(a, b, links[(a, b)], links[(b, a)]) for a, b in pairs),
                  frozenset(frozenset(p) for p in pairs))


def _common(links: LinkMap, pairs: Sequence[Pair]) -> OneWay | None:
    """The shaping most of ``pairs`` have in both directions (None: none)."""
    c = Counter(links[(a, b)] for a, b in pairs if links[(a, b)] == links[(b, a)])
    return c.most_common(1)[0][0] if c else None


def _with_direct(kind: str, links: LinkMap, regions: Sequence[str], edges: list[Edge],
                 group_of: Mapping[str, str] | None) -> Layout:
    """Add a direct link for every pair the hubs do not give exactly."""
    lay = Layout(kind, tuple(regions), tuple(edges), frozenset(), group_of)
    direct = [(a, b) for i, a in enumerate(regions) for b in regions[i + 1:]
              if not (_same(lay.effective(a, b), links[(a, b)]) and _same(lay.effective(b, a), links[(b, a)]))]
    return Layout(kind, tuple(regions), tuple(edges) + tuple(Edge(a, b, links[(a, b)], links[(b, a)]) for a, b in direct),
                  frozenset(frozenset(p) for p in direct), group_of)


def star(links: LinkMap, regions: Sequence[str]) -> Layout | None:
    """Every region on one hub, each spoke half the most common pair's shaping."""
    pairs = [(a, b) for i, a in enumerate(regions) for b in regions[i + 1:]]
    common = _common(links, pairs)
    halves = _split(common) if common is not None else None
    if halves is None:
        return None
    up, down = halves
    return _with_direct("star", links, regions, [Edge(r, HUB, up, down) for r in regions], None)


def two_level(links: LinkMap, regions: Sequence[str], group_of: Mapping[str, str]) -> Layout | None:
    """Regions on their group's hub (half the intra-group shaping), group hubs on a core hub (the rest of
    the inter-group shaping)."""
    groups = list(dict.fromkeys(group_of[r] for r in regions))
    if len(groups) < 2:
        return None
    intra = _common(links, [(a, b) for i, a in enumerate(regions) for b in regions[i + 1:] if group_of[a] == group_of[b]])
    inter = _common(links, [(a, b) for i, a in enumerate(regions) for b in regions[i + 1:] if group_of[a] != group_of[b]])
    if inter is None:
        return None
    intra = intra if intra is not None else OneWay()
    halves = _split(intra)
    core = _between(inter, intra)
    if halves is None or core is None:
        return None
    edges = [Edge(r, hub_of(group_of[r]), *halves) for r in regions]
    edges += [Edge(hub_of(g), HUB, *core) for g in groups]
    return _with_direct("two-level", links, regions, edges, group_of)


def plan_layout(links: LinkMap, regions: Sequence[str], group_of: Mapping[str, str] | None = None,
                prefer: str = "auto") -> Layout:
    """The layout with the fewest links that gives every pair exactly its shaping (``prefer``: mesh,
    star, two-level, or auto)."""
    candidates = {"mesh": mesh(links, regions)}
    if len(regions) > 2:
        if (s := star(links, regions)) is not None:
            candidates["star"] = s
        if group_of and (t := two_level(links, regions, group_of)) is not None:
            candidates["two-level"] = t
    if prefer != "auto":
        if prefer not in candidates:
            raise ValueError(f"layout {prefer!r} cannot give every pair its shaping here: "
                             f"use one of {', '.join(candidates)}")
        return candidates[prefer]
    return min(candidates.values(), key=lambda lay: len(lay.edges))
