"""The fault timeline of a trial: which directed links change, when, for how long. Pure.

Both providers translate it and neither re-derives it: the Kubernetes provider
to Chaos Mesh objects applied and removed at these offsets, the lab to link
changes on its shaper. Offsets count from the start of the load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from wanwide.core.api.benchmark import Faults
from wanwide.core.api.units import pct, seconds
from wanwide.core.plan.links import LinkMap, OneWay, Pair

Kind = Literal["partition", "dropout", "loss"]


@dataclass(frozen=True)
class FaultWindow:
    """One fault: during ``[start_s, start_s + duration_s)`` the ``links`` are shaped as given.

    A dropout repeats: its first cut starts at ``start_s + every_s``, then every
    ``every_s``, each lasting ``duration_s`` (Chaos Mesh's ``@every`` schedule).
    ``regions`` is the cut side (partitions, dropouts) or the regions whose
    links get extra loss; ``links`` holds every directed link that changes and
    its whole shaping during the window (a cut is loss 100 %), both directions.
    """

    kind: Kind
    index: int  # position within its kind in spec.faults
    start_s: float
    duration_s: float
    regions: tuple[str, ...]
    links: dict[Pair, OneWay]
    every_s: float | None = None
    extra_loss_pct: float = 0.0
    # the spec's own strings, for objects that take durations as text
    start: str = "0s"
    duration: str = "0s"
    every: str | None = None

    @property
    def name(self) -> str:
        return f"{self.kind}{self.index}"

    @property
    def sources(self) -> list[str]:
        """Regions with outgoing links that change, in the order the links list them."""
        return list(dict.fromkeys(a for a, _ in self.links))


def _cut(regions: list[str], cut: list[str], links: LinkMap) -> dict[Pair, OneWay]:
    """Both directions between ``cut`` and the rest: everything lost, delay and rate kept."""
    out = {}
    for a in regions:
        for b in regions:
            if a != b and (a in cut) != (b in cut):
                base = links[(a, b)]
                out[(a, b)] = OneWay(base.delay_ms, base.jitter_ms, 100.0, base.rate_mbit)
    return out


def _extra_loss(regions: list[str], lossy: list[str], links: LinkMap, extra: float) -> dict[Pair, OneWay]:
    """Every link into or out of ``lossy``: its loss plus ``extra`` (at most 100 %)."""
    out = {}
    for a in regions:
        for b in regions:
            if a != b and (a in lossy or b in lossy):
                base = links[(a, b)]
                out[(a, b)] = OneWay(base.delay_ms, base.jitter_ms, min(100.0, base.loss_pct + extra), base.rate_mbit)
    return out


def default_dropout_regions(regions: list[str], primary: str) -> list[str]:
    """Who a dropout cuts off when it names no regions: every region but the database's primary."""
    return [r for r in regions if r != primary]


def timeline(faults: Faults, regions: list[str], primary: str, links: LinkMap) -> list[FaultWindow]:
    """Every fault of a trial, partitions first, then dropouts, then loss windows (spec order)."""
    out: list[FaultWindow] = []
    for i, p in enumerate(faults.partitions):
        out.append(FaultWindow("partition", i, seconds(p.start), seconds(p.duration), tuple(p.regions),
                               _cut(regions, list(p.regions), links), start=p.start, duration=p.duration))
    for i, d in enumerate(faults.dropouts):
        cut = list(d.regions) if d.regions else default_dropout_regions(regions, primary)
        out.append(FaultWindow("dropout", i, 0.0, seconds(d.for_), tuple(cut), _cut(regions, cut, links),
                               every_s=seconds(d.every), start="0s", duration=d.for_, every=d.every))
    for i, w in enumerate(faults.loss_windows):
        extra = pct(w.loss)
        out.append(FaultWindow("loss", i, seconds(w.start), seconds(w.duration), tuple(w.regions),
                               _extra_loss(regions, list(w.regions), links, extra), extra_loss_pct=extra,
                               start=w.start, duration=w.duration))
    return out


def _count(start_s: float, every_s: float, until_s: float) -> int:
    """How many cuts of a dropout begin before ``until_s``: those at ``start_s + k·every_s``, k = 1, 2, …"""
    if until_s == math.inf:
        raise ValueError("a dropout repeats for ever: ask for its cuts before a finite time")
    k = max(0, math.ceil((until_s - start_s) / every_s) - 1)
    while k > 0 and start_s + k * every_s >= until_s:  # the float division may be off by one either way
        k -= 1
    while start_s + (k + 1) * every_s < until_s:
        k += 1
    return k


def spans(start_s: float, duration_s: float, every_s: float | None, until_s: float) -> list[tuple[float, float]]:
    """(start, end) of each time a window is in force before ``until_s``, offsets from the load start: once
    from ``start_s``, or (a dropout) every ``every_s`` from ``start_s + every_s``. Computed, not stepped: the
    k-th cut begins at ``start_s + (k + 1)·every_s``."""
    if every_s is None:
        return [(start_s, start_s + duration_s)] if start_s < until_s else []
    return [(start_s + (k + 1) * every_s, start_s + (k + 1) * every_s + duration_s)
            for k in range(_count(start_s, every_s, until_s))]


def occurrences(w: FaultWindow, until_s: float) -> list[tuple[float, float]]:
    """(start, end) of each time ``w`` is in force before ``until_s``, offsets from the load start."""
    return spans(w.start_s, w.duration_s, w.every_s, until_s)


def occurrence(w: FaultWindow, k: int) -> tuple[float, float]:
    """(start, end) of ``w``'s ``k``-th time in force (0 for a one-off window)."""
    start = w.start_s + (k + 1) * w.every_s if w.every_s is not None else w.start_s
    return start, start + w.duration_s


def occurrence_at(w: FaultWindow, t_s: float) -> tuple[int, float, float] | None:
    """(k, start, end) of ``w``'s time in force at ``t_s`` (start ≤ t_s < end), None when it is not in force:
    arithmetic, whatever the number of cuts before ``t_s`` (a dropout's cut is shorter than its period, so at
    most one is in force)."""
    if w.every_s is None:
        start, end = occurrence(w, 0)
        return (0, start, end) if start <= t_s < end else None
    guess = math.floor((t_s - w.start_s) / w.every_s) - 1
    for k in (guess - 1, guess, guess + 1):
        if k >= 0:
            start, end = occurrence(w, k)
            if start <= t_s < end:
                return k, start, end
    return None


def next_change(w: FaultWindow, t_s: float) -> float | None:
    """When ``w`` next begins or ends after ``t_s`` (None: never again), arithmetic like :func:`occurrence_at`."""
    if w.every_s is None:
        return next((x for x in occurrence(w, 0) if x > t_s), None)
    guess = max(0, math.floor((t_s - w.start_s) / w.every_s) - 2)
    for k in range(guess, guess + 4):
        x = next((x for x in occurrence(w, k) if x > t_s), None)
        if x is not None:
            return x
    return None  # not reached: a later cut always exists


def longest_cut_s(windows: list[FaultWindow]) -> float:
    """The longest time a region stays cut off (a partition, one dropout's cut); 0 without cuts."""
    return max((w.duration_s for w in windows if w.kind in ("partition", "dropout")), default=0.0)
