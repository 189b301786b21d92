"""The network verdict: which pairs of regions are measured, and whether what they measure is what the plan asks.

After the WAN is in force and before the load, the pairs the plan shapes are measured
(:func:`probe_pairs`: every link class of every region, a different member of the class from each
source, so that uniform WANs are covered pair by pair), and each source's own region with the same
probe (:func:`measured_pairs`: the platform's round trip without the WAN, and its noise). A pair's
samples are TCP handshake times in ms, ``None`` for a probe unanswered (lost); :func:`verdict` judges
what the plan shapes on that pair, and only that:

- the RTT: the median less its own region's median, within :func:`tolerance_ms` of the request —
  max(1 ms, 5 % of the request, 2 × the own region's p90−p10), plus the sampling error of the
  median where the plan sets jitter: the platform's measured noise, not a fixed 1 ms;
- the loss: the probes lost out of those sent, inside the binomial interval (99.9 %) of the
  round-trip loss requested (:func:`loss_allowed`; the own region's losses, at least 1 %, allowed
  on top as the platform's);
- the jitter where the plan sets it: the samples' (p90−p10)/2 between 0.35 and 1.25 × the round
  trip's requested jitter (both directions' summed), ± max(1 ms, 2 × the own region's p90−p10);
- the rate is not measured (a burst through every probed pair costs more than the check: said in each row).

A network found off is measured once more (:data:`NETWORK_CHECKS`), then the trial fails
(``NetworkOff``) naming the pair, what was requested, what was measured and the rule. The median of a
pair's samples is :func:`median`, the one the runner's gauges use too.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from wanwide.core.plan.latency import classes
from wanwide.core.plan.links import Pair
from wanwide.core.plan.trial import TrialPlan

RTT_TOLERANCE = (1.0, 0.05)  # the floor: max(1 ms, 5 %) …
NOISE_SPREADS = 2.0  # … or this many times the own region's p90−p10, whichever is larger
JITTER_BAND = (0.35, 1.25)  # the measured (p90−p10)/2 over the requested round-trip jitter
LOSS_CONFIDENCE = 0.999  # the binomial interval of the probes lost
LOSS_NOISE_FLOOR = 0.01  # the platform may lose this share of probes (or what its own region lost) on top
PROBE_SAMPLES = 20  # probes per pair …
PROBE_SAMPLES_LOSSY = 200  # … and where the plan sets a loss: enough to tell 4 % from none (0.96^200 < 0.0005)
RULE = ("RTT: |median − own region's median − requested| ≤ max(1 ms, 5 % of requested, 2 × own region's p90−p10)"
        " (+ 3 × the median's standard error where jitter is set); loss: probes lost within the binomial 99.9 % "
        "interval of the requested round-trip loss (own region's loss, at least 1 %, allowed on top); jitter "
        "(where set): (p90−p10)/2 within [0.35, 1.25] × requested ± max(1 ms, 2 × own region's p90−p10); rate: not "
        "measured")
NETWORK_CHECKS = 2  # a network found off is measured once more before the trial fails
NETWORK_OFF = "NetworkOff"

Samples = Sequence[float | None]


def probe_pairs(plan: TrialPlan) -> list[Pair]:
    """The (source, destination) pairs to measure, each unordered pair once: for every region, one
    destination of each of its link classes (rotating through the class by the source's place, so a
    uniform WAN of n regions is measured on every pair for n ≤ 3 and on n pairs beyond). With services beyond
    Keystone (spec.openstack: Nova, its bus, …), every pair of regions a service's link crosses too
    (``ControlPlane.wan_pairs``: a stretched plane's computes to its bus, conductor to its database, …),
    in the direction the link goes."""
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
    cp = plan.control_plane
    if cp is not None and cp.services:
        for src, dst in cp.wan_pairs():
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
    translation, a busy CPU — which :func:`verdict` takes off the pairs' before comparing, and whose
    spread is the check's noise)."""
    pairs = probe_pairs(plan)
    return [*pairs, *((s, s) for s in dict.fromkeys(a for a, _ in pairs))]


def probe_samples(plan: TrialPlan) -> int:
    """Probes per measured pair: more where the plan sets a loss on a probed pair (a loss is counted)."""
    return PROBE_SAMPLES_LOSSY if any(loss_requested(plan, p) > 0 for p in probe_pairs(plan)) else PROBE_SAMPLES


def check_of(state: dict[str, Any]) -> int:
    """Which measurement of the network check the trial is at (1 or 2)."""
    return max(1, int(state.get("networkCheck") or 0))


def rtt_requested(plan: TrialPlan, pair: Pair) -> float:
    """The round trip a pair should measure: both one-way delays (ms); 0 within a region."""
    a, b = pair
    return 0.0 if a == b else plan.links[(a, b)].delay_ms + plan.links[(b, a)].delay_ms


def jitter_requested(plan: TrialPlan, pair: Pair) -> float:
    """The round trip's jitter: both directions' (ms); 0 within a region."""
    a, b = pair
    return 0.0 if a == b else plan.links[(a, b)].jitter_ms + plan.links[(b, a)].jitter_ms


def loss_requested(plan: TrialPlan, pair: Pair) -> float:
    """The share of round trips lost (0–1): a probe is lost when either direction drops it."""
    a, b = pair
    if a == b:
        return 0.0
    there, back = plan.links[(a, b)].loss_pct / 100.0, plan.links[(b, a)].loss_pct / 100.0
    return min(1.0, 1.0 - (1.0 - there) * (1.0 - back))


def answered(samples: Samples) -> list[float]:
    """The answered probes' times (a lost probe is None)."""
    return [float(x) for x in samples if x is not None]


def spread(samples: Samples) -> float:
    """p90 − p10 of the answered samples (linear interpolation); 0 with fewer than two."""
    v = sorted(answered(samples))
    if len(v) < 2:
        return 0.0

    def q(f: float) -> float:
        pos = (len(v) - 1) * f
        lo, hi = math.floor(pos), math.ceil(pos)
        return v[lo] + (v[hi] - v[lo]) * (pos - lo)

    return q(0.9) - q(0.1)


def tolerance_ms(requested: float, reference: Samples = (), jitter: tuple[float, float] = (0.0, 0.0),
                 n: int = 0) -> float:
    """How far a pair's WAN RTT may be from ``requested``: max(1 ms, 5 % of it, 2 × the p90−p10 of
    ``reference``, the own region's samples: the platform's noise as measured then), plus, where the plan
    sets a ``jitter`` (each direction's, ms), 3 × the standard error of the median of ``n`` samples (as if
    each direction's jitter were a normal one's standard deviation: more than a uniform ± of it spreads)."""
    tol = max(RTT_TOLERANCE[0], RTT_TOLERANCE[1] * requested, NOISE_SPREADS * spread(reference))
    if any(jitter) and n > 0:
        tol += 3.0 * 1.2533 * math.hypot(*jitter) / math.sqrt(n)
    return tol


def _binom_cdf(k: int, n: int, p: float) -> float:
    """P(X ≤ k), X ~ Binomial(n, p)."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    lp, lq = math.log(p), math.log1p(-p)
    return min(1.0, sum(math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp
                                 + (n - i) * lq) for i in range(k + 1)))


def loss_allowed(n: int, requested: float, noise: float = 0.0) -> tuple[int, int]:
    """The probes lost out of ``n`` that agree with a round-trip loss ``requested`` (0–1): the central
    :data:`LOSS_CONFIDENCE` interval of Binomial(n, requested) below, of Binomial(n, requested with the
    platform's ``noise`` — at least :data:`LOSS_NOISE_FLOOR` — on top) above."""
    tail = (1.0 - LOSS_CONFIDENCE) / 2.0
    high_p = 1.0 - (1.0 - requested) * (1.0 - max(noise, LOSS_NOISE_FLOOR))
    lo = next(k for k in range(n + 1) if _binom_cdf(k, n, requested) > tail) if requested > 0 else 0
    hi = next(k for k in range(n + 1) if 1.0 - _binom_cdf(k, n, high_p) <= tail)
    return lo, hi


def median(samples: Samples) -> float | None:
    """The median of the answered samples (the mean of the middle two of an even count); None without any."""
    got = answered(samples)
    return statistics.median(got) if got else None


def _judge(plan: TrialPlan, pair: Pair, got: Samples, ref: Samples) -> tuple[dict[str, Any], list[str]]:
    """One pair's row and what is off on it (in words)."""
    want, jit, loss = rtt_requested(plan, pair), jitter_requested(plan, pair), loss_requested(plan, pair)
    ans = answered(got)
    sent, lost = len(got), len(got) - len(ans)
    a, b = pair
    tol = tolerance_ms(want, ref, (0.0, 0.0) if a == b else (plan.links[(a, b)].jitter_ms,
                                                            plan.links[(b, a)].jitter_ms), len(ans))
    med = median(got)
    own = median(ref) or 0.0
    wan = None if med is None else max(0.0, med - own)
    why: list[str] = []
    rtt_ok = wan is not None and abs(wan - want) <= tol
    noise = (f"2 × its own region's p90−p10 {spread(ref):.2f} ms" if len(answered(ref)) >= 2
             else "its own region not measured")
    rule = (f"tolerance {tol:.2f} ms = max(1 ms, 5 % of {want:g} ms, {noise})"
            + (f" + the median's error at {jit:g} ms jitter" if jit > 0 and ans else ""))
    if not rtt_ok:
        seen = "no answer" if med is None else f"{med:.2f} ms" + (f" ({wan:.2f} above its own region's {own:.2f} ms)"
                                                                if own else "")
        why.append(f"requested {want:g} ms, measured {seen} ({rule})")
    ref_lost = (len(ref) - len(answered(ref))) / len(ref) if ref else 0.0
    lo, hi = loss_allowed(sent, loss, ref_lost) if sent else (0, 0)
    loss_ok = not sent or not ans or lo <= lost <= hi  # no answer at all: the RTT says it
    if not loss_ok:
        why.append(f"loss requested {100 * loss:.3g} % of round trips, measured {lost} of {sent} probes lost "
                   f"({100 * lost / sent:.3g} %), {lo}–{hi} allowed (binomial {100 * LOSS_CONFIDENCE:g} %, the "
                   f"platform's loss, at least {100 * LOSS_NOISE_FLOOR:g} %, on top)")
    jm = spread(ans) / 2.0 if len(ans) >= 2 else None
    jit_ok: bool | None = None
    if jit > 0 and jm is not None:
        noise = max(RTT_TOLERANCE[0], NOISE_SPREADS * spread(ref))
        band = (JITTER_BAND[0] * jit - noise, JITTER_BAND[1] * jit + noise)
        jit_ok = band[0] <= jm <= band[1]
        if not jit_ok:
            why.append(f"jitter requested {jit:g} ms, measured {jm:.2f} ms ((p90−p10)/2; {max(0.0, band[0]):.2f}–"
                       f"{band[1]:.2f} ms allowed: 0.35–1.25 × requested ± max(1 ms, 2 × its own region's p90−p10))")
    row = {"src": pair[0], "dst": pair[1], "requested_rtt_ms": want, "tolerance_ms": round(tol, 3),
           "measured_rtt_ms": med, "own_region_rtt_ms": own, "own_region_spread_ms": round(spread(ref), 3),
           "wan_rtt_ms": wan, "samples_ms": list(got),
           "sent": sent, "lost": lost, "loss_requested_pct": round(100 * loss, 4),
           "loss_measured_pct": round(100 * lost / sent, 3) if sent else None, "loss_allowed": [lo, hi],
           "jitter_requested_ms": jit, "jitter_measured_ms": None if jm is None else round(jm, 3),
           "rate_requested_mbit": _rate(plan, pair), "rate_measured": "not measured",
           "checks": {"rtt": rtt_ok, "loss": loss_ok, "jitter": jit_ok}, "rule": rule,
           "ok": rtt_ok and loss_ok and jit_ok is not False}
    return row, why


def _rate(plan: TrialPlan, pair: Pair) -> list[float | None]:
    a, b = pair
    return [None, None] if a == b else [plan.links[(a, b)].rate_mbit, plan.links[(b, a)].rate_mbit]


def verdict(plan: TrialPlan, measured: dict[Pair, Samples]) -> tuple[list[dict], list[str]]:
    """Each probed pair against its request: (rows as recorded, why each pair off is off). A pair's samples
    are its probes' RTTs (ms), None for a probe lost; its own region's (``measured_pairs``) are the
    reference: their median is taken off the pair's (a loaded machine's address translation and scheduling
    are not the WAN's), their spread sets the tolerance (:func:`tolerance_ms`)."""
    rows, off = [], []
    for pair in probe_pairs(plan):
        row, why = _judge(plan, pair, measured.get(pair, []), measured.get((pair[0], pair[0]), []))
        rows.append(row)
        if why:
            off.append(f"{pair[0]}↔{pair[1]}: " + "; ".join(why))
    return rows, off


def with_first(rows: list[dict], first: list[dict]) -> list[dict]:
    """The second measurement's rows, each pair the first found off carrying that first measurement."""
    return [{**r, "first_measurement": {"measured_rtt_ms": f["measured_rtt_ms"], "samples_ms": f["samples_ms"],
                                        "lost": f["lost"], "tolerance_ms": f["tolerance_ms"]}}
            if not f["ok"] else r for r, f in zip(rows, first, strict=True)]


def summary(rows: list[dict]) -> dict[str, Any]:
    """What a bundle records of the check: the rule and each pair in brief (no samples)."""
    keep = ("src", "dst", "requested_rtt_ms", "measured_rtt_ms", "own_region_rtt_ms", "own_region_spread_ms",
            "wan_rtt_ms", "tolerance_ms", "sent", "lost", "loss_requested_pct", "loss_measured_pct", "loss_allowed",
            "jitter_requested_ms", "jitter_measured_ms", "rate_measured", "checks", "ok")
    return {"rule": RULE, "pairs": [{k: r.get(k) for k in keep} for r in rows]}


__all__ = ["NETWORK_CHECKS", "NETWORK_OFF", "PROBE_SAMPLES", "PROBE_SAMPLES_LOSSY", "RTT_TOLERANCE", "RULE",
           "Samples", "answered", "check_of", "jitter_requested", "loss_allowed", "loss_requested", "measured_pairs",
           "median", "probe_pairs", "probe_samples", "probe_sources", "rtt_requested", "spread", "summary",
           "tolerance_ms", "verdict", "with_first"]
