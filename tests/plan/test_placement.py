"""Placement: where each region's pods go in each mode, what a replicated database spreads over, and a pod
nobody can schedule failing the trial in a minute with what it needs."""

from __future__ import annotations

import datetime as dt

import yaml

from tests.plan.specs import benchmark
from wanwide.core import lifecycle as lc
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan
from wanwide.providers.kubernetes.controller import phases
from wanwide.providers.kubernetes.kube import readiness
from wanwide.providers.kubernetes.render import render_trial

NOW = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)


def _plan(placement: dict | None, backend: str = "galera", regions: list | None = None):
    doc = benchmark(backend, "uniform", faults={})
    topo = doc["spec"]["topology"]
    if regions is not None:
        topo.pop("generate")
        topo["regions"] = regions
    if placement is not None:
        topo["placement"] = placement
    d = load_documents([yaml.safe_dump(doc)])
    return plan(d.benchmarks[0], d.topology_for(d.benchmarks[0]))[0]


def _selectors(p) -> dict[str, dict]:
    return {r: p.node_selector(r) for r in p.region_names}


def test_by_default_pods_go_anywhere_and_galera_spreads_over_nodes():
    p = _plan(None)
    assert _selectors(p) == {"r1": None, "r2": None, "r3": None}
    assert p.spread_key == "kubernetes.io/hostname"
    galera = next(o for o in render_trial(p).base if o["kind"] == "MariaDB")
    assert galera["spec"]["topologySpreadConstraints"][0]["topologyKey"] == "kubernetes.io/hostname"


def test_region_label_pins_each_region_by_the_projects_label_or_the_users():
    p = _plan({"mode": "regionLabel"})
    assert _selectors(p) == {r: {"wanwide.io/region": r} for r in ("r1", "r2", "r3")}
    assert p.spread_key == "wanwide.io/region"
    p = _plan({"mode": "regionLabel", "label": "example.org/site"})
    assert _selectors(p)["r2"] == {"example.org/site": "r2"} and p.spread_key == "example.org/site"


def test_nodes_maps_regions_onto_named_nodes_in_turn_and_a_regions_own_selector_wins():
    regions = [{"name": "a"}, {"name": "b"}, {"name": "c", "nodeSelector": {"pool": "edge"}}, {"name": "d"}]
    p = _plan({"mode": "nodes", "nodes": ["n1", "n2"]}, regions=regions)
    assert _selectors(p) == {"a": {"kubernetes.io/hostname": "n1"}, "b": {"kubernetes.io/hostname": "n2"},
                             "c": {"pool": "edge"}, "d": {"kubernetes.io/hostname": "n2"}}
    assert p.spread_key == "kubernetes.io/hostname"


def _pod(name: str, refused_at: str | None, selector: dict | None = None, message: str = "0/3 nodes are available"):
    conds = [] if refused_at is None else [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                            "message": message, "lastTransitionTime": refused_at}]
    return {"metadata": {"namespace": "ns", "name": name, "creationTimestamp": "2026-11-26T11:00:00Z"},
            "spec": {"nodeSelector": selector or {}}, "status": {"phase": "Pending", "conditions": conds}}


def test_the_pod_refused_longest_is_the_one_reported():
    pods = [_pod("waiting", None), _pod("new", "2026-11-26T11:59:50Z"),
            _pod("old", "2026-11-26T11:59:00Z", {"wanwide.io/region": "r7"})]
    assert readiness.unschedulable(pods, NOW) == ("ns/old", 60.0, "0/3 nodes are available", {"wanwide.io/region": "r7"})
    assert readiness.unschedulable([_pod("waiting", None)], NOW) is None


def test_an_unschedulable_pod_waits_a_minute_then_fails_the_trial_naming_the_label():
    p = _plan({"mode": "regionLabel"})
    status = {"phase": "Provisioning", "phaseStartTime": "2026-11-26T11:58:00Z"}
    said = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    u = phases.unplaced("t-r7/keystone-api-0", 20.0, said, {"wanwide.io/region": "r7"})
    step = lc.decide(p, status, lc.Seen(unplaced=u), NOW)
    assert step.phase is None and step.wake_s is not None and step.wake_s <= 40.0
    late = phases.unplaced("t-r7/keystone-api-0", 61.0, said, {"wanwide.io/region": "r7"})
    step = lc.decide(p, status, lc.Seen(unplaced=late), NOW)
    assert (step.phase, step.reason) == ("CleaningUp", "Unschedulable")
    for words in ("t-r7/keystone-api-0", "wanwide.io/region=r7", "kubectl label node NODE wanwide.io/region=r7",
                  "spec.placement", "didn't match Pod's node affinity/selector"):
        assert words in step.message, (words, step.message)
    # a node under disk pressure (the kubelet taints it): the message names the taint, not the label
    taint = phases.unplaced("t-r7/keystone-api-0", 61.0, "0/1 nodes are available: 1 node(s) had untolerated taint(s).",
                            {"kubernetes.io/os": "linux"})
    msg = lc.decide(p, status, lc.Seen(unplaced=taint), NOW).message
    assert "taint" in msg and "disk-pressure" in msg and "kubectl label" not in msg, msg
    # cleaning up: a pod still pending does not matter any more
    step = lc.decide(p, {"phase": "CleaningUp", "phaseStartTime": "2026-11-26T11:59:00Z", "outcome": "Failed"},
                     lc.Seen(unplaced=late, cleaned=lc.Progress(done=True)), NOW)
    assert step.reason != "Unschedulable"
