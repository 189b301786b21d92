"""docs/emulation.md's measured tables are what docs/data/emulation/*.jsonl gives (docs/data/emulation.py
computes them): a page edited by hand, or data changed without the page, fails here. And the page's
statistics are the ones it names."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from tests.docs_data import load

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _emulation():
    return load("emulation", DOCS / "data" / "emulation.py")


def test_every_block_of_the_page_is_regenerated_from_the_data():
    em = _emulation()
    recs = em.records()
    assert recs, "docs/data/emulation/ holds no measurements"
    assert {r["shaper"] for r in recs} >= {"netem", "linkemu", "wirefilter", "none"}
    rendered = em.render()
    on_page = em.page_blocks((DOCS / "emulation.md").read_text())
    assert set(on_page) == set(rendered) == set(em.BLOCKS) | set(em.GALERA_BLOCKS) | {"galera_host"}, (sorted(on_page), sorted(rendered))
    for name, body in rendered.items():
        assert on_page[name] == body, (f"docs/emulation.md block {name!r} differs from its data: "
                                       f"run docs/data/emulation.py --write\n{body}")


def test_the_netem_measurements_come_from_netem_qdiscs():
    """The data's netem lines are the lab's netem path for real: the link was a veth pair with a netem qdisc
    whose own counters saw the traffic (tc -s qdisc), in a guest whose kernel has netem."""
    em = _emulation()
    netem = [r for r in em.records() if r["shaper"] == "netem" and r["shape"] != "none"]
    assert netem and all(r["link_kind"] == "netem" for r in netem)
    for r in netem:  # a partition's qdisc is gone after its lift: its counters from before, while cut
        tc = r["counters_before" if r["kind"] == "partition" else "counters_after"]["tc_a"]
        assert tc.startswith("qdisc netem") and " limit 100000" in tc, tc
        if r["kind"] == "partition":
            assert "loss 100%" in tc, tc
    lossy = [r for r in netem if r["kind"] == "loss"]
    assert lossy and all("dropped 0," not in r["counters_after"]["tc_a"] for r in lossy)


def test_intervals_and_verdicts():
    em = _emulation()
    # exact binomial: 0 of 100 still allows up to ~3.6 %; 10 of 100 is 4.9–17.6 %
    lo, hi = em.clopper_pearson(10, 100)
    assert math.isclose(lo, 0.04900, abs_tol=1e-4) and math.isclose(hi, 0.17622, abs_tol=1e-4)
    assert em.clopper_pearson(0, 100)[0] == 0.0
    # Newcombe's interval of a difference holds the difference and is symmetric for mirrored counts
    dlo, dhi = em.newcombe(30, 300, 20, 300)
    assert dlo < 10 / 300 < dhi
    mlo, mhi = em.newcombe(20, 300, 30, 300)
    assert math.isclose(dlo, -mhi) and math.isclose(dhi, -mlo)
    # the verdicts
    assert em.verdict(-0.5, 0.8, 1.0) == "agrees"
    assert em.verdict(1.5, 3.0, 1.0) == "differs"
    assert em.verdict(0.2, 3.0, 1.0) == "differs"
    assert em.verdict(-0.5, 3.0, 1.0) == "unclear"
    assert em.verdict(float("nan"), 1.0, 1.0) == "too few"
    assert em.delay_bound(10) == 1.0 and em.delay_bound(300) == 15.0
    assert math.isclose(em.loss_bound(0.1), 0.02) and math.isclose(em.loss_bound(10), 1.0)


def test_the_two_level_bootstrap_widens_with_rounds_that_disagree():
    """Pings of one round share its moment: two rounds 5 ms apart give a wider interval of the median than
    the same number of pings from one round."""
    em = _emulation()
    rng = np.random.default_rng(1)
    same = [rng.normal(50, 1, 200), rng.normal(50, 1, 200)]
    apart = [rng.normal(50, 1, 200), rng.normal(55, 1, 200)]
    w_same = np.subtract(*reversed(em.interval(em.boot_medians(same, em._stable_rng("x")))))
    w_apart = np.subtract(*reversed(em.interval(em.boot_medians(apart, em._stable_rng("x")))))
    assert w_apart > 3 * w_same


def test_the_vm_tiers_delay_verdict_on_the_recorded_runs():
    """tests/vm's delay check (the fastest tenth of the pings against the unshaped path's own spread), applied
    to the campaign's runs as they were measured: every netem and linkemu run of 100 ms RTT passes,
    including the one whose median read 10.7 ms beyond the unshaped median (linkemu, round 1: what failed
    the former fixed ±10 ms); the same runs' 50 and 300 ms pings judged as 100 ms fail, and so do the
    100 ms pings of each run read as if the shaper had added 3 ms more than the VM's noise."""
    from tests.vm.helpers import PING_STEP, delay_verdict, quantile

    em = _emulation()
    runs: dict = {}
    for r in em.records():
        if r["shaper"] in ("netem", "linkemu") and r["kind"] == "delay":
            runs.setdefault((r["shaper"], r["round"]), {})[r["shape"]] = r["ping_ms"]
    assert len(runs) == 6
    for key, d in sorted(runs.items()):
        floor = d["none"]
        ok, fig = delay_verdict(floor, d["rtt100"], 100.0, PING_STEP)
        assert ok, (key, fig)
        for wrong in ("rtt50", "rtt300"):
            assert not delay_verdict(floor, d[wrong], 100.0, PING_STEP)[0], (key, wrong)
        over = quantile(floor, 0.9) - quantile(floor, 0.1) + PING_STEP + 3
        assert not delay_verdict(floor, [x + over for x in d["rtt100"]], 100.0, PING_STEP)[0], key
    assert quantile([3.0, 1.0, 2.0, 4.0], 0.5) == 2.0 and quantile([1.0], 0.1) == 1.0


# ---------------------------------------------------------------- Galera's write penalty (bench/galera_penalty.py)
def _bench():
    return load("galera_penalty", DOCS.parent / "bench" / "galera_penalty.py")


def test_the_galera_cells_are_three_member_clusters_each_write_replicated_through_its_shaper():
    """Every cell of the penalty's data ran on a Primary 3-member cluster, Synced, whose replication counter grew by
    exactly the cell's writes, with the send windows the page states; its links were the shaper's (netem's qdiscs
    with half the RTT each way, linkemu's process passing frames, plain veth for none), and the RTT in force (pings)
    was at least the one requested; at the end every member held every inserted row."""
    em = _emulation()
    recs = em.galera_records()
    cs = em.cells(recs)
    assert cs, "docs/data/emulation/ holds no Galera penalty cells"
    arms = {c["arm"] for c in cs}
    assert arms >= {"netem", "linkemu"} and arms <= {"none", "netem", "linkemu"}, arms
    for c in cs:
        where = (c["block"], c["arm"], c["rtt_ms"])
        st0, st1 = c["status_before"], c["status_after"]
        assert (st1["wsrep_cluster_size"], st1["wsrep_cluster_status"], st1["wsrep_local_state_comment"]) == \
            ("3", "Primary", "Synced"), where
        assert int(st1["wsrep_replicated"]) - int(st0["wsrep_replicated"]) == c["warmup"] + c["writes"], where
        assert len(c["commit_ms"]) == c["writes"] and c["provider_options"] == {
            "evs.send_window": "512", "evs.user_send_window": "256"}, where
        assert c["link_kind"] == [{"none": "veth"}.get(c["arm"], c["arm"])], where
        assert min(c["ping_r2_ms"] + c["ping_r3_ms"]) >= c["rtt_ms"] - 1, where
        if c["arm"] == "netem" and c["rtt_ms"]:
            tc = c["shaper_after"]["tc_r1"]
            assert tc.count("qdisc netem") == 2 and tc.count(f"delay {c['rtt_ms'] / 2:g}ms") == 2, (where, tc)
        if c["arm"] == "linkemu":
            b, a = c["shaper_before"]["linkemu"], c["shaper_after"]["linkemu"]
            assert all(a[k]["frames_ab"] > b[k]["frames_ab"] and a[k]["frames_ba"] > b[k]["frames_ba"] for k in a), where
    rows = [r for r in recs if r.get("event") == "rows"]
    assert {r["arm"] for r in rows} == arms
    assert all(set(r["rows"].values()) == {r["inserted"]} and r["inserted"] > 0 for r in rows), rows


def test_the_penalty_is_the_difference_of_medians_over_the_rtt():
    """A cell whose every commit is 1.5 × its RTT above the RTT-0 cell of its block reads 1.5 round trips, per the
    requested and per the measured RTT; blocks pair with their own base; the verdict takes the page's bound."""
    em = _emulation()

    def cell(block, rtt, commit, ping):
        return {"event": "cell", "seq": block * 10 + int(rtt), "block": block, "arm": "netem", "rtt_ms": float(rtt),
                "commit_ms": [commit - 1, commit, commit + 1], "ping_r2_ms": [ping], "ping_r3_ms": [ping]}

    recs = [cell(0, 0, 10, 0.5), cell(0, 100, 160, 102.5), cell(1, 0, 20, 1.0), cell(1, 100, 170, 101.0)]
    assert em.penalties(recs, "netem", 100.0) == {0: 1.5, 1: 1.5}
    assert em.penalties(recs, "netem", 100.0, per="measured") == {0: 150 / 102.0, 1: 1.5}
    assert em.paired({0: 2.0, 1: 1.0, 2: 5.0}, {0: 1.5, 1: 1.5}) == [0.5, -0.5]
    assert em.GALERA_BOUND == 0.5 and em.verdict(-0.3, 0.4, em.GALERA_BOUND) == "agrees"


def test_the_penalty_design_alternates_shapers_abba_and_rtt_orders():
    """bench/galera_penalty.py's schedule, as the page states it: each block opens and closes with the unshaped
    cluster; the shapers go first in turn (ABBA across blocks); each shaper meets its RTTs ascending in one block and
    descending in the next, and every cell once per block."""
    bench = _bench()
    bare = bench.schedule(2, ["netem", "linkemu"], [0, 50, 100], none=False)  # --no-none: the same without it
    assert [c for c in bench.schedule(2, ["netem", "linkemu"], [0, 50, 100]) if c[1] != "none"] == \
        [(k, s, r, "shaped") for k, s, r, _ in bare]
    assert [c[3] for c in bare].count("first") == 2 and bare[0][3] == bare[6][3] == "first"
    sched = bench.schedule(4, ["netem", "linkemu"], [0, 50, 100])
    for k in range(4):
        block = [c for c in sched if c[0] == k]
        assert block[0][1:] == ("none", 0.0, "first") and block[-1][1:] == ("none", 0.0, "last")
        assert sorted(c[1:3] for c in block[1:-1]) == sorted((s, r) for s in ("netem", "linkemu") for r in (0.0, 50.0, 100.0))
    firsts = [[c for c in sched if c[0] == k][1][1] for k in range(4)]
    assert firsts == ["netem", "linkemu", "netem", "linkemu"]
    for s in ("netem", "linkemu"):
        orders = [tuple(c[2] for c in sched if c[0] == k and c[1] == s) for k in range(4)]
        assert set(orders) == {(0.0, 50.0, 100.0), (100.0, 50.0, 0.0)} and orders[0] != orders[1], (s, orders)
