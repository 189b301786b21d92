"""The operator's background ``helm upgrade --install`` recovers from a helm killed mid-operation.

A killed operator kills its helm child; the release it leaves behind (pending-install,
uninstalling, …) makes the next ``upgrade --install`` fail. These tests leave a real release
in such a state, as the dead helm would, and drive ``Background.poll`` to the end.
"""

from __future__ import annotations

import base64
import gzip
import json
import time

import pytest

from wanwide.kube import helm
from wanwide.render.keystone import HelmRelease

pytestmark = pytest.mark.cluster

CHART_YAML = "apiVersion: v2\nname: tiny\nversion: 0.1.0\n"
CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: tiny
data:
  greeting: {{ .Values.greeting | quote }}
"""


def _chart(tmp_path):
    d = tmp_path / "tiny"
    (d / "templates").mkdir(parents=True)
    (d / "Chart.yaml").write_text(CHART_YAML)
    (d / "templates" / "cm.yaml").write_text(CONFIGMAP)
    return str(d)


def _leave_stuck(tc, ns: str, name: str, status: str) -> None:
    """Rewrite the release record as a helm killed mid-operation leaves it (helm's Secret driver:
    base64 of gzip'd JSON inside the Secret's base64, the status also as a label)."""
    secret = tc.kubectl_json("get", "secret", "-n", ns, "-l", f"owner=helm,name={name}")["items"][-1]
    rel = json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret["data"]["release"]))))
    rel["info"]["status"] = status
    packed = base64.b64encode(base64.b64encode(gzip.compress(json.dumps(rel).encode()))).decode()
    patch = {"metadata": {"labels": {"status": status}}, "data": {"release": packed}}
    tc.kubectl("patch", "secret", secret["metadata"]["name"], "-n", ns, "--type", "merge", "-p", json.dumps(patch))
    assert helm.status(name, ns, str(tc.kubeconfig)) == status


@pytest.mark.parametrize("stuck", ["pending-install", "pending-upgrade", "uninstalling"])
def test_poll_recovers_a_release_a_killed_helm_left_stuck(testcluster, tmp_path, monkeypatch, stuck):
    tc = testcluster
    monkeypatch.setenv("WANWIDE_HELM", str(tc.bin_dir / "helm"))
    ns = tc.namespace("helm")
    kubeconfig = str(tc.kubeconfig)
    rel = HelmRelease("tiny", ns, "r1", "", _chart(tmp_path), "0.1.0", {"greeting": "first"}, 0)
    tc.helm("upgrade", "--install", "tiny", rel.chart, "-n", ns, "--set", "greeting=first")
    _leave_stuck(tc, ns, "tiny", stuck)
    # what a restarted operator does: a fresh Background, polled until it says done
    bg = helm.Background()
    rel = HelmRelease("tiny", ns, "r1", "", rel.chart, "0.1.0", {"greeting": "second"}, 0)
    deadline = time.time() + 120
    state = bg.poll(rel, kubeconfig, 60)
    while state == "running":
        assert time.time() < deadline, "helm never finished"
        time.sleep(0.5)
        state = bg.poll(rel, kubeconfig, 60)
    assert state == "done"
    assert helm.status("tiny", ns, kubeconfig) == "deployed"
    cm = tc.kubectl_json("get", "configmap", "tiny", "-n", ns)
    assert cm["data"]["greeting"] == "second"  # installed again with the values of this poll
    tc.kubectl("delete", "namespace", ns, "--wait=false")
