"""Statistics and tables of the report, as DataFrames (no files, no plots).

Statistics follow the founding studies (docs/results.md): durations in seconds of
successful iterations per (parameter point, scenario, atomic action incl. ``Total``);
``failure_rate`` = failed iterations / iterations of that point and scenario; bars
show means after dropping values above the 95th percentile of their group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from wanwide.pipeline.results.ci import group_ci
from wanwide.pipeline.results.ingest import PARAM_PREFIX, TOTAL

CI_COLUMNS = ["mean_ci_lo", "mean_ci_hi", "p50_ci_lo", "p50_ci_hi", "runs", "ci_method"]
STAT_COLUMNS = ["count", "mean", "mean_ci_lo", "mean_ci_hi", "p50", "p50_ci_lo", "p50_ci_hi", "std", "min", "p25",
                "p75", "max", "runs", "ci_method", "iterations", "failures", "failure_rate"]
DESCRIBE = {"count": "count", "mean": "mean", "mean_ci_lo": "mean 95% lo", "mean_ci_hi": "mean 95% hi",
            "p50": "median", "p50_ci_lo": "median 95% lo", "p50_ci_hi": "median 95% hi", "std": "std",
            "min": "min", "p25": "25%", "p75": "75%", "max": "max"}

# Share of reads (% of reads + writes) measured in the 2018 study for KeystoneBasic.*
STUDY_READ_PCT = {
    "KeystoneBasic.authenticate_user_and_validate_token": 96.46,
    "KeystoneBasic.create_add_and_list_user_roles": 96.22,
    "KeystoneBasic.create_and_list_tenants": 92.12,
    "KeystoneBasic.get_entities": 91.90,
    "KeystoneBasic.create_user_update_password": 89.79,
    "KeystoneBasic.create_user_set_enabled_and_delete": 91.07,
    "KeystoneBasic.create_and_list_users": 92.05,
}
# Parameters that name the swept dimension, in the order they are shown
SWEEP_ORDER = ["regions", "rtt", "intraGroupRtt", "interGroupRtt", "delay_ms", "rtt_ms", "latency_ms", "loss", "load",
               "placement", "loss_pct"]


# ---------------------------------------------------------------- parameters
REPETITION = PARAM_PREFIX + "repetition"  # a run's repetition index: a replicate, not a parameter


def param_columns(df: pd.DataFrame) -> list[str]:
    """The ``param.<name>`` columns of ``df``, in table order (repetitions are pooled, not a parameter)."""
    return [c for c in df.columns if c.startswith(PARAM_PREFIX) and c != REPETITION]


def with_benchmark_param(df: pd.DataFrame) -> pd.DataFrame:
    """With results of several Benchmarks, the Benchmark is a parameter (first): equal
    parameter points of different Benchmarks are not pooled in tables or figures."""
    col = PARAM_PREFIX + "benchmark"
    if col in df.columns or "benchmark" not in df.columns or df["benchmark"].nunique(dropna=True) <= 1:
        return df
    return df.assign(**{col: df["benchmark"]})


def ordered_params(pcols: list[str]) -> list[str]:
    """Parameter columns in display order: benchmark, backend, the swept ones, the rest."""
    names = [c[len(PARAM_PREFIX):] for c in pcols]
    first = [n for n in ["benchmark", "backend", *SWEEP_ORDER] if n in names]
    return [PARAM_PREFIX + n for n in first + [n for n in names if n not in first]]


_QUANTITY = re.compile(r"^\s*-?\d+(\.\d+)?\s*(ms|s|%|mbit|gbit)?\s*$")


def natural(s: pd.Series) -> pd.Series:
    """Sort key of a parameter column: numbers by value when every value is a number or a quantity
    (``50ms`` before ``150ms``), text otherwise; missing values last."""
    vals = s.dropna().astype(str)
    if len(vals) and vals.map(lambda v: bool(_QUANTITY.match(v))).all():
        def num(v: object) -> float:
            if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
                return float("inf")
            t = str(v).strip()
            f = float(re.match(r"-?\d+(\.\d+)?", t).group(0))  # type: ignore[union-attr]
            return f * 1000 if t.endswith("s") and not t.endswith("ms") else f
        return s.map(num).astype(float)
    return s.astype(object).where(s.notna(), None).map(lambda v: (v is None, "" if v is None else str(v)))


def point_label(row: pd.Series | dict, names: list[str], none: str = "no parameters") -> str:
    """``name=value, …`` of a parameter point (null values left out); ``all`` without
    parameter names, ``none`` when the point has none of them (its file gave none)."""
    parts = []
    for n in names:
        v = row[n]
        if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
            continue
        parts.append(f"{n}={v}")
    return ", ".join(parts) or (none if names else "all")


def slug(s: str) -> str:
    """``s`` made safe for a file name (at most 120 characters)."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", s).strip("_")[:120] or "all"


# ---------------------------------------------------------------- durations
def _codes(s: pd.Series) -> np.ndarray:
    """Integer codes of a column's values (-1 for missing), from its categories when it has them."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return s.cat.codes.to_numpy().astype(np.int64)
    return pd.factorize(s, use_na_sentinel=True)[0].astype(np.int64)


def run_ids(df: pd.DataFrame) -> np.ndarray:
    """The run each row came from (the unit of repetition), as integers: one per ``benchmark/trial``
    for bundles (the load regions of one trial are one run), one per file for plain Rally JSON."""
    b, t, src = _codes(df["benchmark"]), _codes(df["trial_id"]), _codes(df["source"])
    n_trials = int(t.max()) + 2 if len(t) else 1
    return np.where(t >= 0, (b + 1) * n_trials + t + 1, -(src + 1))


def _group_stats(ok: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of ``keys``: count, mean, std, min, quartiles, max and the 95 % intervals of the
    mean and the median (pipeline/results/ci.py), from one sort of each group's values."""
    gb = ok.groupby(keys, observed=True, dropna=False, sort=True)
    codes = gb.ngroup().to_numpy()
    order = np.argsort(codes, kind="stable")
    vals = ok["action_duration"].to_numpy(dtype=float)[order]
    rids = run_ids(ok)[order]
    bounds = np.searchsorted(codes[order], np.arange(gb.ngroups + 1))
    rows = []
    for g in range(gb.ngroups):
        x = vals[bounds[g]:bounds[g + 1]]
        c = group_ci(x, rids[bounds[g]:bounds[g + 1]])
        q25, q50, q75 = np.quantile(x, [0.25, 0.5, 0.75])
        rows.append((len(x), float(x.mean()), float(x.std(ddof=1)) if len(x) > 1 else np.nan, float(x.min()),
                     q25, q50, q75, float(x.max()), c.mean.lo, c.mean.hi, c.median.lo, c.median.hi, c.runs,
                     c.mean.method))
    out = pd.DataFrame(rows, columns=["count", "mean", "std", "min", "p25", "p50", "p75", "max", *CI_COLUMNS])
    first = ok.iloc[order[bounds[:-1]]][keys].reset_index(drop=True) if gb.ngroups else ok[keys].iloc[:0]
    return pd.concat([first, out], axis=1)


RUN_COLUMNS = ["benchmark", "trial_id", "source"]  # what run_ids reads


def successful(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``columns`` (and what run_ids needs) of the rows of successful iterations with a duration:
    a slim copy, not all 30 columns of a million-iteration table."""
    cols = list(dict.fromkeys([*columns, "action_duration", *RUN_COLUMNS]))
    mask = (df["error_type"].isna() & df["action_duration"].notna()).to_numpy()
    return df.loc[mask, cols]


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (parameter point, scenario, action): count, mean and median of successful
    iterations' durations (s) with their 95 % intervals, std, min, quartiles, max, the runs
    (repetitions) they came from, and the per-iteration failure rate."""
    df = with_benchmark_param(df)
    pcols = ordered_params(param_columns(df))
    keys = [*pcols, "scenario"]
    ok = successful(df, [*keys, "action"])
    stats = _group_stats(ok, [*keys, "action"])
    tot = df.loc[(df["action"] == TOTAL).to_numpy(), [*keys, "action_duration", "action_failed"]]
    it = tot.groupby(keys, observed=True, dropna=False, sort=True).agg(
        iterations=("action_duration", "size"), failures=("action_failed", "sum"))
    it["failure_rate"] = it["failures"] / it["iterations"]
    # actions seen only in failed iterations still get a row (count 0)
    failed = df.loc[(df["error_type"].notna() | df["action_duration"].isna()).to_numpy(), [*keys, "action"]]
    only_failed = failed.drop_duplicates().merge(stats[[*keys, "action"]], how="left", indicator=True)
    only_failed = only_failed[only_failed["_merge"] == "left_only"].drop(columns="_merge")
    out = pd.concat([stats, only_failed], ignore_index=True) if len(only_failed) else stats
    out = out.merge(it.reset_index(), on=keys, how="left")
    out["count"] = out["count"].fillna(0).astype(int)
    out["runs"] = out["runs"].fillna(0).astype(int)
    out["action"] = out["action"].astype(str)
    out["scenario"] = out["scenario"].astype(str)
    out = out.rename(columns={c: c[len(PARAM_PREFIX):] for c in pcols})
    # Total first within each (point, scenario)
    out["_t"] = (out["action"] != TOTAL).astype(int)
    names = [c[len(PARAM_PREFIX):] for c in pcols]
    out = out.sort_values([*names, "scenario", "_t", "action"], kind="stable",
                          key=lambda col: natural(col) if col.name in names else col).drop(columns="_t").reset_index(drop=True)
    return out[[*(c[len(PARAM_PREFIX):] for c in pcols), "scenario", "action", *STAT_COLUMNS]]


def trimmed_means(df: pd.DataFrame, keys: list[str], q: float = 0.95) -> pd.DataFrame:
    """Mean per group after dropping values above the group's q-quantile (as in the studies)."""
    g = df.groupby(keys, observed=True, dropna=False)["action_duration"]
    thr = g.transform("quantile", q)
    kept = df[(df["action_duration"] <= thr).to_numpy()]
    return kept.groupby(keys, observed=True, dropna=False)["action_duration"].mean().reset_index()


@dataclass
class PointTable:
    """The describe table of one (scenario, parameter point) of the summary."""

    scenario: str
    label: str  # point_label of the parameter point
    iterations: Any  # iterations of the point (NaN when none)
    failure_rate: Any  # failed / all iterations (NaN when none)
    table: pd.DataFrame  # action, count, mean and median with their intervals, std, min, 25%, 75%, max
    runs: int = 1  # runs (repetitions) pooled in the table


def point_tables(summary: pd.DataFrame) -> list[PointTable]:
    """Split the summary into one describe table per scenario and parameter point."""
    pnames = [c for c in summary.columns if c not in ("scenario", "action", *STAT_COLUMNS)]
    if pnames:
        gb = summary.groupby(["scenario", *pnames], dropna=False, sort=True)
    else:
        gb = summary.groupby(["scenario"], sort=True)
    out: list[PointTable] = []
    for key, g in gb:
        key = key if isinstance(key, tuple) else (key,)
        label = point_label(dict(zip(pnames, key[1:], strict=True)), pnames) if pnames else "all"
        tab = g[["action", *DESCRIBE]].rename(columns=DESCRIBE)
        out.append(PointTable(key[0], label, g["iterations"].iloc[0], g["failure_rate"].iloc[0], tab,
                              int(g["runs"].max())))
    return out


# ---------------------------------------------------------------- from bundle manifests
def read_write_runs(manifests: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per run that counted the database's statements (before and after its task): scenario
    (``mixed: …`` when the task held several), backend, region, trial, reads, writes, read_pct."""
    rows = []
    for m in manifests:
        db = m.get("database") or {}
        if db.get("reads") is None:
            continue
        scen = m.get("scenarios") or []
        rows.append({
            "scenario": scen[0] if len(scen) == 1 else ("mixed: " + ", ".join(scen)),
            "backend": db.get("backend"), "region": m.get("region"), "trial": (m.get("trial") or {}).get("id"),
            "reads": db["reads"], "writes": db["writes"],
        })
    d = pd.DataFrame(rows, columns=["scenario", "backend", "region", "trial", "reads", "writes"])
    d["read_pct"] = 100 * d["reads"] / (d["reads"] + d["writes"])
    return d


def read_write_table(manifests: list[dict[str, Any]]) -> pd.DataFrame:
    """Database reads and writes per (scenario, backend), summed over runs, next to the 2018 study's read share."""
    d = read_write_runs(manifests)
    if not len(d):
        return pd.DataFrame(columns=["scenario", "backend", "runs", "reads", "writes", "read_pct", "write_pct", "study_read_pct"])
    g = d.groupby(["scenario", "backend"], dropna=False).agg(runs=("reads", "size"), reads=("reads", "sum"),
                                                             writes=("writes", "sum")).reset_index()
    tot = g["reads"] + g["writes"]
    g["read_pct"] = (100 * g["reads"] / tot).round(2)
    g["write_pct"] = (100 * g["writes"] / tot).round(2)
    g["study_read_pct"] = g["scenario"].map(STUDY_READ_PCT)
    return g


def _requested_rtt(req: dict[tuple[str, str], float], src: Any, dst: Any) -> float:
    """Requested RTT of a pair: the sum of both one-way delays; 0 to itself, NaN if unknown."""
    if src == dst:
        return 0.0
    if (src, dst) in req or (dst, src) in req:
        return req.get((src, dst), 0.0) + req.get((dst, src), 0.0)
    return np.nan


def rtt_table(manifests: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per measured RTT target of every run: requested vs measured RTT (ms)."""
    rows = []
    for m in manifests:
        req = {(link["src"], link["dst"]): float(link.get("delay_ms") or 0) for link in (m.get("network") or {}).get("requested", [])}
        for r in (m.get("network") or {}).get("measured", []):
            src, dst = r.get("src"), r.get("dst")
            rows.append({"benchmark": m.get("benchmark"), "trial": (m.get("trial") or {}).get("id"), "src": src, "dst": dst, "kind": r.get("kind"),
                         "requested_rtt_ms": _requested_rtt(req, src, dst), "measured_median_ms": r.get("median_ms"),
                         "measured_p95_ms": r.get("p95_ms"), "samples": len(r.get("samples_ms") or []),
                         "errors": r.get("errors")})
    return pd.DataFrame(rows, columns=["benchmark", "trial", "src", "dst", "kind", "requested_rtt_ms", "measured_median_ms",
                                       "measured_p95_ms", "samples", "errors"])
