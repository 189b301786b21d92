"""`wanwide lab run` of a 3-region Benchmark with Nova (issue 45 item 3): OpenStack's compute control plane as real
processes in the region namespaces (RabbitMQ from Debian; Placement, Glance, Neutron's server and Nova from PyPI;
nova's fake virt driver for the computes) beside the lab's Keystones and MariaDB, and Rally's
``NovaServers.boot_and_delete_server`` run from the far region to completion.

Shape ``stretched``: one control plane in r1, a fake compute in every region reaching r1's bus, conductor and
Placement across the shaped links, Rally in r3. Shape ``regions``: every region its own RabbitMQ, Placement, Glance,
Neutron, Nova and MariaDB, identity shared through the trial's database. Long (≈ 15 min a shape here): run it
alone, under ``flock /var/tmp/ww-cluster.lock``.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from wanwide.providers.lab import paths

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.extended]  # 12-15 min each: not in CI's 90
WANWIDE = str(Path(sys.executable).with_name("wanwide"))
QUICK_GATE = ["--quiet-settle", "5", "--quiet-max-wait", "120"]
TIMES = 4


def _spec(tmp: Path, shape: str) -> Path:
    doc = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": f"nova-{shape}"},
           "spec": {"topology": {"generate": {"count": 3}, "network": {"default": {"rtt": "20ms"}}},
                    "openstack": {"shape": shape, **({"controlRegion": "r1"} if shape == "stretched" else {}),
                                  "nova": {"enabled": True, "computes": 1}, "neutron": {"enabled": True}},
                    "workload": {"load": "light", "loadRegion": "r3", "startDelay": "3s", "warmup": {"times": 1},
                                 "scenarios": [{"name": "NovaServers.boot_and_delete_server", "times": TIMES,
                                                "concurrency": 2, "users": {"tenants": 2, "usersPerTenant": 1}}]},
                    "timeouts": {"provisioning": "40m", "loading": "20m"}}}
    f = tmp / f"nova-{shape}.yaml"
    f.write_text(yaml.safe_dump(doc))
    return f


@pytest.mark.parametrize("shape", ["stretched", "regions"])
def test_nova_benchmark_boots_and_deletes_servers(tmp_path, lab_state_dir, shape):
    missing = paths.missing() + paths.missing_openstack()
    if missing:
        pytest.skip(f"not installed (hack/install-lab.sh --openstack): {', '.join(missing)}")
    out = tmp_path / "out"
    env = dict(os.environ, WANWIDE_LAB_WORK=str(Path("/var/tmp") / f"wanwide-test-{os.getpid()}"))
    p = subprocess.run([WANWIDE, "lab", "run", "-f", str(_spec(tmp_path, shape)), "-o", str(out), *QUICK_GATE],
                       capture_output=True, text=True, timeout=3600, env=env)
    assert p.returncode == 0, p.stdout[-6000:] + p.stderr[-3000:]
    # the control plane(s) came up stage by stage, as the plan says
    planes = ["r1"] if shape == "stretched" else ["r1", "r2", "r3"]
    for r in planes:
        for line in (f"rabbitmq {r} up", f"placement {r} up", f"glance {r} up", f"neutron {r} up", f"nova {r} up",
                     f"{3 if shape == 'stretched' else 1} fake compute(s) of {r} up and mapped"):
            assert line in p.stdout, (line, p.stdout[-6000:])
    (record,) = json.loads((out / "trials.json").read_text())
    assert record["result"] == "succeeded", record
    (mf,) = list((out / "bundles" / f"nova-{shape}" / "t000" / "r3").glob("attempt-1-*/manifest.json"))
    m = json.loads(mf.read_text())
    assert m["status"]["result"] == "succeeded"
    # two tenants boot from one public image the runner made in r3's Glance (Rally's per-tenant copies, one name,
    # were ambiguous: no iteration ran)
    assert list(m["rally"]["images"]) == ["wanwide-tiny-r3"] and m["rally"]["errors"] == [], m["rally"]
    # stretched: the runner in r3 checked r3's catalog for r1's plane and found the lab had registered it there
    assert m["rally"]["catalog_added"] == ([] if shape == "stretched" else None), m["rally"]
    assert m["versions"]["nova"] == "34.0.0" and m["versions"]["openstack.placement"] == "16.0.0"
    assert m["versions"]["glance"] == "33.0.0" and m["versions"]["neutron"] == "29.0.0"
    # every region's fake compute registered with r1's Nova (reported up), and what each region's processes take
    cloud = m["deployment"]["openstack"]
    assert cloud["computes"] == {"r1": ["r1-c001"], "r2": ["r2-c001"], "r3": ["r3-c001"]}, cloud
    apis = {tuple(k.split()): a["region"] for k, a in cloud["apis"].items()}  # (service, plane) → its region
    assert apis == {(s, pl): pl for s in ("nova", "placement", "glance", "neutron") for pl in planes}, apis
    mem = cloud["memory"]
    assert set(mem) == {"r1", "r2", "r3"} and all(m["rss_mib"] >= m["pss_mib"] > 0 for m in mem.values()), mem
    if shape == "stretched":  # the control plane's region holds it; the others a Keystone and a compute
        assert mem["r1"]["rss_mib"] > mem["r2"]["rss_mib"] and mem["r1"]["processes"] > mem["r3"]["processes"], mem
    else:  # every region its own control plane: none of them is a Keystone and a compute alone
        assert min(m["processes"] for m in mem.values()) > max(m["processes"] for m in mem.values()) // 2, mem
    # the load: every iteration booted and deleted a server, each service's own timings recorded
    rows = list(csv.DictReader((out / "report" / "summary.csv").open()))
    by_action = {r["action"]: r for r in rows}
    for action in ("nova.boot_server", "nova.delete_server", "Total"):
        assert action in by_action, sorted(by_action)
        assert int(float(by_action[action]["count"])) == TIMES and float(by_action[action]["failure_rate"]) == 0.0
