"""The chart's ServiceMonitor for the operator's metrics: off by default; on, it finds the metrics Service."""

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
                           "--set", "serviceMonitor.labels.release=kps")
    assert "0 chart(s) failed" in out.stdout
