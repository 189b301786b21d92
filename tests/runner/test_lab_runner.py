"""Real chain: MariaDB + memcached + Keystone (wanwide.providers.lab.services) → `wanwide runner run`
(real Rally) → versitygw S3 → ingest → report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.ports import free_port
from tests.runner.test_host_info import lscpu_model

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.timeout(1500)]


@pytest.fixture(scope="module")
def lab():
    from wanwide.providers.lab import netns, paths
    from wanwide.providers.lab.services import Services

    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, mariadbd as mysql)")
    missing = paths.missing()
    if missing:
        pytest.skip(f"lab packages missing (hack/install-lab.sh): {missing}")
    run_dir = Path(tempfile.mkdtemp(prefix="ww-runner-lab-", dir="/tmp"))
    os.chmod(run_dir, 0o755)
    net = netns.build(["r1"], {}, handle_signals=False)
    svc = Services(net, run_dir)
    try:
        db = svc.start_mariadb("r1", in_memory=True)
        svc.create_database(db, "keystone", "keystone", "ks-db-secret")
        mc = svc.start_memcached("r1")
        ks = svc.start_keystone("r1", db_host=db.host, db_password="ks-db-secret", memcached=mc,
                                admin_password="admin-secret", db_sync=True, workers=2)
        s3 = svc.start_s3(port=free_port(), data_dir=run_dir / "s3data")
        yield {"net": net, "db": db, "ks": ks, "s3": s3, "dir": run_dir}
    finally:
        svc.stop_all()
        net.destroy()
        shutil.rmtree(run_dir, ignore_errors=True)


def test_runner_rally_s3_ingest_report(lab, tmp_path):
    import boto3
    from botocore.config import Config

    s3 = lab["s3"]
    ks = lab["ks"]
    db = lab["db"]
    client = boto3.client("s3", endpoint_url=s3.info["url"], region_name="us-east-1",
                          aws_access_key_id=s3.info["access_key"], aws_secret_access_key=s3.info["secret_key"],
                          config=Config(s3={"addressing_style": "path"}))
    client.create_bucket(Bucket="wanwide")
    task = {"version": 2, "title": "lab-auth", "subtasks": [{
        "title": "auth",
        "scenario": {"KeystoneBasic.authenticate_user_and_validate_token": {}},
        "runner": {"constant": {"times": 4, "concurrency": 2}},
        "sla": {"failure_rate": {"max": 0}}}]}
    cfg = {
        "benchmark": "lab-bench", "namespace": "lab",
        "trial": {"id": "mariadb-r1-0", "index": 0, "repetition": 0,
                  "parameters": {"backend": "mariadb", "regions": 1, "rtt_ms": 0}},
        "region": "r1", "role": "load", "attempt": 1,
        "keystone": {"url": ks.info["url"], "region_name": "r1", "username": "admin",
                     "password_env": "WW_LAB_OS_PASSWORD", "project_name": "admin",
                     "user_domain_name": "Default", "project_domain_name": "Default",
                     "cache": ks.info["cache"]},
        "task": task,
        "start_at": (datetime.now(UTC) + timedelta(seconds=150)).isoformat(),
        "max_start_skew_s": 120,
        "gauges": {"database": {"backend": "mariadb", "host": db.host, "port": db.port, "user": "keystone",
                                "password_env": "WW_LAB_DB_PASSWORD"},
                   "rtt_targets": [{"region": "r1", "kind": "keystone", "host": ks.host, "port": ks.port},
                                   {"region": "r1", "kind": "database", "host": db.host, "port": db.port}],
                   "samples": 5},
        "network_requested": [],
        "results": {"local_dir": str(tmp_path / "results"),
                    "s3": {"endpoint": s3.info["url"], "bucket": "wanwide", "prefix": "runs", "region": "us-east-1",
                           "access_key_env": "WW_LAB_AK", "secret_key_env": "WW_LAB_SK"}},
        "versions": {"keystone": "30.0.0", "database": "mariadb-10.11"},
    }
    cp = tmp_path / "runner.json"
    cp.write_text(json.dumps(cfg))
    env = {**os.environ, "WW_LAB_OS_PASSWORD": "admin-secret", "WW_LAB_DB_PASSWORD": "ks-db-secret",
           "WW_LAB_AK": s3.info["access_key"], "WW_LAB_SK": s3.info["secret_key"]}
    r = subprocess.run([sys.executable, "-m", "wanwide.pipeline.runner.cli", "run", "--config", str(cp)],
                       env=env, capture_output=True, text=True, timeout=1200)
    print(r.stderr[-4000:])
    assert r.returncode == 0, r.stderr[-3000:]
    bundle = Path(r.stdout.strip().splitlines()[-1])
    m = json.loads((bundle / "manifest.json").read_text())
    assert m["status"]["result"] == "succeeded", m["status"]
    assert m["rally"]["iterations"] == 4
    assert m["start"]["skew_s"] is not None and abs(m["start"]["skew_s"]) < 120
    # Rally used the runner's user (no users made and deleted around the task), and the
    # authenticate scenario itself only reads: not one write on the database during the task
    assert m["keystone"]["rally_user"] == "wanwide-rally-r1"
    assert m["database"]["reads"] > 0 and m["database"]["writes"] == 0, m["database"]
    assert {x["kind"] for x in m["network"]["measured"]} == {"keystone", "database"}
    assert m["versions"]["rally-openstack"] == "4.1.0"
    assert m["keystone"]["cache"]["enabled"] is True
    # the machine it measured on, told apart from another of the same name (lscpu reads the same CPU)
    assert m["host"]["cpu_model"] == lscpu_model()
    assert m["host"]["boot_id"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    # uploaded, manifest included
    keys = [o["Key"] for o in client.list_objects_v2(Bucket="wanwide", Prefix="runs/")["Contents"]]
    rel = bundle.relative_to(tmp_path / "results").as_posix()
    assert f"runs/{rel}/manifest.json" in keys and f"runs/{rel}/rally.json" in keys

    # report straight from S3
    from wanwide.pipeline.results.report import build_report

    out = tmp_path / "report"
    rep = build_report(["s3://wanwide/runs"], out, progress=False,
                       env={"S3_ENDPOINT": s3.info["url"], "AWS_ACCESS_KEY_ID": s3.info["access_key"],
                            "AWS_SECRET_ACCESS_KEY": s3.info["secret_key"]})
    tot = rep.summary[rep.summary["action"] == "Total"]
    assert int(tot["iterations"].iloc[0]) == 4
    assert set(rep.summary["action"]) >= {"Total", "keystone_v3.fetch_token", "keystone_v3.validate_token"}
    assert (out / "index.html").is_file() and list(out.glob("cdf-*.png"))
    assert len((out / "read_write.csv").read_text().splitlines()) == 2
