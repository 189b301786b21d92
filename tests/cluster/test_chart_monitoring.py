"""The chart's monitoring: the ServiceMonitor (it finds the metrics Service), the alert rules and the
Grafana dashboard; each off by default."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

pytestmark = pytest.mark.cluster
CHART = Path(__file__).resolve().parents[2] / "charts" / "wanwide"


def render(tc, *sets: str) -> list[dict]:
    args = [a for s in sets for a in ("--set", s)]
    out = tc.helm("template", "wanwide", str(CHART), "-n", "wanwide-system", *args).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def test_no_servicemonitor_unless_enabled(testcluster):
    assert not [d for d in render(testcluster) if d["kind"] == "ServiceMonitor"]
    assert not [d for d in render(testcluster, "serviceMonitor.enabled=false") if d["kind"] == "ServiceMonitor"]


def test_servicemonitor_selects_the_metrics_service_with_the_users_labels(testcluster):
    from tests.plan.test_upstream_schemas import upstream_crds

    docs = render(testcluster, "serviceMonitor.enabled=true", "serviceMonitor.labels.release=kube-prometheus-stack",
                  "serviceMonitor.labels.app\\.kubernetes\\.io/name=other", "serviceMonitor.interval=15s")
    (sm,) = [d for d in docs if d["kind"] == "ServiceMonitor"]
    (svc,) = [d for d in docs if d["kind"] == "Service"]
    assert sm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert sm["metadata"]["labels"]["app.kubernetes.io/name"] == "wanwide"  # the chart's own labels win
    assert sm["metadata"]["namespace"] == svc["metadata"]["namespace"] == "wanwide-system"
    assert sm["spec"]["namespaceSelector"] == {"matchNames": ["wanwide-system"]}
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    (ep,) = sm["spec"]["endpoints"]
    assert ep["interval"] == "15s" and ep["port"] in [p["name"] for p in svc["spec"]["ports"]]
    assert svc["metadata"]["labels"][sm["spec"]["jobLabel"]] == "wanwide"  # job="wanwide", as the alerts expect
    schema = upstream_crds("prometheus-operator")[("monitoring.coreos.com/v1", "ServiceMonitor")]
    jsonschema.Draft4Validator(schema).validate({k: v for k, v in sm.items() if k != "metadata"})


def test_lint_with_the_servicemonitor_on(testcluster):
    out = testcluster.helm("lint", str(CHART), "--strict", "--set", "serviceMonitor.enabled=true",
                           "--set", "serviceMonitor.labels.release=kps", "--set", "prometheusRule.enabled=true",
                           "--set", "dashboard.enabled=true")
    assert "0 chart(s) failed" in out.stdout


def test_alert_rules_and_dashboard_off_by_default(testcluster):
    kinds = [(d["kind"], d["metadata"]["name"]) for d in render(testcluster)]
    assert not [k for k in kinds if k[0] == "PrometheusRule" or k[1].endswith("-dashboard")], kinds


def test_alert_rules_follow_the_job_link_their_runbooks_and_the_api_server_takes_them(testcluster):
    """prometheusRule.enabled: the rules read the ServiceMonitor's job (nameOverride too), every alert
    links its section of docs/runbooks.md, and the real PrometheusRule CRD accepts the object."""
    tc = testcluster
    docs = render(tc, "prometheusRule.enabled=true", "prometheusRule.labels.release=kps",
                  "serviceMonitor.enabled=true", "nameOverride=ww")
    (rule,) = [d for d in docs if d["kind"] == "PrometheusRule"]
    (sm,) = [d for d in docs if d["kind"] == "ServiceMonitor"]
    (svc,) = [d for d in docs if d["kind"] == "Service"]
    job = svc["metadata"]["labels"][sm["spec"]["jobLabel"]]
    assert job == "ww"
    assert rule["metadata"]["labels"]["release"] == "kps"
    rules = [r for g in rule["spec"]["groups"] for r in g["rules"]]
    assert 'up{job="ww"}' in next(r["expr"] for r in rules if r["alert"] == "WanwideOperatorDown")
    assert not [r["expr"] for r in rules if 'job="wanwide"' in r["expr"]]
    page = (CHART.parents[1] / "docs" / "runbooks.md").read_text()
    for r in rules:
        url = r["annotations"]["runbook_url"]
        assert url == f"https://github.com/wanwide/wanwide/blob/main/docs/runbooks.md#{r['alert'].lower()}"
        assert f"\n## {r['alert']}\n" in page
    assert "{{ $labels.phase }}" in next(r["annotations"]["summary"] for r in rules
                                         if r["alert"] == "WanwideTrialStepsFailing")  # left for Prometheus
    ns = tc.namespace("prom-rule")
    rule["metadata"]["namespace"] = ns
    out = tc.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(rule))
    assert "created (server dry run)" in out.stdout, out.stdout


def test_dashboard_configmap_for_the_grafana_sidecar(testcluster):
    import json

    tc = testcluster
    docs = render(tc, "dashboard.enabled=true", "dashboard.namespace=monitoring",
                  "dashboard.annotations.grafana_folder=wanwide")
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard")]
    assert cm["metadata"]["namespace"] == "monitoring"
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["annotations"] == {"grafana_folder": "wanwide"}
    dash = json.loads(cm["data"]["wanwide.json"])
    assert dash["uid"] == "wanwide-operator" and dash["panels"]
    ns = tc.namespace("dash")
    cm["metadata"]["namespace"] = ns
    out = tc.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(cm))
    assert "created (server dry run)" in out.stdout, out.stdout
