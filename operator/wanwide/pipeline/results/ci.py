"""95 % confidence intervals of a group's mean and median, and replicates for comparisons.

The intervals and tests come from scipy.stats; this module decides which one fits the data. A
group is the successful durations of one action at one parameter point, each labelled with the
run (repetition) it came from. The method is named in every result:

- ``bootstrap``: one run, at most ``SMALL`` values — the mean's interval by the BCa bootstrap
  (``scipy.stats.bootstrap``, ``B`` resamples, seeded: the same report every time) at the
  expanded level below, the median's distribution-free from order statistics
  (``scipy.stats.quantile_test``, exact binomial);
- ``normal``: one run, more values — the mean's interval from the central limit theorem, the
  median's from order statistics;
- ``t-over-runs``: several runs (repetitions) — each run's mean (median) is one observation:
  Student's t with runs − 1 degrees of freedom, never narrower than the pooled iterations'
  interval. For durations (all values > 0) on the log scale around the pooled value, so that an
  interval is a factor either way and never goes below zero; otherwise additive. Iterations of
  one run share its deployment and the machine's state, so they are not independent; pooling
  them as if they were gives intervals that are too narrow (tests/results/test_ci.py measures
  it), and a bootstrap over 3 runs has too few distinct resamples to do better.

No interval (NaN) rather than a false one: fewer than 6 values for a median, fewer than 2 for a
mean. The report says "cannot tell (n too small)" there (:func:`verdict`).

Replicates (``B`` draws of the estimate) come with every result, so that a ratio of two groups
gets its interval the same way (:func:`ratio_interval`).
"""

from __future__ import annotations

import math
import warnings
import zlib
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import stats

B = 1000
SMALL = 1000  # up to this many values (B × SMALL draws), resample; above, the analytic intervals
CONFIDENCE = 0.95
SEED = 20261124
Z = float(stats.norm.ppf((1 + CONFIDENCE) / 2))


def t975(df: int) -> float:
    """Student's t two-sided 95 % quantile with ``df`` degrees of freedom."""
    return float(stats.t.ppf((1 + CONFIDENCE) / 2, df))


def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    """Student's t two-sided quantile at ``confidence`` with ``df`` degrees of freedom."""
    return float(stats.t.ppf((1 + confidence) / 2, df))


def z_quantile(confidence: float = CONFIDENCE) -> float:
    """The normal two-sided quantile at ``confidence``."""
    return float(stats.norm.ppf((1 + confidence) / 2))


def bonferroni(intervals: int, family: float = CONFIDENCE) -> float:
    """The level each of ``intervals`` intervals needs so that all of them hold together with probability
    at least ``family`` (Bonferroni: the error rate 1 − ``family`` shared out equally)."""
    if intervals < 1:
        raise ValueError("bonferroni: the number of intervals must be at least 1")
    return 1 - (1 - family) / intervals


@dataclass(frozen=True)
class Estimate:
    """A center (mean or median) with its 95 % interval and ``B`` replicates of it."""

    value: float
    lo: float
    hi: float
    method: str
    replicates: np.ndarray  # shape (B,); NaN-filled when the interval is undefined

    @property
    def defined(self) -> bool:
        return bool(np.isfinite(self.lo) and np.isfinite(self.hi))


@dataclass(frozen=True)
class GroupCI:
    n: int
    runs: int
    mean: Estimate
    median: Estimate
    units: np.ndarray = field(default_factory=lambda: np.empty(0))  # the replication units: runs' medians, else values


_NAN = float("nan")
_LOG_CAP = 300.0  # a replicate's log-factor bound: e^300 times any duration stays finite, so do ratios of two


def _undefined(value: float, method: str) -> Estimate:
    return Estimate(value, _NAN, _NAN, method, np.full(B, _NAN))


def median_order_ci(sorted_x: np.ndarray) -> tuple[float, float]:
    """Distribution-free interval of the median from order statistics (``scipy.stats.quantile_test``,
    exact binomial); NaN for fewer than 6 values (95 % cannot be reached)."""
    x = np.asarray(sorted_x, dtype=float)
    if len(x) < 6:
        return _NAN, _NAN
    ci = stats.quantile_test(x, q=float(np.median(x)), p=0.5).confidence_interval(CONFIDENCE)
    return float(ci.low), float(ci.high)


def _percentile(reps: np.ndarray) -> tuple[float, float]:
    lo, hi = np.nanquantile(reps, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    return float(lo), float(hi)


def expanded_level(n: int) -> float:
    """The level a bootstrap of ``n`` values is asked for so that it keeps 95 % (Hesterberg 2015): a
    bootstrap distribution is too narrow by sqrt((n-1)/n) and by z against Student's t, so its tail
    is taken where the normal quantile equals sqrt(n/(n-1)) · t(n-1)."""
    z = math.sqrt(n / (n - 1)) * t975(n - 1)
    return float(1 - 2 * stats.norm.sf(z))


def bca_mean(x: np.ndarray, rng: np.random.Generator) -> tuple[float, float, np.ndarray]:
    """BCa bootstrap interval of the mean (``scipy.stats.bootstrap``) at :func:`expanded_level`,
    and its ``B`` replicates. A sample whose values are all equal has the point as its interval."""
    if float(np.ptp(x)) == 0.0:
        v = float(x[0])
        return v, v, np.full(B, v)
    level = expanded_level(len(x))
    with warnings.catch_warnings():  # a degenerate BCa (too few distinct values) is handled below
        warnings.simplefilter("ignore", (RuntimeWarning, stats.DegenerateDataWarning))
        res = stats.bootstrap((x,), np.mean, n_resamples=B, method="BCa", vectorized=True,
                              confidence_level=level, rng=rng)
    reps = np.asarray(res.bootstrap_distribution, dtype=float)
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (np.isfinite(lo) and np.isfinite(hi)):  # no bias correction possible: the percentile interval
        lo, hi = (float(v) for v in np.quantile(reps, [(1 - level) / 2, (1 + level) / 2]))
    return lo, hi, reps


def _normal_reps(value: float, lo: float, hi: float, rng: np.random.Generator, df: int | None = None) -> np.ndarray:
    """``B`` draws of an estimate whose interval is ``[lo, hi]`` (normal, or Student's t with ``df``)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return np.full(B, _NAN)
    q = t975(df) if df else Z
    se = (hi - lo) / (2 * q)
    draws = rng.standard_t(df, B) if df else rng.standard_normal(B)
    return value + se * draws


def _one_run(x: np.ndarray, rng: np.random.Generator) -> GroupCI:
    """Intervals over the iterations of one run: BCa bootstrap of the mean (normal beyond SMALL),
    order statistics for the median; replicates by resampling (normal beyond SMALL)."""
    n, mean, median = len(x), float(x.mean()), float(np.median(x))
    d_lo, d_hi = median_order_ci(np.sort(x))
    if n <= SMALL:
        m_lo, m_hi, m_reps = bca_mean(x, rng)
        d_reps = np.median(x[rng.integers(0, n, size=(B, n))], axis=1) if np.isfinite(d_lo) else np.full(B, _NAN)
        return GroupCI(n, 1, Estimate(mean, m_lo, m_hi, "bootstrap", m_reps),
                       Estimate(median, d_lo, d_hi, "bootstrap", d_reps))
    se = float(stats.sem(x))
    m_lo, m_hi = mean - Z * se, mean + Z * se
    return GroupCI(n, 1, Estimate(mean, m_lo, m_hi, "normal", _normal_reps(mean, m_lo, m_hi, rng)),
                   Estimate(median, d_lo, d_hi, "normal", _normal_reps(median, d_lo, d_hi, rng)))


def _over_runs(x: np.ndarray, runs: list[np.ndarray], rng: np.random.Generator) -> GroupCI:
    """Several runs: each run's mean (median) is one observation; Student's t with runs − 1
    degrees of freedom around the pooled mean (median). With few runs their spread can be small
    by chance: the interval is never narrower than the one the pooled iterations give. Positive
    values (durations): on the log scale, a factor either way, never below zero."""
    k, n = len(runs), len(x)
    q = t975(k - 1)
    d_lo, d_hi = median_order_ci(np.sort(x))
    iid_half = {"mean": Z * float(stats.sem(x)),
                "median": (d_hi - d_lo) / 2 if np.isfinite(d_lo) else 0.0}
    positive = bool((x > 0).all())
    out = []
    for stat, center, per_run in (("mean", float(x.mean()), [float(r.mean()) for r in runs]),
                                  ("median", float(np.median(x)), [float(np.median(r)) for r in runs])):
        if positive:
            half = max(q * float(np.std(np.log(per_run), ddof=1)) / math.sqrt(k),
                       math.log1p(iid_half[stat] / center))
            lo, hi = center * math.exp(-half), center * math.exp(half)
            # t(1) and t(2) have heavy tails: a draw far out must stay a large finite factor, not inf
            reps = center * np.exp(np.clip(half / q * rng.standard_t(k - 1, B), -_LOG_CAP, _LOG_CAP))
        else:
            half = max(q * float(np.std(per_run, ddof=1)) / math.sqrt(k), iid_half[stat])
            lo, hi = center - half, center + half
            reps = _normal_reps(center, lo, hi, rng, k - 1)
        out.append(Estimate(center, lo, hi, "t-over-runs", reps))
    return GroupCI(n, k, out[0], out[1])


def group_ci(values: np.ndarray, run_ids: np.ndarray | None = None, seed: int | None = None) -> GroupCI:
    """Mean and median of ``values`` with 95 % intervals; ``run_ids`` label each value's run.

    The random stream is seeded from the values themselves (and ``SEED``) unless ``seed`` is
    given: the same data give the same report, and two groups get independent replicates (a
    ratio of two groups drawn from one stream would have a falsely narrow interval).
    """
    x = np.asarray(values, dtype=float)
    keep = np.isfinite(x)
    x = x[keep]
    rng = np.random.default_rng([SEED, zlib.crc32(x.tobytes())] if seed is None else seed)
    runs = [x]
    if run_ids is not None and len(x):
        _, inv = np.unique(np.asarray(run_ids)[keep], return_inverse=True)
        runs = [x[inv == j] for j in range(inv.max() + 1)]
    n = len(x)
    if n == 0:
        e = _undefined(_NAN, "none")
        return GroupCI(0, 0, e, e)
    if n < 2:
        return GroupCI(n, len(runs), _undefined(float(x[0]), "none"), _undefined(float(x[0]), "none"))
    if len(runs) == 1:
        return replace(_one_run(x, rng), units=x)
    return replace(_over_runs(x, runs, rng), units=np.array([float(np.median(r)) for r in runs]))


@dataclass(frozen=True)
class Ratio:
    """``new / base - 1`` with its 95 % interval; significant when the interval excludes 0."""

    value: float
    lo: float
    hi: float
    p: float  # two-sided bootstrap p-value (share of replicates on the other side of 0, doubled)

    @property
    def significant(self) -> bool:
        return bool(np.isfinite(self.lo) and np.isfinite(self.hi) and (self.lo > 0 or self.hi < 0))


def ratio_interval(base: Estimate, new: Estimate) -> Ratio:
    """The relative difference of two independent estimates, its interval from their replicates."""
    value = new.value / base.value - 1 if base.value else _NAN
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # kept below: finite ones only
        r = new.replicates / base.replicates - 1
    r = r[np.isfinite(r)]
    if len(r) < B // 2:
        return Ratio(value, _NAN, _NAN, _NAN)
    lo, hi = _percentile(r)
    p = min(1.0, 2 * min(float((r <= 0).mean()), float((r >= 0).mean())))
    return Ratio(value, lo, hi, p)


@dataclass(frozen=True)
class Difference:
    """``new - base`` in the estimates' unit (seconds) with its 95 % interval."""

    value: float
    lo: float
    hi: float


def difference_interval(base: Estimate, new: Estimate) -> Difference:
    """The absolute difference of two independent estimates, its interval from their replicates (as
    :func:`ratio_interval`); NaN bounds when either side has none."""
    value = new.value - base.value
    with np.errstate(invalid="ignore", over="ignore"):
        d = new.replicates - base.replicates
    d = d[np.isfinite(d)]
    if len(d) < B // 2:
        return Difference(value, _NAN, _NAN)
    lo, hi = _percentile(d)
    return Difference(value, lo, hi)


def u_test(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p-value (``scipy.stats.mannwhitneyu``) of two samples; NaN with fewer
    than 2 values on a side. With 3 runs a side it cannot go below 0.1: say so rather than test."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if len(a) < 2 or len(b) < 2:
        return _NAN
    return float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)


# What an interval of an effect (a slope, a relative change) allows, against an equivalence bound
# stated with every "no effect": the interval inside ±bound is "no effect beyond the bound".
UP, DOWN, SAME, UNCLEAR, TOO_FEW = "up", "down", "same", "unclear", "too-few"


def verdict(lo: float, hi: float, bound: float) -> str:
    """``up``/``down`` when the interval excludes 0, ``same`` when it lies within ±``bound``
    (an equivalence test at 95 %), ``unclear`` when it allows both, ``too-few`` without one."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return TOO_FEW
    if lo > 0:
        return UP
    if hi < 0:
        return DOWN
    return SAME if -bound <= lo and hi <= bound else UNCLEAR
