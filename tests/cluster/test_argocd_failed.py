"""A Benchmark whose trial fails is Degraded for Argo CD's health check, and Progressing before.

The other states (running, succeeded, invalid) are judged inside tests/cluster/test_operator*.py
on the objects those tests already read back.
"""

from __future__ import annotations

import json
import time

import pytest
import yaml

from tests.argocd import argocd, healths
from tests.cluster.operator_env import example

pytestmark = pytest.mark.cluster


def test_failed_benchmark_is_degraded(env):
    tc, ns = env["tc"], env["ns"]
    argocd("cli")  # built once (~10 min on a cold machine): before the clock below starts, not inside it
    topo, bench = yaml.safe_load_all(example(tc, "uniform-9.yaml", cleanup="Never"))
    topo["metadata"]["name"] = bench["spec"]["topologyRef"] = "argo-2"
    topo["spec"]["generate"]["count"] = 2
    bench["metadata"]["name"] = "argo-fails"
    bench["spec"]["timeouts"]["provisioning"] = "2s"  # too short for anyone: the trial fails at once
    tc.apply(yaml.safe_dump_all([topo, bench]), ns)
    seen: dict[str, tuple[str, str]] = {}  # trial phase -> Argo CD's health of the trial then
    deadline = time.time() + 300
    while True:
        b = tc.kubectl_json("get", "benchmark", "argo-fails", "-n", ns)
        p = tc.kubectl("get", "trial", "argo-fails-t000", "-n", ns, "-o", "json", check=False)
        t = json.loads(p.stdout) if p.returncode == 0 else None  # the operator has not made it yet
        (b_health, b_msg), *trial_health = healths([b, t] if t else [b])
        if t:
            t_health = trial_health[0]
            seen.setdefault((t.get("status") or {}).get("phase") or "Pending", t_health)
        if (b.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            break
        assert b_health == "Progressing", (b_health, b_msg)
        assert time.time() < deadline, f"not done: {b.get('status')}"
        time.sleep(1)
    assert b["status"]["phase"] == "Failed" and t is not None, b["status"]
    assert (b_health, b_msg) == ("Degraded", "phase Failed, trials 1/1 (1 failed)")
    assert t_health[0] == "Degraded" and t_health[1].startswith(t["status"]["reason"] + ": "), t_health
    assert t["status"]["reason"] == "ProvisioningTimeout" and "Failed" in seen, (t["status"], seen)
    assert {ph: h[0] for ph, h in seen.items() if ph != "Failed"} == dict.fromkeys(set(seen) - {"Failed"}, "Progressing")
    tc.kubectl("delete", "benchmark", "argo-fails", "-n", ns, "--timeout=300s")
    tc.kubectl("delete", "topology", "argo-2", "-n", ns)
