"""Absolute effects over paired blocks (pipeline/results/effects.py): seconds, round trips, a change against its
control; and the Bonferroni level of one interval of a family (pipeline/results/ci.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from wanwide.pipeline.results.ci import bonferroni
from wanwide.pipeline.results.effects import paired_contrast, paired_difference, paired_slope
from wanwide.pipeline.results.paired import paired_change

BLOCK = ["round", "machine"]


def _units(means: list[float], rtt_s: float | list[float] = 0.0, var: float = 0.0, n: int = 100,
           deployments: list[str] | None = None, machine: str = "m") -> pd.DataFrame:
    k = len(means)
    return pd.DataFrame({"round": range(k), "machine": machine, "deployment": deployments or [f"d{i}" for i in range(k)],
                         "mean": means, "var": var, "n": n, "rtt_s": rtt_s})


def test_an_absolute_penalty_is_the_same_on_every_machine_where_the_ratio_is_not():
    """Three blocks at 12.3, 15.2 and 18.6 s, each +12.7 s at 300 ms (±0.2 s): in seconds one narrow interval
    around +12.7 s; as a ratio +68 % to +103 %, which the paired change cannot call one number within ±10 %."""
    base = [12.3, 15.2, 18.6]
    new = [b + d for b, d in zip(base, [12.5, 12.9, 12.7], strict=True)]
    e = paired_difference(_units(base), _units(new), BLOCK)
    assert e.blocks == 3 and e.shared == 3 and math.isclose(e.value, 12.7)
    assert 12.0 < e.lo < 12.7 < e.hi < 13.4
    assert e.verdict(0.5 * 0.3 * 10) == "up"  # more than half a round trip of 10 users at 300 ms
    ratio = paired_change(_units(base), _units(new), BLOCK)
    assert ratio.hi - ratio.lo > 0.4  # +68 %, +85 %, +103 %: the ratio moves with the baseline


def test_the_slope_over_the_rtt_counts_round_trips_in_each_block():
    """Blocks at different levels, each waiting 4.2 round trips of 10 users (42 s per s of RTT) at 0, 100 and
    300 ms: the slope is 42 [narrow]; a block measured at one RTT only is left out; a deployment shared by a
    block's RTTs is counted."""
    rows = []
    for r, level in enumerate([11.0, 14.0, 9.5]):
        for rtt in (0.0, 0.1, 0.3):
            rows.append({"round": r, "machine": "m", "deployment": f"d{r}", "mean": level + 42 * rtt + 0.05 * r,
                         "var": 1.0, "n": 100, "rtt_s": rtt})
    rows.append({"round": 9, "machine": "m", "deployment": "x", "mean": 30.0, "var": 1.0, "n": 100, "rtt_s": 0.3})
    e = paired_slope(pd.DataFrame(rows), "rtt_s", BLOCK)
    assert e.blocks == 3 and e.shared == 3 and math.isclose(e.value, 42.0)
    assert e.lo < 42 < e.hi and e.hi - e.lo < 2
    per_user = e.scaled(1 / 10)
    assert math.isclose(per_user.value, 4.2) and per_user.verdict(0.5) == "up"


def test_no_slope_within_half_a_round_trip_is_no_effect_and_one_block_gives_no_interval():
    rows = [{"round": r, "machine": "m", "deployment": f"d{r}", "mean": 10.0 + 0.1 * (r % 2) - 0.2 * rtt, "var": 0.25,
             "n": 100, "rtt_s": rtt} for r in range(5) for rtt in (0.0, 0.1, 0.3)]
    e = paired_slope(pd.DataFrame(rows), "rtt_s", BLOCK)
    assert e.blocks == 5 and e.verdict(0.5 * 10) == "same" and e.verdict(0.1) != "same"
    one = paired_slope(pd.DataFrame(rows[:3]), "rtt_s", BLOCK)
    assert one.blocks == 1 and not one.defined and one.verdict(5.0) == "too-few"


def test_the_slope_interval_is_never_narrower_than_the_iterations_allow():
    """Two blocks with exactly the same slope: the interval comes from the iterations' variance alone."""
    rows = [{"round": r, "machine": "m", "deployment": "d", "mean": 10 + 2 * rtt, "var": 4.0, "n": 100, "rtt_s": rtt}
            for r in range(2) for rtt in (0.0, 0.3)]
    e = paired_slope(pd.DataFrame(rows), "rtt_s", BLOCK)
    se = math.sqrt(2 * (2 * (1 / 0.3) ** 2 * 4 / 100)) / 2  # per block: (var0 + var1)/n / 0.3²; averaged over 2
    assert math.isclose(e.hi - e.value, 1.959964 * se, rel_tol=1e-4)


def test_the_slope_interval_covers_the_true_slope_95_percent_of_the_time():
    """1 000 campaigns of 5 blocks whose levels spread by a factor ~1.4 and whose slope varies by block
    (sd 3 round trips around 40): the interval holds the true 40 in 92.5–97.5 % of them."""
    rng = np.random.default_rng(11)
    hits, sims = 0, 1000
    for _ in range(sims):
        level = np.exp(rng.normal(2.3, 0.35, 5))
        slope = 40 + rng.normal(0, 3, 5)
        rows = [{"round": r, "machine": "m", "deployment": "d", "mean": level[r] + slope[r] * x + rng.normal(0, 0.05),
                 "var": 0.0, "n": 100, "rtt_s": x} for r in range(5) for x in (0.0, 0.1, 0.3)]
        e = paired_slope(pd.DataFrame(rows), "rtt_s", BLOCK)
        hits += e.lo <= 40 <= e.hi
    assert 0.925 <= hits / sims <= 0.975, hits / sims


def test_a_change_against_its_control_takes_out_what_both_share():
    """Galera ×4.46 from 3 to 9 regions where MariaDB, on the same blocks and the same CPU queue, is ×3.30:
    the contrast is ×1.35 (+35 %); a block without the control is left out."""
    g3, m3 = [2.0, 2.2, 1.9], [1.9, 2.1, 1.8]
    g9 = [x * 4.46 * f for x, f in zip(g3, [1.0, 1.02, 0.98], strict=True)]
    m9 = [x * 3.30 * f for x, f in zip(m3, [1.0, 1.01, 0.99], strict=True)]
    e = paired_contrast(_units(g3), _units(g9), _units(m3), _units(m9), BLOCK)
    assert e.blocks == 3 and math.isclose(e.value, 4.46 / 3.30 - 1, rel_tol=0.02)
    assert e.lo < 0.35 < e.hi and e.lo > 0.2
    fewer = paired_contrast(_units(g3), _units(g9), _units(m3[:2]), _units(m9[:2]), BLOCK)
    assert fewer.blocks == 2


def test_bonferroni_shares_the_error_rate_out_and_widens_every_interval():
    assert bonferroni(1) == pytest.approx(0.95) and bonferroni(20) == pytest.approx(0.9975)
    with pytest.raises(ValueError, match="at least 1"):
        bonferroni(0)
    rows = [{"round": r, "machine": "m", "deployment": "d", "mean": 10 + (40 + r) * x, "var": 0.0, "n": 100, "rtt_s": x}
            for r in range(5) for x in (0.0, 0.3)]
    one = paired_slope(pd.DataFrame(rows), "rtt_s", BLOCK)
    family = paired_slope(pd.DataFrame(rows), "rtt_s", BLOCK, confidence=bonferroni(20))
    assert family.confidence == pytest.approx(0.9975) and family.lo < one.lo < one.hi < family.hi
