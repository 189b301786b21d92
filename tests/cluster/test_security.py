"""A Benchmark author is not a cluster admin (issue 43; docs/security.md), on the real API server.

The operator runs as the chart's ServiceAccount with the chart's RBAC and its ValidatingAdmissionPolicies
(tests/cluster/operator_env.py installs what ``helm template`` renders). Hostile charts are real charts that
``helm template`` renders; the API server is the real kube-apiserver, so an object that got through would be
in it.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml

from tests.cluster.operator_env import FIXTURE_CHART, example, owned
from wanwide.core.plan import names

pytestmark = pytest.mark.cluster
LOOT = base64.b64encode(b"the victim's secret").decode()


def _bench(tc, name: str, chart: str | None = None, repo: str = "", regions: int = 3) -> str:
    topo, b = yaml.safe_load_all(example(tc, "uniform-9.yaml", cleanup="Always"))
    topo["metadata"]["name"] = b["metadata"]["name"] = b["spec"]["topologyRef"] = name
    topo["spec"]["generate"]["count"] = regions
    if chart is not None:
        b["spec"]["openstack"] = {"keystone": {"chartRepo": repo, "chart": chart, "chartVersion": "0.1.0"}}
    return yaml.safe_dump_all([topo, b])


def _wait(tc, ns: str, kind: str, name: str, until, timeout: float = 240) -> dict:
    deadline, got = time.time() + timeout, {}
    while time.time() < deadline:
        p = tc.kubectl("get", kind, name, "-n", ns, "-o", "json", check=False)
        if p.returncode == 0:
            got = yaml.safe_load(p.stdout)
            if until(got):
                return got
        time.sleep(2)
    raise AssertionError(f"{kind}/{name}: not there after {timeout}s: {(got or {}).get('status')}")


def _phase(*phases: str):
    return lambda o: (o.get("status") or {}).get("phase") in phases


@pytest.fixture(scope="module")
def victim(env):
    """A namespace the Benchmark author has no business in, holding a Secret."""
    tc = env["tc"]
    ns = f"victim-{uuid.uuid4().hex[:6]}"
    tc.kubectl("create", "namespace", ns)
    tc.apply(yaml.safe_dump({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "loot-src", "namespace": ns},
                             "data": {"password": LOOT}}))
    yield ns
    tc.kubectl("delete", "namespace", ns, "--wait=false", check=False)


@pytest.fixture(scope="module")
def charts(env, victim, tmp_path_factory) -> dict[str, Path]:
    """Two charts in a directory the operator allows (as an admin would list it; the operator restarted):
    ``hostile`` renders what a chart must not (a ClusterRoleBinding to cluster-admin, a RoleBinding in
    kube-system, a copy-from Secret, a privileged Job), ``sly`` is the fixture keystone chart plus a Secret
    asking to be filled from the victim's."""
    base = tmp_path_factory.mktemp("charts")
    hostile = base / "hostile"
    (hostile / "templates").mkdir(parents=True)
    (hostile / "Chart.yaml").write_text("apiVersion: v2\nname: hostile\nversion: 0.1.0\n")
    steal = {"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": "loot", "annotations": {names.A_COPY_FROM: f"{victim}/loot-src", names.A_COPY_KEYS: "*"}}}
    objs = [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "pwn-crb"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
         "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "pwn-rb", "namespace": "kube-system"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
         "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]},
        steal,
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pwn", "namespace": "kube-system"},
         "spec": {"template": {"spec": {"restartPolicy": "Never", "hostPID": True, "containers": [
             {"name": "x", "image": "busybox", "securityContext": {"privileged": True}}]}}}},
    ]
    (hostile / "templates" / "all.yaml").write_text(yaml.safe_dump_all(objs))
    sly = base / "sly"
    shutil.copytree(FIXTURE_CHART, sly)
    (sly / "templates" / "loot.yaml").write_text(yaml.safe_dump(steal))
    op = env["op"]
    op.extra_charts = [f"{base}/"]
    op.stop()
    op.start()
    return {"hostile": hostile, "sly": sly}


def test_a_chart_rendering_outside_its_namespace_fails_the_trial_and_nothing_of_it_is_applied(env, charts):
    tc, ns = env["tc"], env["ns"]
    tc.apply(_bench(tc, "sec-hostile", str(charts["hostile"])), ns)
    t = _wait(tc, ns, "trial", "sec-hostile-t000", _phase("Failed", "Succeeded"))
    st = t["status"]
    assert (st["phase"], st["reason"]) == ("Failed", "ChartRefused"), st
    assert "ClusterRoleBinding pwn-crb" in st["message"] and "nothing of it is applied" in st["message"]
    assert tc.kubectl("get", "clusterrolebinding", "pwn-crb", check=False).returncode != 0
    assert tc.kubectl("get", "rolebinding", "pwn-rb", "-n", "kube-system", check=False).returncode != 0
    assert tc.kubectl("get", "job", "pwn", "-n", "kube-system", check=False).returncode != 0
    assert not [s for s in tc.kubectl_json("get", "secrets", "-A", "--field-selector", "metadata.name=loot")["items"]]
    tc.kubectl("delete", "benchmark", "sec-hostile", "-n", ns, "--timeout=180s")


def test_a_rendered_copy_from_is_taken_off_and_the_trials_namespaces_carry_their_policies(env, charts, victim):
    tc, ns = env["tc"], env["ns"]
    tc.apply(_bench(tc, "sec-sly", str(charts["sly"])), ns)
    region_ns = names.namespace(ns, "sec-sly", 0, "r2")
    s = _wait(tc, region_ns, "secret", "loot", lambda o: True, timeout=300)
    assert LOOT not in (s.get("data") or {}).values()
    assert names.A_COPY_FROM not in ((s["metadata"].get("annotations")) or {})
    pols = {p["metadata"]["name"] for p in tc.kubectl_json("get", "networkpolicies", "-n", region_ns)["items"]}
    assert pols == {"wanwide-deny", "wanwide-trial", "wanwide-runner"}
    labels = tc.kubectl_json("get", "namespace", region_ns)["metadata"]["labels"]
    bench_uid = tc.kubectl_json("get", "benchmark", "sec-sly", "-n", ns)["metadata"]["uid"]
    assert labels[names.L_OWNER] == bench_uid
    tc.kubectl("delete", "benchmark", "sec-sly", "-n", ns, "--timeout=180s")


def test_a_chart_source_the_operator_does_not_allow_makes_the_benchmark_invalid(env):
    tc, ns = env["tc"], env["ns"]
    # a cloud metadata host over plain http: the API server refuses it at admission, naming the field
    p = tc.kubectl("apply", "-n", ns, "-f", "-", check=False,
                   input=_bench(tc, "sec-meta", "keystone", repo="http://169.254.169.254/latest"))
    assert p.returncode != 0 and "spec.openstack.keystone.chartRepo" in p.stderr and "https://" in p.stderr, p.stderr
    assert "metadata host" in p.stderr, p.stderr
    assert tc.kubectl("get", "benchmark", "sec-meta", "-n", ns, check=False).returncode != 0
    # an https repository the API server admits but this operator does not render from (charts.allowed)
    tc.apply(_bench(tc, "sec-source", "keystone", repo="https://charts.example.org/openstack"), ns)
    b = _wait(tc, ns, "benchmark", "sec-source", _phase("Invalid"), timeout=60)
    valid = next(c for c in b["status"]["conditions"] if c["type"] == "Valid")
    assert "spec.openstack.keystone.chart" in valid["message"] and "charts.allowed" in valid["message"], valid
    assert not tc.kubectl_json("get", "trials", "-n", ns, "-l", "wanwide.io/benchmark=sec-source")["items"]
    tc.kubectl("delete", "benchmark", "sec-source", "-n", ns, "--timeout=60s")
    tc.kubectl("delete", "topology", "sec-meta", "-n", ns, "--ignore-not-found", "--timeout=60s")


def test_a_trial_made_or_changed_by_anyone_but_the_operator_is_refused_at_admission(env):
    tc, ns = env["tc"], env["ns"]
    forged = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Trial",
              "metadata": {"name": "forged-t000", "namespace": ns, "labels": {names.L_BENCHMARK: "any"},
                           "annotations": {"wanwide.io/plan-input": "{}"}},
              "spec": {"benchmark": "any", "index": 0, "repetition": 0, "parameters": {}}}
    p = tc.kubectl("create", "-f", "-", input=yaml.safe_dump(forged), check=False)
    assert p.returncode != 0 and "Trials are made and changed by the wanwide operator only" in p.stderr, p.stderr
    # an admin's edit of a real Trial's spec or status is refused too
    tc.apply(_bench(tc, "sec-edit", "/nonexistent/keystone"), ns)
    _wait(tc, ns, "trial", "sec-edit-t000", lambda o: True, timeout=60)
    for args in (["--type=merge", "-p", '{"spec":{"benchmark":"other"}}'],
                 ["--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Succeeded"}}']):
        p = tc.kubectl("patch", "trial", "sec-edit-t000", "-n", ns, *args, check=False)
        assert p.returncode != 0 and "wanwide operator only" in p.stderr, p.stderr
    tc.kubectl("delete", "benchmark", "sec-edit", "-n", ns, "--timeout=180s")


def test_the_api_server_keeps_the_operator_to_its_own_namespaces(env, victim):
    tc, op = env["tc"], env["op"]

    def as_operator(*args: str, input: str | None = None) -> subprocess.CompletedProcess:
        return tc.kubectl(*args, input=input, kubeconfig=op.kubeconfig, check=False)

    rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
          "metadata": {"name": "wanwide-operator", "namespace": "kube-system"},
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                      "name": f"{op.release}-trial" if "wanwide" in op.release else f"{op.release}-wanwide-trial"},
          "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "kube-system"}]}
    p = as_operator("create", "-f", "-", input=yaml.safe_dump(rb))
    assert p.returncode != 0 and "writes RoleBindings only in namespaces it made" in p.stderr, p.stderr
    for args in (["delete", "namespace", victim, "--wait=false"],
                 ["label", "namespace", victim, "app.kubernetes.io/managed-by=wanwide"]):
        p = as_operator(*args)
        assert p.returncode != 0 and "changes only namespaces it made" in p.stderr, (args, p.stderr)
    assert tc.kubectl_json("get", "namespace", victim)["status"]["phase"] == "Active"


def test_a_trial_whose_namespace_someone_else_made_fails_and_leaves_it_alone(env):
    tc, ns = env["tc"], env["ns"]
    taken = names.namespace(ns, "sec-taken", 0, "r2")
    tc.apply(yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                             "metadata": {"name": taken, "labels": {"owner": "someone-else",
                                                                    names.L_TRIAL: "sec-taken-t000"}}}))
    try:
        tc.apply(_bench(tc, "sec-taken", "/nonexistent/keystone"), ns)
        t = _wait(tc, ns, "trial", "sec-taken-t000", _phase("Failed", "Succeeded"))
        assert (t["status"]["phase"], t["status"]["reason"]) == ("Failed", "NamespaceTaken"), t["status"]
        assert taken in t["status"]["message"]
        left = tc.kubectl_json("get", "namespace", taken)
        assert left["status"]["phase"] == "Active" and left["metadata"]["labels"]["owner"] == "someone-else"
        assert "app.kubernetes.io/managed-by" not in left["metadata"]["labels"]
        assert not owned(tc, "namespaces", ns, "sec-taken")  # nothing of its own was made either
        tc.kubectl("delete", "benchmark", "sec-taken", "-n", ns, "--timeout=180s")
        assert tc.kubectl_json("get", "namespace", taken)["status"]["phase"] == "Active"
    finally:
        tc.kubectl("delete", "namespace", taken, "--wait=false", check=False)


def test_the_real_helm_takes_a_chart_named_like_a_flag_as_a_chart(testcluster, tmp_path, monkeypatch):
    """What reached helm before: ``helm template keystone --post-renderer=X`` ran X on the rendered objects."""
    import dataclasses

    from tests.chartdata import release
    from wanwide.providers.kubernetes.kube import helm

    monkeypatch.setenv("WANWIDE_HELM", str(testcluster.bin_dir / "helm"))
    marker = tmp_path / "ran"
    (tmp_path / "pr.sh").write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    (tmp_path / "pr.sh").chmod(0o755)
    rel = dataclasses.replace(release(), repo="", chart=f"--post-renderer={tmp_path / 'pr.sh'}")
    chart = tmp_path / rel.name  # a chart where helm looks for one named as the release
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {rel.name}\nversion: 0.1.0\n")
    (chart / "templates" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    old = [str(testcluster.bin_dir / "helm"), "template", rel.name, rel.chart, "--values", "-"]
    subprocess.run(old, input="{}", capture_output=True, text=True, cwd=tmp_path)
    assert marker.exists(), "the old command line ran a post-renderer named as the chart"  # the attack is real
    marker.unlink()
    p = subprocess.run(helm.command(rel, rel.chart), input="{}", capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode != 0 and not marker.exists(), p.stderr
