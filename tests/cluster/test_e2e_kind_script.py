"""hack/e2e-kind.sh's parts that need no kind, run for real: ``run``/``wait`` against a real
kube-apiserver (the Benchmark's conditions set as the operator sets them: no operator
runs here), and its results set-up (the S3 server's arguments and the bucket Job's script
from manifests/deps/s3.yaml) with the real versitygw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest
import yaml

from tests.cluster.operator_env import free_port, install_crds

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "hack" / "e2e-kind.sh"
KIND = REPO / "hack" / "e2e-kind"
NAME = "e2e-kind"


@pytest.fixture(scope="module")
def bench(testcluster):
    """The kind Benchmark applied by the script's ``run`` into a fresh namespace."""
    install_crds(testcluster)
    ns = testcluster.namespace("kind-wait")
    r = script(testcluster, ns, "run", timeout="1")
    assert r.returncode == 1, r.stderr
    assert f"waiting up to 1s for benchmark/{NAME} in {ns}" in r.stderr
    return testcluster, ns


def script(tc, ns: str, *args: str, timeout: str = "30") -> subprocess.CompletedProcess[str]:
    env = {**tc.env, "E2E_NAMESPACE": ns, "E2E_TIMEOUT": timeout, "E2E_POLL": "0.2"}
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=120)


def conditions(tc, ns: str, **status: str) -> None:
    """Set the Benchmark's conditions as the operator would (status subresource)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conds = [{"type": t, "status": s, "reason": "Test", "message": f"{t} set by the test",
              "lastTransitionTime": now} for t, s in status.items()]
    tc.kubectl("patch", "benchmark", NAME, "-n", ns, "--subresource=status", "--type=merge",
               "-p", json.dumps({"status": {"conditions": conds}}))


def test_still_progressing_times_out_with_diagnostics(bench):
    tc, ns = bench
    conditions(tc, ns, Valid="True", Progressing="True")
    t0 = time.monotonic()
    r = script(tc, ns, "wait", NAME, timeout="3")
    assert r.returncode == 1
    assert time.monotonic() - t0 < 60
    assert f"benchmark/{NAME} timed out after 3s" in r.stderr
    assert "===== benchmarks, trials, topologies" in r.stdout and f"benchmark.wanwide.io/{NAME}" in r.stdout
    assert "Progressing set by the test" in r.stdout  # the Benchmark's status


def test_failed_stops_the_wait_and_prints_why(bench):
    tc, ns = bench
    conditions(tc, ns, Valid="False", Progressing="False", Complete="False", Failed="True")
    r = script(tc, ns, "wait", NAME, timeout="60")
    assert r.returncode == 1
    assert f"benchmark/{NAME} Failed" in r.stderr and "timed out" not in r.stderr
    assert "Failed set by the test" in r.stdout and "===== events (last 80)" in r.stdout


def test_complete_ends_the_wait(bench):
    tc, ns = bench
    conditions(tc, ns, Valid="True", Progressing="False", Complete="True", Failed="False")
    r = script(tc, ns, "wait", NAME, timeout="60")
    assert r.returncode == 0, r.stderr
    assert f"benchmark/{NAME} Complete" in r.stderr and NAME in r.stdout


def test_results_server_and_bucket_job_as_written(testcluster, tmp_path):
    """versitygw with the Deployment's arguments and keys; the Job's script makes the
    bucket (and is idempotent); a client with the Secret's keys sees it."""
    docs = {d["kind"]: d for d in yaml.safe_load_all((REPO / "manifests" / "deps" / "s3.yaml").read_text())}
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    server = pod["containers"][0]
    port = free_port()
    mounts = {m["mountPath"]: tmp_path / m["name"] for m in server["volumeMounts"]}
    for d in mounts.values():
        d.mkdir()
    args = [str(mounts.get(a, a)) for a in server["args"]]
    args[args.index("--port") + 1] = f"127.0.0.1:{port}"
    env = {**os.environ, **{e["name"]: e["value"] for e in server["env"]}}
    gw = subprocess.Popen([str(testcluster.bin_dir / "versitygw"), *args], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        endpoint = f"http://127.0.0.1:{port}"
        job = docs["Job"]["spec"]["template"]["spec"]["containers"][0]
        assert job["command"] == ["python", "-c"]
        job_env = {**os.environ, **{e["name"]: e["value"] for e in job["env"]}, "S3_ENDPOINT": endpoint}
        for _ in range(2):  # the script retries until the server listens, and may run again
            r = subprocess.run([sys.executable, "-c", job["args"][0]], env=job_env, capture_output=True,
                               text=True, timeout=180)
            assert r.returncode == 0, r.stderr
            assert r.stdout.strip() == f"bucket {job_env['BUCKET']} ready"
        keys = docs["Secret"]["stringData"]
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"])
        s3.put_object(Bucket=job_env["BUCKET"], Key="e2e-kind/probe", Body=b"ok")
        assert s3.get_object(Bucket=job_env["BUCKET"], Key="e2e-kind/probe")["Body"].read() == b"ok"
    finally:
        gw.terminate()
        gw.wait(timeout=30)
