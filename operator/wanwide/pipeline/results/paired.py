"""Paired changes: a change measured inside blocks that share everything but the parameter changed.

A campaign's repetitions differ by more than the parameter under test: each is a fresh deployment,
in its own sitting, sometimes on another machine, and those differences move a trial's mean by
tens of percent (docs/results-study.md, "Sittings differ"). An unpaired comparison of two points
carries that spread twice. When the design measures both points inside one block — the RTTs of a
round on one deployment, the backends of a round in one sitting on one machine, the near and far
regions of one trial — the block's own level cancels in the ratio of its two means:

- per block ``i``: ``d_i = log(mean_new_i / mean_base_i)`` (the means of successful iterations);
- the change is ``exp(mean(d)) - 1``, its 95 % interval Student's t with blocks − 1 degrees of
  freedom (``scipy.stats.t``) on the log scale (a factor either way: never below −100 %);
- never narrower than the iterations alone allow: the half-width is at least ``Z`` times the
  standard error of ``mean(d)`` from each mean's iteration variance (two blocks that agree by chance
  give no interval narrower than their own iterations' noise);
- one block: no interval ("cannot tell (n too small)").

A block is given by columns of the unit table (``unit_means``), by default ``BLOCK``: ``round`` and
``machine`` (a round's points ran on its one deployment where they share it, else in one sitting; a
machine change inside a round splits it, so no pair straddles two machines). ``Paired.shared`` counts
the blocks whose two sides had one deployment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from wanwide.pipeline.results.ci import CONFIDENCE, TOO_FEW, t_quantile, verdict, z_quantile
from wanwide.pipeline.results.ingest import PARAM_PREFIX, TOTAL
from wanwide.pipeline.results.runs import machine

BLOCK = ["round", "machine"]  # the default block: a repetition's points measured on one machine


@dataclass(frozen=True)
class Paired:
    """``new / base - 1`` over ``blocks`` paired blocks, with its 95 % interval (NaN with one block);
    ``shared`` of the blocks measured both sides on one deployment."""

    value: float
    lo: float
    hi: float
    blocks: int
    shared: int
    p: float = math.nan  # two-sided one-sample t test of the blocks' log ratios (scipy.stats.ttest_1samp)

    @property
    def defined(self) -> bool:
        return bool(np.isfinite(self.lo) and np.isfinite(self.hi))

    @property
    def significant(self) -> bool:
        return self.defined and (self.lo > 0 or self.hi < 0)

    def verdict(self, bound: float) -> str:
        """``ci.verdict`` of the interval against ±``bound``; ``too-few`` without one."""
        return verdict(self.lo, self.hi, bound) if self.defined else TOO_FEW


def _machine_of(m: dict[str, Any]) -> str:
    return machine(m.get("host") or {})


def unit_means(table: pd.DataFrame, manifests: list[dict[str, Any]], regions: set[str] | None = None,
               machine_of=_machine_of, action: str | None = TOTAL) -> pd.DataFrame:
    """One row per trial, scenario and action (``action`` only, every one if None): the mean and
    variance of its successful iterations' durations (of the load regions in ``regions``, every one if
    None), their count, the trial's parameters (``param.*``), its round (repetition), deployment id
    and machine (``machine_of(manifest)``)."""
    t = table[table["error_type"].isna() & table["action_duration"].notna()]
    if action is not None:
        t = t[t["action"].astype(str) == action]
    if regions is not None:
        t = t[t["region"].astype(str).isin(regions)]
    params = [c for c in t.columns if c.startswith(PARAM_PREFIX)]
    keys = ["benchmark", "trial_id", "scenario", "action"]
    g = t.groupby(keys, observed=True)
    out = g["action_duration"].agg(mean="mean", var="var", n="size").reset_index()
    for c in params:
        out[c] = g[c].first().astype(str).to_numpy()
    info = {(str(m.get("benchmark")), str((m.get("trial") or {}).get("id"))): m for m in manifests}
    found = [info.get((str(b), str(i)), {}) for b, i in zip(out["benchmark"], out["trial_id"], strict=True)]
    out["round"] = [(m.get("trial") or {}).get("repetition") for m in found]
    out["deployment"] = [str((m.get("deployment") or {}).get("id") or "") for m in found]
    out["machine"] = [machine_of(m) if m else "" for m in found]
    out = out.rename(columns={"trial_id": "trial"})
    out["scenario"] = out["scenario"].astype(str)
    out["action"] = out["action"].astype(str)
    return out


def paired_change(base: pd.DataFrame, new: pd.DataFrame, block: list[str] = BLOCK,
                  confidence: float = CONFIDENCE) -> Paired:
    """The change from ``base`` to ``new`` (``unit_means`` rows of one point each, e.g. RTT 0 and 300 ms
    of one backend, size and scenario), paired on the ``block`` columns; blocks on one side only are left out.
    ``confidence``: the interval's level (95 %; higher for one of a family of intervals, ``ci.bonferroni``)."""
    b = base.groupby(block, dropna=False)[["mean", "var", "n", "deployment"]].first()
    n = new.groupby(block, dropna=False)[["mean", "var", "n", "deployment"]].first()
    j = b.merge(n, left_index=True, right_index=True, suffixes=("_b", "_n"))
    j = j[(j["mean_b"] > 0) & (j["mean_n"] > 0)]
    k = len(j)
    if k == 0:
        return Paired(math.nan, math.nan, math.nan, 0, 0)
    d = np.log(j["mean_n"].to_numpy(float) / j["mean_b"].to_numpy(float))
    shared = int(((j["deployment_b"] == j["deployment_n"]) & (j["deployment_b"] != "")).sum())  # "": not recorded
    center = float(d.mean())
    if k < 2:
        return Paired(math.expm1(center), math.nan, math.nan, k, shared)
    # the iterations' own noise in each log mean (delta method: var / (n · mean²)), averaged over blocks
    within = (j["var_b"].fillna(0) / (j["n_b"] * j["mean_b"] ** 2) + j["var_n"].fillna(0) / (j["n_n"] * j["mean_n"] ** 2))
    floor = z_quantile(confidence) * math.sqrt(float(within.sum())) / k
    sd = float(np.std(d, ddof=1))
    half = max(t_quantile(k - 1, confidence) * sd / math.sqrt(k), floor)
    p = float(stats.ttest_1samp(d, 0.0).pvalue) if sd > 0 else (0.0 if center else 1.0)
    return Paired(math.expm1(center), math.expm1(center - half), math.expm1(center + half), k, shared, p)
