"""A partitioned Galera member in the lab: the bundle records what every member did through the
window, and the cut member comes back without any member restarting (real MariaDB/Galera in three
network namespaces, the cut made on the lab's links)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.lab, pytest.mark.slow]
WANWIDE = str(Path(sys.executable).with_name("wanwide"))
REJOIN_BOUND_S = 120  # core/plan/services.py REJOIN_MARGIN_S: what the operator's probes are sized for


def test_a_cut_member_leaves_and_rejoins_the_cluster_recorded_in_the_bundle(tmp_path, lab_state_dir):
    docs = [
        {"apiVersion": "wanwide.io/v1alpha1", "kind": "Topology", "metadata": {"name": "ci-cut"},
         "spec": {"generate": {"count": 3}, "network": {"default": {"rtt": "0ms"}}}},
        {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": "ci-cut"},
         "spec": {"topologyRef": "ci-cut", "database": {"backend": "galera"},
                  "openstack": {"keystone": {"replicas": 2}},  # two gunicorn workers per region
                  "workload": {"load": "light", "loadRegion": "r1", "startDelay": "3s", "warmup": {"times": 0},
                               "scenarios": [{"name": "authenticate_user_and_validate_token", "times": 60,
                                              "concurrency": 1}]},
                  "faults": {"partitions": [{"regions": ["r2"], "start": "10s", "duration": "25s"}]},
                  "timeouts": {"loading": "10m"}}},
    ]
    f = tmp_path / "cut.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    out = tmp_path / "out"
    env = dict(os.environ, WANWIDE_LAB_WORK=str(Path("/var/tmp") / f"wanwide-test-cut-{os.getpid()}"))
    p = subprocess.run([WANWIDE, "lab", "run", "-f", str(f), "-o", str(out), "--no-report",
                        "--quiet-settle", "5", "--quiet-max-wait", "60"],
                       capture_output=True, text=True, timeout=1500, env=env)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-3000:]
    assert all(f"keystone {r} up, 2 process(es)" in p.stdout for r in ("r1", "r2", "r3")), p.stdout[:3000]
    (bundle,) = list((out / "bundles" / "ci-cut" / "t000" / "r1").glob("attempt-1-*"))
    doc = json.loads((bundle / "members.json").read_text())
    print(json.dumps({k: doc[k] for k in ("runs", "restarts", "windows")}, indent=1))
    assert [m["region"] for m in doc["members"]] == ["r1", "r2", "r3"] and doc["cluster_size"] == 3
    (w,) = doc["windows"]
    assert (w["name"], w["start_s"], w["end_s"]) == ("partition0", 10, 35)
    # the two others kept a primary component through the cut; the load region could not reach r2
    for r in ("r1", "r3"):
        assert w["members"][r]["states_s"] and all(s.startswith("Primary/Synced/") for s in w["members"][r]["states_s"])
    assert w["members"]["r2"]["states_s"].get("unreachable", 0) >= 15, w["members"]["r2"]
    # whole again (every member Primary, Synced, in a cluster of 3) within the bound, no member restarted
    assert w["healed_after_s"] is not None and w["healed_after_s"] <= REJOIN_BOUND_S, w
    assert doc["restarts"] == {"r1": [], "r2": [], "r3": []}
    # r2 left the cluster and came back: the survivors saw a cluster of 2, r2 itself answered non-Primary
    # once the link was back and before it had rejoined
    assert any(label == "Primary/Synced/2" for _, _, label in doc["runs"]["r1"]), doc["runs"]["r1"]
    assert [label for _, _, label in doc["runs"]["r2"]][-1] == "Primary/Synced/3", doc["runs"]["r2"]
    manifest = json.loads((bundle / "manifest.json").read_text())
    (mw,) = manifest["database"]["members"]["windows"]
    assert mw["unreachable"] == ["r2"] and mw["restarted"] == [] and mw["healed_after_s"] == w["healed_after_s"]
    runner_logs = "".join(x.read_text(errors="replace") for x in out.rglob("runner-r1.log"))
    assert "members: partition0#0 [10s, 35s): non-Primary none, unreachable ['r2'], restarted none; every member " \
        "answering" in runner_logs, \
        runner_logs[-3000:]
