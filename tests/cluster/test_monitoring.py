"""Monitoring on the real API server: the operator's metrics after real failures, and trials
without prometheus-operator (its CRDs removed for the last test of this module, then restored)."""

from __future__ import annotations

import time
import urllib.request

import pytest
import yaml
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster.operator_env import example, owned
from wanwide.providers.kubernetes.kube.client import DISCOVERY_TTL_S

pytestmark = pytest.mark.cluster
MON_GROUP = "monitoring.coreos.com"


def scrape(env) -> dict[tuple[str, frozenset], float]:
    """The operator's /metrics: (sample name, labels) → value (waiting for a just started operator)."""
    deadline = time.time() + 90
    while True:
        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{env['op'].metrics_port}/metrics", timeout=10).read().decode()
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(1)
    return {(s.name, frozenset(s.labels.items())): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def value(samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def bench(tc, name: str, regions: int = 3, **extra) -> str:
    topo, b = yaml.safe_load_all(example(tc, "uniform-9.yaml", cleanup="Never", extra=extra))
    topo["metadata"]["name"] = b["metadata"]["name"] = b["spec"]["topologyRef"] = name
    topo["spec"]["generate"]["count"] = regions
    return yaml.safe_dump_all([topo, b])


def wait_trial(tc, ns: str, name: str, phases: tuple[str, ...], timeout: float) -> dict:
    deadline = time.time() + timeout
    t: dict = {}
    while time.time() < deadline:
        p = tc.kubectl("get", "trial", name, "-n", ns, "-o", "json", check=False)
        if p.returncode == 0:
            t = yaml.safe_load(p.stdout)
            if (t.get("status") or {}).get("phase") in phases:
                return t
        time.sleep(2)
    raise AssertionError(f"{name} not in {phases} after {timeout}s: {t.get('status')}")


def conditions(obj: dict) -> dict[str, dict]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions", [])}


def test_apply_errors_are_counted_by_verb_and_kind(testcluster):
    from wanwide.providers.kubernetes.controller.actions import Apply, Executor
    from wanwide.providers.kubernetes.kube.client import Kube, load_config

    key = {"verb": "apply", "kind": "ConfigMap"}
    before = REGISTRY.get_sample_value("wanwide_apply_errors_total", key) or 0.0
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_A_Name", "namespace": "default"}}
    with pytest.raises(Exception, match="Not_A_Name"):  # the API server refuses the name
        Executor(Kube(load_config(str(testcluster.kubeconfig)))).run([Apply(bad)])
    assert REGISTRY.get_sample_value("wanwide_apply_errors_total", key) == before + 1


def test_a_chart_helm_cannot_render_shows_in_the_operators_metrics(env):
    tc, ns = env["tc"], env["ns"]
    before = scrape(env)
    missing_chart = {"keystone": {"chartRepo": "", "chart": "/nonexistent/keystone", "chartVersion": "0.1.0"}}
    tc.apply(bench(tc, "mon-helm", openstack=missing_chart,
                   monitoring={"labels": {"release": "kube-prometheus-stack"}}), ns)
    t = wait_trial(tc, ns, "mon-helm-t000", ("Failed", "Succeeded"), 240)
    assert (t["status"]["phase"], t["status"]["reason"]) == ("Failed", "DeployFailed"), t["status"]
    b = tc.kubectl_json("get", "benchmark", "mon-helm", "-n", ns)
    assert conditions(b)["Monitored"]["status"] == "True"
    # with prometheus-operator's CRDs the trial's monitors were applied, with the extra labels
    pm = owned(tc, "podmonitors", ns, "mon-helm")
    # the cache's and (issue 47) the runners' live metrics, applied with the namespaces
    assert sorted((m["metadata"]["name"], m["metadata"]["labels"]["release"]) for m in pm) == [
        ("keystone-cache", "kube-prometheus-stack"), ("rally", "kube-prometheus-stack")], pm
    deadline = time.time() + 60
    while True:  # the Benchmark's counts follow the trial's phase change
        after = scrape(env)
        if value(after, "wanwide_trials", namespace=ns, benchmark="mon-helm", phase="failed") == 1 \
                or time.time() > deadline:
            break
        time.sleep(2)
    assert value(after, "wanwide_chart_errors_total", step="template") >= \
        value(before, "wanwide_chart_errors_total", step="template") + 1
    assert value(after, "wanwide_trials", namespace=ns, benchmark="mon-helm", phase="failed") == 1
    assert value(after, "wanwide_trial_phase_changes_total", phase="Failed") >= \
        value(before, "wanwide_trial_phase_changes_total", phase="Failed") + 1
    assert value(after, "wanwide_trial_phase_duration_seconds_count", phase="Provisioning") >= 1
    assert not [k for k in after if k[0] == "wanwide_trial_phase_deadline_timestamp_seconds"
                and ("trial", "mon-helm-t000") in k[1]]  # an ended trial has no deadline
    tc.kubectl("delete", "benchmark", "mon-helm", "-n", ns, "--timeout=180s")


@pytest.fixture(scope="module")
def without_prometheus_operator(env):
    """prometheus-operator's CRDs deleted (as on a cluster without it), restored afterwards."""
    tc = env["tc"]
    names = [c["metadata"]["name"] for c in tc.kubectl_json("get", "crd")["items"] if c["spec"]["group"] == MON_GROUP]
    assert "podmonitors.monitoring.coreos.com" in names
    tc.kubectl("delete", "crd", *names, "--timeout=120s")
    deadline = time.time() + 60
    while tc.kubectl("get", "--raw", f"/apis/{MON_GROUP}/v1", check=False).returncode == 0:
        assert time.time() < deadline, "the API server still serves monitoring.coreos.com/v1"
        time.sleep(1)
    time.sleep(DISCOVERY_TTL_S + 1)  # the operator's last discovery answer expires
    try:
        yield
    finally:
        files = [a for f in tc.upstream_crds("prometheus-operator") for a in ("-f", str(f))]
        tc.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=wanwide-testcluster", *files)
        tc.kubectl("wait", "--for=condition=Established", "--timeout=60s", *(f"crd/{n}" for n in names))
        time.sleep(DISCOVERY_TTL_S + 1)


def test_without_prometheus_operator_trials_run_without_monitors_and_say_so(env, without_prometheus_operator):
    tc, ns = env["tc"], env["ns"]
    tc.apply(bench(tc, "mon-off"), ns)  # spec.monitoring.enabled defaults to true
    t = wait_trial(tc, ns, "mon-off-t000", ("Succeeded", "Failed"), 420)
    assert t["status"]["phase"] == "Succeeded", t["status"]
    b = tc.kubectl_json("get", "benchmark", "mon-off", "-n", ns)
    mon = conditions(b)["Monitored"]
    assert (mon["status"], mon["reason"]) == ("False", "PrometheusOperatorMissing")
    assert "monitoring.coreos.com" in mon["message"]
    ev = tc.kubectl_json("get", "events", "-n", ns, "--field-selector",
                         "involvedObject.name=mon-off-t000,reason=MonitorsSkipped")["items"]
    assert len(ev) == 1 and ev[0]["type"] == "Warning", ev
    assert "spec.monitoring.enabled: false" in ev[0]["message"]
    # no exporters either: mariadb-operator's metrics off, memcached alone in its pod
    (db,) = owned(tc, "mariadbs", ns, "mon-off")
    assert db["spec"]["metrics"]["enabled"] is False
    caches = [d for d in owned(tc, "deployments", ns, "mon-off") if d["metadata"]["labels"]["wanwide.io/role"] == "cache"]
    assert len(caches) == 3
    for d in caches:
        assert [c["name"] for c in d["spec"]["template"]["spec"]["containers"]] == ["memcached"]
    tc.kubectl("delete", "benchmark", "mon-off", "-n", ns, "--timeout=180s")
