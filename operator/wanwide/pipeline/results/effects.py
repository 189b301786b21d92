"""Absolute effects over paired blocks: seconds per iteration, round trips, and one change against another.

A relative change (``paired.paired_change``) divides by the baseline, and a baseline set by the
machine — a CPU queue that makes an iteration ten times slower than a server's, a machine that
spends more CPU per iteration than the last — moves the ratio without moving the effect: Galera's
9-region write penalty at 300 ms RTT was +69 %, +81 % and +103 % on three machines of one kind, the
same +12.6 to +13.0 s per iteration on each (docs/results-study.md). So the effect of a delay is
measured here in the unit of the cause:

- ``paired_difference``: per block ``new − base`` of the two means (seconds per iteration), the mean
  over blocks with a Student t interval (blocks − 1 degrees of freedom);
- ``paired_slope``: per block the least-squares slope of the mean over a numeric parameter (the RTT
  in seconds: seconds per second of RTT, i.e. WAN round trips waited for one after the other), the
  mean over blocks with a t interval. A block needs two values of the parameter at least;
- ``paired_contrast``: per block the log change of one point minus the log change of another over the
  same blocks (a change against its control: Galera's 3 → 9 regions against MariaDB's, the CPU queue's
  share cancelling), ``exp(mean) − 1`` with its t interval.

Every interval is never narrower than the iterations' own noise allows (each mean's variance over its
iterations, propagated; as ``paired``), and takes its level as a parameter, so that one interval of a
family read together can be widened (``ci.bonferroni``). One block: no interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from wanwide.pipeline.results.ci import CONFIDENCE, TOO_FEW, t_quantile, verdict, z_quantile
from wanwide.pipeline.results.paired import BLOCK

_NAN = math.nan


@dataclass(frozen=True)
class Effect:
    """An effect in the inputs' unit (seconds, or seconds per unit of a parameter) over ``blocks`` paired
    blocks, with its interval at ``confidence`` (NaN with one block); ``shared`` of the blocks measured
    every side on one deployment; ``per_block`` the blocks' own values, in block order."""

    value: float
    lo: float
    hi: float
    blocks: int
    shared: int
    confidence: float = CONFIDENCE
    per_block: tuple[float, ...] = ()

    @property
    def defined(self) -> bool:
        return bool(np.isfinite(self.lo) and np.isfinite(self.hi))

    def verdict(self, bound: float) -> str:
        """``ci.verdict`` of the interval against ±``bound`` (in the effect's unit); ``too-few`` without one."""
        return verdict(self.lo, self.hi, bound) if self.defined else TOO_FEW

    def scaled(self, factor: float) -> Effect:
        """The same effect in another unit (``factor`` > 0: e.g. seconds → round trips per user)."""
        return Effect(self.value * factor, self.lo * factor, self.hi * factor, self.blocks, self.shared,
                      self.confidence, tuple(v * factor for v in self.per_block))


def _interval(d: np.ndarray, noise_var: float, confidence: float) -> tuple[float, float, float]:
    """Mean of the blocks' values with a t interval, never narrower than ``z · sqrt(noise_var)``
    (``noise_var``: the variance of the mean that the iterations alone give)."""
    k, center = len(d), float(np.mean(d))
    if k < 2:
        return center, _NAN, _NAN
    half = max(t_quantile(k - 1, confidence) * float(np.std(d, ddof=1)) / math.sqrt(k),
               z_quantile(confidence) * math.sqrt(max(noise_var, 0.0)))
    return center, center - half, center + half


def _by_block(units: pd.DataFrame, block: list[str]) -> pd.DataFrame:
    return units.groupby(block, dropna=False)[["mean", "var", "n", "deployment"]].first()


def _shared(deployments: list[pd.Series]) -> np.ndarray:
    first = deployments[0]
    same = first != ""
    for d in deployments[1:]:
        same &= d == first
    return same.to_numpy(bool)


def paired_difference(base: pd.DataFrame, new: pd.DataFrame, block: list[str] = BLOCK,
                      confidence: float = CONFIDENCE) -> Effect:
    """``new − base`` in seconds (``unit_means`` rows of one point each), paired on the ``block`` columns;
    blocks on one side only are left out."""
    j = _by_block(base, block).merge(_by_block(new, block), left_index=True, right_index=True, suffixes=("_b", "_n"))
    if j.empty:
        return Effect(_NAN, _NAN, _NAN, 0, 0, confidence)
    d = (j["mean_n"] - j["mean_b"]).to_numpy(float)
    noise = float((j["var_b"].fillna(0) / j["n_b"] + j["var_n"].fillna(0) / j["n_n"]).sum()) / len(d) ** 2
    center, lo, hi = _interval(d, noise, confidence)
    shared = int(_shared([j["deployment_b"], j["deployment_n"]]).sum())
    return Effect(center, lo, hi, len(d), shared, confidence, tuple(float(v) for v in d))


def paired_slope(units: pd.DataFrame, x: str, block: list[str] = BLOCK, confidence: float = CONFIDENCE) -> Effect:
    """The slope of the mean over the numeric column ``x`` (``unit_means`` rows of one point at several values
    of ``x``), per block with at least two values of ``x``, averaged over the blocks. With ``x`` the RTT in
    seconds the slope is in seconds per second of RTT: the round trips an iteration waits for."""
    slopes, noise, shared = [], 0.0, 0
    for _, g in units.groupby(block, dropna=False):
        g = g.drop_duplicates(subset=[x])
        xs = g[x].to_numpy(float)
        if len(np.unique(xs)) < 2:
            continue
        xc = xs - xs.mean()
        c = xc / float((xc ** 2).sum())
        slopes.append(float((c * g["mean"].to_numpy(float)).sum()))
        noise += float((c ** 2 * g["var"].fillna(0).to_numpy(float) / g["n"].to_numpy(float)).sum())
        dep = g["deployment"].astype(str)
        shared += int(dep.nunique() == 1 and dep.iloc[0] != "")
    if not slopes:
        return Effect(_NAN, _NAN, _NAN, 0, 0, confidence)
    d = np.array(slopes)
    center, lo, hi = _interval(d, noise / len(d) ** 2, confidence)
    return Effect(center, lo, hi, len(d), shared, confidence, tuple(slopes))


def paired_contrast(base: pd.DataFrame, new: pd.DataFrame, control_base: pd.DataFrame, control_new: pd.DataFrame,
                    block: list[str] = BLOCK, confidence: float = CONFIDENCE) -> Effect:
    """The change ``base → new`` against the control's change over the same blocks, as a factor − 1:
    ``exp(mean(log(new/base) − log(control_new/control_base))) − 1``; blocks missing a side are left out."""
    frames = [_by_block(f, block).add_suffix(s) for f, s in
              ((base, "_b"), (new, "_n"), (control_base, "_b_c"), (control_new, "_n_c"))]
    j = frames[0]
    for f in frames[1:]:
        j = j.merge(f, left_index=True, right_index=True)
    j = j[(j[["mean_b", "mean_n", "mean_b_c", "mean_n_c"]] > 0).all(axis=1)]
    if j.empty:
        return Effect(_NAN, _NAN, _NAN, 0, 0, confidence)
    d = (np.log(j["mean_n"] / j["mean_b"]) - np.log(j["mean_n_c"] / j["mean_b_c"])).to_numpy(float)
    noise = 0.0
    for suffix in ("_b", "_n", "_b_c", "_n_c"):
        noise += float((j[f"var{suffix}"].fillna(0) / (j[f"n{suffix}"] * j[f"mean{suffix}"] ** 2)).sum())
    center, lo, hi = _interval(d, noise / len(d) ** 2, confidence)
    shared = int(_shared([j["deployment_b"], j["deployment_n"]]).sum())
    return Effect(math.expm1(center), math.expm1(lo) if np.isfinite(lo) else _NAN,
                  math.expm1(hi) if np.isfinite(hi) else _NAN, len(d), shared, confidence,
                  tuple(math.expm1(v) for v in d))
