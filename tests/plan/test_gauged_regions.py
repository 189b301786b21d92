"""Which regions a runner gauges: all of them in a small trial; at scale a fixed sample of each link
class, so that a runner's config and its gauge stay the size of the WAN's distinct links."""

from __future__ import annotations

import json

import yaml

from tests.plan.specs import benchmark
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.runner import (
    RTT_TARGETS_PER_CLASS,
    gauged_regions,
    network_requested,
    probe_targets,
)
from wanwide.core.plan.trial import TrialPlan, plan
from wanwide.providers.kubernetes.render.rally import config_document, targets


def _plan(topology: dict, backend: str = "galera") -> TrialPlan:
    doc = benchmark(backend, "uniform")
    doc["spec"]["topology"] = topology
    doc["spec"]["faults"] = {}
    doc["spec"]["workload"] = {"load": "high", "scenarios": [{"name": "authenticate_user_and_validate_token"}]}
    d = load_documents([yaml.safe_dump(doc)])
    b = d.benchmarks[0]
    return plan(b, d.topology_for(b))[0]


def test_a_small_trial_gauges_every_other_region():
    p = _plan({"generate": {"count": 9}, "network": {"default": {"rtt": "100ms"}}})
    for r in p.region_names:
        assert gauged_regions(p, r) == [x for x in p.region_names if x != r]
    assert probe_targets(p, "r1")[:2] == [("r2", "keystone"), ("r2", "database")]


def test_at_scale_each_runner_gauges_a_sample_of_each_class_and_together_they_cover_every_region():
    p = _plan({"generate": {"count": 500}, "network": {"default": {"rtt": "20ms"}}})
    seen: set[str] = set()
    for r in p.region_names:
        g = gauged_regions(p, r)
        assert len(g) == RTT_TARGETS_PER_CLASS and r not in g
        seen |= set(g)
    assert seen == set(p.region_names)
    # what the gauges compare with: exactly the gauged links, both ways
    req = {(x["src"], x["dst"]) for x in network_requested(p, "r7")}
    assert req == {q for g in gauged_regions(p, "r7") for q in (("r7", g), (g, "r7"))}


def test_two_level_wan_gauges_both_classes():
    p = _plan({"generate": {"count": 45, "groups": 5},
               "network": {"intraGroup": {"rtt": "10ms"}, "interGroup": {"rtt": "150ms"}}})
    group = {r.name: r.group for r in p.regions}
    g = gauged_regions(p, "r1")
    near = [x for x in g if group[x] == group["r1"]]
    far = [x for x in g if group[x] != group["r1"]]
    assert len(near) == RTT_TARGETS_PER_CLASS and len(far) == RTT_TARGETS_PER_CLASS
    assert len({group[x] for x in far}) == 4, "the far sample spreads over the other groups"


def test_a_runners_config_stays_small_at_500_regions():
    p = _plan({"generate": {"count": 500}, "network": {"default": {"rtt": "20ms"}}})
    cfg = config_document(p, "r250", start_at="2026-01-01T00:00:00Z", attempt=1, results=None, known=targets(p))
    assert len(json.dumps(cfg)) < 20_000
