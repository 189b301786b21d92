"""`wanwide results fetch BENCHMARK`: status.resultsURI, endpoint and Secret read from the cluster with kubectl."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.cluster.operator_env import BUCKET, example, install_crds, results_store, s3_client
from tests.results.conftest import DATA, make_bundle

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]


def wanwide(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("wanwide")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "wanwide.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=300, env=env)


def test_fetch_a_benchmarks_results(testcluster, tmp_path):
    tc = testcluster
    install_crds(tc)
    ns = tc.namespace("fetch")
    results_store(tc, ns)  # the bucket, and Secret s3-keys in ns
    bench = next(d for d in yaml.safe_load_all(example(tc, "lab-delay.yaml")) if d["kind"] == "Benchmark")
    name = bench["metadata"]["name"]
    bench["metadata"]["namespace"] = ns
    tc.apply(yaml.safe_dump(bench), ns)
    # no AWS settings at all: the endpoint comes from the Benchmark's spec, the keys from its Secret
    env = {k: v for k, v in tc.env.items() if not k.startswith("AWS_") and k != "S3_ENDPOINT"}
    env |= {"HOME": str(tmp_path), "PYTHONPATH": str(REPO / "operator")}
    args = ["results", "fetch", name, "-n", ns, "--kubeconfig", str(tc.kubeconfig), "-o", str(tmp_path / "got")]

    r = wanwide(*args, env=env)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert f"Benchmark {ns}/{name} has no status.resultsURI yet" in r.stderr

    # what the operator records once a trial's bundles arrived
    uid = tc.kubectl_json("get", "benchmark", name, "-n", ns)["metadata"]["uid"]
    base = f"e2e/{ns}/{uid[:8]}/{name}"
    root = tmp_path / "bundles"
    make_bundle(root, DATA / "mariadb-3-100ms-light-20261122.json", trial="t000", benchmark=name)
    s3 = s3_client(tc)
    files = sorted(p for p in (root / name).rglob("*") if p.is_file())
    for f in files:
        s3.upload_file(str(f), BUCKET, f"{base}/{f.relative_to(root / name).as_posix()}")
    tc.kubectl("patch", "benchmark", name, "-n", ns, "--subresource=status", "--type=merge",
               "-p", json.dumps({"status": {"resultsURI": f"s3://{BUCKET}/{base}/"}}))

    r = wanwide(*args, env=env)
    assert r.returncode == 0, r.stderr
    assert f"using the S3 keys of Secret {ns}/s3-keys" in r.stderr
    got = sorted(p.relative_to(tmp_path / "got") for p in (tmp_path / "got").rglob("*") if p.is_file())
    assert got == [f.relative_to(root / name) for f in files]
    assert f"fetched {len(files)} file(s)" in r.stdout

    # a wrong namespace: kubectl's own message, on one line
    r = wanwide("results", "fetch", name, "-n", "nowhere", "--kubeconfig", str(tc.kubeconfig), env=env)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "not found" in r.stderr.lower(), r.stderr
