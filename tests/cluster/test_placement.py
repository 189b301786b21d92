"""spec.placement on a real API server and scheduler (kwok nodes kwok-r1…): regions mapped onto named
nodes run there; a placement no node satisfies (its preflight skipped) fails the trial within minutes, naming
the label."""

from __future__ import annotations

import time

import pytest
import yaml

from tests.cluster.operator_env import three_regions
from tests.cluster.test_operator import wait_phase
from wanwide.core.plan import names

pytestmark = pytest.mark.cluster


def _bench(tc, name: str, placement: dict) -> str:
    doc = yaml.safe_load(three_regions(tc, name, placement))
    # two trials deploy at once, three regions on two kwok nodes: once seen past the example's 4 minutes
    doc["spec"]["timeouts"]["provisioning"] = "8m"
    return yaml.safe_dump(doc)


def test_regions_on_named_nodes_and_a_placement_no_node_satisfies(env):
    tc, ns = env["tc"], env["ns"]
    nodes = sorted(n.split("/", 1)[1] for n in tc.kubectl("get", "nodes", "-o", "name", "-l", "type=kwok").stdout.split())
    assert len(nodes) >= 2, nodes
    tc.apply(_bench(tc, "on-nodes", {"mode": "nodes", "nodes": nodes[:2]}), ns)
    # the preflight would hold it (tests/cluster/test_preflight.py): skipped, the scheduler's refusal is seen
    nowhere = yaml.safe_load(_bench(tc, "nowhere", {"mode": "regionLabel", "label": "wanwide.test/site"}))
    nowhere["spec"]["preflight"] = {"mode": "Skip"}
    tc.apply(yaml.safe_dump(nowhere), ns)

    t0 = time.time()
    failed = wait_phase(tc, ns, "nowhere", ("Succeeded", "Failed"), 360)
    took = time.time() - t0
    trial = tc.kubectl_json("get", "trial", "nowhere-t000", "-n", ns)["status"]
    assert failed["status"]["phase"] == "Failed" and trial["reason"] == "Unschedulable", trial
    assert "wanwide.test/site=r" in trial["message"] and "spec.placement" in trial["message"], trial["message"]
    assert "kubectl label node NODE wanwide.test/site=r" in trial["message"]
    assert "didn't match Pod's node affinity/selector" in trial["message"], trial["message"]
    print(f"failed as Unschedulable {took:.0f} s after it was applied")
    assert took < 300, took  # "within minutes": the minute's grace, then the clean-up

    ok = wait_phase(tc, ns, "on-nodes", ("Succeeded", "Failed"), 720)
    assert ok["status"]["phase"] == "Succeeded", ok["status"]
    want = {names.namespace(ns, "on-nodes", 0, f"r{i + 1}"): nodes[:2][i % 2] for i in range(3)}
    placed = [(where, p["metadata"]["name"], p["spec"].get("nodeName")) for where in want
              for p in tc.kubectl_json("get", "pods", "-n", where)["items"]]
    assert placed, "no pod in the trial's region namespaces"
    wrong = [(where, pod, node) for where, pod, node in placed if node != want[where]]
    assert not wrong, (wrong, want)
