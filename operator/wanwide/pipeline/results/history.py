"""The history store: every run a user reads (``wanwide report``, ``compare``, ``results export``,
``history``) as a few numbers per scenario and action, so that campaigns weeks apart can be set
side by side (``wanwide history``, :mod:`.changes`).

One row per run × scenario × action, keyed by what the run measured and where:

``benchmark``, ``parameters`` (the trial's matrix point, ``name=value, …`` without the
repetition), ``scenario``, ``action``, ``region`` (the load region), ``machine`` (the kind of
machine: CPU count and model; the host name and boot id are kept apart: hosts of one kind
are alike, a reboot is not another machine) — and, per run, ``versions`` (JSON: wanwide,
Rally, Keystone, the database, …), ``start`` (when its measured window began), ``run_id``,
``trial``, ``repetition``, ``host``, ``boot``, the counts ``n`` (successful iterations) and
``failures`` (failed iterations) and the successful durations' ``median``, ``mean``, ``p95``
and ``max`` (seconds).

Layout under the store's directory (default ``$WANWIDE_HISTORY``, else
``${XDG_DATA_HOME:-~/.local/share}/wanwide/history``)::

    <benchmark>/<digest>.parquet   the runs one read added (digest of their run ids)
    _index.json.gz                 run id → file, and where it was read from

A run is stored once: reading it again (the same data set, a later report of a campaign
that grew) adds only runs the index does not know. Plain Rally JSON files carry no run
identity and are not kept. One writer at a time per store.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wanwide.core import timestamps as ts
from wanwide.pipeline.results.ingest import PARAM_PREFIX, TOTAL
from wanwide.pipeline.results.stats import ordered_params, param_columns

INDEX = "_index.json.gz"
FORMAT = 1
KEY = ["benchmark", "parameters", "scenario", "action", "region", "machine"]
COLUMNS = [*KEY, "versions", "start", "run_id", "trial", "repetition", "host", "boot", "n", "failures", "median",
           "mean", "p95", "max", "source"]
NO_MODEL = "CPU model not recorded"


def default_root(env: dict[str, str] | None = None) -> Path:
    """``$WANWIDE_HISTORY``, else ``${XDG_DATA_HOME:-~/.local/share}/wanwide/history``."""
    env = os.environ if env is None else env
    if env.get("WANWIDE_HISTORY"):
        return Path(env["WANWIDE_HISTORY"]).expanduser()
    data = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data).expanduser() / "wanwide" / "history"


def machine_of(host: dict[str, Any]) -> str:
    """A run's kind of machine for the history's key: ``2 CPUs · AMD EPYC …`` (bundles written before
    2026-11-28 name no model: ``2 CPUs · CPU model not recorded``; :func:`.series.series_of` joins them to
    the one known model of that CPU count)."""
    count = host.get("cpu_count")
    return " · ".join([f"{count} CPUs" if count else "CPUs not recorded", str(host.get("cpu_model") or NO_MODEL)])


def _params_text(params: dict[str, Any]) -> str:
    own = [PARAM_PREFIX + k for k in params if k not in ("repetition", "benchmark")]
    names = [c[len(PARAM_PREFIX):] for c in ordered_params(own)]
    return ", ".join(f"{k}={params[k]}" for k in names)


def _start(m: dict[str, Any]) -> str | None:
    start = (m.get("start") or {}).get("actual")
    return str(start) if start else None


def summarize_runs(table: pd.DataFrame, manifests: list[dict[str, Any]], source: str = "") -> pd.DataFrame:
    """The history's rows (:data:`COLUMNS`) of every bundle run in ``table``: per run, scenario and action,
    counts and the successful durations' median, mean, p95 and max. Pure."""
    if table.empty or "run_id" not in table.columns:
        return pd.DataFrame(columns=COLUMNS)
    by_run = {str(m.get("run_id")): m for m in manifests if m.get("run_id")}
    df = table[table["run_id"].notna()]
    if df.empty:
        return pd.DataFrame(columns=COLUMNS)
    keys = ["run_id", "scenario", "action"]
    cols = {k: df[k].astype(str).to_numpy() for k in keys}
    ok = (df["error_type"].isna() & df["action_duration"].notna()).to_numpy()
    dur = df["action_duration"].to_numpy(dtype=float)
    frame = pd.DataFrame({**cols, "ok": ok, "d": np.where(ok, dur, np.nan)})
    g = frame.groupby(keys, sort=True)
    stats = g["d"].agg(n="count", median="median", mean="mean", max="max")
    stats["p95"] = g["d"].quantile(0.95)
    total = frame[frame["action"] == TOTAL]
    fails = (~total["ok"]).groupby([total["run_id"], total["scenario"]]).sum()
    pcols = param_columns(df)
    first = df.drop_duplicates("run_id")  # a run's identity and parameters: the same on all its rows
    first = first.set_index(first["run_id"].astype(str))
    rows = []
    for (run, scenario, action), s in stats.iterrows():
        m = by_run.get(run, {})
        w = first.loc[run]
        params = {c[len(PARAM_PREFIX):]: str(w[c]) for c in pcols if pd.notna(w[c])}
        host = m.get("host") or {}
        rows.append({
            "benchmark": str(w["benchmark"]), "parameters": _params_text(params), "scenario": scenario,
            "action": action, "region": str(w["region"]) if pd.notna(w["region"]) else "",
            "machine": machine_of(host), "versions": json.dumps(m.get("versions") or {}, sort_keys=True),
            "start": _start(m) or _first_iteration(df, run), "run_id": run, "trial": str(w["trial_id"]),
            "repetition": (m.get("trial") or {}).get("repetition"), "host": str(host.get("hostname") or ""),
            "boot": str(host.get("boot_id") or "")[:8],
            "n": int(s["n"]), "failures": int(fails.get((run, scenario), 0)) if action == TOTAL else 0,
            "median": s["median"], "mean": s["mean"], "p95": s["p95"], "max": s["max"], "source": source,
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def _first_iteration(df: pd.DataFrame, run: str) -> str | None:
    t = df.loc[df["run_id"].astype(str) == run, "iteration_timestamp"].min()
    return ts.iso(pd.Timestamp(t, unit="s", tz="UTC").to_pydatetime(), precise=True) if pd.notna(t) else None


@dataclass
class Added:
    """What one :meth:`HistoryStore.add` did."""

    runs: list[str] = field(default_factory=list)  # run ids stored now
    known: int = 0  # runs the store had already
    path: Path | None = None


class HistoryStore:
    """A directory of Parquet files of run summaries and the index of the runs they hold."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.index: dict[str, dict[str, str]] = self._load()

    def _load(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(gzip.decompress((self.root / INDEX).read_bytes()))
        except (FileNotFoundError, OSError, EOFError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return {}
        return dict(data.get("runs") or {})

    def _save(self) -> None:
        tmp = self.root / f".{INDEX}.{os.getpid()}.tmp"
        raw = json.dumps({"format": FORMAT, "runs": self.index}, sort_keys=True).encode()
        tmp.write_bytes(gzip.compress(raw, compresslevel=6, mtime=0))
        tmp.replace(self.root / INDEX)

    def add(self, table: pd.DataFrame, manifests: list[dict[str, Any]], source: str = "") -> Added:
        """Store the runs of ``table`` the index does not know (their manifests give versions, machine, start)."""
        out = Added()
        if table.empty or "run_id" not in table.columns:
            return out
        runs = set(table["run_id"].dropna().astype(str).unique())
        new = sorted(runs - set(self.index))
        out.known = len(runs) - len(new)
        if not new:
            return out
        rows = summarize_runs(table[table["run_id"].astype(str).isin(set(new))], manifests, source)
        if rows.empty:
            return out
        digest = hashlib.sha1("\n".join(new).encode(), usedforsecurity=False).hexdigest()[:16]
        benchmarks = sorted(set(rows["benchmark"]))
        folder = _slug(benchmarks[0]) if len(benchmarks) == 1 else "_several"
        path = self.root / folder / f"{digest}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        rows.to_parquet(tmp, index=False, compression="zstd")
        tmp.replace(path)
        rel = path.relative_to(self.root).as_posix()
        for run in sorted(set(rows["run_id"])):
            self.index[run] = {"file": rel, "source": source}
        self._save()
        out.runs, out.path = sorted(set(rows["run_id"])), path
        return out

    def read(self) -> pd.DataFrame:
        """Every stored row, each run once, oldest run first."""
        files = sorted({v["file"] for v in self.index.values()})
        parts = [pd.read_parquet(self.root / f) for f in files if (self.root / f).is_file()]
        if not parts:
            return pd.DataFrame(columns=COLUMNS)
        df = pd.concat(parts, ignore_index=True)
        df = df[df["run_id"].isin(set(self.index))]
        df = df.drop_duplicates(["run_id", "scenario", "action"], keep="last")
        return df.sort_values(["start", "run_id"], kind="stable", na_position="last").reset_index(drop=True)

    def __len__(self) -> int:
        return len(self.index)


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text).strip("._")[:80] or "_"


def remember(table: pd.DataFrame, manifests: list[dict[str, Any]], source: str, root: Path | None = None,
             say: Any = None) -> Added | None:
    """Add the runs of ``table`` to the store at ``root`` (default: :func:`default_root`); ``say`` gets one line
    saying what (or why not: a store that cannot be written is a warning, never a failure)."""
    import sys

    say = say or (lambda m: print(m, file=sys.stderr))
    root = root or default_root()
    try:
        added = HistoryStore(root).add(table, manifests, source)
    except OSError as e:
        say(f"warning: history store {root}: {e} (--no-history leaves it out)")
        return None
    if added.runs or added.known:
        say(f"history: {len(added.runs)} new run(s) added to {root}, {added.known} already there")
    return added
