#!/usr/bin/env python3
"""A campaign of many small bundles: discovery, the report's store cold and warm, and the S3 fetch.

    .venv/bin/python bench/many_bundles.py [--bundles 3000] [--dir DIR] [--repeat 3] [--no-s3]

Writes ``--bundles`` bundles of 2 iterations each (manifest.json, rally.json, task.json,
a log) under DIR/src, then measures, each repetition in a child process:

- ``discover`` as it is, and as it was (``Path.rglob`` and, per JSON file, a test against
  every bundle: quadratic in bundles);
- the store's sync into a new directory (every bundle read) and again (nothing read);
- with versitygw installed (``hack/install-lab.sh``), a fetch of the bundles from a local
  S3 server, 16 objects at a time and one at a time, then again (every file present).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
AK, SK = "wwbenchaccess", "wwbenchsecret-0123456789"


def write_bundles(root: Path, n: int) -> None:
    for i in range(n):
        d = root / "campaign" / f"t{i:05d}" / "r1" / f"attempt-1-20261122t000000z-{i:012x}"
        (d / "logs").mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps({
            "schema": "wanwide.io/bundle/v1", "benchmark": "campaign",
            "trial": {"id": f"t{i:05d}", "index": i, "repetition": i % 3,
                      "parameters": {"backend": ["mariadb", "galera"][i % 2], "rtt_ms": 10 * (i % 7)}},
            "region": "r1", "attempt": 1, "run_id": f"r{i}"}))
        data = [{"timestamp": 1.0 + k, "duration": 0.5, "idle_duration": 0.0, "error": [],
                 "atomic_actions": [{"name": "keystone_v3.fetch_token", "started_at": 1.0 + k,
                                     "finished_at": 1.3 + k, "children": []},
                                    {"name": "keystone_v3.validate_token", "started_at": 1.3 + k,
                                     "finished_at": 1.5 + k, "children": []}]} for k in range(2)]
        (d / "rally.json").write_text(json.dumps({"info": {"format_version": "1.2"}, "tasks": [{"uuid": f"u{i}",
            "subtasks": [{"title": "s", "workloads": [{"scenario": {"KeystoneBasic.auth": {}}, "data": data}]}]}]}))
        (d / "task.json").write_text("{}")
        (d / "logs" / "04-task-start.log").write_text("ITER 1\nITER 2\n")


# ---------------------------------------------------------------- in the child
def discover_before(paths):
    """discover() as it was before issue 12 (for the comparison only)."""
    from wanwide.pipeline.results.sources import MANIFEST, IngestError, Source

    out, seen = [], set()
    for p in map(Path, paths):
        if not p.exists():
            raise IngestError(f"{p}: no such file or directory")
        bundles = sorted({m.parent for m in p.rglob(MANIFEST)})
        for bd in bundles:
            if bd not in seen:
                seen.add(bd)
                out.append(Source("bundle", bd))
        for f in sorted(p.rglob("*.json")):
            if f.name in (MANIFEST, "task.json") or any(bd in f.parents for bd in bundles):
                continue
            if f not in seen:
                seen.add(f)
                out.append(Source("file", f))
    return out


def child(what: str, src: Path, store: Path) -> dict:
    from wanwide.pipeline.results.ingest import discover
    from wanwide.pipeline.results.store import ResultStore

    t0 = time.perf_counter()
    if what == "discover":
        n = len(discover([src]))
    elif what == "discover-before":
        n = len(discover_before([src]))
    else:  # sync
        df, s = ResultStore(store).sync(discover([src]))
        n = len(s.read)
    return {"s": round(time.perf_counter() - t0, 3), "n": n}


# ---------------------------------------------------------------- S3
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _s3(tmp: Path, src: Path):
    sys.path.insert(0, str(REPO / "operator"))
    from wanwide.providers.lab import paths

    gw = paths.versitygw()
    if not gw.exists():
        return None, None
    (tmp / "s3data").mkdir()
    (tmp / "s3meta").mkdir()
    port = _free_port()
    proc = subprocess.Popen([str(gw), "--port", f"127.0.0.1:{port}", "--region", "us-east-1", "--quiet", "posix",
                             "--sidecar", str(tmp / "s3meta"), str(tmp / "s3data")],
                            env={**os.environ, "ROOT_ACCESS_KEY_ID": AK, "ROOT_SECRET_ACCESS_KEY": SK},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(150):
        try:
            urllib.request.urlopen(url, timeout=1)
        except urllib.error.HTTPError:
            break  # it answers (403 without credentials)
        except OSError:
            time.sleep(0.2)
    import boto3
    from botocore.config import Config

    c = boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id=AK,
                     aws_secret_access_key=SK, config=Config(s3={"addressing_style": "path"}))
    c.create_bucket(Bucket="results")
    from concurrent.futures import ThreadPoolExecutor

    files = [p for p in src.rglob("*") if p.is_file()]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda f: c.upload_file(str(f), "results", f"many/{f.relative_to(src).as_posix()}"), files))
    return proc, url


def _fetch(url: str, dest: Path, threads: int) -> dict:
    sys.path.insert(0, str(REPO / "operator"))
    from wanwide.pipeline.results.s3 import S3Options, connect, fetch

    env = {"AWS_ACCESS_KEY_ID": AK, "AWS_SECRET_ACCESS_KEY": SK}
    t0 = time.perf_counter()
    r = fetch(connect(S3Options(endpoint=url), env), "s3://results/many", dest, threads=threads)
    return {"s": time.perf_counter() - t0, "downloaded": len(r.downloaded), "present": len(r.skipped)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundles", type=int, default=3000)
    ap.add_argument("--dir", type=Path, help="keep the bundles here (reused if present)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-s3", action="store_true")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child[0], Path(a.child[1]), Path(a.child[2]))))
        return 0
    root = a.dir or Path(tempfile.mkdtemp(prefix="ww-many-"))
    src = root / "src"
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'operator'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    try:
        if not src.exists():
            write_bundles(src, a.bundles)
        n_files = sum(1 for p in src.rglob("*") if p.is_file())
        print(f"{a.bundles} bundles, {n_files} files under {src}")

        def measure(label: str, what: str, store: Path, fresh: bool, repeat: int = a.repeat) -> None:
            runs = []
            for _ in range(repeat):
                if fresh:
                    shutil.rmtree(store, ignore_errors=True)
                before = benchlib.load()
                r = benchlib.run([sys.executable, __file__, "--child", what, str(src), str(store)], env=env)
                after = benchlib.load()
                if r["rc"] != 0:
                    raise SystemExit(r["stderr"][-2000:])
                runs.append({**r["result"], "rss": r["tree_rss_mb"], "before": before, "after": after})
            print(f"{label}: {benchlib.spread([x['s'] for x in runs])} s ({runs[0]['n']}), peak tree RSS "
                  f"{benchlib.spread([x['rss'] for x in runs], '{:.0f}')} MB; "
                  f"{benchlib.load_text(runs[-1]['before'], runs[-1]['after'])}", flush=True)

        store = root / "store"
        measure("discover (sources found)", "discover", store, False)
        measure("discover as before, once (sources found)", "discover-before", store, False, 1)  # minutes
        measure("store sync, new store (bundles read)", "sync", store, True)
        shutil.rmtree(store, ignore_errors=True)
        benchlib.run([sys.executable, __file__, "--child", "sync", str(src), str(store)], env=env)
        measure("store sync again (bundles read)", "sync", store, False)
        if not a.no_s3:
            with tempfile.TemporaryDirectory(prefix="ww-many-s3-") as tmp:
                proc, url = _s3(Path(tmp), src)
                if proc is None:
                    print("S3: versitygw not installed (hack/install-lab.sh); skipped")
                    return 0
                try:
                    for threads in (16, 1):
                        runs = []
                        for i in range(a.repeat):
                            dest = Path(tmp) / f"got-{threads}-{i}"
                            before = benchlib.load()
                            runs.append({**_fetch(url, dest, threads), "before": before, "after": benchlib.load()})
                        print(f"S3 fetch, {threads} at a time: {benchlib.spread([x['s'] for x in runs])} s "
                              f"({runs[0]['downloaded']} files); {benchlib.load_text(runs[-1]['before'], runs[-1]['after'])}")
                    again = [_fetch(url, Path(tmp) / "got-16-0", 16) for _ in range(a.repeat)]
                    print(f"S3 fetch again, all present: {benchlib.spread([x['s'] for x in again])} s "
                          f"({again[0]['present']} present)")
                finally:
                    proc.terminate()
                    proc.wait(timeout=10)
    finally:
        if a.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
