"""docs/emulation.md's measured tables are what docs/data/emulation/*.jsonl gives (docs/data/emulation.py
computes them): a page edited by hand, or data changed without the page, fails here. And the page's
statistics are the ones it names."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _emulation():
    spec = importlib.util.spec_from_file_location("emulation", DOCS / "data" / "emulation.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_block_of_the_page_is_regenerated_from_the_data():
    em = _emulation()
    recs = em.records()
    assert recs, "docs/data/emulation/ holds no measurements"
    assert {r["shaper"] for r in recs} >= {"netem", "linkemu", "wirefilter", "none"}
    rendered = em.render()
    on_page = em.page_blocks((DOCS / "emulation.md").read_text())
    assert set(on_page) == set(rendered) == set(em.BLOCKS), (sorted(on_page), sorted(rendered))
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
