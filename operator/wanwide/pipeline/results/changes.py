"""Change points of a series of runs: where a latency moved and stayed moved. Pure.

The method is Apache Otava's (and so kube-burner orion's) in two steps, with the candidates from
``ruptures`` (Otava 0.8 itself pins numpy 2.2.0 and scipy < 1.17 and brings BigQuery, Slack and
PostgreSQL clients: it cannot be installed beside this package; docs/results.md, "History"):

1. candidates: PELT over the series' logarithms (``ruptures.Pelt``, least squares), with the
   BIC penalty 2·σ²·ln n, σ estimated from the median absolute difference of neighbouring runs
   (robust to the shifts themselves);
2. significance: Welch's t between the two segments beside each candidate, against the largest
   t any split of a series of that length gives when it has no change (independent normal
   values on the log scale, drawn once per length): a split chosen because it fits best passes
   a plain t test far too often (4 % of 30-run series without any change did at p < 0.001 in
   this module's first version), and a permutation test (the E-divisive method's own) cannot
   go below 1/C(10, 5) = 0.004 with 10 runs, so it could not tell two campaigns of 5 runs
   apart at all. The weakest candidate is dropped while its p exceeds ``max_p``, then the others
   are tested again with the longer segments; a change smaller than ``min_change`` is dropped too.

On the log scale a change is a factor, so a change reads as a relative change with its 95 %
interval (Welch's, exponentiated, given the split) whatever the series' level.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

MAX_P = 0.01
MIN_RUNS = 3
NULL_DRAWS = 4999
SEED = 20261129
_SIGMA_FLOOR = 1e-3  # 0.1 %: a series of identical values still has a penalty


@dataclass(frozen=True)
class Change:
    """A change at ``index`` (the first run after it): the segments' geometric means around it, the
    relative change after/before − 1 with its 95 % interval, Welch's p."""

    index: int
    before: float
    after: float
    rel: float
    lo: float
    hi: float
    p: float
    n_before: int
    n_after: int

    @property
    def slower(self) -> bool:
        return self.rel > 0


def _sigma(y: np.ndarray) -> float:
    d = np.abs(np.diff(y))
    s = 1.4826 * float(np.median(d)) / math.sqrt(2) if len(d) else 0.0
    return max(s, _SIGMA_FLOOR)


def candidates(y: np.ndarray, min_runs: int = MIN_RUNS) -> list[int]:
    """PELT's change points of ``y`` (indices of the first point after each), BIC penalty."""
    import ruptures

    n = len(y)
    if n < 2 * min_runs:
        return []
    pen = 2 * _sigma(y) ** 2 * math.log(n)
    bkps = ruptures.Pelt(model="l2", min_size=min_runs, jump=1).fit(y.reshape(-1, 1)).predict(pen=pen)
    return [int(b) for b in bkps if 0 < b < n]


def welch_t(rows: np.ndarray, k: np.ndarray) -> np.ndarray:
    """|Welch's t| of splitting each row of ``rows`` (m × L) after each of ``k`` points: (m × len(k))."""
    L = rows.shape[1]
    cs = np.cumsum(rows, axis=1)
    cs2 = np.cumsum(rows**2, axis=1)
    na, nb = k.astype(float), (L - k).astype(float)
    sa, sb = cs[:, k - 1], cs[:, -1:] - cs[:, k - 1]
    qa, qb = cs2[:, k - 1], cs2[:, -1:] - cs2[:, k - 1]
    ma, mb = sa / na, sb / nb
    va = np.maximum((qa - na * ma**2) / (na - 1), 0.0)
    vb = np.maximum((qb - nb * mb**2) / (nb - 1), 0.0)
    se = np.sqrt(va / na + vb / nb + _SIGMA_FLOOR**2 * 1e-6)
    return np.abs(mb - ma) / se


@functools.lru_cache(maxsize=256)
def _null_max_t(length: int, min_runs: int, draws: int = NULL_DRAWS) -> np.ndarray:
    """The largest |Welch t| over every split of ``draws`` series of ``length`` independent normal values,
    sorted: its distribution is the same for every mean and scale, so one table serves every series of
    that length (seeded: the same answer every time)."""
    rng = np.random.default_rng([SEED, length, min_runs])
    k = np.arange(min_runs, length - min_runs + 1)
    return np.sort(welch_t(rng.standard_normal((draws, length)), k).max(axis=1))


def split_p(seg: np.ndarray, at: int, min_runs: int) -> float:
    """How often the best split of a series of ``len(seg)`` runs without any change beats the split at
    ``at`` (its |Welch t|): the candidate was chosen as the best split, so it is tested against the best."""
    observed = float(welch_t(seg[None, :], np.array([at]))[0, 0])
    null = _null_max_t(len(seg), min_runs)
    beat = len(null) - int(np.searchsorted(null, observed * (1 - 1e-12), side="left"))
    return float((1 + beat) / (1 + len(null)))


def _interval(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The 95 % interval of mean(b) − mean(a) (Welch's), the point when neither side varies."""
    if float(a.var(ddof=1)) == 0 and float(b.var(ddof=1)) == 0:
        d = float(b.mean() - a.mean())
        return d, d
    ci = stats.ttest_ind(b, a, equal_var=False).confidence_interval(0.95)
    return float(ci.low), float(ci.high)


def _change(y: np.ndarray, start: int, at: int, end: int, min_runs: int) -> Change:
    a, b = y[start:at], y[at:end]
    p = split_p(y[start:end], at - start, min_runs)
    lo, hi = _interval(a, b)
    before, after = math.exp(float(a.mean())), math.exp(float(b.mean()))
    return Change(at, before, after, after / before - 1, math.expm1(lo), math.expm1(hi), p, len(a), len(b))


def change_points(values: np.ndarray, *, min_runs: int = MIN_RUNS, max_p: float = MAX_P,
                  min_change: float = 0.0) -> list[Change]:
    """The significant changes of a series of positive values (runs in time order)."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2 * min_runs or not np.all(np.isfinite(x)) or np.any(x <= 0):
        return []
    y = np.log(x)
    cps = candidates(y, min_runs)
    while cps:
        bounds = [0, *cps, len(y)]
        found = [_change(y, bounds[i], bounds[i + 1], bounds[i + 2], min_runs) for i in range(len(cps))]
        weakest = max(range(len(found)), key=lambda i: (found[i].p, -abs(found[i].rel)))
        small = [i for i, c in enumerate(found) if abs(c.rel) < min_change]
        drop = small[0] if small else weakest if found[weakest].p > max_p else None
        if drop is None:
            return found
        del cps[drop]
    return []
