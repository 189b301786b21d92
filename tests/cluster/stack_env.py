"""A Benchmark on real pods: what the real-node tier's end-to-end tests share (``tests/cluster/test_e2e_real.py``
on the real node, ``tests/cluster/test_chaos_vm.py`` on the VM nodes)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import yaml

from tests.cluster.operator_env import Operator, install_crds, install_rbac, s3_client
from tests.cluster.realnode_env import NODE, SCRIPT, env_exports, run

REPO = Path(__file__).resolve().parents[2]
TAINT = "wanwide.io/real-node"
BUCKET = "wanwide-real"
IMAGES = ("keystone", "dep-check", "mariadb", "memcached", "wanwide")
OPENSTACK_IMAGES = ("rabbitmq", "placement", "glance", "neutron", "nova")
"""Issue 45's control plane (hack/images.sh's ``openstack``): what a Nova Benchmark's pods run besides IMAGES."""


def image_ref(name: str) -> str:
    return run([REPO / "hack" / "images.sh", "ref", name]).stdout.strip()


def real_stack(realnode, tmp_path_factory, vm_nodes: tuple[str, ...] = (),
               images: tuple[str, ...] = IMAGES) -> Iterator[dict]:
    """Everything a Benchmark on real pods needs: the images (built, imported into the real node and into each
    of ``vm_nodes``), the real mariadb-operator, the keystone chart, a namespace with the operator's RBAC, the
    results bucket and its keys, and the operator (a host process, as the chart's ServiceAccount). Only real
    nodes take pods: the kwok nodes go and the real node's taint is lifted, while it lasts."""
    tc = realnode.tc
    run([REPO / "hack" / "images.sh", "build", *images], timeout=5400)
    run([REPO / "hack" / "images.sh", "import", *images, "--address", realnode.address], timeout=1800)
    for n in vm_nodes:
        run([SCRIPT, "vm-import", n, *(run([REPO / "hack" / "images.sh", "path", i]).stdout.strip() for i in images)],
            timeout=3600)
    run([REPO / "hack" / "mariadb-operator.sh", "install"], timeout=3600)
    chart = run([REPO / "hack" / "upstream-charts.sh", "path", "keystone"]).stdout.strip()
    # only the real node takes pods: the kwok nodes go and its taint is lifted, for this module
    kwok = [n["metadata"]["name"] for n in tc.kubectl_json("get", "nodes", "-l", "type=kwok")["items"]]
    tc.kubectl("delete", "nodes", "-l", "type=kwok", "--wait=true")
    tc.kubectl("taint", "node", NODE, f"{TAINT}-")
    ns = tc.namespace("real-bench")
    install_crds(tc)
    kubeconfig = install_rbac(tc, [ns])
    s3 = env_exports()["WANWIDE_REALNODE_S3_ENDPOINT"]
    client = s3_client(tc)
    if BUCKET not in [b["Name"] for b in client.list_buckets().get("Buckets", [])]:
        client.create_bucket(Bucket=BUCKET)
    tc.kubectl("create", "secret", "generic", "s3-keys", "-n", ns,
               f"--from-literal=AWS_ACCESS_KEY_ID={tc.s3['AWS_ACCESS_KEY_ID']}",
               f"--from-literal=AWS_SECRET_ACCESS_KEY={tc.s3['AWS_SECRET_ACCESS_KEY']}")
    log = tmp_path_factory.mktemp("operator-real") / "operator.log"
    op = Operator(tc, kubeconfig, [ns], log)
    op.extra_env["WANWIDE_PROBE_IMAGE"] = image_ref("wanwide")  # the preflight's netem probe: built here, imported
    op.start()
    try:
        yield {"tc": tc, "ns": ns, "chart": chart, "s3": s3, "op": op, "log": log}
    finally:
        try:
            forget_trials(tc, ns)
        except AssertionError as e:  # the rest of the teardown runs all the same
            print(f"could not delete the trial namespaces: {e}")
        op.stop()
        print(log.read_text()[-8000:])
        tc.kubectl("taint", "node", NODE, f"{TAINT}=true:NoSchedule", "--overwrite", check=False)
        if kwok:
            run([SCRIPT, "nodes", str(len(kwok))], check=False)
        # the real CRDs go with it; the next `testcluster.sh up` puts the kwok tier's stand-ins back
        run([REPO / "hack" / "mariadb-operator.sh", "uninstall"], timeout=600, check=False)


def forget_trials(tc, ns: str, timeout_s: float = 180) -> None:
    """The trial namespaces of ``ns``'s Benchmarks deleted while the operators that hold finalizers in them still run.
    A test that failed before deleting its Benchmark (``cleanup: Never``) left them in the test cluster's etcd, which
    outlives ``down``: the next ``up`` scheduled their Deployments onto the new nodes (stop 56 found a VM node running
    three earlier trials' Keystones beside its own)."""
    uids = [b["metadata"]["uid"] for b in tc.kubectl_json("get", "benchmarks", "-n", ns)["items"]]
    for uid in uids:
        tc.kubectl("delete", "namespace", "-l", f"wanwide.io/owner-uid={uid}", "--wait=false", check=False)
    t_end = time.monotonic() + timeout_s
    left: list[str] = []
    while time.monotonic() < t_end:
        left = [n["metadata"]["name"] for uid in uids
                for n in tc.kubectl_json("get", "namespaces", "-l", f"wanwide.io/owner-uid={uid}")["items"]]
        if not left:
            return
        time.sleep(3)
    print(f"trial namespaces still terminating after {timeout_s:.0f} s: {left}")


def benchmark(stack, name: str, backend: str) -> str:
    """Three regions at 0 ms, light load in r3, two Keystone scenarios, a handful of iterations."""
    topology = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Topology", "metadata": {"name": name},
                "spec": {"generate": {"count": 3}, "network": {"default": {"rtt": "0ms"}},
                         "placement": {"mode": "none"}}}
    ks, dep = image_ref("keystone"), image_ref("dep-check")
    bench = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": name}, "spec": {
        "topologyRef": name,
        "openstack": {"keystone": {
            "chartRepo": "", "chart": stack["chart"], "chartVersion": "2026.1.0",
            "cache": True,
            "images": {"keystoneApi": ks, "keystoneDbSync": ks, "keystoneDomainManage": ks,
                       "bootstrap": ks, "depCheck": dep, "memcached": image_ref("memcached")},
        }},
        # the exporters' images cannot be built here (the Go proxy refuses their modules)
        "monitoring": {"enabled": False},
        "database": {"backend": backend, "image": image_ref("mariadb")},
        "runner": {"image": image_ref("wanwide")},
        "workload": {"load": "light", "loadRegion": "r3", "startDelay": "2m", "scenarios": [
            {"name": "authenticate_user_and_validate_token", "times": 6, "concurrency": 2},
            {"name": "create_user_update_password", "times": 4, "concurrency": 2}]},
        "results": {"s3": {"endpoint": stack["s3"], "bucket": BUCKET, "prefix": "real",
                           "secretRef": {"name": "s3-keys"}}},
        "cleanup": "Never",  # the test looks at the pods, then deletes the Benchmark
        "timeouts": {"provisioning": "25m", "loading": "15m"},
    }}
    return yaml.safe_dump_all([topology, bench])


def wait_done(tc, ns: str, name: str, timeout: float) -> dict:
    end = time.time() + timeout
    while time.time() < end:
        b = tc.kubectl_json("get", "benchmark", name, "-n", ns)
        conds = {c["type"]: c["status"] for c in (b.get("status") or {}).get("conditions", [])}
        if "True" in (conds.get("Complete"), conds.get("Failed")):  # what kubectl wait --for=condition= sees
            return b
        time.sleep(5)
    raise AssertionError(f"{name} not done after {timeout:.0f} s: {b.get('status')}")
