"""Per-region settings the operator renders: keystone chart values, exporters and monitors."""

from __future__ import annotations

import yaml

from tests.plan.specs import benchmark
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan
from wanwide.providers.kubernetes.render import keystone


def _values(cache: bool) -> list[dict]:
    doc = benchmark("mariadb", "uniform", openstack={"keystone": {"cache": cache}})
    d = load_documents([yaml.safe_dump(doc)])
    p = plan(d.benchmarks[0], d.topology_for(d.benchmarks[0]))[0]
    return [r.values for r in keystone.releases(p)]


def test_without_cache_the_api_waits_for_the_database_only():
    # the chart's dep-check would wait for a memcached Service nobody creates
    for v in _values(cache=False):
        assert v["dependencies"]["static"]["api"]["services"] == [{"endpoint": "internal", "service": "oslo_db"}]
        assert v["conf"]["keystone"]["cache"] == {"enabled": False}


def test_with_cache_the_chart_keeps_its_own_dependencies():
    for v in _values(cache=True):
        assert "dependencies" not in v  # the chart's default: oslo_cache and oslo_db
        assert v["conf"]["keystone"]["cache"]["enabled"] is True


def test_monitoring_off_deploys_no_exporter_and_no_monitor():
    from wanwide.providers.kubernetes.render import render_trial

    def objects(enabled: bool) -> list[dict]:
        doc = benchmark("galera", "uniform", monitoring={"enabled": enabled})
        d = load_documents([yaml.safe_dump(doc)])
        p = plan(d.benchmarks[0], d.topology_for(d.benchmarks[0]))[0]
        return render_trial(p, start_at="2026-01-01T00:00:00Z").objects

    def exporters(objs: list[dict]) -> list[str]:
        return [c["name"] for o in objs if o["kind"] == "Deployment"
                for c in o["spec"]["template"]["spec"]["containers"] if c["name"] == "exporter"]

    on, off = objects(True), objects(False)
    assert exporters(on) and not exporters(off)
    assert any(o["kind"] == "PodMonitor" for o in on) and not any(o["kind"].endswith("Monitor") for o in off)
    db = {o["kind"]: o for o in off if o["kind"] == "MariaDB"}["MariaDB"]
    assert db["spec"]["metrics"] == {"enabled": False}
    assert db["spec"]["tls"] == {"enabled": False}  # as in the lab and the studies


def test_replicas_are_keystone_processes_per_region():
    """spec.openstack.keystone.replicas: keystone-api pods on Kubernetes (gunicorn workers in the lab:
    tests/lab/test_galera_partition.py sees them start)."""
    doc = benchmark("mariadb", "uniform", openstack={"keystone": {"replicas": 3}})
    d = load_documents([yaml.safe_dump(doc)])
    p = plan(d.benchmarks[0], d.topology_for(d.benchmarks[0]))[0]
    assert p.keystone.processes == 3
    assert {r.values["pod"]["replicas"]["api"] for r in keystone.releases(p)} == {3}
