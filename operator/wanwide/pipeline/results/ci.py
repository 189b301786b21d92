"""95 % confidence intervals of a group's mean and median, and replicates for comparisons. Pure numpy.

A group is the successful durations of one action at one parameter point, each labelled with
the run (repetition) it came from. The method is named in every result:

- ``bootstrap``: one run, at most ``SMALL`` values — the mean's interval by the BCa bootstrap
  over iterations (``B`` resamples, seeded: the same report every time), the median's from
  order statistics (distribution-free, exact binomial);
- ``normal``: one run, more values — the mean's interval from the central limit theorem, the
  median's from order statistics;
- ``t-over-runs``: several runs (repetitions) — each run's mean (median) is one observation:
  Student's t with runs − 1 degrees of freedom around the pooled mean (median), never narrower
  than the pooled iterations' interval. Iterations of
  one run share its deployment and the machine's state, so they are not independent; pooling
  them as if they were gives intervals that are too narrow (tests/results/test_ci.py measures
  it), and a bootstrap over 3 runs has too few distinct resamples to do better.

Replicates (``B`` draws of the estimate) come with every result, so that a ratio of two groups
gets its interval the same way (:func:`ratio_interval`).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np

B = 1000
SMALL = 1000  # up to this many values (B × SMALL draws), resample; above, the analytic intervals
CONFIDENCE = 0.95
SEED = 20261124
Z = 1.959963984540054
# Student's t, two-sided 95 %, by degrees of freedom
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042]


def t975(df: int) -> float:
    """Student's t 97.5 % quantile (table to 30 degrees of freedom, then a series in 1/df)."""
    if 1 <= df <= len(_T975):
        return _T975[df - 1]
    g1 = (Z ** 3 + Z) / 4
    g2 = (5 * Z ** 5 + 16 * Z ** 3 + 3 * Z) / 96
    return Z + g1 / df + g2 / df ** 2


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


_NAN = float("nan")


def _undefined(value: float, method: str) -> Estimate:
    return Estimate(value, _NAN, _NAN, method, np.full(B, _NAN))


def median_order_ci(sorted_x: np.ndarray) -> tuple[float, float]:
    """Distribution-free interval of the median from order statistics (exact binomial up to 1000
    values, normal approximation above); NaN for fewer than 6 values (95 % cannot be reached)."""
    n = len(sorted_x)
    if n < 6:
        return _NAN, _NAN
    alpha = (1 - CONFIDENCE) / 2
    if n <= 1000:
        cdf, k = 0.0, 0
        denom = 2.0 ** n
        while True:  # largest k with P(Bin(n, 1/2) <= k - 1) <= alpha
            nxt = cdf + math.comb(n, k) / denom
            if nxt > alpha:
                break
            cdf, k = nxt, k + 1
        lo_i = max(k, 1)
    else:
        lo_i = max(1, math.floor((n - Z * math.sqrt(n)) / 2))
    hi_i = n - lo_i + 1
    return float(sorted_x[lo_i - 1]), float(sorted_x[hi_i - 1])


def _percentile(reps: np.ndarray) -> tuple[float, float]:
    lo, hi = np.nanquantile(reps, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    return float(lo), float(hi)


def _norm_cdf(z: float) -> float:
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
      -3.066479806614716e+01, 2.506628277459239e+00)
_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
      -1.328068155288572e+01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
      4.374664141464968e+00, 2.938163982698783e+00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00)


def norm_ppf(p: float) -> float:
    """Inverse normal CDF (Acklam's rational approximation, relative error < 1.2e-9)."""
    p = min(max(p, 1e-12), 1 - 1e-12)
    if p > 0.5:
        return -norm_ppf(1 - p)
    if p < 0.02425:
        q = math.sqrt(-2 * math.log(p))
        num = ((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5]
        return num / ((((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1)
    q = p - 0.5
    r = q * q
    num = (((((_A[0] * r + _A[1]) * r + _A[2]) * r + _A[3]) * r + _A[4]) * r + _A[5]) * q
    return num / (((((_B[0] * r + _B[1]) * r + _B[2]) * r + _B[3]) * r + _B[4]) * r + 1)


def bca_mean(x: np.ndarray, reps: np.ndarray) -> tuple[float, float]:
    """Bias-corrected and accelerated bootstrap interval of the mean (Efron 1987; acceleration from
    the jackknife) at the expanded level of Hesterberg (2015): a bootstrap distribution is too
    narrow for small samples by sqrt((n-1)/n) and by z against Student's t, so the tail
    probability is taken where the normal quantile equals sqrt(n/(n-1)) · t(n-1)."""
    n, mean = len(x), float(x.mean())
    z_exp = math.sqrt(n / (n - 1)) * t975(n - 1)
    tail = 1 - _norm_cdf(z_exp)
    frac = float(np.mean(reps < mean))
    if not 0 < frac < 1:
        lo, hi = np.nanquantile(reps, [tail, 1 - tail])
        return float(lo), float(hi)
    z0 = norm_ppf(frac)
    jack = (x.sum() - x) / (n - 1)
    d = jack.mean() - jack
    denom = 6 * float((d ** 2).sum()) ** 1.5
    acc = float((d ** 3).sum()) / denom if denom > 0 else 0.0
    qs = []
    for alpha in (tail, 1 - tail):
        z = z0 + norm_ppf(alpha)
        qs.append(_norm_cdf(z0 + z / (1 - acc * z)))
    lo, hi = np.quantile(reps, qs)
    return float(lo), float(hi)


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
        rows = x[rng.integers(0, n, size=(B, n))]
        m_reps = rows.mean(axis=1)
        d_reps = np.median(rows, axis=1) if np.isfinite(d_lo) else np.full(B, _NAN)
        m_lo, m_hi = bca_mean(x, m_reps)
        return GroupCI(n, 1, Estimate(mean, m_lo, m_hi, "bootstrap", m_reps),
                       Estimate(median, d_lo, d_hi, "bootstrap", d_reps))
    se = float(x.std(ddof=1)) / math.sqrt(n)
    m_lo, m_hi = mean - Z * se, mean + Z * se
    return GroupCI(n, 1, Estimate(mean, m_lo, m_hi, "normal", _normal_reps(mean, m_lo, m_hi, rng)),
                   Estimate(median, d_lo, d_hi, "normal", _normal_reps(median, d_lo, d_hi, rng)))


def _over_runs(x: np.ndarray, runs: list[np.ndarray], rng: np.random.Generator) -> GroupCI:
    """Several runs: each run's mean (median) is one observation; Student's t with runs − 1
    degrees of freedom around the pooled mean (median). With few runs their spread can be small
    by chance: the interval is never narrower than the one the pooled iterations give."""
    k, n = len(runs), len(x)
    q = t975(k - 1)
    d_lo, d_hi = median_order_ci(np.sort(x))
    iid_half = {"mean": Z * float(x.std(ddof=1)) / math.sqrt(n),
                "median": (d_hi - d_lo) / 2 if np.isfinite(d_lo) else 0.0}
    out = []
    for stat, center, per_run in (("mean", float(x.mean()), [float(r.mean()) for r in runs]),
                                  ("median", float(np.median(x)), [float(np.median(r)) for r in runs])):
        half = max(q * float(np.std(per_run, ddof=1)) / math.sqrt(k), iid_half[stat])
        lo, hi = center - half, center + half
        out.append(Estimate(center, lo, hi, "t-over-runs", _normal_reps(center, lo, hi, rng, k - 1)))
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
    return _one_run(x, rng) if len(runs) == 1 else _over_runs(x, runs, rng)


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
    r = new.replicates / base.replicates - 1
    r = r[np.isfinite(r)]
    if len(r) < B // 2:
        return Ratio(value, _NAN, _NAN, _NAN)
    lo, hi = _percentile(r)
    p = min(1.0, 2 * min(float((r <= 0).mean()), float((r >= 0).mean())))
    return Ratio(value, lo, hi, p)
