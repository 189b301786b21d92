"""The network verdict: which pairs of regions are measured, and whether what they measure is what the plan asks.

After the WAN is in force and before the load, the pairs the plan shapes are measured
(:func:`probe_pairs`: every link class of every region, a different member of the class from each
source, so that uniform WANs are covered pair by pair) with the one probe, and each median RTT must
be within max(1 ms, 5 %) of the requested one (:func:`verdict`); a network found off is measured once
more (:data:`NETWORK_CHECKS`), then the trial fails (``NetworkOff``) naming the pair, requested and
measured RTT. The median of a pair's samples is :func:`median`, the one the runner's gauges use too.
"""

from __future__ import annotations

import statistics
from typing import Any

from wanwide.core.plan.latency import classes
from wanwide.core.plan.links import Pair
from wanwide.core.plan.trial import TrialPlan

RTT_TOLERANCE = (1.0, 0.05)  # max(1 ms, 5 %)
NETWORK_CHECKS = 2  # a network found off is measured once more before the trial fails
NETWORK_OFF = "NetworkOff"


def probe_pairs(plan: TrialPlan) -> list[Pair]:
    """The (source, destination) pairs to measure, each unordered pair once: for every region, one
    destination of each of its link classes (rotating through the class by the source's place, so a
    uniform WAN of n regions is measured on every pair for n ≤ 3 and on n pairs beyond)."""
    names = plan.region_names
    out: list[Pair] = []
    seen: set[frozenset[str]] = set()
    for i, (src, cls) in enumerate(classes(plan.links, names, include_noop=True).items()):
        for c in cls:
            dsts = [d for d in c.dsts if frozenset((src, d)) not in seen] or list(c.dsts)
            dst = dsts[i % len(dsts)]
            if frozenset((src, dst)) not in seen:
                seen.add(frozenset((src, dst)))
                out.append((src, dst))
    return out


def probe_sources(plan: TrialPlan) -> list[str]:
    """The regions a network check measures from, in the plan's order."""
    return sorted({a for a, _ in probe_pairs(plan)}, key=plan.region_names.index)


def measured_pairs(plan: TrialPlan) -> list[Pair]:
    """What a network check measures: the probe pairs, and each source to its own region (the same
    probe on the same path, no WAN link: the platform's own round trip at that moment — address
    translation, a busy CPU — which :func:`verdict` takes off the pairs' before comparing)."""
    pairs = probe_pairs(plan)
    return [*pairs, *((s, s) for s in dict.fromkeys(a for a, _ in pairs))]


def check_of(state: dict[str, Any]) -> int:
    """Which measurement of the network check the trial is at (1 or 2)."""
    return max(1, int(state.get("networkCheck") or 0))


def rtt_requested(plan: TrialPlan, pair: Pair) -> float:
    """The round trip a pair should measure: both one-way delays (ms); 0 within a region."""
    a, b = pair
    return 0.0 if a == b else plan.links[(a, b)].delay_ms + plan.links[(b, a)].delay_ms


def tolerance_ms(requested: float) -> float:
    return max(RTT_TOLERANCE[0], RTT_TOLERANCE[1] * requested)


def median(samples: list[float]) -> float | None:
    """The median of RTT samples (the mean of the middle two of an even count); None without any."""
    return statistics.median(samples) if samples else None


def verdict(plan: TrialPlan, measured: dict[Pair, list[float]]) -> tuple[list[dict], list[str]]:
    """Each probed pair against its request: (rows as recorded, why each pair off is off). What the WAN
    adds is the pair's median less its source's own-region median (``measured_pairs``; 0 when not
    measured): a loaded machine's 1 ms of address translation and scheduling is not the WAN's."""
    rows, off = [], []
    for pair in probe_pairs(plan):
        want = rtt_requested(plan, pair)
        tol = tolerance_ms(want)
        got = measured.get(pair, [])
        med = median(got)
        own = median(measured.get((pair[0], pair[0]), [])) or 0.0
        wan = None if med is None else max(0.0, med - own)
        ok = wan is not None and abs(wan - want) <= tol
        rows.append({"src": pair[0], "dst": pair[1], "requested_rtt_ms": want, "tolerance_ms": tol,
                     "measured_rtt_ms": med, "own_region_rtt_ms": own, "wan_rtt_ms": wan, "samples_ms": got,
                     "ok": ok})
        if not ok:
            seen = "no answer" if med is None else f"{med:.2f} ms" + (f" ({wan:.2f} above its own region's {own:.2f} ms)"
                                                                    if own else "")
            off.append(f"{pair[0]}↔{pair[1]}: requested {want:g} ms, measured {seen} (tolerance {tol:.2f} ms)")
    return rows, off


def with_first(rows: list[dict], first: list[dict]) -> list[dict]:
    """The second measurement's rows, each pair the first found off carrying that first measurement."""
    return [{**r, "first_measurement": {"measured_rtt_ms": f["measured_rtt_ms"], "samples_ms": f["samples_ms"]}}
            if not f["ok"] else r for r, f in zip(rows, first, strict=True)]


__all__ = ["NETWORK_CHECKS", "NETWORK_OFF", "RTT_TOLERANCE", "check_of", "measured_pairs", "median", "probe_pairs",
           "probe_sources", "rtt_requested", "tolerance_ms", "verdict", "with_first"]
