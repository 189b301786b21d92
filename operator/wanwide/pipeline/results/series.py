"""``wanwide history``: the history store's runs as series, their change points, what changed there.

A series is one key of the store (:data:`.history.KEY`: Benchmark, parameters, scenario, action,
load region, machine) through time: one point per run, the run's median (``--stat``) of the
action's successful durations, oldest first. :func:`.changes.change_points` finds where it moved;
each change names its first run (id, trial, start, the data set it came from) and the versions
that differ between the runs on either side of it. Pure except :func:`plot_series` (files).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wanwide.pipeline.results.changes import MAX_P, MIN_RUNS, Change, change_points
from wanwide.pipeline.results.history import KEY, NO_MODEL
from wanwide.pipeline.results.ingest import TOTAL

STATS = ("median", "mean", "p95")
CHANGE_COLUMNS = [*KEY, "stat", "runs", "index", "run_id", "trial", "start", "source", "before_s", "after_s",
                  "change", "change_lo", "change_hi", "p", "versions_changed", "machine_changed"]


@dataclass(frozen=True)
class Series:
    key: tuple[str, ...]
    runs: pd.DataFrame  # the store's rows of this key, oldest first
    stat: str

    @property
    def values(self) -> np.ndarray:
        return self.runs[self.stat].to_numpy(dtype=float)

    @property
    def label(self) -> str:
        k = dict(zip(KEY, self.key, strict=True))
        parts = [k["benchmark"], k["parameters"], f"{k['scenario'].split('.')[-1]} {k['action']}"]
        parts += [f"region {k['region']}"] if k["region"] else []
        parts += [k["machine"]] if k["machine"] else []
        return " · ".join(p for p in parts if p)


def select(df: pd.DataFrame, *, benchmarks: Sequence[str] = (), scenarios: Sequence[str] = (),
           actions: str = "total", where: Sequence[str] = ()) -> pd.DataFrame:
    """The store's rows to look at: Benchmarks, scenarios (short or full names), whole iterations only unless
    ``actions`` is ``all``, and parameters ``NAME=VALUE`` (each must be in the row's parameters)."""
    keep = np.ones(len(df), dtype=bool)
    if benchmarks:
        keep &= df["benchmark"].isin(list(benchmarks)).to_numpy()
    if scenarios:
        short = df["scenario"].str.split(".").str[-1]
        keep &= (df["scenario"].isin(list(scenarios)) | short.isin(list(scenarios))).to_numpy()
    if actions != "all":
        keep &= (df["action"] == TOTAL).to_numpy()
    parts = df["parameters"].astype(str).str.split(", ").map(set)
    for cond in where:
        want = cond.strip()
        keep &= np.array([want in ps for ps in parts], dtype=bool)
    return df[keep]


def known_machines(df: pd.DataFrame) -> pd.Series:
    """``machine`` with a run that recorded no CPU model given the one model recorded by the other runs of
    its series with the same CPU count (bundles from before 2026-11-28 name none); kept as it is when there
    is no such model or several."""
    out = df["machine"].astype(str).copy()
    rest = [k for k in KEY if k != "machine"]
    count = out.str.split(" · ").str[0]
    unknown = out.str.endswith(NO_MODEL)
    if not unknown.any():
        return out
    for _, idx in df.groupby(rest, sort=False, dropna=False).groups.items():
        u = unknown.loc[idx]
        if not u.any():
            continue
        for c in set(count.loc[idx][u]):
            models = set(out.loc[idx][(~u) & (count.loc[idx] == c)])
            if len(models) == 1:
                out.loc[[i for i in idx if unknown[i] and count[i] == c]] = models.pop()
    return out


def series_of(df: pd.DataFrame, stat: str = "median") -> list[Series]:
    """Every key's runs in time order (the store's order), the keys sorted; runs without a CPU model join
    their series' one known model (:func:`known_machines`)."""
    df = df.assign(recorded=df["machine"], machine=known_machines(df))
    out = []
    for key, g in df.groupby(KEY, sort=True, dropna=False):
        out.append(Series(tuple(str(k) for k in key), g.reset_index(drop=True), stat))
    return out


def version_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """``name old → new`` of each version that differs (added and removed ones too)."""
    out = []
    for k in sorted(set(before) | set(after)):
        a, b = before.get(k), after.get(k)
        if a != b:
            out.append(f"{k} {a if a is not None else '(none)'} → {b if b is not None else '(none)'}")
    return out


@dataclass(frozen=True)
class Found:
    series: Series
    change: Change

    @property
    def run(self) -> pd.Series:
        return self.series.runs.iloc[self.change.index]

    @property
    def versions(self) -> list[str]:
        r = self.series.runs
        return version_changes(json.loads(r["versions"].iloc[self.change.index - 1] or "{}"),
                               json.loads(r["versions"].iloc[self.change.index] or "{}"))

    def is_new(self, given: set[str]) -> bool:
        """Whether the change begins at one of ``given`` runs (the SOURCEs just read), or, with none given, in
        the series' newest data set."""
        run = self.run
        if given:
            return str(run["run_id"]) in given
        return str(run["source"]) == str(self.series.runs["source"].iloc[-1])

    @property
    def machine(self) -> list[str]:
        """What differs about the machine between the runs on either side: the host, the boot (a reboot, or
        another machine of the kind), the CPU model (one side not recorded)."""
        r, i = self.series.runs, self.change.index
        out = []
        for col, what in (("host", "host"), ("boot", "boot"), ("recorded", "machine")):
            if col not in r.columns:
                continue
            a, b = str(r[col].iloc[i - 1] or ""), str(r[col].iloc[i] or "")
            if a != b:
                out.append(f"{what} {a or '(not recorded)'} → {b or '(not recorded)'}")
        return out

    def row(self) -> dict[str, Any]:
        c, run = self.change, self.run
        return {**dict(zip(KEY, self.series.key, strict=True)), "stat": self.series.stat,
                "runs": len(self.series.runs), "index": c.index, "run_id": run["run_id"], "trial": run["trial"],
                "start": run["start"], "source": run["source"], "before_s": c.before, "after_s": c.after,
                "change": c.rel, "change_lo": c.lo, "change_hi": c.hi, "p": c.p,
                "versions_changed": "; ".join(self.versions), "machine_changed": "; ".join(self.machine)}

    def text(self) -> str:
        c, run = self.change, self.run
        n = len(self.series.runs)
        when = f"run {run['run_id']} (trial {run['trial']}, {run['start'] or 'start unknown'}, run {c.index + 1} of {n}"
        when += f", from {run['source']})" if run["source"] else ")"
        lines = [f"{self.series.label}",
                 f"  changed at {when}: {self.series.stat} {c.before * 1000:.1f} ms ({c.n_before} runs) → "
                 f"{c.after * 1000:.1f} ms ({c.n_after} runs), {c.rel:+.1%} [{c.lo:+.1%}, {c.hi:+.1%}] (p={c.p:.4f})"]
        v = self.versions
        lines.append("  versions changed there: " + ("; ".join(v) if v else "none (same versions on both sides)"))
        if self.machine:
            lines.append("  machine changed there: " + "; ".join(self.machine))
        return "\n".join(lines)


def detect(series: list[Series], *, min_runs: int = MIN_RUNS, max_p: float = MAX_P,
           min_change: float = 0.0) -> list[Found]:
    """Every change of every series."""
    return [Found(s, c) for s in series
            for c in change_points(s.values, min_runs=min_runs, max_p=max_p, min_change=min_change)]


def plot_series(s: Series, changes: list[Change], path: Path) -> Path:
    """The series' runs (each data set its own colour), each segment's level, each change marked with its
    relative change and the versions that changed; PNG and SVG beside it."""
    from wanwide.pipeline.results.figures import _plt, _save

    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 3.6))
    r = s.runs
    y = s.values * 1000
    x = np.arange(len(y))
    sources = list(dict.fromkeys(r["source"].fillna("").astype(str)))
    colors = plt.get_cmap("tab10")
    for i, src in enumerate(sources):
        m = (r["source"].fillna("").astype(str) == src).to_numpy()
        ax.plot(x[m], y[m], "o", color=colors(i % 10), ms=4, label=src or "(no source)")
    bounds = [0, *[c.index for c in changes], len(y)]
    for a, b in zip(bounds, bounds[1:], strict=False):
        level = float(np.exp(np.log(y[a:b]).mean()))
        ax.hlines(level, a - 0.4, b - 0.6, color="black", lw=1.2)
    for c in changes:
        ax.axvline(c.index - 0.5, color="tab:red", ls="--", lw=1)
        f = Found(s, c)
        note = f"{c.rel:+.0%} [{c.lo:+.0%}, {c.hi:+.0%}]" + (f"\n{f.versions[0]}" if f.versions else "")
        ax.annotate(note, (c.index - 0.5, float(np.nanmax(y))), fontsize=7, color="tab:red", ha="left", va="top",
                    xytext=(3, 0), textcoords="offset points")
    step = max(1, len(x) // 8)
    ax.set_xticks(x[::step], [str(t or "")[:10] for t in r["start"].iloc[::step]], fontsize=7)
    ax.set_xlabel("runs, oldest first (start date)")
    ax.set_ylabel(f"{s.stat} (ms)")
    ax.set_title(s.label, fontsize=8)
    if len(sources) > 1:
        ax.legend(fontsize=6, loc="lower right")
    ax.set_ylim(bottom=0)
    return _save(plt, fig, path)
