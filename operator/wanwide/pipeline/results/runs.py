"""One row per run (bundle): who, when, how busy the machine was, whether that makes it noisy.

The contention figures come from the bundle's ``contention`` (docs/results.md, "Contention");
bundles written before it have only ``host.loadavg_*``. A run is **noisy** when, during its
measured window, the CPU used by processes outside the experiment (the lab measures it) — or,
where that is unknown, the CPU pressure — exceeded the threshold, or the hypervisor stole more
than it. The threshold is the one the lab's quiet-machine gate used unless the report is told
otherwise (``--noisy-threshold``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

DEFAULT_THRESHOLD = 10.0  # % (see providers/lab/quiet.py for where the default comes from)

RUN_COLUMNS = ["benchmark", "trial", "repetition", "position", "region", "attempt", "run_id", "result", "reason",
               "start", "skew_s", "gate_waited_s", "cpu_pressure_pct", "foreign_cpu_pct", "steal_pct",
               "memory_pressure_pct", "loadavg", "noisy", "noisy_why", "cache", "deployment", "machine",
               "wan_watched", "wan_excess_ms_max", "wan_lost_pct_max"]
DETAIL_COLUMNS = ["benchmark", "trial", "region", "run_id", "versions", "cache_settings", "warmup"]


def _first(v: list[float] | None) -> float | None:
    return v[0] if v else None


def noisy(contention: dict[str, Any] | None, threshold: float | None = None) -> tuple[bool | None, str]:
    """Whether a run's measured window was disturbed, and why (None: nothing recorded to tell)."""
    if not contention:
        return None, "no contention recorded"
    gate = contention.get("gate") or {}
    thr = threshold if threshold is not None else gate.get("threshold_pct") or DEFAULT_THRESHOLD
    why = []
    foreign, pressure = contention.get("foreign_cpu_pct"), contention.get("cpu_some_pct")
    if foreign is not None:
        if foreign > thr:
            why.append(f"CPU used outside the experiment {foreign:.1f}% > {thr:g}%")
    elif pressure is not None and pressure > thr:
        why.append(f"CPU pressure {pressure:.1f}% > {thr:g}%")
    steal = contention.get("steal_pct")
    if steal is not None and steal > thr:
        why.append(f"CPU steal {steal:.1f}% > {thr:g}%")
    if foreign is None and pressure is None and steal is None:
        return None, "no pressure or CPU figures (kernel without PSI?)"
    return bool(why), "; ".join(why)


def cache_label(cache: dict[str, Any] | None) -> str:
    """Keystone's cache in a few words: ``off`` or ``memcached (pymemcache, 600 s)``."""
    if not cache or not cache.get("enabled"):
        return "off"
    backend = str(cache.get("backend") or "").rsplit(".", 1)[-1]
    exp = cache.get("expiration_time")
    return "memcached (" + ", ".join(x for x in (backend, f"{exp} s" if exp else "") if x) + ")"


def _deployment(d: dict[str, Any] | None) -> str:
    if not d:
        return ""
    if d.get("provider") == "lab":
        return f"lab {d.get('id')}, trial {int(d.get('trial_index', 0)) + 1} on it"
    return str(d.get("provider") or "")


def machine(host: dict[str, Any]) -> str:
    """A run's machine in a few words: CPU model and the first 8 characters of the boot id ("" when the
    bundle predates them)."""
    boot = str(host.get("boot_id") or "")[:8]
    return " · ".join(x for x in (host.get("cpu_model") or "", f"boot {boot}" if boot else "") if x)


def wan_during(network: dict[str, Any] | None) -> tuple[str, float | None, float | None]:
    """The WAN through the load in brief (manifest ``network.during``, pipeline/runner/netwatch.py): which pairs of
    regions were probed between themselves (``"6 of 6 pairs"``, or from the load region only), the largest
    median RTT above the plan's on a pair, and the largest share of probes lost beyond the plan's loss (fault
    windows included: a cut shows here)."""
    during = (network or {}).get("during")
    if not during:
        return "not watched", None, None
    pairs = [p for p in during.get("pairs") or [] if not p.get("error")]
    cov = during.get("coverage") or {}
    if not pairs:
        return "from the load region only", None, None
    watched = f"{len(pairs)} of {cov.get('of', len(pairs))} pairs"
    excess = [p["median_ms"] - p["requested_rtt_ms"] for p in pairs
              if p.get("median_ms") is not None and p.get("requested_rtt_ms") is not None]
    lost = [p["loss_pct"] - (p.get("requested_loss_pct") or 0.0) for p in pairs if p.get("loss_pct") is not None]
    return (watched, round(max(excess), 3) if excess else None, round(max(lost), 2) if lost else None)


def runs_table(manifests: list[dict[str, Any]], threshold: float | None = None) -> pd.DataFrame:
    """One row per run: identity, status, start skew, contention, noisy or not, cache in words."""
    rows = []
    for m in manifests:
        st, start, host = m.get("status") or {}, m.get("start") or {}, m.get("host") or {}
        trial, c = m.get("trial") or {}, m.get("contention") or {}
        is_noisy, why = noisy(c, threshold)
        rows.append({
            "benchmark": m.get("benchmark"), "trial": trial.get("id"), "repetition": trial.get("repetition"),
            "position": trial.get("position"), "region": m.get("region"), "attempt": m.get("attempt"),
            "run_id": m.get("run_id"), "result": st.get("result"), "reason": st.get("reason"),
            "start": start.get("actual"), "skew_s": start.get("skew_s"),
            "gate_waited_s": (c.get("gate") or {}).get("waited_s"),
            "cpu_pressure_pct": c.get("cpu_some_pct"), "foreign_cpu_pct": c.get("foreign_cpu_pct"),
            "steal_pct": c.get("steal_pct"), "memory_pressure_pct": c.get("memory_some_pct"),
            "loadavg": _first(c.get("loadavg_before") or host.get("loadavg_before")),
            "noisy": is_noisy, "noisy_why": why if is_noisy else "",
            "cache": cache_label((m.get("keystone") or {}).get("cache")),
            "deployment": _deployment(m.get("deployment")),
            "machine": machine(host),
            **dict(zip(("wan_watched", "wan_excess_ms_max", "wan_lost_pct_max"), wan_during(m.get("network")),
                       strict=True)),
        })
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def details_table(manifests: list[dict[str, Any]]) -> pd.DataFrame:
    """What every run ran with, for the report's details section: versions, cache settings, warm-up."""
    rows = []
    for m in manifests:
        cache = (m.get("keystone") or {}).get("cache") or {}
        w = m.get("warmup") or {}
        rows.append({
            "benchmark": m.get("benchmark"), "trial": (m.get("trial") or {}).get("id"), "region": m.get("region"),
            "run_id": m.get("run_id"),
            "versions": ", ".join(f"{k} {v}" for k, v in sorted((m.get("versions") or {}).items())),
            "cache_settings": ", ".join(f"{k}={v}" for k, v in sorted(cache.items())),
            "warmup": (f"{w.get('iterations')} iterations, {w.get('duration_s')} s" if w else ""),
        })
    return pd.DataFrame(rows, columns=DETAIL_COLUMNS)


SLO_COLUMNS = ["benchmark", "trial", "region", "run_id", "scenario", "objective", "bound", "measured", "met", "detail"]


def slo_table(manifests: list[dict[str, Any]]) -> pd.DataFrame:
    """Every run's objectives as its runner measured them (manifest ``slo``, pipeline/runner/slo.py): one row
    per run, scenario and objective; ``met`` False where missed, empty where nothing could be measured."""
    rows = []
    for m in manifests:
        for r in m.get("slo") or []:
            unit = r.get("unit") or ""
            rows.append({
                "benchmark": m.get("benchmark"), "trial": (m.get("trial") or {}).get("id"), "region": m.get("region"),
                "run_id": m.get("run_id"), "scenario": str(r.get("scenario") or "").split(".")[-1],
                "objective": r.get("criterion"), "bound": f"{r.get('bound'):g} {unit}".strip(),
                "measured": "" if r.get("measured") is None else f"{r['measured']:.4g} {unit}".strip(),
                "met": r.get("passed"), "detail": r.get("detail"),
            })
    return pd.DataFrame(rows, columns=SLO_COLUMNS)


def failed_attempt_runs(runs: pd.DataFrame) -> dict[str, str]:
    """``{run_id: why}`` of runs that succeeded within an attempt where another region's run did
    not (a high-load attempt whose r2 and r3 failed at set-up): measured under another load
    than the point's, so not part of its statistics. An attempt is its number on one deployment: a trial run
    again in a later lab sitting (``--done``, a new deployment) counts its attempts from 1 again, and its regions'
    runs are not the earlier sitting's attempt 1."""
    out: dict[str, str] = {}
    if runs.empty:
        return out
    keys = ["benchmark", "trial", "attempt", *(["deployment"] if "deployment" in runs.columns else [])]
    for key, g in runs.groupby(keys, dropna=False, sort=True):
        bad = g[g["result"].astype(str) != "succeeded"]
        if bad.empty or len(bad) == len(g):
            continue
        why = (f"{key[0]}/{key[1]} attempt {key[2]}: "
               + ", ".join(f"{r} {res}" for r, res in zip(bad["region"], bad["result"], strict=True)))
        for rid in g.loc[g["result"].astype(str) == "succeeded", "run_id"].dropna().astype(str):
            out[rid] = why
    return out


def in_trials(df: pd.DataFrame, trials: set[tuple[str, str]]) -> np.ndarray:
    """Which rows of a results table belong to one of ``trials`` ((benchmark, trial) pairs)."""
    mask = np.zeros(len(df), dtype=bool)
    for bench, trial in trials:  # a few trials: one vectorised comparison each
        mask |= ((df["benchmark"] == bench) & (df["trial_id"] == trial)).to_numpy(dtype=bool)
    return mask


def noisy_trials(runs: pd.DataFrame) -> set[tuple[str, str]]:
    """(benchmark, trial) with at least one noisy run: the whole trial is marked (one machine)."""
    if runs.empty:
        return set()
    n = runs[runs["noisy"].fillna(False).astype(bool)]
    return set(zip(n["benchmark"].astype(str), n["trial"].astype(str), strict=True))
