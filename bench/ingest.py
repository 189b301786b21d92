#!/usr/bin/env python3
"""Ingest/report throughput on a synthetic result set (default 1,000,000 iterations).

    .venv/bin/python bench/ingest.py [--iterations 1000000] [--bundles 10] [--dir DIR]
                                     [--json-lib orjson|json] [--no-report]

Writes ``--bundles`` result bundles (manifest.json + rally.json, format 1.2, two
scenarios, nested actions, 1 % failed iterations) under DIR, then, in a fresh child
process (so that peak RSS is the ingest's own), ingests them and builds the report.
Prints iterations/s, rows/s, peak RSS and the report time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))
    from wanwide.runner.bundle import (
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


def measure(root: Path, json_lib: str, report: bool) -> dict:
    from wanwide.results import ingest

    if json_lib == "json":
        ingest._orjson = None
    size = sum(p.stat().st_size for p in root.rglob("rally.json"))
    t0 = time.perf_counter()
    df = ingest.ingest_paths([root])
    t_ingest = time.perf_counter() - t0
    rss_ingest = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    n_it = int((df["action"] == "Total").sum())
    out = {"json_lib": json_lib, "iterations": n_it, "rows": len(df), "input_mb": round(size / 2**20, 1),
           "ingest_s": round(t_ingest, 2), "iterations_per_s": round(n_it / t_ingest),
           "rows_per_s": round(len(df) / t_ingest), "peak_rss_mb_after_ingest": round(rss_ingest),
           "table_mb": round(df.memory_usage(deep=True).sum() / 2**20, 1)}
    del df
    if report:
        from wanwide.results.report import build_report

        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as out_dir:
            build_report([root], out_dir, progress=False, store_parquet_beside=False)
        out["report_s"] = round(time.perf_counter() - t0, 2)
        out["peak_rss_mb_after_report"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    out["loadavg_1m"] = round(os.getloadavg()[0], 1)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iterations", type=int, default=1_000_000)
    ap.add_argument("--bundles", type=int, default=10)
    ap.add_argument("--dir", type=Path, help="keep the synthetic set here (reused if present)")
    ap.add_argument("--json-lib", choices=["orjson", "json"], default="orjson")
    ap.add_argument("--no-report", action="store_true")
    ap.add_argument("--measure-only", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.measure_only:
        print(json.dumps(measure(a.measure_only, a.json_lib, not a.no_report)))
        return 0
    root = a.dir or Path(tempfile.mkdtemp(prefix="ww-bench-"))
    try:
        if not any(root.rglob("manifest.json")):
            t0 = time.perf_counter()
            generate(root, a.iterations, a.bundles)
            print(f"generated {a.iterations} iterations in {a.bundles} bundles under {root} "
                  f"in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        cmd = [sys.executable, __file__, "--measure-only", str(root), "--json-lib", a.json_lib]
        if a.no_report:
            cmd.append("--no-report")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
            return r.returncode
        res = json.loads(r.stdout.strip().splitlines()[-1])
        for k, v in res.items():
            print(f"{k:>26}: {v}")
    finally:
        if a.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
