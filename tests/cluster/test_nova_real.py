"""A Nova Benchmark from ``kubectl apply`` to ``Succeeded`` with real pods on the real node (issue 45 item 3).

Both shapes: stretched, one control plane in r1, and regions, one in every region (the mirrored openstack-helm
2026.1.0 ``rabbitmq``, ``placement``, ``glance``, ``neutron`` and ``nova`` charts, images built here from Debian and
PyPI); a fake compute in every region, Keystone per region, the central MariaDB through the real mariadb-operator;
Rally in r3 (stretched: a region the plane serves from afar, its catalog entries copied there by the runner) boots
and deletes servers as two tenants. The node has no netem (docs/real-e2e.md): the regions are 0 ms apart, so this
proves the deployment and the load, not a WAN effect (the lab and the VM tier show those).

Marked ``realnode`` only: ``hack/e2e-real.sh -k nova`` runs it (not the gate: its images take ~40 min cold).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.cluster.operator_env import openstack_chart, owned, s3_client
from tests.cluster.realnode_env import NODE
from tests.cluster.stack_env import (
    BUCKET,
    IMAGES,
    OPENSTACK_IMAGES,
    REPO,
    image_ref,
    real_stack,
    wait_done,
)

pytestmark = [pytest.mark.realnode]
NAME = "real-nova"


def name_of(shape: str) -> str:
    """A Benchmark per shape: a shape whose test failed before deleting its Benchmark leaves it (``cleanup:
    Never``); the next shape's under the same name would be that one updated, its finished trial read back."""
    return f"{NAME}-{shape}"
TIMES = 4


@pytest.fixture(scope="module")
def stack(realnode, tmp_path_factory):
    yield from real_stack(realnode, tmp_path_factory, images=IMAGES + OPENSTACK_IMAGES)


def _service_images(name: str, *keys: str) -> dict[str, str]:
    """The image overrides of one service chart: its own image for ``keys``, the keystone image for the Keystone
    registration Jobs and the chart's bootstrap, dep-check for the init containers."""
    ks = image_ref("keystone")
    return {**dict.fromkeys(keys, image_ref(name)), "bootstrap": ks, "ksUser": ks, "ksService": ks,
            "ksEndpoints": ks, "depCheck": image_ref("dep-check")}


def load_region(shape: str) -> str:
    return "r3"  # stretched: away from the control plane, whose catalog entries the runner copies under r3


def nova_benchmark(stack, shape: str = "stretched") -> str:
    tc = stack["tc"]
    ks, dep = image_ref("keystone"), image_ref("dep-check")
    name = name_of(shape)
    topology = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Topology", "metadata": {"name": name},
                "spec": {"generate": {"count": 3}, "network": {"default": {"rtt": "0ms"}},
                         "placement": {"mode": "none"}}}

    def chart(name: str) -> dict[str, str]:
        return {"chartRepo": "", "chart": str(openstack_chart(tc, name)), "chartVersion": "2026.1.0"}

    bench = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": name}, "spec": {
        "topologyRef": name,
        "openstack": {
            "shape": shape, **({"controlRegion": "r1"} if shape == "stretched" else {}),
            "keystone": {"chartRepo": "", "chart": stack["chart"], "chartVersion": "2026.1.0", "cache": True,
                         "images": {"keystoneApi": ks, "keystoneDbSync": ks, "keystoneDomainManage": ks,
                                    "bootstrap": ks, "depCheck": dep, "memcached": image_ref("memcached")}},
            "messaging": {**chart("rabbitmq"), "images": {"rabbitmq": image_ref("rabbitmq"),
                                                          "rabbitmqInit": image_ref("rabbitmq"), "depCheck": dep}},
            "placement": {**chart("placement"), "images": _service_images("placement", "placement",
                                                                          "placementDbSync")},
            "glance": {**chart("glance"), "images": _service_images("glance", "glanceApi", "glanceDbSync")},
            "neutron": {"enabled": True, **chart("neutron"),
                        "images": _service_images("neutron", "neutronServer", "neutronDbSync")},
            "nova": {"enabled": True, "computes": 1, **chart("nova"),
                     "images": _service_images("nova", "novaApi", "novaConductor", "novaScheduler", "novaCompute",
                                               "novaDbSync", "novaCellSetup")},
        },
        "monitoring": {"enabled": False},  # the exporters' images cannot be built here
        "database": {"backend": "mariadb", "image": image_ref("mariadb")},
        "runner": {"image": image_ref("wanwide")},
        # Rally in r3: stretched, across the WAN from the control plane (openstack-helm registered its services in
        # r1's catalog only; the runner copies them under r3, pipeline/runner/catalog.py)
        "workload": {"load": "light", "loadRegion": load_region(shape), "startDelay": "2m", "pollInterval": "500ms",
                     "scenarios": [{"name": "NovaServers.boot_and_delete_server", "times": TIMES, "concurrency": 2,
                                    "users": {"tenants": 2, "usersPerTenant": 1}}]},
        "results": {"s3": {"endpoint": stack["s3"], "bucket": BUCKET, "prefix": "real",
                           "secretRef": {"name": "s3-keys"}}},
        "cleanup": "Never",  # the test looks at the pods, then deletes the Benchmark
        "timeouts": {"provisioning": "40m", "loading": "20m"},
    }}
    return yaml.safe_dump_all([topology, bench])


DIAG = ("nova", "placement", "glance", "neutron", "rabbitmq", "keystone")


def keep_logs(tc, ns: str, name: str, out: Path) -> None:
    """Every pod's log of the trial's namespaces into ``out`` (a failed run's evidence outlives the teardown that
    deletes the namespaces): the scheduler says why no host was valid, the computes whether Placement took them."""
    shutil.rmtree(out, ignore_errors=True)  # an earlier run's logs are not this one's
    out.mkdir(parents=True)
    for n in owned(tc, "namespaces", ns, name):
        space = n["metadata"]["name"]
        for pod in tc.kubectl_json("get", "pods", "-n", space)["items"]:
            name = pod["metadata"]["name"]
            if not name.startswith(DIAG) and pod["metadata"].get("labels", {}).get("application") not in DIAG:
                continue
            for c in pod["spec"]["containers"]:
                r = tc.kubectl("logs", "-n", space, name, "-c", c["name"], "--tail=3000", check=False)
                (out / f"{space}.{name}.{c['name']}.log").write_text(r.stdout + r.stderr)
    print(f"the trial's pod logs: {out}")


@pytest.mark.parametrize("shape", ["stretched", "regions"])
def test_a_nova_benchmark_boots_servers_on_real_pods(stack, tmp_path, shape):
    tc, ns = stack["tc"], stack["ns"]
    tc.apply(nova_benchmark(stack, shape), ns)
    logs = Path(os.environ.get("WANWIDE_TEST_LOGS", REPO / ".testlogs")) / f"nova-real-{shape}"
    try:
        _check(stack, tmp_path, shape)
    except BaseException:
        keep_logs(tc, ns, name_of(shape), logs)
        raise


def _check(stack, tmp_path, shape):
    tc, ns = stack["tc"], stack["ns"]
    name = name_of(shape)
    b = wait_done(tc, ns, name, 5400)
    trials = {t["metadata"]["name"]: t.get("status") or {} for t in tc.kubectl_json("get", "trials", "-n", ns)["items"]}
    assert b["status"]["phase"] == "Succeeded", json.dumps(trials, indent=1)[-6000:]
    spaces = sorted(n["metadata"]["name"] for n in owned(tc, "namespaces", ns, name))
    r1 = next(s for s in spaces if s.endswith("-r1"))
    # every pod ran on the real node and none is stuck (an image missing, a crash loop)
    for space in spaces:
        for pod in tc.kubectl_json("get", "pods", "-n", space)["items"]:
            assert pod["status"]["phase"] in ("Running", "Succeeded"), (space, pod["metadata"]["name"], pod["status"])
            assert pod["spec"]["nodeName"] == NODE
    # the control plane in r1 (stretched) or in every region (regions), a fake compute in every region
    planes = [r1] if shape == "stretched" else [s for s in spaces if s[-3:] in ("-r1", "-r2", "-r3")]
    for plane in planes:
        for app in ("nova", "placement", "glance", "neutron"):
            assert tc.kubectl_json("get", "pods", "-n", plane, "-l", f"application={app}")["items"], (app, plane)
    computes = [s for s in spaces for p in tc.kubectl_json("get", "pods", "-n", s, "-l", "application=nova,component=compute-ironic")["items"]
                if p["status"]["phase"] == "Running"]
    assert len(computes) == 3, (computes, spaces)
    # the bundle: every iteration booted and deleted a server, two tenants from the runner's one public image
    t = next(iter(trials.values()))
    uri = t["resultsURI"]
    keys = [o["Key"] for o in s3_client(tc).list_objects_v2(Bucket=BUCKET, Prefix=uri.split("/", 3)[3])
            .get("Contents", [])]
    (manifest,) = [k for k in keys if k.endswith("/manifest.json")]
    man = json.loads(s3_client(tc).get_object(Bucket=BUCKET, Key=manifest)["Body"].read())
    assert man["status"]["result"] == "succeeded" and man["status"]["reason"] == "Completed", man["status"]
    assert (man["rally"]["iterations"], man["rally"]["failed_iterations"]) == (TIMES, 0), man["rally"]
    assert list(man["rally"]["images"]) == [f"wanwide-tiny-{load_region(shape)}"], man["rally"]
    assert man["rally"]["errors"] == [], man["rally"]
    # stretched: the plane's 4 services × 3 interfaces registered under r3 by the runner; regions: r3's own plane
    if shape == "stretched":
        added = sorted((a["type"], a["interface"]) for a in man["rally"]["catalog_added"])
        assert added == sorted((t, i) for t in ("compute", "placement", "image", "network")
                               for i in ("admin", "internal", "public")), man["rally"]
    else:
        assert man["rally"]["catalog_added"] is None, man["rally"]  # r3's own plane: nothing to copy
    assert man["rally"]["openstack_options"]["nova_server_boot_poll_interval"] == 0.5, man["rally"]
    # the report reads it back from S3 and shows Nova's own atomic actions
    env = {**tc.env, "S3_ENDPOINT": stack["s3"], "AWS_ACCESS_KEY_ID": tc.s3["AWS_ACCESS_KEY_ID"],
           "AWS_SECRET_ACCESS_KEY": tc.s3["AWS_SECRET_ACCESS_KEY"]}
    rep = subprocess.run([str(REPO / ".venv" / "bin" / "wanwide"), "report", "--no-progress", "-o", str(tmp_path),
                          uri], capture_output=True, text=True, env=env, timeout=600)
    assert rep.returncode == 0, rep.stderr[-3000:]
    summary = (tmp_path / "summary.csv").read_text()
    for action in ("nova.boot_server", "nova.delete_server"):
        assert action in summary, summary[:2000]
    # deleting the Benchmark removes every namespace and pod
    tc.kubectl("delete", "benchmark", name, "-n", ns, "--timeout=600s")
    end = time.time() + 600
    while owned(tc, "namespaces", ns, name):
        assert time.time() < end, "namespaces not gone"
        time.sleep(3)
    assert tc.kubectl_json("get", "pods", "-A", "-l", f"wanwide.io/benchmark={name}")["items"] == []
