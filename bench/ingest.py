#!/usr/bin/env python3
"""Ingest/report throughput on a synthetic result set (default 1,000,000 iterations in 10 bundles).

    .venv/bin/python bench/ingest.py [--iterations 1000000] [--bundles 10] [--dir DIR]
        [--impl fast|reference] [--workers N] [--json-lib orjson|json] [--repeat 3]
        [--report] [--incremental [--store-only]] [--wait-quiet 10] [--json]

Writes ``--bundles`` result bundles (manifest.json + rally.json, format 1.2, two scenarios,
nested actions, 1 % failed iterations) under DIR (reused if there), then measures each
repetition in a fresh child process: the ingest's time, the peak memory of the child and its
workers (sampled from outside: RSS and PSS summed over the process tree), and the machine's
load before and after. ``--impl reference`` is the previous ingest (orjson dicts walked by a
Python loop, one process). ``--report`` also times ``build_report`` (cold store, then the same
report again); ``--incremental`` times a report of all but one bundle, then of all (only the
last is read). Prints each repetition and median (min–max).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = [
    ("KeystoneBasic.authenticate_user_and_validate_token", [("keystone_v3.fetch_token", 0.6, []),
                                                             ("keystone_v3.validate_token", 0.4, [])]),
    ("KeystoneBasic.create_and_list_tenants", [("keystone_v3.create_project", 0.13,
                                                [("keystone_v3.list_roles", 0.01), ("keystone_v3.add_role", 0.02)]),
                                               ("keystone_v3.list_projects", 0.024, [])]),
]


def _iterations(n: int, actions, rng: random.Random, t0: float) -> list[dict]:
    out = []
    for i in range(n):
        ts = t0 + i * 0.01
        t = ts
        acts = []
        for name, mean, children in actions:
            d = rng.expovariate(1 / mean)
            ch = []
            ct = t
            for cname, cmean in children:
                cd = rng.expovariate(1 / cmean)
                ch.append({"name": cname, "started_at": ct, "finished_at": ct + cd, "children": []})
                ct += cd
            acts.append({"name": name, "started_at": t, "finished_at": t + d, "children": ch})
            t += d
        err = []
        if rng.random() < 0.01:
            err = ["Unauthorized", "The request you have made requires authentication. (HTTP 401)", "Traceback…"]
            acts[-1]["failed"] = True
        out.append({"duration": t - ts, "timestamp": ts, "idle_duration": 0.0, "error": err,
                    "output": {"additive": [], "complete": []}, "atomic_actions": acts})
    return out


def generate(root: Path, iterations: int, bundles: int, seed: int = 1) -> None:
    sys.path.insert(0, str(REPO / "operator"))
    from wanwide.pipeline.runner.bundle import (
        KeystoneInfo,
        Manifest,
        Status,
        TrialInfo,
        bundle_relpath,
        write_manifest,
    )

    rng = random.Random(seed)
    per = iterations // bundles
    backends = ["mariadb", "galera", "cockroachdb"]
    for b in range(bundles):
        scen, actions = SCENARIOS[b % len(SCENARIOS)]
        params = {"backend": backends[b % 3], "regions": [3, 9, 45][(b // 3) % 3], "rtt_ms": 0}
        d = root / bundle_relpath("bench", f"t{b}", "r1", 1, f"20261122t000000z-{b:012x}")
        (d / "logs").mkdir(parents=True)
        n = per if b < bundles - 1 else iterations - per * (bundles - 1)
        data = _iterations(n, actions, rng, 1.7e9 + b * 1e5)
        report = {"info": {"format_version": "1.2", "rally_version": "5.1.1"},
                  "tasks": [{"uuid": f"task-{b}", "title": "bench", "status": "finished", "pass_sla": True,
                             "subtasks": [{"title": "s", "workloads": [{
                                 "uuid": f"wl-{b}", "scenario": {scen: {}},
                                 "runner": {"constant": {"times": n, "concurrency": 10}},
                                 "total_iteration_count": n, "failed_iteration_count": 0, "data": data}]}]}]}
        with open(d / "rally.json", "w") as fh:
            json.dump(report, fh)
        write_manifest(d, Manifest(
            benchmark="bench", namespace="lab", trial=TrialInfo(id=f"t{b}", index=b, repetition=0, parameters=params),
            region="r1", role="load", attempt=1, run_id=f"r{b}", scenarios=[scen],
            keystone=KeystoneInfo(url="http://x/v3", region_name="r1"),
            status=Status(result="succeeded", reason="Completed")))


# ---------------------------------------------------------------- in the child
def _maxrss_mb() -> dict:
    return {"self_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "workers_maxrss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)}


def _cpu_s() -> float:
    """CPU seconds of this process and its finished workers (user + system)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def measure_ingest(root: Path, impl: str, json_lib: str, workers: int | None) -> dict:
    from wanwide.pipeline.results import sources
    from wanwide.pipeline.results.ingest import discover, ingest_sources
    from wanwide.pipeline.results.reference import reference_frame

    if json_lib == "json":
        sources._orjson = None
    size = sum(p.stat().st_size for p in root.rglob("rally.json"))
    t0, c0 = time.perf_counter(), _cpu_s()
    found = discover([root])
    df = ingest_sources(found, workers=workers) if impl == "fast" else reference_frame(found)
    t, cpu = time.perf_counter() - t0, _cpu_s() - c0
    n_it = int((df["action"] == "Total").sum())
    return {"impl": impl, "iterations": n_it, "rows": len(df), "input_mb": round(size / 2**20, 1),
            "ingest_s": round(t, 3), "cpu_s": round(cpu, 2), "iterations_per_s": round(n_it / t), "rows_per_s": round(len(df) / t),
            "table_mb": round(df.memory_usage(deep=True).sum() / 2**20, 1), **_maxrss_mb()}


def measure_report(root: Path, out: Path) -> dict:
    from wanwide.pipeline.results.report import build_report

    t0 = time.perf_counter()
    r = build_report([root], out, progress=False, store_parquet_beside=False)
    return {"report_s": round(time.perf_counter() - t0, 3), "rows": len(r.table), **_maxrss_mb()}


def measure_sync(root: Path, out: Path) -> dict:
    """The report's reading alone: its Parquet store synced with the bundles under ``root``."""
    from wanwide.pipeline.results.ingest import discover
    from wanwide.pipeline.results.store import ResultStore

    t0, c0 = time.perf_counter(), _cpu_s()
    df, s = ResultStore(out / "parquet").sync(discover([root]))
    return {"sync_s": round(time.perf_counter() - t0, 3), "cpu_s": round(_cpu_s() - c0, 2), "read": len(s.read),
            "reused": len(s.reused), "rows": len(df), **_maxrss_mb()}


# ---------------------------------------------------------------- the driver
def _child(*args: str) -> list[str]:
    return [sys.executable, __file__, *args]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": f"{REPO / 'operator'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def _measured(cmd: list[str]) -> dict:
    before = benchlib.load()
    r = benchlib.run(cmd, env=_env())
    after = benchlib.load()
    if r["rc"] != 0:
        raise SystemExit(f"measurement failed:\n{r['stderr'][-3000:]}")
    return {**r["result"], "wall_s": round(r["wall_s"], 2), "tree_rss_mb": round(r["tree_rss_mb"]),
            "tree_pss_mb": round(r["tree_pss_mb"]), "load_before": before, "load_after": after}


def _print(label: str, runs: list[dict], key: str) -> None:
    for i, r in enumerate(runs, 1):
        cpu = f" (CPU {r['cpu_s']:.1f} s)" if "cpu_s" in r else ""
        print(f"{label} #{i}: {key} {r[key]:.2f} s{cpu}, peak tree RSS {r['tree_rss_mb']} MB / PSS {r['tree_pss_mb']} MB "
              f"(process {r['self_maxrss_mb']} MB, largest worker {r['workers_maxrss_mb']} MB); "
              f"{benchlib.load_text(r['load_before'], r['load_after'])}")
    print(f"{label}: {key} {benchlib.spread([r[key] for r in runs])} s, peak tree RSS "
          f"{benchlib.spread([r['tree_rss_mb'] for r in runs], '{:.0f}')} MB, PSS "
          f"{benchlib.spread([r['tree_pss_mb'] for r in runs], '{:.0f}')} MB over {len(runs)} run(s)")


def _incremental(root: Path, repeat: int, mode: str = "--report-only") -> list[dict]:
    """Reports (or store syncs) of all bundles but the last, then of all: the second reads one bundle."""
    bundles = sorted(m.parent for m in root.rglob("manifest.json"))
    runs = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="ww-incr-") as tmp:
            src, out = Path(tmp) / "src", Path(tmp) / "out"
            for b in bundles[:-1]:
                _link_bundle(b, src / b.relative_to(root))
            _measured(_child(mode, str(src), "--out", str(out)))
            _link_bundle(bundles[-1], src / bundles[-1].relative_to(root))
            runs.append(_measured(_child(mode, str(src), "--out", str(out))))
    return runs


def _link_bundle(bundle: Path, to: Path) -> None:
    to.mkdir(parents=True)
    for f in ("manifest.json", "rally.json"):
        (to / f).symlink_to(bundle / f)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iterations", type=int, default=1_000_000)
    ap.add_argument("--bundles", type=int, default=10)
    ap.add_argument("--dir", type=Path, help="keep the synthetic set here (reused if present)")
    ap.add_argument("--impl", choices=["fast", "reference"], default="fast")
    ap.add_argument("--workers", type=int, help="processes for the fast ingest (default: the CPUs)")
    ap.add_argument("--json-lib", choices=["orjson", "json"], default="orjson", help="parser of the reference")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--report", action="store_true", help="also time build_report, cold store then warm")
    ap.add_argument("--incremental", action="store_true", help="time a report after one more bundle")
    ap.add_argument("--no-ingest", action="store_true", help="skip the ingest measurement")
    ap.add_argument("--wait-quiet", type=float, metavar="PCT",
                    help="before each measurement wait for CPU pressure some avg10 < PCT")
    ap.add_argument("--quiet-timeout", type=float, default=1800, metavar="S",
                    help="give up waiting for a quiet machine after S seconds (default 1800)")
    ap.add_argument("--json", action="store_true", help="print every run as JSON too")
    ap.add_argument("--measure-only", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--store-only", action="store_true", help="--incremental: time the store's sync, not the report")
    ap.add_argument("--report-only", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--sync-only", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.measure_only:
        print(json.dumps(measure_ingest(a.measure_only, a.impl, a.json_lib, a.workers)))
        return 0
    if a.report_only:
        print(json.dumps(measure_report(a.report_only, a.out)))
        return 0
    if a.sync_only:
        print(json.dumps(measure_sync(a.sync_only, a.out)))
        return 0
    root = a.dir or Path(tempfile.mkdtemp(prefix="ww-bench-"))
    every: list[dict] = []

    def quiet() -> None:
        if a.wait_quiet:
            benchlib.wait_quiet(a.wait_quiet, a.quiet_timeout)

    try:
        if not any(root.rglob("manifest.json")):
            t0 = time.perf_counter()
            generate(root, a.iterations, a.bundles)
            print(f"generated {a.iterations} iterations in {a.bundles} bundles under {root} "
                  f"in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        if not a.no_ingest:
            runs = []
            for _ in range(a.repeat):
                quiet()
                runs.append(_measured(_child("--measure-only", str(root), "--impl", a.impl, "--json-lib", a.json_lib,
                                             *(["--workers", str(a.workers)] if a.workers else []))))
            r = runs[0]
            print(f"set: {r['iterations']} iterations, {r['rows']} rows, {r['input_mb']} MB of Rally JSON; "
                  f"table {r['table_mb']} MB")
            _print(f"ingest ({a.impl})", runs, "ingest_s")
            every += runs
        if a.report:
            cold, warm = [], []
            for _ in range(a.repeat):
                with tempfile.TemporaryDirectory(prefix="ww-report-") as out:
                    quiet()
                    cold.append(_measured(_child("--report-only", str(root), "--out", out)))
                    warm.append(_measured(_child("--report-only", str(root), "--out", out)))
            _print("report, new DIR (every bundle read)", cold, "report_s")
            _print("report, same DIR again (every bundle from the store)", warm, "report_s")
            every += cold + warm
        if a.incremental:
            quiet()
            if a.store_only:
                runs = _incremental(root, a.repeat, "--sync-only")
                _print("store sync after one more bundle (1 read, the rest from the store)", runs, "sync_s")
            else:
                runs = _incremental(root, a.repeat)
                _print("report after one more bundle (1 read, the rest from the store)", runs, "report_s")
            every += runs
        if a.json:
            for r in every:
                print(json.dumps(r))
    finally:
        if a.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
