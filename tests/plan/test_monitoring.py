"""spec.monitoring: what a trial deploys for Prometheus, and what it skips when prometheus-operator is absent."""

from __future__ import annotations

import datetime as dt

import pytest
import yaml
from pydantic import ValidationError

from tests.plan.specs import benchmark
from wanwide.core import timestamps as ts
from wanwide.core.api.benchmark import Monitoring
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import TrialPlan, plan
from wanwide.providers.kubernetes.controller import phases
from wanwide.providers.kubernetes.controller.actions import Apply, Emit
from wanwide.providers.kubernetes.render import render_trial

T0 = dt.datetime(2026, 11, 23, 10, 0, 0, tzinfo=dt.UTC)
RELEASE = {"release": "kube-prometheus-stack"}


def _plan(backend: str, **monitoring) -> TrialPlan:
    docs = load_documents([yaml.safe_dump(benchmark(backend, "uniform", monitoring=monitoring))])
    return plan(docs.benchmarks[0], docs.topology_for(docs.benchmarks[0]))[0]


def _monitors(objs: list[dict]) -> list[dict]:
    return [o for o in objs if o["apiVersion"].startswith("monitoring.coreos.com/")]


@pytest.mark.parametrize("backend", ["mariadb", "galera", "cockroachdb"])
def test_every_monitor_carries_the_extra_labels_under_wanwides_own(backend):
    objs = render_trial(_plan(backend, labels={**RELEASE, "team": "db"})).objects
    mons = _monitors(objs)
    assert mons
    for m in mons:
        labels = m["metadata"]["labels"]
        assert labels["release"] == "kube-prometheus-stack" and labels["team"] == "db"
        assert labels["wanwide.io/trial"] == f"{backend[:6]}-unifo-t000"


def test_mariadb_is_scraped_through_mariadb_operators_servicemonitor_with_the_release_label():
    # mariadb-operator runs the exporter as its own Deployment and makes the ServiceMonitor:
    # a PodMonitor on the MariaDB pods would find no metrics port.
    for backend in ("mariadb", "galera"):
        objs = render_trial(_plan(backend, labels=RELEASE)).objects
        (db,) = [o for o in objs if o["kind"] == "MariaDB"]
        assert db["spec"]["metrics"] == {"enabled": True, "serviceMonitor": {
            "interval": "15s", "prometheusRelease": "kube-prometheus-stack"}}
        # Keystone's cache, and the Rally runners' live metrics (pipeline/runner/live.py)
        assert [m["metadata"]["name"] for m in _monitors(objs)] == ["keystone-cache", "rally"]
    (db,) = [o for o in render_trial(_plan("mariadb")).objects if o["kind"] == "MariaDB"]
    assert db["spec"]["metrics"] == {"enabled": True, "serviceMonitor": {"interval": "15s"}}


def test_the_runners_live_metrics_are_scraped_in_every_load_region():
    from wanwide.providers.kubernetes.render.rally import RUNNER_METRICS_PORT, jobs

    p = _plan("galera", labels=RELEASE)
    (mon,) = [m for m in _monitors(render_trial(p).objects) if m["metadata"]["name"] == "rally"]
    assert mon["spec"]["namespaceSelector"]["matchNames"] == [p.namespace(r) for r in p.load_regions]
    assert mon["spec"]["selector"]["matchLabels"]["wanwide.io/role"] == "load"
    for job in (o for o in jobs(p) if o["kind"] == "Job" and o["metadata"]["labels"]["wanwide.io/role"] == "load"):
        c = job["spec"]["template"]["spec"]["containers"][0]
        assert c["args"][-2:] == ["--metrics-port", str(RUNNER_METRICS_PORT)]
        assert c["ports"] == [{"name": "metrics", "containerPort": RUNNER_METRICS_PORT}]
        assert job["spec"]["template"]["metadata"]["labels"].items() >= mon["spec"]["selector"]["matchLabels"].items()


@pytest.mark.parametrize("labels", [{"wanwide.io/trial": "x"}, {"-bad": "x"}, {"ok": "-bad"}, {"ok": "x" * 64}])
def test_labels_that_kubernetes_or_wanwide_would_refuse_are_refused(labels):
    with pytest.raises(ValidationError):
        Monitoring.model_validate({"labels": labels})


def _base_step(p: TrialPlan, crds: bool | None):
    obs = {} if crds is None else {"monitoring_crds": crds}
    d = phases.decide(p, {"phase": "Provisioning", "phaseStartTime": ts.iso(T0), "attempt": 1, "done": []}, obs, T0)
    assert d.recorded == {"applied": ["namespaces"]}
    return [a.obj for a in d.actions if isinstance(a, Apply)], [a for a in d.actions if isinstance(a, Emit)]


def test_without_the_monitoring_crds_no_monitor_no_exporter_and_a_warning_says_why():
    p = _plan("galera", labels=RELEASE)
    with_crds, events = _base_step(p, True)
    assert _monitors(with_crds) and not [e for e in events if e.reason == "MonitorsSkipped"]
    objs, events = _base_step(p, False)
    assert not _monitors(objs)
    (db,) = [o for o in objs if o["kind"] == "MariaDB"]
    assert db["spec"]["metrics"] == {"enabled": False}  # mariadb-operator would wait for the ServiceMonitor CRD
    assert all(c["name"] != "exporter" for o in objs if o["kind"] == "Deployment"
               for c in o["spec"]["template"]["spec"]["containers"])
    (skipped,) = [e for e in events if e.reason == "MonitorsSkipped"]
    assert skipped.type == "Warning" and "monitoring.coreos.com" in skipped.message
    assert "spec.monitoring.enabled: false" in skipped.message


def test_monitoring_off_is_not_reported_as_skipped():
    objs, events = _base_step(_plan("galera", enabled=False), None)
    assert not _monitors(objs) and not [e for e in events if e.reason == "MonitorsSkipped"]
