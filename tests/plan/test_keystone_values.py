"""Chart values the operator gives the openstack-helm keystone chart, per region."""

from __future__ import annotations

import yaml

from tests.plan.specs import benchmark
from wanwide.plan.load import load_documents
from wanwide.plan.trial import plan
from wanwide.render import keystone


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
