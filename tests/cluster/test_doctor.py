"""wanwide doctor against the kwok test cluster, prepared as a user would (the chart, Chaos Mesh's daemon,
mariadb-operator, a default StorageClass, the results bucket): all green; then a placement no node satisfies
and a bucket that does not exist are named with their fix. The netem probe runs as Jobs kwok completes (on
the real node it runs for real: tests/cluster/test_realnode.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.cluster.operator_env import BUCKET, example, install_crds, results_store

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
STAND_INS = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: chaos-daemon, namespace: chaos-mesh}
spec:
  selector: {matchLabels: {app.kubernetes.io/component: chaos-daemon}}
  template:
    metadata: {labels: {app.kubernetes.io/component: chaos-daemon}}
    spec:
      tolerations: [{operator: Exists}]
      containers: [{name: chaos-daemon, image: stand-in}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: mariadb-operator, namespace: mariadb-operator}
spec:
  selector: {matchLabels: {app: mariadb-operator}}
  template:
    metadata: {labels: {app: mariadb-operator}}
    spec: {containers: [{name: manager, image: stand-in}]}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: wanwide-doctor-test
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: example.com/none
"""


def doctor(tc, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wanwide.cli", "doctor", "--kubeconfig", str(tc.kubeconfig),
                           "--timeout", "120", *args], capture_output=True, text=True, timeout=300)


def _bench(tc, tmp: Path, placement: dict, bucket: str = BUCKET) -> Path:
    docs = list(yaml.safe_load_all(example(tc, "uniform-9.yaml")))
    b = next(d for d in docs if d["kind"] == "Benchmark")
    del b["spec"]["topologyRef"]
    b["spec"]["topology"] = {"generate": {"count": 3}, "network": {"default": {"rtt": "20ms"}}, "placement": placement}
    b["spec"]["database"] = {"backend": "galera"}
    b["spec"]["results"]["s3"]["bucket"] = bucket
    f = tmp / "bench.yaml"
    f.write_text(yaml.safe_dump(b))
    return f


def test_doctor_on_a_prepared_cluster_then_on_what_is_missing(testcluster, tmp_path):
    tc = testcluster
    install_crds(tc)
    ns, sys_ns = tc.namespace("doc"), tc.namespace("doc-sys")
    results_store(tc, ns)
    for n in ("chaos-mesh", "mariadb-operator"):
        tc.kubectl("create", "namespace", n, check=False)
    tc.apply(STAND_INS)
    tc.helm("install", "doc", str(REPO / "charts" / "wanwide"), "-n", sys_ns, "--set", "crds.enabled=false",
            "--set", f"watchNamespaces={{{ns}}}")
    # everything running before the doctor looks (kwok starts each pod after a moment)
    for what, where in (("deployment/doc-wanwide", sys_ns), ("daemonset/chaos-daemon", "chaos-mesh"),
                        ("deployment/mariadb-operator", "mariadb-operator")):
        r = tc.kubectl("rollout", "status", what, "-n", where, "--timeout=240s", check=False, timeout=260)
        assert r.returncode == 0, r.stdout + r.stderr + tc.kubectl("describe", "pods", "-n", where).stdout[-3000:]
    try:
        bench = _bench(tc, tmp_path, {"mode": "regionLabel"})
        r = doctor(tc, "-f", str(bench), "-n", ns, "--probe-namespace", tc.namespace("doc-probe"))
        print(r.stdout, r.stderr)
        assert r.returncode == 0, r.stdout + r.stderr
        lines = r.stdout.splitlines()
        assert all(line.startswith("ok ") for line in lines), r.stdout
        for what in ("wanwide CRDs", "wanwide operator", "chaos-daemon on every region node",
                     "netem on every region node", "mariadb-operator", "storage for Galera",
                     "nodes for the placement", "results store"):
            assert any(what in line for line in lines), (what, r.stdout)
        assert "netem probe on 3 node(s)" in r.stderr  # the nodes of r1..r3 only

        bench = _bench(tc, tmp_path, {"mode": "regionLabel", "label": "wanwide.test/site"}, bucket="no-such-bucket")
        r = doctor(tc, "-f", str(bench), "-n", ns, "--no-netem")
        print(r.stdout)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "FAIL  nodes for the placement" in r.stdout and "wanwide.test/site=r1" in r.stdout
        assert "fix: label nodes (kubectl label node NODE wanwide.test/site=r1)" in r.stdout
        assert "FAIL  results store" in r.stdout and "no-such-bucket" in r.stdout
    finally:
        tc.helm("uninstall", "doc", "-n", sys_ns, check=False)
        tc.kubectl("delete", "-f", "-", "--ignore-not-found", input=STAND_INS, check=False)
