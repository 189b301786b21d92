"""The report's figures, each as PNG and SVG: stacked action bars and CDFs per scenario, RTT scatter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wanwide.pipeline.results.ingest import PARAM_PREFIX, TOTAL
from wanwide.pipeline.results.stats import (
    natural,
    ordered_params,
    param_columns,
    point_label,
    slug,
    successful,
    trimmed_means,
)


def _plt() -> Any:
    """matplotlib.pyplot on the non-interactive Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "wanwide"  # the same ids in the SVG on every run
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: Path) -> Path:
    """Lay out, write ``path`` (PNG, 110 dpi) and the same plot beside it as SVG; close the figure."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    fig.savefig(svg_of(path), metadata={"Date": None})
    plt.close(fig)
    return path


def svg_of(png: Path) -> Path:
    """The SVG written beside ``png``."""
    return png.with_suffix(".svg")


def _split_constant(df: pd.DataFrame, pcols: list[str]) -> tuple[list[str], str]:
    """Parameters that vary in ``df`` (for labels) and a note of those equal everywhere in it.

    A parameter missing in some rows (files with other parameter sets) varies; one missing in
    every row is left out.
    """
    varying = [c for c in pcols if df[c].nunique(dropna=False) > 1]
    const = [f"{c[len(PARAM_PREFIX):]}={df[c].dropna().iloc[0]}" for c in pcols
             if c not in varying and df[c].notna().any()]
    return varying, (f"all: {', '.join(const)}" if const else "")


NO_VALUE = "(none)"


def _as_label(s: pd.Series) -> pd.Series:
    """Values as text, missing ones as ``(none)`` (a point whose file did not give the parameter)."""
    o = s.astype(object)
    return o.where(s.notna(), NO_VALUE).astype(str)


# ---------------------------------------------------------------- stacked bars
def _bar_means(sdf: pd.DataFrame, varying: list[str], xcols: list[str], facet: str | None) -> pd.DataFrame:
    """Trimmed mean per (point, action) of one scenario, with the x label in ``_x`` and the panel in ``_facet``."""
    m = trimmed_means(sdf, [*varying, "action"])
    m["action"] = m["action"].astype(str)
    names = [c[len(PARAM_PREFIX):] for c in xcols]
    none = "no other parameters" if facet else "no parameters"
    m["_x"] = [point_label(dict(zip(names, r, strict=True)), names, none) for r in m[xcols].itertuples(index=False)]
    m["_facet"] = _as_label(m[facet]) if facet else "all"
    return m


def _total_cis(tdf: pd.DataFrame, varying: list[str], xcols: list[str], facet: str | None) -> dict[tuple[str, str], Any]:
    """(panel, x label) → the 95 % interval of the Total's trimmed mean (values above p95 dropped)."""
    from wanwide.pipeline.results.ci import group_ci
    from wanwide.pipeline.results.stats import run_ids

    out = {}
    names = [c[len(PARAM_PREFIX):] for c in xcols]
    none = "no other parameters" if facet else "no parameters"
    groups = tdf.groupby(varying, observed=True, dropna=False) if varying else [((), tdf)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        v = g["action_duration"].to_numpy(dtype=float)
        keep = v <= np.quantile(v, 0.95)
        row = dict(zip(varying, key, strict=True))
        x = point_label({n: row[PARAM_PREFIX + n] for n in names}, names, none)
        panel = str(NO_VALUE if facet and pd.isna(row[facet]) else row[facet]) if facet else "all"
        out[(panel, x)] = group_ci(v[keep], run_ids(g)[keep]).mean
    return out


def _stack_bars(ax: Any, fd: pd.DataFrame, xcols: list[str], actions: list[str], colors: Any, title: str,
                totals: dict[str, Any] | None = None) -> None:
    """One bar per x label, stacked by action, on ``ax``; beside it the Total's mean with its interval."""
    xs = list(dict.fromkeys(fd.sort_values(xcols, key=natural)["_x"])) if xcols else ["all"]
    bottom = np.zeros(len(xs))
    for ai, a in enumerate(actions):
        vals = np.array([fd[(fd["_x"] == x) & (fd["action"] == a)]["action_duration"].sum() for x in xs])
        ax.bar(range(len(xs)), vals, bottom=bottom, label=a, color=colors(ai % 10))
        bottom += vals
    est = [(i, totals[x]) for i, x in enumerate(xs) if totals and x in totals and totals[x].defined]
    if est:
        ax.errorbar([i + 0.45 for i, _ in est], [e.value for _, e in est],
                    yerr=[[e.value - e.lo for _, e in est], [e.hi - e.value for _, e in est]],
                    fmt="D", color="black", ms=4, capsize=3, label="Total: mean, 95 % interval")
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels([x.replace(", ", "\n") for x in xs], fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)


def _bar_figure(plt: Any, scen: str, m: pd.DataFrame, faceted: bool, xcols: list[str],
                const: str, out_dir: Path, totals: dict[tuple[str, str], Any] | None = None) -> Path:
    """bars-<scenario>.png: one panel per backend (when it varies), stacked action means."""
    facets = sorted(m["_facet"].unique())
    actions = sorted(m["action"].unique())
    nx = max(m.groupby("_facet")["_x"].nunique())
    fig, axes = plt.subplots(1, len(facets), figsize=(max(5, 2.2 + 1.1 * nx) * len(facets) ** 0.8, 4.8),
                             sharey=True, squeeze=False)
    colors = plt.get_cmap("tab10")
    for ax, fv in zip(axes[0], facets, strict=True):
        panel = {x: e for (f, x), e in (totals or {}).items() if f == fv}
        _stack_bars(ax, m[m["_facet"] == fv], xcols, actions, colors, f"backend={fv}" if faceted else "", panel)
    axes[0][0].set_ylabel("mean time per action (s), values > p95 dropped")
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.suptitle(scen + (f"\n{const}" if const else ""), fontsize=11 if not const else 10)
    return _save(plt, fig, out_dir / f"bars-{slug(scen)}.png")


def plot_stacked_bars(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Per scenario with successful iterations, mean time per top-level action (values above
    p95 dropped) per parameter point; a panel per backend when the scenario's backends differ."""
    plt = _plt()
    pcols = ordered_params(param_columns(df))
    good = successful(df, [*pcols, "scenario", "action", "action_depth"])
    good = good[(good["action_depth"] == 0).to_numpy()]
    ok = good[(good["action"] != TOTAL).to_numpy()]
    files: list[Path] = []
    for scen, sdf in ok.groupby("scenario", observed=True):
        varying, const = _split_constant(sdf, pcols)
        facet = PARAM_PREFIX + "backend" if PARAM_PREFIX + "backend" in varying else None
        xcols = [c for c in varying if c != facet]
        m = _bar_means(sdf, varying, xcols, facet)
        tdf = good[(good["action"] == TOTAL) & (good["scenario"] == scen)]
        totals = _total_cis(tdf, varying, xcols, facet)
        files.append(_bar_figure(plt, str(scen), m, facet is not None, xcols, const, out_dir, totals))
    return files


# ---------------------------------------------------------------- headline
def plot_headline(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    """headline-<scenario>-<parameter>.png: the median iteration time (with its 95 % interval) against
    each numeric swept parameter, a line per backend (and load), the other parameters fixed per panel."""
    from wanwide.pipeline.results.headline import UNITS, _medians, numeric

    plt = _plt()
    pcols = ordered_params(param_columns(df))
    ok = successful(df, [*pcols, "scenario", "action"])
    tot = ok[(ok["action"] == TOTAL).to_numpy()]
    files: list[Path] = []
    for xcol in pcols:
        name = xcol[len(PARAM_PREFIX):]
        if name not in UNITS or sum(numeric(v) is not None for v in tot[xcol].dropna().unique()) < 2:
            continue
        lines = [c for c in (PARAM_PREFIX + "backend", PARAM_PREFIX + "load") if c in pcols and c != xcol]
        panels = [c for c in pcols if c not in (xcol, *lines) and tot[c].nunique(dropna=False) > 1]
        for scen, sdf in tot.groupby("scenario", observed=True):
            meds = _medians(sdf, [*panels, *lines, xcol])
            keys = sorted({k[:len(panels)] for k in meds}, key=str)
            fig, axes = plt.subplots(1, len(keys), figsize=(5.2 * len(keys) ** 0.85, 4.2), squeeze=False, sharey=True)
            for ax, pk in zip(axes[0], keys, strict=True):
                series: dict[tuple, list[tuple[float, Any]]] = {}
                for k, e in meds.items():
                    if k[:len(panels)] == pk and numeric(k[-1]) is not None:
                        series.setdefault(k[len(panels):-1], []).append((numeric(k[-1]), e))
                colors = plt.get_cmap("tab10")
                backends = sorted({str(k[0]) for k in series}) if lines and lines[0].endswith("backend") else []
                for lk, pts in sorted(series.items(), key=lambda kv: str(kv[0])):
                    pts.sort(key=lambda p: p[0])
                    x = [p[0] for p in pts]
                    y = np.array([p[1].value for p in pts])
                    err = np.array([[max(p[1].value - p[1].lo, 0) if p[1].defined else 0 for p in pts],
                                    [max(p[1].hi - p[1].value, 0) if p[1].defined else 0 for p in pts]])
                    label = ", ".join(f"{c[len(PARAM_PREFIX):]}={v}" for c, v in zip(lines, lk, strict=True)) or "all"
                    color = colors(backends.index(str(lk[0])) % 10) if backends else None
                    ax.errorbar(x, y, yerr=err, marker="o", capsize=4, label=label, color=color,
                                ls="--" if "load=high" in label else "-")
                ax.set_xlabel(f"{name} ({UNITS[name]})")
                ax.set_title(", ".join(f"{c[len(PARAM_PREFIX):]}={v}" for c, v in zip(panels, pk, strict=True)),
                             fontsize=9)
                ax.grid(alpha=0.3)
            axes[0][0].set_ylabel("median iteration time (s), 95 % interval")
            axes[0][-1].legend(fontsize=8)
            fig.suptitle(f"{scen}: time against {name}", fontsize=10)
            files.append(_save(plt, fig, out_dir / f"headline-{slug(scen)}-{slug(name)}.png"))
    return files


# ---------------------------------------------------------------- CDFs
CDF_POINTS = 2000  # a curve is drawn through this many quantiles at most (a million points draw slowly)


def _cdf_figure(plt: Any, scen: str, sdf: pd.DataFrame, varying: list[str], const: str, out_dir: Path) -> Path:
    """cdf-<scenario>.png: one step curve per parameter point."""
    names = [c[len(PARAM_PREFIX):] for c in varying]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    groups = sdf.groupby(varying, observed=True, dropna=False) if varying else [((), sdf)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        v = np.sort(g["action_duration"].to_numpy())
        if not len(v):
            continue
        y = np.arange(1, len(v) + 1) / len(v)
        if len(v) > CDF_POINTS:  # the same curve to within 1/CDF_POINTS
            keep = np.unique(np.linspace(0, len(v) - 1, CDF_POINTS).astype(int))
            v, y = v[keep], y[keep]
        ax.step(np.r_[v[0], v], np.r_[0.0, y], where="post", label=point_label(dict(zip(names, key, strict=True)), names) if varying else "all")
    ax.set_xlabel("total iteration time (s)")
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(f"{scen}: successful iterations" + (f"\n{const}" if const else ""), fontsize=10)
    return _save(plt, fig, out_dir / f"cdf-{slug(scen)}.png")


def plot_cdfs(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Per scenario with successful iterations, the CDF of their total time per parameter point."""
    plt = _plt()
    pcols = ordered_params(param_columns(df))
    ok = successful(df, [*pcols, "scenario", "action"])
    tot = ok[(ok["action"] == TOTAL).to_numpy()]
    return [_cdf_figure(plt, str(scen), sdf, *_split_constant(sdf, pcols), out_dir)
            for scen, sdf in tot.groupby("scenario", observed=True)]


# ---------------------------------------------------------------- RTT
def plot_rtt(rtt: pd.DataFrame, out_dir: Path) -> Path | None:
    """rtt.png: measured median (bar to p95) against requested RTT; None without data."""
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
    return _save(plt, fig, out_dir / "rtt.png")


# ---------------------------------------------------------------- changes (compare)
_CHANGE_TICKS = (-0.9, -0.5, -0.2, -0.1, 0.0, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
_VERDICT_COLOR = {"up": "tab:red", "down": "tab:blue", "same": "tab:green"}


def _spaced(ticks: list[float], gap: float = 0.15) -> list[float]:
    """Ticks (relative changes) at least ``gap`` apart on the log-ratio axis, kept outwards from 0."""
    keep: list[float] = []
    for t in sorted(ticks, key=lambda t: abs(np.log1p(t))):
        if all(abs(np.log1p(t) - np.log1p(k)) >= gap for k in keep):
            keep.append(t)
    return sorted(keep)


def plot_changes(rows: pd.DataFrame, labels: list[str], path: Path, bound: float, title: str) -> Path:
    """A forest plot of ``compare``'s rows: each group's relative change (dot) with its 95 % interval (bar)
    on a log-ratio axis (×2 and ÷2 equally far from 0), the ±``bound`` band of "no effect" shaded; red grows,
    blue shrinks, green no effect, grey cannot tell. PNG at ``path``, SVG beside it."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(10, 0.3 * len(rows) + 1.6))
    ax.axvspan(np.log1p(-bound), np.log1p(bound), color="0.9")
    ax.axvline(0, color="0.4", lw=0.8)
    y = np.arange(len(rows))[::-1]
    seen: list[float] = [np.log1p(-bound), np.log1p(bound)]
    for yi, (_, r) in zip(y, rows.iterrows(), strict=True):
        color = _VERDICT_COLOR.get(str(r["verdict"]), "0.45")
        if np.isfinite(r["delta_lo"]) and np.isfinite(r["delta_hi"]):
            lo, hi = np.log1p(r["delta_lo"]), np.log1p(r["delta_hi"])
            ax.plot([lo, hi], [yi, yi], color=color, lw=2.2, solid_capstyle="butt")
            seen += [lo, hi]
        if np.isfinite(r["delta"]):
            ax.plot(np.log1p(r["delta"]), yi, "o", color=color, ms=5)
            seen.append(np.log1p(r["delta"]))
    ticks = _spaced([t for t in _CHANGE_TICKS if min(seen) - 0.05 <= np.log1p(t) <= max(seen) + 0.05])
    ax.set_xticks([np.log1p(t) for t in ticks], [f"{t:+.0%}" if t else "0" for t in ticks], fontsize=8)
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel(f"change, new vs base: dot and 95 % interval (log-ratio axis)\ngrey band ±{bound:.0%}: no effect; "
                  "red grows, blue shrinks, green no effect, grey cannot tell", fontsize=8)
    fig.suptitle(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    return _save(plt, fig, path)
