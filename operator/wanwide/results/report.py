"""``wanwide report SOURCE… -o DIR``: tables and plots from result bundles or Rally JSON.

Statistics follow the founding studies (docs/results.md): durations in seconds of
successful iterations per (parameter point, scenario, atomic action incl. ``Total``);
``failure_rate`` = failed iterations / iterations of that point and scenario; bars
show means after dropping values above the 95th percentile of their group.
"""

from __future__ import annotations

import html
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wanwide.results.ingest import (
    MANIFEST,
    PARAM_PREFIX,
    TOTAL,
    IngestError,
    Source,
    _Builder,
    discover,
    iter_ingest,
    load_json,
    write_parquet,
)

STAT_COLUMNS = ["count", "mean", "std", "min", "p25", "p50", "p75", "max", "iterations", "failures", "failure_rate"]

# Share of reads/writes measured in the 2018 study (seeds.md), KeystoneBasic.*
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
SWEEP_ORDER = ["regions", "delay_ms", "rtt_ms", "latency_ms", "load", "placement", "loss_pct"]


@dataclass
class ReportResult:
    out_dir: Path
    table: pd.DataFrame
    summary: pd.DataFrame
    files: list[Path] = field(default_factory=list)
    params_from_names: bool = False
    manifests: list[dict[str, Any]] = field(default_factory=list)


# ---------------------------------------------------------------- S3 sources
def fetch_s3(url: str, dest: Path, env: dict[str, str] | None = None) -> Path:
    """Download manifest.json/rally.json/task.json of every bundle under s3://bucket/prefix."""
    env = dict(os.environ if env is None else env)
    m = re.match(r"^s3://([^/]+)/?(.*)$", url)
    if not m:
        raise IngestError(f"{url}: expected s3://bucket/prefix")
    bucket, prefix = m.group(1), m.group(2).strip("/")
    missing = [k for k in ("S3_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY") if not env.get(k)]
    if missing:
        raise IngestError(f"{url}: set environment variable(s) {', '.join(missing)} to read from S3")
    from wanwide.runner.upload import Credentials, s3_client

    client = s3_client(env["S3_ENDPOINT"], env.get("AWS_DEFAULT_REGION", "us-east-1"),
                       Credentials(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]))
    target = dest / bucket / prefix if prefix else dest / bucket
    n = 0
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/" if prefix else ""):
            for obj in page.get("Contents", []):
                key = obj["Key"]
                if key.rsplit("/", 1)[-1] not in (MANIFEST, "rally.json", "task.json"):
                    continue
                rel = key[len(prefix):].lstrip("/") if prefix else key
                out = target / rel
                out.parent.mkdir(parents=True, exist_ok=True)
                client.download_file(bucket, key, str(out))
                n += 1
    except Exception as e:
        raise IngestError(f"{url}: reading from S3 endpoint {env['S3_ENDPOINT']} failed: {type(e).__name__}: {e}") from e
    if n == 0:
        raise IngestError(f"{url}: no bundle files found at endpoint {env['S3_ENDPOINT']}")
    return target


# ---------------------------------------------------------------- statistics
def param_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if c.startswith(PARAM_PREFIX)]


def with_benchmark_param(df: pd.DataFrame) -> pd.DataFrame:
    """With results of several Benchmarks, the Benchmark is a parameter (first): equal
    parameter points of different Benchmarks are not pooled in tables or figures."""
    col = PARAM_PREFIX + "benchmark"
    if col in df.columns or "benchmark" not in df.columns or df["benchmark"].nunique(dropna=True) <= 1:
        return df
    return df.assign(**{col: df["benchmark"]})


def _ordered_params(pcols: list[str]) -> list[str]:
    names = [c[len(PARAM_PREFIX):] for c in pcols]
    first = [n for n in ["benchmark", "backend", *SWEEP_ORDER] if n in names]
    return [PARAM_PREFIX + n for n in first + [n for n in names if n not in first]]


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (parameter point, scenario, action): count, mean, std, min, p25, p50,
    p75, max of successful iterations' durations (s) and the per-iteration failure rate."""
    df = with_benchmark_param(df)
    pcols = _ordered_params(param_columns(df))
    keys = [*pcols, "scenario"]
    ok = df[df["error_type"].isna() & df["action_duration"].notna()]
    g = ok.groupby([*keys, "action"], observed=True, dropna=False, sort=True)["action_duration"]
    # one agg call (no index join: NaN parameter keys do not join reliably)
    stats = g.agg(
        count="count", mean="mean", std="std", min="min",
        p25=lambda s: s.quantile(0.25), p50="median", p75=lambda s: s.quantile(0.75), max="max",
    )
    tot = df[df["action"] == TOTAL]
    it = tot.groupby(keys, observed=True, dropna=False, sort=True).agg(
        iterations=("action_duration", "size"), failures=("action_failed", "sum"))
    it["failure_rate"] = it["failures"] / it["iterations"]
    # actions seen only in failed iterations still get a row (count 0)
    seen = df.groupby([*keys, "action"], observed=True, dropna=False, sort=True).size().rename("_n").reset_index()
    out = seen.merge(stats.reset_index(), on=[*keys, "action"], how="left").drop(columns="_n")
    out = out.merge(it.reset_index(), on=keys, how="left")
    out["count"] = out["count"].fillna(0).astype(int)
    out["action"] = out["action"].astype(str)
    out["scenario"] = out["scenario"].astype(str)
    out = out.rename(columns={c: c[len(PARAM_PREFIX):] for c in pcols})
    # Total first within each (point, scenario)
    out["_t"] = (out["action"] != TOTAL).astype(int)
    out = out.sort_values([*(c[len(PARAM_PREFIX):] for c in pcols), "scenario", "_t", "action"],
                          kind="stable").drop(columns="_t").reset_index(drop=True)
    return out[[*(c[len(PARAM_PREFIX):] for c in pcols), "scenario", "action", *STAT_COLUMNS]]


def point_label(row: pd.Series | dict, names: list[str]) -> str:
    parts = []
    for n in names:
        v = row[n]
        if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
            continue
        parts.append(f"{n}={v}")
    return ", ".join(parts) or "all"


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", s).strip("_")[:120] or "all"


# ---------------------------------------------------------------- tables
def markdown_table(df: pd.DataFrame, floatfmt: str = "{:.4f}") -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        cells = []
        for v in row:
            if isinstance(v, float | np.floating):
                cells.append("" if np.isnan(v) else floatfmt.format(v))
            else:
                cells.append("" if v is None or v is pd.NA else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------- plots
def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def trimmed_means(df: pd.DataFrame, keys: list[str], q: float = 0.95) -> pd.DataFrame:
    """Mean per group after dropping values above the group's q-quantile (as in the studies)."""
    g = df.groupby(keys, observed=True, dropna=False)["action_duration"]
    thr = g.transform(lambda s: s.quantile(q))
    kept = df[df["action_duration"] <= thr]
    return kept.groupby(keys, observed=True, dropna=False)["action_duration"].mean().reset_index()


def _split_constant(df: pd.DataFrame, pcols: list[str]) -> tuple[list[str], str]:
    """Parameters that vary (for labels) and a note of those equal everywhere."""
    varying = [c for c in pcols if df[c].nunique(dropna=False) > 1]
    const = [f"{c[len(PARAM_PREFIX):]}={df[c].iloc[0]}" for c in pcols if c not in varying and len(df)]
    return varying, (f"all: {', '.join(const)}" if const else "")


def plot_stacked_bars(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    plt = _plt()
    pcols = _ordered_params(param_columns(df))
    facet = PARAM_PREFIX + "backend" if PARAM_PREFIX + "backend" in pcols else None
    varying, const = _split_constant(df, pcols)
    xcols = [c for c in varying if c != facet]
    ok = df[df["error_type"].isna() & df["action_duration"].notna() & (df["action_depth"] == 0) & (df["action"] != TOTAL)]
    files: list[Path] = []
    for scen, sdf in ok.groupby("scenario", observed=True):
        sdf = sdf.copy()
        sdf["action"] = sdf["action"].astype(str)
        m = trimmed_means(sdf, [*pcols, "action"])
        if m.empty:
            continue
        m["_x"] = ([point_label({c[len(PARAM_PREFIX):]: r[c] for c in xcols}, [c[len(PARAM_PREFIX):] for c in xcols])
                    for _, r in m.iterrows()] if xcols else "all")
        facets = sorted(m[facet].dropna().astype(str).unique()) if facet else ["all"]
        actions = sorted(m["action"].unique())
        nx = max(len(set((m if facet is None else m[m[facet].astype(str) == fv])["_x"])) for fv in facets)
        fig, axes = plt.subplots(1, len(facets), figsize=(max(5, 2.2 + 1.1 * nx) * len(facets) ** 0.8, 4.8),
                                 sharey=True, squeeze=False)
        colors = plt.get_cmap("tab10")
        for ax, fv in zip(axes[0], facets, strict=True):
            fd = m if facet is None else m[m[facet].astype(str) == fv]
            xs = list(dict.fromkeys(fd.sort_values(xcols)["_x"])) if xcols else ["all"]
            bottom = np.zeros(len(xs))
            for ai, a in enumerate(actions):
                vals = np.array([fd[(fd["_x"] == x) & (fd["action"] == a)]["action_duration"].sum() for x in xs])
                ax.bar(range(len(xs)), vals, bottom=bottom, label=a, color=colors(ai % 10))
                bottom += vals
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels([x.replace(", ", "\n") for x in xs], fontsize=8)
            ax.set_title(f"backend={fv}" if facet else "", fontsize=10)
            ax.grid(axis="y", alpha=0.3)
        axes[0][0].set_ylabel("mean time per action (s), values > p95 dropped")
        axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
        fig.suptitle(scen + (f"\n{const}" if const else ""), fontsize=11 if not const else 10)
        fig.tight_layout()
        p = out_dir / f"bars-{_slug(scen)}.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        files.append(p)
    return files


def plot_cdfs(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    plt = _plt()
    pcols = _ordered_params(param_columns(df))
    varying, const = _split_constant(df, pcols)
    names = [c[len(PARAM_PREFIX):] for c in varying]
    tot = df[(df["action"] == TOTAL) & df["error_type"].isna()]
    files: list[Path] = []
    for scen, sdf in tot.groupby("scenario", observed=True):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        groups = sdf.groupby(varying, observed=True, dropna=False) if varying else [((), sdf)]
        for key, g in groups:
            key = key if isinstance(key, tuple) else (key,)
            v = np.sort(g["action_duration"].to_numpy())
            if not len(v):
                continue
            y = np.arange(1, len(v) + 1) / len(v)
            ax.step(np.r_[v[0], v], np.r_[0.0, y], where="post", label=point_label(dict(zip(names, key, strict=True)), names) if varying else "all")
        ax.set_xlabel("total iteration time (s)")
        ax.set_ylabel("CDF")
        ax.set_ylim(0, 1.01)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        ax.set_title(f"{scen}: successful iterations" + (f"\n{const}" if const else ""), fontsize=10)
        fig.tight_layout()
        p = out_dir / f"cdf-{_slug(scen)}.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        files.append(p)
    return files


def read_write_table(manifests: list[dict[str, Any]]) -> pd.DataFrame:
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
    if not rows:
        return pd.DataFrame(columns=["scenario", "backend", "runs", "reads", "writes", "read_pct", "write_pct", "study_read_pct"])
    d = pd.DataFrame(rows)
    g = d.groupby(["scenario", "backend"], dropna=False).agg(runs=("reads", "size"), reads=("reads", "sum"),
                                                             writes=("writes", "sum")).reset_index()
    tot = g["reads"] + g["writes"]
    g["read_pct"] = (100 * g["reads"] / tot).round(2)
    g["write_pct"] = (100 * g["writes"] / tot).round(2)
    g["study_read_pct"] = g["scenario"].map(STUDY_READ_PCT)
    return g


def rtt_table(manifests: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for m in manifests:
        req = {(link["src"], link["dst"]): float(link.get("delay_ms") or 0) for link in (m.get("network") or {}).get("requested", [])}
        for r in (m.get("network") or {}).get("measured", []):
            src, dst = r.get("src"), r.get("dst")
            if src == dst:
                requested = 0.0
            elif (src, dst) in req or (dst, src) in req:
                requested = req.get((src, dst), 0.0) + req.get((dst, src), 0.0)
            else:
                requested = np.nan
            rows.append({"benchmark": m.get("benchmark"), "trial": (m.get("trial") or {}).get("id"), "src": src, "dst": dst, "kind": r.get("kind"),
                         "requested_rtt_ms": requested, "measured_median_ms": r.get("median_ms"),
                         "measured_p95_ms": r.get("p95_ms"), "samples": len(r.get("samples_ms") or []),
                         "errors": r.get("errors")})
    return pd.DataFrame(rows, columns=["benchmark", "trial", "src", "dst", "kind", "requested_rtt_ms", "measured_median_ms",
                                       "measured_p95_ms", "samples", "errors"])


def plot_rtt(rtt: pd.DataFrame, out_dir: Path) -> Path | None:
    d = rtt.dropna(subset=["measured_median_ms"])
    if d.empty:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 5))
    for kind, g in d.groupby("kind"):
        ax.scatter(g["requested_rtt_ms"].fillna(0), g["measured_median_ms"], label=f"{kind} (median)", alpha=0.8)
        ax.errorbar(g["requested_rtt_ms"].fillna(0), g["measured_median_ms"],
                    yerr=[np.zeros(len(g)), (g["measured_p95_ms"] - g["measured_median_ms"]).clip(lower=0)],
                    fmt="none", alpha=0.4)
    hi = float(max(d["requested_rtt_ms"].fillna(0).max(), d["measured_p95_ms"].max(), 1.0)) * 1.1
    ax.plot([0, hi], [0, hi], "k--", lw=0.8, label="measured = requested")
    ax.set_xlabel("requested RTT (ms)")
    ax.set_ylabel("measured TCP-connect RTT (ms), bar to p95")
    ax.set_title("requested vs measured RTT per region pair", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    p = out_dir / "rtt.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p


# ---------------------------------------------------------------- run metadata
def runs_table(manifests: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for m in manifests:
        st, start, host, ks = m.get("status") or {}, m.get("start") or {}, m.get("host") or {}, m.get("keystone") or {}
        rows.append({
            "benchmark": m.get("benchmark"), "trial": (m.get("trial") or {}).get("id"),
            "repetition": (m.get("trial") or {}).get("repetition"), "region": m.get("region"),
            "attempt": m.get("attempt"), "run_id": m.get("run_id"), "result": st.get("result"),
            "reason": st.get("reason"), "start": start.get("actual"), "skew_s": start.get("skew_s"),
            "loadavg_before": (host.get("loadavg_before") or [None])[0],
            "loadavg_after": (host.get("loadavg_after") or [None])[0],
            "keystone_cache": json.dumps(ks.get("cache") or {}, sort_keys=True),
            "versions": ", ".join(f"{k} {v}" for k, v in sorted((m.get("versions") or {}).items())),
        })
    return pd.DataFrame(rows)


def _html_table(df: pd.DataFrame) -> str:
    return df.to_html(index=False, na_rep="", float_format=lambda v: f"{v:.4g}", border=0, classes="t")


# ---------------------------------------------------------------- the report
def build_report(
    sources: list[str | Path],
    out_dir: str | Path,
    *,
    progress: bool = True,
    store_parquet_beside: bool = True,
    env: dict[str, str] | None = None,
) -> ReportResult:
    """Read every source (bundle dirs, s3://bucket/prefix, plain Rally JSON) → DIR/…

    Writes results.parquet, summary.csv, report.md, tables/*.csv, bars-*.png, cdf-*.png,
    read_write.csv, rtt.csv/rtt.png, runs.csv and index.html. Returns what it wrote.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    local: list[Path] = []
    s3_urls: list[str] = []
    for s in sources:
        s = str(s)
        if s.startswith("s3://"):
            s3_urls.append(s)
            local.append(fetch_s3(s, out / "raw", env))
        else:
            local.append(Path(s))
    found: list[Source] = discover(local)
    if not found:
        raise IngestError(f"no result bundle or Rally JSON file found in {', '.join(map(str, sources))}")
    b = _Builder()
    it = iter_ingest(found, b)
    if progress:
        from tqdm import tqdm

        it = tqdm(it, total=len(found), desc="reading results", unit="file", file=sys.stderr)
    for _ in it:
        pass
    df = b.frame()
    manifests = [load_json(s.path / MANIFEST) for s in found if s.kind == "bundle"]
    files: list[Path] = [write_parquet(df, out / "results.parquet")]
    if store_parquet_beside:
        for p in local:
            if p.is_dir() and p.resolve() != out.resolve():
                try:
                    sub = df[df["source"].astype(str).str.startswith(str(p))]
                    write_parquet(sub, p / "results.parquet")
                except OSError as e:
                    print(f"warning: could not store {p / 'results.parquet'}: {e}", file=sys.stderr)

    df = with_benchmark_param(df)
    summary = summarize(df)
    summary.to_csv(out / "summary.csv", index=False)
    files.append(out / "summary.csv")
    pnames = [c for c in summary.columns if c not in ("scenario", "action", *STAT_COLUMNS)]

    # describe tables per scenario / point
    tdir = out / "tables"
    tdir.mkdir(exist_ok=True)
    md: list[str] = ["# wanwide report", ""]
    from_names = bool(found) and any(s.kind == "file" for s in found)
    how = sorted(set(df["params_source"].astype(str))) if len(df) else []
    if from_names:
        md += [f"> Parameters of plain Rally JSON files came from **{' / '.join(h for h in how if h != 'manifest')}**"
               " (file names or a sidecar params.yaml), not from bundle manifests.", ""]
    md += [f"Sources: {', '.join(map(str, sources))}; {len(found)} file(s)/bundle(s), "
           f"{int((df['action'] == TOTAL).sum())} iterations, {len(df)} rows.", ""]
    if pnames:
        gb = summary.groupby(["scenario", *pnames], dropna=False, sort=True)
    else:
        gb = summary.groupby(["scenario"], sort=True)
    for key, g in gb:
        key = key if isinstance(key, tuple) else (key,)
        scen = key[0]
        label = point_label(dict(zip(pnames, key[1:], strict=True)), pnames) if pnames else "all"
        tab = g[["action", *STAT_COLUMNS[:8]]].rename(columns={"p25": "25%", "p50": "50%", "p75": "75%"})
        p = tdir / f"{_slug(scen)}__{_slug(label)}.csv"
        tab.to_csv(p, index=False)
        files.append(p)
        fr = g["failure_rate"].iloc[0]
        md += [f"## {scen} — {label}", "",
               f"iterations {int(g['iterations'].iloc[0]) if pd.notna(g['iterations'].iloc[0]) else 0}, "
               f"failure rate λ = {fr:.3f}" if pd.notna(fr) else "no iterations", "",
               markdown_table(tab), ""]

    bars = plot_stacked_bars(df, out)
    cdfs = plot_cdfs(df, out)
    rw = read_write_table(manifests)
    rw.to_csv(out / "read_write.csv", index=False)
    rtt = rtt_table(manifests)
    rtt.to_csv(out / "rtt.csv", index=False)
    rtt_png = plot_rtt(rtt, out)
    runs = runs_table(manifests)
    runs.to_csv(out / "runs.csv", index=False)
    files += [*bars, *cdfs, out / "read_write.csv", out / "rtt.csv", out / "runs.csv"]
    if rtt_png:
        files.append(rtt_png)

    md += ["## Reads and writes per scenario (MariaDB/Galera statement counters)", "",
           markdown_table(rw, "{:.2f}") if len(rw) else "No database counters in these results.", ""]
    md += ["## Requested vs measured RTT", "",
           markdown_table(rtt, "{:.3f}") if len(rtt) else "No RTT measurements in these results.", ""]
    (out / "report.md").write_text("\n".join(md) + "\n")
    files.append(out / "report.md")

    # index.html
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>wanwide report</title><style>"
        "body{font-family:sans-serif;margin:2em;max-width:1400px}table.t{border-collapse:collapse;font-size:12px}"
        "table.t td,table.t th{border:1px solid #ccc;padding:2px 6px}img{max-width:100%;border:1px solid #eee}"
        ".note{background:#fff6d5;padding:.5em 1em}</style></head><body>",
        "<h1>wanwide report</h1>",
        f"<p>Sources: {e(', '.join(map(str, sources)))} — {len(found)} bundle(s)/file(s), "
        f"{int((df['action'] == TOTAL).sum())} iterations.</p>",
    ]
    if from_names:
        parts.append("<p class='note'>Parameters of plain Rally JSON files came from file names or a sidecar "
                     "params.yaml, not from bundle manifests (see column <code>params_source</code>).</p>")
    parts.append("<p>Files: <a href='summary.csv'>summary.csv</a> · <a href='report.md'>report.md</a> · "
                 "<a href='results.parquet'>results.parquet</a> · <a href='read_write.csv'>read_write.csv</a> · "
                 "<a href='rtt.csv'>rtt.csv</a> · <a href='runs.csv'>runs.csv</a> · tables/</p>")
    if len(runs):
        parts += ["<h2>Runs</h2>", _html_table(runs)]
    parts += ["<h2>Summary (seconds; successful iterations; failure rate per iteration)</h2>", _html_table(summary)]
    if bars:
        parts.append("<h2>Mean time per atomic action (values above p95 dropped)</h2>")
        parts += [f"<p><img src='{e(p.name)}'></p>" for p in bars]
    if cdfs:
        parts.append("<h2>CDF of total iteration time</h2>")
        parts += [f"<p><img src='{e(p.name)}'></p>" for p in cdfs]
    parts += ["<h2>Reads/writes per scenario, next to the 2018 study</h2>",
              _html_table(rw) if len(rw) else "<p>No database counters.</p>"]
    parts += ["<h2>Requested vs measured RTT</h2>", _html_table(rtt) if len(rtt) else "<p>No RTT measurements.</p>"]
    if rtt_png:
        parts.append(f"<p><img src='{rtt_png.name}'></p>")
    parts.append("</body></html>")
    (out / "index.html").write_text("\n".join(parts))
    files.append(out / "index.html")
    return ReportResult(out, df, summary, files, from_names, manifests)
