"""Result bundles with known answers: durations drawn from known distributions, written as the
runner writes them (Rally JSON format 1.2 + manifest), for the statistics tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

SCENARIO = "KeystoneBasic.authenticate_user_and_validate_token"
ACTIONS = ("keystone_v3.fetch_token", "keystone_v3.validate_token")


def rally_json(durations: dict[str, np.ndarray], t0: float = 1.7e9) -> dict:
    """One task, one workload of SCENARIO; iteration i runs the actions one after the other."""
    n = len(next(iter(durations.values())))
    data, t = [], t0
    for i in range(n):
        acts, start = [], t
        for name, d in durations.items():
            acts.append({"name": name, "started_at": t, "finished_at": t + float(d[i]), "children": []})
            t += float(d[i])
        data.append({"timestamp": start, "duration": t - start, "idle_duration": 0.0, "error": [],
                     "output": {"additive": [], "complete": []}, "atomic_actions": acts})
        t += 0.01
    return {"info": {"format_version": "1.2"},
            "tasks": [{"uuid": "00000000-0000-0000-0000-000000000000", "status": "finished",
                       "subtasks": [{"title": SCENARIO, "workloads": [
                           {"uuid": "w", "scenario": {SCENARIO: {}}, "data": data}]}]}]}


def write_bundle(root: Path, benchmark: str, trial: str, repetition: int, params: dict, region: str,
                 durations: dict[str, np.ndarray], contention: dict | None = None, run: int = 0, *,
                 versions: dict[str, str] | None = None, start: float | None = None,
                 errors: int = 0, result: str = "succeeded") -> Path:
    """A bundle; ``start`` (epoch s): when its measured window began (manifest and iterations); ``errors``:
    that many of its last iterations failed; ``result``: the run's own outcome."""
    from wanwide.core.timestamps import iso
    from wanwide.pipeline.runner.bundle import (
        ContentionInfo,
        KeystoneInfo,
        Manifest,
        StartInfo,
        Status,
        TrialInfo,
        bundle_relpath,
        write_manifest,
    )

    t0 = 1.7e9 if start is None else start
    stamp = datetime.fromtimestamp(t0, UTC).strftime("%Y%m%dt%H%M%Sz")
    run_id = f"{stamp if start is not None else '20261124t000000z'}-{run:012x}"
    d = root / bundle_relpath(benchmark, trial, region, 1, run_id)
    d.mkdir(parents=True)
    doc = rally_json(durations, t0)
    data = doc["tasks"][0]["subtasks"][0]["workloads"][0]["data"]
    for it in data[len(data) - errors:] if errors else []:
        it["error"] = ["KeystoneTimeout", "the token request timed out", ""]
    (d / "rally.json").write_text(json.dumps(doc))
    m = Manifest(benchmark=benchmark, namespace="lab",
                 trial=TrialInfo(id=trial, index=int(trial[1:]), repetition=repetition,
                                 parameters={**params, "repetition": str(repetition)}),
                 region=region, role="load", attempt=1, run_id=run_id, scenarios=[SCENARIO],
                 versions=versions or {"rally": "5.1.1"}, keystone=KeystoneInfo(url="http://k/v3", region_name=region),
                 contention=ContentionInfo(**contention) if contention else None,
                 start=StartInfo(actual=iso(datetime.fromtimestamp(t0, UTC), precise=True)) if start else StartInfo(),
                 status=Status(result=result, reason="Completed" if result == "succeeded" else "RallyTaskFailed"))
    write_manifest(d, m)
    return d


Median = Callable[[str, float, str], float]  # (backend, rtt ms, load) -> median of fetch_token (s)


def study(root: Path, median: Median, *, backends=("mariadb", "galera"), rtts=(0, 100, 300),
          loads=("light", "high"), reps: int = 3, n: int = 30, sigma: float = 0.2, run_sd: float = 0.0,
          seed: int = 1, benchmark: str = "syn", contention: Callable[[int], dict | None] | None = None,
          block_sd: float = 0.0) -> Path:
    """Every point × repetition as a bundle. fetch_token ~ median × lognormal(0, sigma) × the run's
    factor exp(N(0, run_sd)) × the repetition's factor exp(N(0, block_sd)), shared by every point of
    that repetition (a sitting, a machine); validate_token is a tenth of it. Returns ``root``."""
    rng = np.random.default_rng(seed)
    block = np.exp(rng.normal(0, block_sd, reps)) if block_sd else np.ones(reps)
    k = 0
    for b in backends:
        for rtt in rtts:
            for load in loads:
                for rep in range(reps):
                    run_factor = float(np.exp(rng.normal(0, run_sd))) if run_sd else 1.0
                    fetch = median(b, rtt, load) * run_factor * block[rep] * np.exp(rng.normal(0, sigma, n))
                    params = {"backend": b, "rtt": f"{rtt}ms", "load": load}
                    write_bundle(root, benchmark, f"t{k:03d}", rep, params, "r1",
                                 {ACTIONS[0]: fetch, ACTIONS[1]: fetch / 10},
                                 contention(k) if contention else None, run=k)
                    k += 1
    return root
