"""The test cluster's real node: ``hack/testcluster.sh up --real-node``.

Next to the kwok nodes, ``real-1`` is a real kubelet (v1.34.4) with containerd + runc
+ CNI bridge from Debian, kube-proxy in iptables mode and CoreDNS behind the kube-dns
Service. These tests check what a user checks: a pod runs and logs, ``kubectl exec``
works, a Service's ClusterIP reaches a pod from another pod and from the host, names
resolve inside pods, a Job completes, and ``down`` (even after a crash) leaves no
process, mount, network namespace, bridge, veth or iptables chain behind.

Marked ``realnode`` only (not ``cluster``): run with ``pytest -m realnode``.
``WANWIDE_REALNODE=skip`` skips them. See docs/testcluster.md, "Real node".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.cluster.realnode_env import NODE, SCRIPT, run, wait_for

BRIDGE = "wanwide-br0"
CNI_NET = "wanwide-realnode"
POD_NET = "10.245.0."

pytestmark = [pytest.mark.realnode]


@pytest.fixture
def ns(realnode):
    name = realnode.tc.namespace("real")
    yield name
    realnode.tc.kubectl("delete", "namespace", name, "--wait=false", check=False)


# ---------------------------------------------------------------- the node


def test_real_node_registered_ready_and_left_alone_by_kwok(realnode):
    tc = realnode.tc
    node = tc.kubectl_json("get", "node", NODE)
    meta, status = node["metadata"], node["status"]
    assert "kwok.x-k8s.io/node" not in meta.get("annotations", {})  # kwok does not manage it
    assert meta["labels"]["wanwide.io/real-node"] == "true"
    assert meta["labels"]["kubernetes.io/os"] == "linux"
    assert {"key": "wanwide.io/real-node", "value": "true", "effect": "NoSchedule"} in \
        node["spec"]["taints"]
    assert node["spec"]["podCIDR"] == "10.245.0.0/24"
    ready = [c for c in status["conditions"] if c["type"] == "Ready"][0]
    assert ready["status"] == "True" and ready["reason"] == "KubeletReady"
    info = status["nodeInfo"]
    assert info["kubeletVersion"] == "v1.34.4"
    assert info["containerRuntimeVersion"].startswith("containerd://1.")
    assert {"type": "InternalIP", "address": "10.245.0.1"} in status["addresses"]
    # the kubelet's own heartbeat, not kwok's
    lease = wait_for(lambda: tc.kubectl("get", "lease", "-n", "kube-node-lease", NODE, "-o", "json",
                                     check=False).stdout, 30, "the kubelet's Lease")
    assert json.loads(lease)["spec"]["holderIdentity"] == NODE
    # the kwok nodes are still there, untouched
    kwok = tc.kubectl_json("get", "nodes", "-l", "type=kwok")["items"]
    assert kwok and all(n["status"]["nodeInfo"]["kubeletVersion"] == "fake" for n in kwok)


def test_status_lists_the_real_node_components(realnode):
    out = run([SCRIPT, "status"]).stdout
    for c in ("containerd", "kubelet", "kube-proxy", "coredns"):
        line = next((ln for ln in out.splitlines() if ln.split()[:1] == [c]), "")
        assert "running" in line, out


def test_up_again_is_idempotent(realnode):
    pids = {c: (realnode.state / "run" / f"{c}.pid").read_text().strip()
            for c in ("containerd", "kubelet", "kube-proxy", "coredns")}
    t0 = time.monotonic()
    run([SCRIPT, "up", "--real-node"])
    took = time.monotonic() - t0
    again = {c: (realnode.state / "run" / f"{c}.pid").read_text().strip() for c in pids}
    assert again == pids  # nothing restarted
    assert took < 60, f"warm `up --real-node` took {took:.0f} s"


# ---------------------------------------------------------------- pods


def test_pod_runs_logs_and_execs(realnode, ns):
    tc = realnode.tc
    tc.apply(json.dumps(realnode.pod(
        "hello", ["sh", "-c", "echo hello from $(hostname) uid $(id -u); exec sleep 3600"])),
        namespace=ns)
    pod = realnode.running(ns, "hello")
    assert pod["spec"]["nodeName"] == NODE
    assert pod["status"]["podIP"].startswith(POD_NET)  # from the real node's CNI, not kwok's
    assert pod["status"]["containerStatuses"][0]["containerID"].startswith("containerd://")
    wait_for(lambda: "hello from hello uid 0" in realnode.logs(ns, "hello"), 30, "the pod's output")
    out = tc.kubectl("exec", "-n", ns, "hello", "--", "cat", "/proc/1/cmdline").stdout
    assert out.replace("\0", " ").startswith("sleep 3600")


def test_job_completes(realnode, ns):
    tc = realnode.tc
    tc.apply(json.dumps({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
        "spec": {"backoffLimit": 0, "template": {
            "spec": realnode.pod_spec(["sh", "-c", "echo computed $((6 * 7))"])}},
    }), namespace=ns)
    tc.kubectl("wait", "-n", ns, "--for=condition=Complete", "job/once", "--timeout=120s")
    pods = tc.kubectl_json("get", "pods", "-n", ns, "-l", "job-name=once")["items"]
    assert [p["spec"]["nodeName"] for p in pods] == [NODE]
    assert pods[0]["status"]["phase"] == "Succeeded"
    assert "computed 42" in tc.kubectl("logs", "-n", ns, "job/once").stdout


WEB = ("mkdir -p /www && echo \"served by $(hostname)\" > /www/index.html "
       "&& exec httpd -f -v -p 8080 -h /www")


def _web(realnode, ns) -> str:
    """An HTTP server pod behind Service ``web`` (port 80 -> 8080); returns the ClusterIP."""
    tc = realnode.tc
    tc.apply(json.dumps(realnode.pod("web", ["sh", "-c", WEB], labels={"app": "web"},
                                     restart="Always")), namespace=ns)
    tc.apply(json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"},
                 "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    }), namespace=ns)
    realnode.running(ns, "web")
    svc = tc.kubectl_json("get", "service", "-n", ns, "web")
    wait_for(lambda: any(e.get("conditions", {}).get("ready")
                      for s in tc.kubectl_json("get", "endpointslices", "-n", ns,
                                               "-l", "kubernetes.io/service-name=web")["items"]
                      for e in s.get("endpoints") or []), 60, "a ready endpoint for web")
    return svc["spec"]["clusterIP"]


def _http_get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=3) as r:  # noqa: S310 (a test URL)
        return r.read().decode()


def test_service_clusterip_reaches_pod_from_host_and_from_pod(realnode, ns):
    tc = realnode.tc
    ip = _web(realnode, ns)
    assert ip.startswith("10.96.")
    # from the host: kube-proxy's iptables rules (the Service range is routed to the bridge)
    body = wait_for(lambda: _try(_http_get, f"http://{ip}/"), 60, f"http://{ip}/ from the host")
    assert body.strip() == "served by web"
    # from another pod on the real node, by ClusterIP
    tc.apply(json.dumps(realnode.pod("client", ["sh", "-c", f"timeout 10 wget -q -O- http://{ip}/"])),
             namespace=ns)
    wait_for(lambda: tc.kubectl_json("get", "pod", "-n", ns, "client")["status"].get("phase")
          in ("Succeeded", "Failed"), 120, "client pod done")
    assert realnode.logs(ns, "client").strip() == "served by web"
    assert tc.kubectl_json("get", "pod", "-n", ns, "client")["status"]["phase"] == "Succeeded"


def _try(fn, *args):
    try:
        return fn(*args)
    except OSError:
        return None


def test_cluster_dns_resolves_services_inside_pods(realnode, ns):
    tc = realnode.tc
    ip = _web(realnode, ns)
    fqdn = f"web.{ns}.svc.cluster.local"
    script = (
        f"nslookup {fqdn}; nslookup kubernetes.default.svc.cluster.local; "
        # the search list (kubelet's resolv.conf) makes the short name work too
        "cat /etc/resolv.conf; timeout 10 wget -q -O- http://web/"
    )
    tc.apply(json.dumps(realnode.pod("dns", ["sh", "-c", script])), namespace=ns)
    wait_for(lambda: tc.kubectl_json("get", "pod", "-n", ns, "dns")["status"].get("phase")
          in ("Succeeded", "Failed"), 120, "dns pod done")
    out = realnode.logs(ns, "dns")
    assert tc.kubectl_json("get", "pod", "-n", ns, "dns")["status"]["phase"] == "Succeeded", out
    assert "nameserver 10.96.0.10" in out
    assert f"search {ns}.svc.cluster.local svc.cluster.local cluster.local" in out
    assert f"Address: {ip}" in out  # web's ClusterIP
    assert "Address: 10.96.0.1" in out  # kubernetes.default
    assert out.rstrip().endswith("served by web")


def test_pod_reaches_the_apiserver_through_the_kubernetes_service(realnode, ns):
    """In-cluster clients (kubernetes-entrypoint, operators) dial kubernetes.default.svc:443."""
    tc = realnode.tc
    # the apiserver listens on 127.0.0.1 only: the real node DNATs 10.96.0.1:443 there.
    # (busybox's wget crashes with -T: `timeout` bounds it instead)
    script = ("env | grep ^KUBERNETES_SERVICE_; timeout 10 wget -q -O- --no-check-certificate "
              "https://kubernetes.default.svc/version")
    tc.apply(json.dumps(realnode.pod("api", ["sh", "-c", script])), namespace=ns)
    wait_for(lambda: tc.kubectl_json("get", "pod", "-n", ns, "api")["status"].get("phase")
          in ("Succeeded", "Failed"), 120, "api pod done")
    out = realnode.logs(ns, "api")
    assert "KUBERNETES_SERVICE_HOST=10.96.0.1" in out
    assert '"gitVersion": "v1.34.4"' in out, out


# ---------------------------------------------------------------- down


def _ours_running(state: Path, address: str) -> list[str]:
    """Processes of the real node still alive: anything whose command line names its state."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(state / "realnode") in cmd or address in cmd:
            out.append(f"{d.name}: {cmd[:200]}")
    return out


def _iptables(save: str) -> str:
    p = subprocess.run([save], capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else ""


def _other_sessions(state: Path) -> list[str]:
    """Other live pytest sessions registered on this cluster (tests/cluster/conftest.py)."""
    out = []
    for f in (state / "run" / "users").glob("*"):
        if f.name.isdigit() and int(f.name) != os.getpid() and Path(f"/proc/{f.name}").exists():
            out.append(f.name)
    return out


def test_down_after_a_crash_leaves_nothing_behind(realnode, ns):
    """Last in this module: SIGKILL kubelet and containerd with pods running, then `down`."""
    tc = realnode.tc
    state, rn = realnode.state, realnode.state / "realnode"
    if others := _other_sessions(state):
        pytest.skip(f"other test sessions use this cluster's real node (pids {others})")
    _web(realnode, ns)
    sleeper = realnode.pod("sleeper", ["sleep", "3600"])
    # a hostPort: portmap's iptables rules and chains must go too
    sleeper["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 18080}]
    tc.apply(json.dumps(sleeper), namespace=ns)
    realnode.running(ns, "sleeper")
    assert CNI_NET in _iptables("iptables-save")
    # every container and sandbox id of our containerd: libcni caches results under them
    ids = run(["ctr", "--address", realnode.address, "-n", "k8s.io", "containers", "ls", "-q"]
               ).stdout.split()
    assert ids
    # the host ends of the pods' veths, and the pods' network namespaces (mounted under rn)
    host_veths = [ln.split(":")[1].strip().split("@")[0] for ln in
                  run(["ip", "-o", "link", "show", "master", BRIDGE]).stdout.splitlines()]
    assert len(host_veths) >= 2
    mounts = Path("/proc/self/mountinfo").read_text()
    # containerd mounts the pods' network namespaces under its state, not /var/run/netns
    assert any(f"{rn}/" in ln and " nsfs " in ln for ln in mounts.splitlines())
    netns_before = set(run(["ip", "netns", "list"]).stdout.split())
    assert "KUBE-SERVICES" in _iptables("iptables-save")
    shims = [p for p in _ours_running(state, realnode.address) if "containerd-shim" in p]
    assert shims

    for c in ("kubelet", "containerd"):  # a crash: no clean-up by themselves
        os.kill(int((state / "run" / f"{c}.pid").read_text()), signal.SIGKILL)
    time.sleep(1)

    run([SCRIPT, "down", "--real-node"], timeout=300)

    assert _ours_running(state, realnode.address) == []
    assert f"{rn}/" not in Path("/proc/self/mountinfo").read_text()
    links = run(["ip", "-o", "link"]).stdout
    assert BRIDGE not in links
    for v in host_veths:
        assert f" {v}@" not in links and f" {v}:" not in links
    assert "10.96.0.0/16" not in run(["ip", "route"]).stdout
    assert set(run(["ip", "netns", "list"]).stdout.split()) <= netns_before
    for save in ("iptables-save", "iptables-legacy-save"):
        rules = _iptables(save)
        assert "KUBE-" not in rules and "WANWIDE-RN-" not in rules, f"{save}:\n{rules}"
        assert CNI_NET not in rules and "10.245.0." not in rules, f"{save}:\n{rules}"
        if "-A CNI-HOSTPORT-DNAT " not in rules:  # (another CNI user's hostPorts keep them)
            assert "CNI-HOSTPORT" not in rules, f"{save}:\n{rules}"
    results = Path("/var/lib/cni/results")
    cached = [p.name for p in results.glob("*")] if results.is_dir() else []
    assert [n for n in cached if any(i in n for i in ids) or n.startswith(CNI_NET)] == []
    for c in ("containerd", "kubelet", "kube-proxy", "coredns"):
        assert not (state / "run" / f"{c}.pid").exists()
    assert not (rn / "run").exists()  # runtime state (netns mounts, shim bundles) gone
    assert not Path("/var/lib/kubelet/device-plugins/kubelet.sock").exists()
    links = Path("/var/log/containers")
    assert [p for p in links.glob("*") if p.is_symlink() and str(rn) in os.readlink(p)] == []
    # a second `down` finds nothing (no sandboxes, no bridge) and still succeeds:
    # unmatched globs and absent links once ended it silently with exit 1
    again = run([SCRIPT, "down", "--real-node"], timeout=300)
    assert "real node down" in again.stderr, again.stderr[-2000:]
    # the cluster itself still runs; the node stops being Ready after the grace period
    assert tc.kubectl_json("get", "node", NODE)["metadata"]["name"] == NODE
