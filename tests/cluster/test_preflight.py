"""The operator's preflight (a Benchmark's first phase) against the kwok test cluster and its stand-ins
(hack/testcluster/standins.yaml): a Benchmark whose placement no node satisfies and whose Galera members
have no storage is held, no trial started and nothing created, its condition naming each failure and its
fix; fixed, the netem probe runs on the region nodes and the trial starts; left failing, the Benchmark
fails after timeouts.preflight. On the real node, where netem is missing, see test_e2e_real.py."""

from __future__ import annotations

import time

import pytest
import yaml

from tests.cluster.operator_env import owned, three_regions

pytestmark = pytest.mark.cluster
LABEL = "wanwide.test/preflight"
STORAGE = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: wanwide-preflight-test
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: example.com/none
"""


def bench(tc, ns: str, name: str) -> dict:
    tc.apply(three_regions(tc, name, {"mode": "regionLabel", "label": LABEL}, database={"backend": "galera"}), ns)
    return wait_bench(tc, ns, name, lambda s: cond(s, "Preflight").get("status") == "False", 120, "held")


def cond(status: dict, ctype: str) -> dict:
    return next((c for c in status.get("conditions") or [] if c["type"] == ctype), {})


def wait_bench(tc, ns: str, name: str, pred, timeout: float, what: str) -> dict:
    deadline, b = time.time() + timeout, {}
    while time.time() < deadline:
        b = tc.kubectl_json("get", "benchmark", name, "-n", ns)
        if pred(b.get("status") or {}):
            return b
        time.sleep(1)
    raise AssertionError(f"{name}: not {what} after {timeout:.0f} s: {b.get('status')}")


def trial_phases(tc, ns: str, name: str) -> list[str]:
    return [(t.get("status") or {}).get("phase") or "Pending"
            for t in tc.kubectl_json("get", "trials", "-n", ns, "-l", f"wanwide.io/benchmark={name}")["items"]]


def test_held_until_the_cluster_is_ready_then_the_netem_probe_runs_and_the_trial_starts(env):
    tc, ns = env["tc"], env["ns"]
    name = "held"
    nodes = [f"kwok-r{i}" for i in (1, 2, 3)]
    b = bench(tc, ns, name)
    msg = cond(b["status"], "Preflight")["message"]
    assert "2 of" in msg and "no trial starts until they pass" in msg, msg
    assert f"kubectl label node NODE {LABEL}=r1" in msg, msg  # the placement: the label and the fix
    assert "storage for Galera" in msg and "StorageClass default" in msg, msg
    lines = {c["what"]: c["state"] for c in b["status"]["preflight"]["checks"]}
    assert lines["nodes for the placement"] == "FAIL" and lines["mariadb-operator"] == "ok", lines
    assert lines["chaos-daemon on every region node"] == "ok", lines  # the stand-in DaemonSet
    assert b["status"]["phase"] == "Pending" and set(trial_phases(tc, ns, name)) == {"Pending"}
    assert not owned(tc, "namespaces", ns, name)  # nothing created for a held Benchmark
    said = tc.kubectl_json("get", "events", "-n", ns, "--field-selector",
                           f"involvedObject.name={name},involvedObject.kind=Benchmark")["items"]
    assert "PreflightFailed" in {e["reason"] for e in said}, [e["reason"] for e in said]
    try:
        for i, node in enumerate(nodes):
            tc.kubectl("label", "node", node, f"{LABEL}=r{i + 1}", "--overwrite")
        tc.apply(STORAGE)
        t0 = time.time()
        b = wait_bench(tc, ns, name, lambda s: cond(s, "Preflight").get("status") == "True", 240, "passed")
        print(f"passed {time.time() - t0:.0f} s after the fix")
        c = cond(b["status"], "Preflight")
        assert c["reason"] == "Passed" and c["observedGeneration"] == b["metadata"]["generation"], c
        lines = {x["what"]: x for x in b["status"]["preflight"]["checks"]}
        assert lines["netem on every region node"]["detail"] == "a netem qdisc added in a pod on 3 node(s)", lines
        assert all(x["state"] == "ok" for x in lines.values()), lines
        wait_bench(tc, ns, name, lambda s: s.get("phase") == "Running", 60, "running")
        assert set(trial_phases(tc, ns, name)) - {"Pending"}, "the trial did not start"
        probes = [n for n in owned(tc, "namespaces", ns, name) if n["metadata"]["name"].endswith("-preflight")]
        assert all(n["metadata"].get("deletionTimestamp") for n in probes), probes  # the probe namespace goes
    finally:
        tc.kubectl("delete", "benchmark", name, "-n", ns, "--timeout=180s", check=False)
        tc.kubectl("delete", "storageclass", "wanwide-preflight-test", "--ignore-not-found", check=False)
        for node in nodes:
            tc.kubectl("label", "node", node, f"{LABEL}-", check=False)
    assert not owned(tc, "namespaces", ns, name)


def test_failing_past_timeouts_preflight_fails_the_benchmark_naming_the_label(env):
    tc, ns = env["tc"], env["ns"]
    name = "never-ready"
    doc = yaml.safe_load(three_regions(tc, name, {"mode": "regionLabel", "label": LABEL}))
    doc["spec"]["timeouts"]["preflight"] = "20s"
    t0 = time.time()
    tc.apply(yaml.safe_dump(doc), ns)
    b = wait_bench(tc, ns, name, lambda s: s.get("phase") == "Failed", 180, "failed")
    took = time.time() - t0
    failed = cond(b["status"], "Failed")
    assert failed["status"] == "True" and failed["reason"] == "PreflightFailed", failed
    assert "gave up after timeouts.preflight (20s)" in failed["message"], failed["message"]
    assert f"kubectl label node NODE {LABEL}=r1" in failed["message"], failed["message"]
    assert cond(b["status"], "Complete")["status"] == "False"
    assert set(trial_phases(tc, ns, name)) == {"Pending"} and not owned(tc, "namespaces", ns, name)
    deadline, said = time.time() + 20, {}
    while time.time() < deadline and "Failed" not in said:  # kopf posts events after the status write
        said = {e["reason"]: e["message"] for e in tc.kubectl_json("get", "events", "-n", ns, "--field-selector",
                f"involvedObject.name={name},involvedObject.kind=Benchmark")["items"]}
        time.sleep(1)
    assert said.get("Failed", "").startswith("no trial started: gave up after timeouts.preflight"), said
    print(f"failed {took:.0f} s after it was applied")
    t1 = time.time()
    tc.kubectl("delete", "benchmark", name, "-n", ns, "--timeout=60s")
    assert time.time() - t1 < 30
