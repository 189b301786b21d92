"""The report's intervals on synthetic data with known answers: do they contain the truth as often
as they claim (coverage), and do comparisons call a difference only when there is one?"""

from __future__ import annotations

import math

import numpy as np
import pytest

from wanwide.pipeline.results.ci import (
    B,
    expanded_level,
    group_ci,
    median_order_ci,
    ratio_interval,
    t975,
    u_test,
    verdict,
)
from wanwide.pipeline.results.headline import slope

SIMS = 300


def _coverage(hits: list[bool]) -> float:
    return sum(hits) / len(hits)


def test_quantiles_and_the_expanded_bootstrap_level():
    assert t975(2) == pytest.approx(4.303, abs=1e-3)  # Student's table
    assert t975(30) == pytest.approx(2.042, abs=1e-3)
    # a bootstrap of 10 values is asked for more than 95 %, of 1000 values for about 95 %
    assert 0.97 < expanded_level(10) < 0.99
    assert expanded_level(1000) == pytest.approx(0.95, abs=0.001)


def test_mean_interval_covers_the_true_mean_about_95_percent():
    rng = np.random.default_rng(7)
    normal = [(c := group_ci(rng.normal(2.0, 0.5, 30))).mean.lo <= 2.0 <= c.mean.hi for _ in range(SIMS)]
    # durations are skewed: lognormal with median 1, mean exp(σ²/2)
    mu = math.exp(0.5 ** 2 / 2)
    skewed = [(c := group_ci(rng.lognormal(0, 0.5, 40))).mean.lo <= mu <= c.mean.hi for _ in range(SIMS)]
    assert 0.91 <= _coverage(normal) <= 0.99
    assert 0.89 <= _coverage(skewed) <= 0.99
    assert c.mean.method == "bootstrap"


def test_large_samples_use_the_normal_interval_with_the_same_coverage():
    rng = np.random.default_rng(8)
    hits = [(c := group_ci(rng.exponential(1.0, 3000))).mean.lo <= 1.0 <= c.mean.hi for _ in range(100)]
    assert c.mean.method == "normal"
    assert 0.89 <= _coverage(hits) <= 1.0


def test_median_interval_from_order_statistics_is_distribution_free():
    rng = np.random.default_rng(9)
    hits = []
    for _ in range(SIMS):
        x = np.sort(rng.exponential(1.0, 25))
        lo, hi = median_order_ci(x)
        hits.append(lo <= math.log(2) <= hi)
    assert 0.93 <= _coverage(hits) <= 1.0  # exact binomial: at least 95 % by construction
    assert all(math.isnan(v) for v in median_order_ci(np.arange(5.0)))  # 5 values cannot give 95 %
    lo, hi = median_order_ci(np.arange(1.0, 7.0))
    assert (lo, hi) == (1.0, 6.0)  # n = 6: the extremes (coverage 1 - 2/64)


def test_repetitions_are_the_unit_when_runs_differ():
    """Three runs whose machine state shifts them: pooled iterations claim far too much precision,
    the interval over runs keeps its promise."""
    rng = np.random.default_rng(10)
    over_runs, pooled = [], []
    for _ in range(SIMS):
        shift = rng.normal(0, 0.3, 3)
        x = np.concatenate([rng.exponential(1.0, 30) + s for s in shift])
        ids = np.repeat([0, 1, 2], 30)
        c, naive = group_ci(x, ids), group_ci(x)
        over_runs.append(c.mean.lo <= 1.0 <= c.mean.hi)
        pooled.append(naive.mean.lo <= 1.0 <= naive.mean.hi)
    assert c.mean.method == "t-over-runs" and c.runs == 3
    assert 0.91 <= _coverage(over_runs) <= 0.99
    assert _coverage(pooled) < 0.8


def test_comparison_flags_real_differences_and_not_noise():
    rng = np.random.default_rng(11)
    false_alarms, found, covers = 0, 0, 0
    for _ in range(200):
        a = group_ci(rng.lognormal(0, 0.3, 60)).median
        same = group_ci(rng.lognormal(0, 0.3, 60)).median
        more = group_ci(rng.lognormal(math.log(1.25), 0.3, 60)).median
        false_alarms += ratio_interval(a, same).significant
        r = ratio_interval(a, more)
        found += r.significant and r.value > 0
        covers += r.lo <= 0.25 <= r.hi
    assert false_alarms / 200 <= 0.10
    assert found / 200 >= 0.9
    assert covers / 200 >= 0.88


def test_groups_get_independent_replicates():
    """Two groups must not share random draws: the ratio of equal-width estimates would be too sure."""
    rng = np.random.default_rng(12)
    a, b = group_ci(rng.normal(1, 0.1, 50)), group_ci(rng.normal(1, 0.1, 50))
    assert abs(np.corrcoef(a.mean.replicates, b.mean.replicates)[0, 1]) < 0.15
    assert len(a.mean.replicates) == B
    x = rng.normal(1, 0.1, 50)
    assert np.array_equal(group_ci(x).mean.replicates, group_ci(x.copy()).mean.replicates)  # same data, same report


def test_slope_interval_covers_the_true_slope():
    """Three RTT values, three runs each: the slope of the medians (round trips per RTT) carries
    each point's interval."""
    rng = np.random.default_rng(13)
    xs, true = [0.0, 100.0, 300.0], 0.02  # s per ms: 20 round trips
    hits = []
    for _ in range(150):
        ests = []
        for x in xs:
            m = 0.5 + true * x
            runs = [m * math.exp(rng.normal(0, 0.05)) * np.exp(rng.normal(0, 0.2, 30)) for _ in range(3)]
            ests.append(group_ci(np.concatenate(runs), np.repeat([0, 1, 2], 30)).median)
        s = slope(xs, ests)
        hits.append(s.lo <= true <= s.hi)
    assert 0.88 <= _coverage(hits) <= 1.0


def test_too_little_data_gives_no_interval_rather_than_a_false_one():
    one = group_ci(np.array([1.0]))
    assert math.isnan(one.mean.lo) and one.n == 1
    empty = group_ci(np.array([]))
    assert empty.n == 0 and math.isnan(empty.median.value)
    r = ratio_interval(group_ci(np.array([1.0, 1.1, 0.9])).median, group_ci(np.array([2.0, 2.1, 1.9])).median)
    assert math.isnan(r.lo) and not r.significant  # 3 values: no 95 % median interval, so no verdict


def test_durations_over_runs_keep_their_interval_above_zero_and_their_coverage():
    """Two runs far apart (a machine that was busy in one sitting): the interval of a duration is a
    factor either way on the log scale, never below zero; and on runs that differ by a factor it
    still contains the true median about as often as it says."""
    c = group_ci(np.concatenate([np.full(20, 0.1) * np.linspace(0.9, 1.1, 20), np.full(20, 5.0)]),
                 np.repeat([0, 1], 20))
    assert c.mean.method == "t-over-runs" and c.mean.lo > 0 and c.median.lo > 0
    assert c.mean.hi > 5  # the spread of two runs is wide, not cut
    rng = np.random.default_rng(14)
    hits = []
    for _ in range(SIMS):
        runs = [np.exp(rng.normal(0, 0.2)) * rng.lognormal(0, 0.3, 30) for _ in range(4)]
        hits.append((m := group_ci(np.concatenate(runs), np.repeat(range(4), 30)).median).lo <= 1.0 <= m.hi)
    assert 0.9 <= _coverage(hits) <= 1.0


def test_two_runs_far_apart_give_finite_replicates_and_comparisons_without_warnings():
    """Two runs are Student's t with 1 degree of freedom (a Cauchy): its far draws used to overflow
    to inf (or 0), and the comparisons built on them warned and lost those replicates."""
    import warnings

    a = group_ci(np.concatenate([np.full(10, 0.1), np.full(10, 9.0)]) * np.linspace(0.95, 1.05, 20),
                 np.repeat([0, 1], 10))
    b = group_ci(np.concatenate([np.full(10, 0.2), np.full(10, 8.0)]) * np.linspace(0.95, 1.05, 20),
                 np.repeat([0, 1], 10))
    for e in (a.mean, a.median, b.mean, b.median):
        assert e.method == "t-over-runs"
        assert np.isfinite(e.replicates).all() and (e.replicates > 0).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        r = ratio_interval(a.median, b.median)
        s = slope([0.0, 100.0], [a.median, b.median])
    assert r.lo < 0 < r.hi and s.lo < 0 < s.hi  # two runs that far apart cannot tell these apart


def test_a_claim_of_no_effect_needs_an_interval_inside_the_bound():
    assert verdict(0.2, 1.5, 0.5) == "up"
    assert verdict(-1.2, -0.1, 0.5) == "down"
    assert verdict(-0.3, 0.4, 0.5) == "same"  # inside ±0.5: no effect beyond it
    assert verdict(-0.8, 1.5, 0.5) == "unclear"  # allows both: "cannot tell", never "does not grow"
    assert verdict(float("nan"), float("nan"), 0.5) == "too-few"


def test_the_u_test_over_runs_and_when_it_cannot_tell():
    assert math.isnan(u_test(np.array([1.0]), np.array([2.0, 3.0])))
    assert u_test(np.array([1.0, 1.1, 1.2]), np.array([2.0, 2.1, 2.2])) == pytest.approx(0.1)
    rng = np.random.default_rng(15)
    assert u_test(rng.normal(1, 0.1, 40), rng.normal(1.2, 0.1, 40)) < 1e-6
