"""The report's opening answer: per backend, how each action's time grows with the swept numeric
parameter (RTT, regions, loss) and with the load, with 95 % intervals. Pure (tables in, tables out).

Growth is the least-squares slope of the median over the parameter's values, its interval from
the replicates of every point's median (pipeline/results/ci.py), so it carries each point's noise and the
number of repetitions behind it. Per millisecond of RTT the slope of a time in milliseconds is
the number of WAN round trips the action waits for, one after the other. The load effect is the
ratio high / light of the medians at each point, with its interval and significance.

A claim of no effect needs an interval inside a stated equivalence bound (``ci.verdict``):
``ROUND_TRIPS_BOUND`` round trips per ms of RTT, else a relative change of ``RELATIVE_BOUND``
from the lowest to the highest value. An interval that allows both is "cannot tell"; no interval
is "cannot tell (n too small)".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from wanwide.pipeline.results.ci import (
    DOWN,
    SAME,
    TOO_FEW,
    UP,
    Estimate,
    group_ci,
    ratio_interval,
    verdict,
)
from wanwide.pipeline.results.ingest import PARAM_PREFIX, TOTAL
from wanwide.pipeline.results.stats import (
    ordered_params,
    param_columns,
    run_ids,
    successful,
    with_benchmark_param,
)

# numeric parameters and the unit their slope is given in
UNITS = {"rtt": "ms", "intraGroupRtt": "ms", "interGroupRtt": "ms", "delay_ms": "ms", "rtt_ms": "ms",
         "latency_ms": "ms", "regions": "region", "loss": "%", "loss_pct": "%"}
ROUND_TRIPS_BOUND = 0.5  # less than half a WAN round trip per request: no round trip waited for in series
RELATIVE_BOUND = 0.10  # ±10 %: below what one sitting's noise lets this machine resolve (docs/results-lab.md)
MARK = {UP: "", DOWN: "", SAME: " ≈", "unclear": " ~", TOO_FEW: " ?"}
LEGEND = (f"≈ = no effect beyond ±{ROUND_TRIPS_BOUND:g} round trips or ±{RELATIVE_BOUND:.0%} (the interval lies "
          "within); ~ = cannot tell (the interval allows both); ? = cannot tell (n too small for an interval)")
_NUM = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(ms|s|%)?\s*$")


def numeric(value: object) -> float | None:
    """``100ms`` → 100.0, ``2s`` → 2000.0 (ms), ``1%`` → 1.0, ``9`` → 9.0; None if not a number."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return None
    if isinstance(value, int | float):
        return float(value)
    m = _NUM.match(str(value))
    if not m:
        return None
    v = float(m.group(1))
    return v * 1000 if m.group(2) == "s" else v


@dataclass(frozen=True)
class Slope:
    value: float
    lo: float
    hi: float

    @property
    def significant(self) -> bool:
        return bool(np.isfinite(self.lo) and (self.lo > 0 or self.hi < 0))


def slope(xs: list[float], ests: list[Estimate]) -> Slope:
    """Least-squares slope of the estimates over ``xs``; its interval from their replicates."""
    x = np.asarray(xs, dtype=float)
    xc = x - x.mean()
    ss = float((xc ** 2).sum())
    if len(x) < 2 or ss == 0:
        return Slope(np.nan, np.nan, np.nan)
    y = np.array([e.value for e in ests])
    reps = np.vstack([e.replicates for e in ests])  # points × B
    value = float((xc * (y - y.mean())).sum() / ss)
    with np.errstate(invalid="ignore", over="ignore"):  # a replicate that is not finite is dropped below
        rs = (xc[:, None] * (reps - reps.mean(axis=0))).sum(axis=0) / ss
    rs = rs[np.isfinite(rs)]
    if len(rs) < len(reps[0]) // 2:
        return Slope(value, np.nan, np.nan)
    lo, hi = np.quantile(rs, [0.025, 0.975])
    return Slope(value, float(lo), float(hi))


def _medians(df: pd.DataFrame, keys: list[str]) -> dict[tuple, Estimate]:
    """Median (with interval and replicates) of each group of successful rows."""
    out: dict[tuple, Estimate] = {}
    rid = run_ids(df)
    vals = df["action_duration"].to_numpy(dtype=float)
    for key, idx in df.groupby(keys, observed=True, dropna=False, sort=True).indices.items():
        key = key if isinstance(key, tuple) else (key,)
        out[tuple(k.item() if isinstance(k, np.generic) else k for k in key)] = group_ci(vals[idx], rid[idx]).median
    return out


def _fmt(e: float, lo: float, hi: float, digits: int = 3) -> str:
    if not np.isfinite(e):
        return ""
    f = f"{{:.{digits}g}}"
    return f.format(e) + (f" [{f.format(lo)}, {f.format(hi)}]" if np.isfinite(lo) else " (cannot tell: n too small)")


def _top_actions(df: pd.DataFrame, pcols: list[str]) -> pd.DataFrame:
    """Successful rows of top-level actions (and Total): the parameters, scenario, action, duration."""
    ok = successful(df, [*pcols, "scenario", "action", "action_depth"])
    return ok[(ok["action_depth"] == 0).to_numpy()]


def growth(df: pd.DataFrame) -> pd.DataFrame:
    """Per (other parameters, scenario, action) and numeric swept parameter: the median at its
    lowest and highest value, the slope per unit with its interval, and whether it is significant."""
    df = with_benchmark_param(df)
    pcols = ordered_params(param_columns(df))
    ok = _top_actions(df, pcols)
    rows = []
    for xcol in pcols:
        name = xcol[len(PARAM_PREFIX):]
        vals = {(v.item() if isinstance(v, np.generic) else v): numeric(v) for v in ok[xcol].dropna().unique()}
        if name not in UNITS or sum(v is not None for v in vals.values()) < 2:
            continue
        others = [c for c in pcols if c != xcol]
        meds = _medians(ok, [*others, "scenario", "action", xcol])
        groups: dict[tuple, list[tuple[float, Estimate]]] = {}
        for key, est in meds.items():
            x = vals.get(key[-1])
            if x is not None:
                groups.setdefault(key[:-1], []).append((x, est))
        for key, pts in groups.items():
            if len(pts) < 2:
                continue
            pts.sort(key=lambda p: p[0])
            s = slope([p[0] for p in pts], [p[1] for p in pts])
            lo_x, lo_e = pts[0]
            hi_x, hi_e = pts[-1]
            rel = ratio_interval(lo_e, hi_e)
            unit = UNITS[name]
            per = 1000.0 if unit == "ms" else 1.0  # a time in ms per ms of RTT: round trips
            said = verdict(s.lo * per, s.hi * per, ROUND_TRIPS_BOUND) if unit == "ms" else \
                verdict(rel.lo, rel.hi, RELATIVE_BOUND)
            rows.append({
                **{c[len(PARAM_PREFIX):]: v for c, v in zip(others, key[:-2], strict=True)},
                "scenario": key[-2], "action": key[-1], "parameter": name, "points": len(pts),
                "from": f"{lo_x:g}{unit if unit != 'region' else ''}", "to": f"{hi_x:g}{unit if unit != 'region' else ''}",
                "median_from_s": _fmt(lo_e.value, lo_e.lo, lo_e.hi), "median_to_s": _fmt(hi_e.value, hi_e.lo, hi_e.hi),
                "change": _fmt_ratio(rel.value, rel.lo, rel.hi, verdict(rel.lo, rel.hi, RELATIVE_BOUND)),
                "slope": _fmt(s.value * per, s.lo * per, s.hi * per),
                "slope_unit": "round trips (ms per ms RTT)" if unit == "ms" else f"s per {unit}",
                "significant": s.significant, "verdict": said,
                "_slope": s.value * per, "_lo": s.lo * per, "_hi": s.hi * per,
            })
    return pd.DataFrame(rows)


def _fmt_ratio(v: float, lo: float, hi: float, said: str) -> str:
    if not np.isfinite(v):
        return ""
    ci = f" [{lo:+.0%}, {hi:+.0%}]" if np.isfinite(lo) else ""
    return f"{v:+.0%}{ci}{MARK[said]}"


def load_effect(df: pd.DataFrame) -> pd.DataFrame:
    """Per point and action: medians under light and high load and the ratio high / light − 1,
    with its interval and the verdict's mark (``LEGEND``)."""
    df = with_benchmark_param(df)
    pcols = ordered_params(param_columns(df))
    lcol = PARAM_PREFIX + "load"
    if lcol not in pcols or set(df[lcol].dropna().astype(str)) != {"light", "high"}:
        return pd.DataFrame()
    others = [c for c in pcols if c != lcol]
    meds = _medians(_top_actions(df, pcols), [*others, "scenario", "action", lcol])
    rows = []
    for key, light in meds.items():
        if key[-1] != "light" or (*key[:-1], "high") not in meds:
            continue
        high = meds[(*key[:-1], "high")]
        r = ratio_interval(light, high)
        rows.append({**{c[len(PARAM_PREFIX):]: v for c, v in zip(others, key[:-3], strict=True)},
                     "scenario": key[-3], "action": key[-2],
                     "light_median_s": _fmt(light.value, light.lo, light.hi),
                     "high_median_s": _fmt(high.value, high.lo, high.hi),
                     "high_vs_light": _fmt_ratio(r.value, r.lo, r.hi, verdict(r.lo, r.hi, RELATIVE_BOUND)),
                     "significant": r.significant})
    return pd.DataFrame(rows)


def sentences(g: pd.DataFrame, limit: int = 12) -> list[str]:
    """The growth of each scenario's Total in words, largest slopes first."""
    if g.empty:
        return []
    tot = g[g["action"] == TOTAL].sort_values("_slope", ascending=False)
    out = []
    for _, r in tot.head(limit).iterrows():
        where = ", ".join(f"{k}={r[k]}" for k in ("benchmark", "backend", "load", "regions") if k in r and pd.notna(r[k])
                          and k != r["parameter"])
        grow = _growth_words(r)
        out.append(f"{where}: {r['scenario'].split('.')[-1]} takes {r['median_from_s']} s at {r['parameter']}="
                   f"{r['from']} and {r['median_to_s']} s at {r['to']}; it {grow}.")
    return out


def _growth_words(r: pd.Series) -> str:
    """The verdict on one growth row, in words that never claim more than its interval allows."""
    by = f"{r['slope']} {r['slope_unit']}"
    bound = f"{ROUND_TRIPS_BOUND:g} round trips" if r["slope_unit"].startswith("round trips") else \
        f"{RELATIVE_BOUND:.0%} from {r['from']} to {r['to']}"
    return {
        UP: f"grows by {by}",
        DOWN: f"shrinks by {by}",
        SAME: f"does not grow by more than {bound} ({by})",
        TOO_FEW: f"cannot tell whether it grows (n too small for an interval: {by})",
    }.get(r["verdict"], f"cannot tell whether it grows by more than {bound} ({by})")
