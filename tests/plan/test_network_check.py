"""The network check measures what it shapes, and only that (issue 48 item 4; core/lifecycle/network.py): its RTT
tolerance comes from the platform's measured noise (the own region's spread), loss is counted against a binomial
interval, jitter against the requested spread; the message names the pair, the request, the measurement and the
rule. The samples are drawn the way the lab's shaper shapes (uniform jitter each way, independent loss each way)
on top of a platform noise as seen on a busy node, seeded: each test says how often its rule must hold."""

from __future__ import annotations

import random

import yaml

from tests.plan.specs import benchmark
from wanwide.core.lifecycle import (
    loss_allowed,
    loss_requested,
    measured_pairs,
    probe_pairs,
    probe_samples,
    rtt_requested,
    tolerance_ms,
    verdict,
)
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import TrialPlan, plan


def _plan(rtt: str = "100ms", jitter: str | None = None, loss: str | None = None) -> TrialPlan:
    b = benchmark("mariadb", "uniform")
    b["spec"]["faults"] = {}
    b["spec"].pop("matrix", None)
    d = b["spec"]["topology"]["network"]["default"]
    d["rtt"] = rtt
    if jitter:
        d["jitter"] = jitter
    if loss:
        d["loss"] = loss
    docs = load_documents([yaml.safe_dump(b)])
    (bench,) = docs.benchmarks
    return plan(bench, docs.topology_for(bench))[0]


def busy(rng: random.Random) -> float:
    """One probe's own time on a busy node: 0.15 ms, and now and then the CPU elsewhere (median ≈ 1.2 ms, a tail
    to ~5 ms: the real-node gate's own region read 1.63 ms at the median with three Keystones starting)."""
    return 0.15 + rng.expovariate(1 / 1.5)


def shaped(p: TrialPlan, pair: tuple[str, str], rng: random.Random, n: int, scale: float = 1.0,
           extra_ms: float = 0.0, jitter: bool = True, loss: bool = True) -> list[float | None]:
    """``n`` probes through ``pair`` as a shaper does it (each direction: delay × ``scale`` + uniform jitter,
    its loss), on top of the busy node's own noise; None for one lost."""
    a, b = pair
    out: list[float | None] = []
    for _ in range(n):
        t = 0.0
        lost = False
        for ow in (p.links[(a, b)], p.links[(b, a)]):
            t += ow.delay_ms * scale + (rng.uniform(-ow.jitter_ms, ow.jitter_ms) if jitter else 0.0)
            lost = lost or (loss and rng.random() < ow.loss_pct / 100)
        out.append(None if lost else max(0.0, t) + extra_ms + busy(rng))
    return out


def measure(p: TrialPlan, seed: int, **kw) -> dict:
    rng = random.Random(seed)
    n = probe_samples(p)
    return {pair: ([busy(rng) for _ in range(n)] if pair[0] == pair[1] else shaped(p, pair, rng, n, **kw))
            for pair in measured_pairs(p)}


def test_a_wan_as_asked_passes_on_a_busy_node_where_a_fixed_1_ms_failed():
    """The real-node gate's NetworkOff (0 ms requested, three Keystones starting): 'r2↔r3: requested 0 ms, measured
    2.97 ms (1.34 above its own region's 1.63 ms) (tolerance 1.00 ms)'. With the own region as noisy as it was
    (median 1.63 ms), the same pair passes; 500 busy-node measurements of WANs as asked all pass."""
    p0 = _plan("0ms")
    pair = probe_pairs(p0)[0]
    own = [0.2, 0.4, 0.9, 1.2, 1.5, 1.63, 1.63, 1.7, 2.1, 2.6, 3.3]
    rows, off = verdict(p0, {**{pr: [0.3] * 20 for pr in probe_pairs(p0)}, pair: [2.97] * 20,
                             **{(s, s): own for s, _ in probe_pairs(p0)}})
    assert off == [], off
    assert rows[0]["tolerance_ms"] > 1.34 and rows[0]["own_region_rtt_ms"] == 1.63
    assert tolerance_ms(0.0, [0.15] * 20) == 1.0  # a quiet node: the floor, as before
    for p in (p0, _plan("100ms"), _plan("300ms", jitter="5ms"), _plan("50ms", loss="0.5%")):
        failed = [seed for seed in range(500) if verdict(p, measure(p, seed))[1]]
        assert failed == [], (p.links[probe_pairs(p)[0]], failed[:5], verdict(p, measure(p, failed[0]))[1][:2])


def test_a_wan_off_by_more_than_the_noise_fails_on_the_same_busy_node():
    """Half the requested delay, 10 ms where none was asked, 25 ms more at 300 ms: each fails in every one of 200
    busy-node measurements; on a quiet node 2 ms over at 0 ms still fails (the floor is 1 ms)."""
    cases = [(_plan("100ms"), {"scale": 0.5}), (_plan("0ms"), {"extra_ms": 10.0}),
             (_plan("300ms"), {"extra_ms": 25.0})]
    for p, kw in cases:
        passed = [seed for seed in range(200) if not verdict(p, measure(p, seed, **kw))[1]]
        assert passed == [], (kw, passed[:5])
    p = _plan("0ms")
    quiet = {pr: [0.15] * 20 if pr[0] == pr[1] else [2.2] * 20 for pr in measured_pairs(p)}
    assert len(verdict(p, quiet)[1]) == len(probe_pairs(p))


def test_loss_within_the_binomial_interval_passes_far_off_fails():
    """1 % of round trips over 200 probes: 0 or 4 lost is not off (the issue's example), 30 is; a 10 % loss
    requested and none measured (the loss not applied) is off; 0 % requested and 20 of 200 lost is off."""
    p = _plan("50ms", loss="0.5%")  # each way: ~1 % of round trips
    pair = probe_pairs(p)[0]
    assert abs(loss_requested(p, pair) - 0.009975) < 1e-6 and probe_samples(p) == 200
    ok = {pr: [50.2] * 200 if pr[0] != pr[1] else [0.2] * 200 for pr in measured_pairs(p)}
    for lost in (0, 4):
        _, off = verdict(p, {**ok, pair: [None] * lost + [50.2] * (200 - lost)})
        assert off == [], (lost, off)
    _, off = verdict(p, {**ok, pair: [None] * 30 + [50.2] * 170})
    (why,) = off
    assert why.startswith(f"{pair[0]}↔{pair[1]}: loss requested 0.997 % of round trips, measured 30 of 200 probes "
                          "lost (15 %), 0–")
    assert "binomial 99.9 %" in why
    p10 = _plan("50ms", loss="5%")
    ok10 = {pr: [50.2] * 200 if pr[0] != pr[1] else [0.2] * 200 for pr in measured_pairs(p10)}
    assert len(verdict(p10, ok10)[1]) == len(probe_pairs(p10))  # none lost where ~10 % should be
    p0 = _plan("50ms")
    ok0 = {pr: [50.2] * 20 if pr[0] != pr[1] else [0.2] * 20 for pr in measured_pairs(p0)}
    assert verdict(p0, ok0)[1] == []
    assert verdict(p0, {**ok0, probe_pairs(p0)[0]: [None] * 2 + [50.2] * 18})[1] == []  # the platform's 1 %
    assert len(verdict(p0, {**ok0, probe_pairs(p0)[0]: [None] * 6 + [50.2] * 14})[1]) == 1
    assert loss_allowed(200, 0.04)[0] >= 1  # 4 % missing entirely is caught in 200 probes


def test_jitter_is_judged_where_the_plan_sets_it():
    """5 ms each way asked (10 ms of round trip): the shaper's uniform jitter passes (above), none at all fails,
    four times too much fails; without jitter asked a spread is not judged (only the median)."""
    p = _plan("100ms", jitter="5ms")
    assert all(verdict(p, measure(p, seed))[1] == [] for seed in range(50))
    flat = {pr: [100.3] * 20 if pr[0] != pr[1] else [0.2] * 20 for pr in measured_pairs(p)}
    rows, off = verdict(p, flat)
    assert len(off) == len(probe_pairs(p)) and "jitter requested 10 ms, measured 0.00 ms" in off[0]
    assert rows[0]["checks"] == {"rtt": True, "loss": True, "jitter": False}
    rng = random.Random(3)
    wild = {pr: [100 + rng.uniform(-40, 40) for _ in range(20)] if pr[0] != pr[1] else [0.2] * 20
            for pr in measured_pairs(p)}
    assert any("jitter requested 10 ms" in w for w in verdict(p, wild)[1])
    pn = _plan("100ms")
    spread_only = {pr: [100 + rng.uniform(-0.9, 0.9) for _ in range(20)] if pr[0] != pr[1] else [0.2] * 20
                   for pr in measured_pairs(pn)}
    assert verdict(pn, spread_only)[1] == []


def test_the_message_and_the_row_name_the_pair_the_request_the_measurement_and_the_rule():
    p = _plan("100ms")
    pair = probe_pairs(p)[0]
    own = [0.2, 0.25, 0.3, 0.35, 0.4, 0.3, 0.3, 0.3, 0.3, 0.3]
    got = {pr: [100.3] * 10 if pr[0] != pr[1] else own for pr in measured_pairs(p)}
    rows, off = verdict(p, {**got, pair: [60.3] * 9 + [None]})
    (why,) = off
    assert why == (f"{pair[0]}↔{pair[1]}: requested 100 ms, measured 60.30 ms (60.00 above its own region's 0.30 ms) "
                   "(tolerance 5.00 ms = max(1 ms, 5 % of 100 ms, 2 × its own region's p90−p10 0.11 ms))")
    row = rows[0]
    assert (row["sent"], row["lost"], row["loss_measured_pct"]) == (10, 1, 10.0)
    assert row["rate_measured"] == "not measured" and row["checks"]["rtt"] is False and not row["ok"]
    assert rtt_requested(p, pair) == row["requested_rtt_ms"] == 100
