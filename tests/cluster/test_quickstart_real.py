"""The README's Kubernetes quickstart, run as a user runs it, on the test cluster's real node.

The cluster is made the empty one-node cluster a user starts from (the kwok nodes and the
stand-in CRDs and operators go, the real node's taint is lifted). Then the README's
commands in order: ``hack/deps.sh install`` (Chaos Mesh, mariadb-operator, the S3 server,
its bucket and Secret), ``helm install wanwide charts/wanwide``, ``wanwide doctor -f
manifests/examples/uniform-9.yaml``, ``kubectl apply -f manifests/examples/uniform-9.yaml``,
with the operator running *in the cluster* from its chart.

What differs from a user's cluster, and only that: no container registry and no chart
repository are reachable here, so each step gets the images built here (``hack/images.sh``,
``hack/chaos-mesh.sh``) and the charts' own sources, through the switches the README names
for a private registry (``CHAOS_MESH_CHART``/``_VALUES``, ``MARIADB_OPERATOR_*``,
``S3_IMAGE``, ``BUCKET_IMAGE``, the chart's ``image.*``). ``helm install`` takes ownership
of the wanwide CRDs the test cluster applied earlier (``--take-ownership``).

As written, uniform-9 asks for 100 ms RTT, which this kernel cannot shape (no ``sch_netem``):
the run must end held by the preflight naming the node and the module, with every other
check green (what the dependency step installed). The same example at 0 ms, with the
keystone chart served from a mirror in the cluster (as an air-gapped user serves it) and
the images built here, must then run to Complete and leave its bundle in the bucket
``hack/deps.sh`` made.

Marked ``realnode`` only: ``hack/e2e-real.sh`` runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.cluster.realnode_env import NODE, SCRIPT, run, wait_for

pytestmark = [pytest.mark.realnode]
REPO = Path(__file__).resolve().parents[2]
TAINT = "wanwide.io/real-node"
EXAMPLE = REPO / "manifests" / "examples" / "uniform-9.yaml"
SYSTEM_NS = "wanwide-system"
IMAGES = ("s3", "wanwide", "keystone", "dep-check", "mariadb", "memcached", "mariadb-operator")
CHART_VERSION = "2026.1.0"  # the mirrored openstack-helm keystone chart (hack/upstream-charts.sh)
MIRROR = f"http://charts.{SYSTEM_NS}.svc:8080"


def _ref(name: str) -> str:
    return run([REPO / "hack" / "images.sh", "ref", name]).stdout.strip()


def _split(ref: str) -> dict[str, str]:
    repo, tag = ref.rsplit(":", 1)
    return {"repository": repo, "tag": tag}


def _user(tc, *cmd: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    """A README command, with the cluster's kubeconfig and helm on PATH (as the user has them)."""
    t0 = time.monotonic()
    p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, env=tc.env, cwd=REPO)
    print(f"$ {' '.join(cmd)}  [{time.monotonic() - t0:.0f} s, exit {p.returncode}]\n{p.stdout[-3000:]}{p.stderr[-4000:]}")
    return p


def _values(tmp: Path) -> dict[str, str]:
    """The values files a user with a private registry gives hack/deps.sh: images only."""
    cm = _split(run([REPO / "hack" / "chaos-mesh.sh", "ref", "chaos-mesh"]).stdout.strip())
    chaos = {"images": {"registry": cm["repository"].split("/")[0], "tag": cm["tag"]},
             "controllerManager": {"image": {"repository": "chaos-mesh"}, "imagePullPolicy": "Never"},
             "chaosDaemon": {"image": {"repository": "chaos-mesh"}, "imagePullPolicy": "Never"}}
    op, db = _split(_ref("mariadb-operator")), _split(_ref("mariadb"))
    img = {**op, "pullPolicy": "Never"}
    mariadb = {"image": img, "webhook": {"image": img}, "certController": {"image": img},
               "metrics": {"enabled": False},  # its exporter image cannot be built here (docs/real-e2e.md)
               "config": {"mariadbImage": db, "mariadbDefaultVersion": "10.11",
                          "galeraLibPath": "/usr/lib/galera/libgalera_smm.so"}}
    (tmp / "chaos-mesh.yaml").write_text(yaml.safe_dump(chaos))
    (tmp / "mariadb-operator.yaml").write_text(yaml.safe_dump(mariadb))
    charts = REPO / "hack" / "upstream-charts.sh"
    return {
        "CHAOS_MESH_CHART": run([REPO / "hack" / "chaos-mesh.sh", "chart"]).stdout.strip(),
        "CHAOS_MESH_VALUES": str(tmp / "chaos-mesh.yaml"),
        "MARIADB_OPERATOR_CHART": run([charts, "path", "mariadb-operator"]).stdout.strip(),
        "MARIADB_OPERATOR_CRDS_CHART": run([charts, "path", "mariadb-operator-crds"]).stdout.strip(),
        "MARIADB_OPERATOR_VALUES": str(tmp / "mariadb-operator.yaml"),
        "S3_IMAGE": _ref("s3"),
        "BUCKET_IMAGE": _ref("wanwide"),
    }


def _conditions(obj: dict) -> dict[str, dict]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions", [])}


@pytest.fixture(scope="module")
def quickstart(realnode, tmp_path_factory):
    """The empty one-node cluster, the images imported, the README's install commands run."""
    tc = realnode.tc
    tmp = tmp_path_factory.mktemp("quickstart")
    run([REPO / "hack" / "images.sh", "build", *IMAGES], timeout=5400)
    run([REPO / "hack" / "images.sh", "import", *IMAGES, "--address", realnode.address], timeout=1800)
    run([REPO / "hack" / "chaos-mesh.sh", "import", "--address", realnode.address], timeout=3600)
    kwok = [n["metadata"]["name"] for n in tc.kubectl_json("get", "nodes")["items"] if n["metadata"]["name"] != NODE]
    tc.kubectl("delete", "nodes", "-l", "type=kwok", "--wait=true")
    tc.kubectl("taint", "node", NODE, f"{TAINT}-", check=False)
    standins = [c["metadata"]["name"] for c in tc.kubectl_json("get", "crd", "-l", "wanwide.io/stand-in=true")["items"]
                if c["metadata"]["name"].endswith(".k8s.mariadb.com")]
    if standins:
        tc.kubectl("delete", "crd", *standins, "--wait=true")
        (tc.state / "crds.sha256").unlink(missing_ok=True)  # the next `testcluster.sh up` puts them back
    # and the kwok tier's stand-in operators (the next `testcluster.sh up` makes them again)
    tc.kubectl("delete", "namespace", "wanwide-standins", "--ignore-not-found", "--wait=true", timeout=300)
    env = _values(tmp)
    tc.env.update(env)
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    deps = _user(tc, str(REPO / "hack" / "deps.sh"), "install", "--socket", realnode.address, timeout=3600)
    timings["deps"] = time.monotonic() - t0
    assert deps.returncode == 0, f"hack/deps.sh install failed:\n{deps.stderr[-4000:]}"
    wanwide = _split(_ref("wanwide"))
    t0 = time.monotonic()
    chart = _user(tc, "helm", "install", "wanwide", str(REPO / "charts" / "wanwide"), "-n", SYSTEM_NS,
                  "--create-namespace", "--set", "watchNamespaces={default}",
                  "--set", f"image.repository={wanwide['repository']}", "--set", f"image.tag={wanwide['tag']}",
                  "--set", "image.pullPolicy=Never", "--take-ownership", "--wait", "--timeout", "5m")
    timings["chart"] = time.monotonic() - t0
    assert chart.returncode == 0, f"helm install failed:\n{chart.stderr[-4000:]}"
    yield {"tc": tc, "deps": deps, "chart": chart, "timings": timings, "tmp": tmp}
    for kind in ("benchmark", "topology"):
        tc.kubectl("delete", kind, "uniform-9", "-n", "default", "--ignore-not-found", "--wait=true",
                   check=False, timeout=900)
    print(tc.kubectl("logs", "-n", SYSTEM_NS, "deploy/wanwide", "--tail=300", check=False).stdout[-8000:])
    tc.kubectl("delete", "-n", SYSTEM_NS, "deploy/charts", "svc/charts", "configmap/charts",
               "--ignore-not-found", check=False)
    _user(tc, "helm", "uninstall", "wanwide", "-n", SYSTEM_NS, "--wait")
    _user(tc, str(REPO / "hack" / "deps.sh"), "uninstall", timeout=900)
    for k in env:
        tc.env.pop(k, None)
    tc.kubectl("taint", "node", NODE, f"{TAINT}=true:NoSchedule", "--overwrite", check=False)
    if kwok:
        run([SCRIPT, "nodes", str(len(kwok))], check=False, timeout=900)


def test_the_dependency_step_and_the_chart_install_on_an_empty_cluster(quickstart):
    """hack/deps.sh install and helm install succeed; what they promise runs on the node."""
    tc = quickstart["tc"]
    assert quickstart["deps"].returncode == 0, quickstart["deps"].stderr[-4000:]
    assert quickstart["chart"].returncode == 0, quickstart["chart"].stderr[-4000:]
    pods = tc.kubectl_json("get", "pods", "-A")["items"]

    def running(ns: str, prefix: str) -> list[str]:
        return [p["spec"].get("nodeName", "") for p in pods if p["metadata"]["namespace"] == ns
                and p["metadata"]["name"].startswith(prefix) and p["status"].get("phase") == "Running"]

    assert running("chaos-mesh", "chaos-daemon") == [NODE]
    assert NODE in running("chaos-mesh", "chaos-controller-manager")
    assert NODE in running("mariadb-operator", "mariadb-operator")
    assert running(SYSTEM_NS, "s3-") == [NODE]
    assert running(SYSTEM_NS, "wanwide") == [NODE]  # the operator itself, from its chart
    job = tc.kubectl_json("get", "job", "s3-bucket", "-n", SYSTEM_NS)
    assert job["status"].get("succeeded") == 1
    secret = tc.kubectl_json("get", "secret", "wanwide-results", "-n", "default")
    assert set(secret["data"]) == {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
    print(f"deps.sh install {quickstart['timings']['deps']:.0f} s, helm install {quickstart['timings']['chart']:.0f} s")


def test_doctor_before_the_example_names_only_the_missing_netem(quickstart):
    """The README's optional `wanwide doctor -f uniform-9.yaml` from outside the cluster: everything the
    dependency step installs is green (the bucket behind s3.wanwide-system.svc written from a pod in the
    Benchmark's namespace); netem (this kernel has no sch_netem) is the one failure, naming the node."""
    tc = quickstart["tc"]
    r = _user(tc, sys.executable, "-m", "wanwide.cli", "doctor", "-f", str(EXAMPLE), "--image", _ref("wanwide"),
              "--timeout", "300", timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith(("ok", "FAIL", "warn"))]
    failed = [ln for ln in rows if ln.startswith("FAIL")]
    assert len(failed) == 1 and "netem on every region node" in failed[0] and NODE in failed[0], r.stdout
    for check in ("wanwide CRDs", "wanwide operator", "Chaos Mesh", "chaos-daemon on every region node",
                  "mariadb-operator", "nodes for the placement", "results store"):
        assert any(ln.startswith("ok") and check in ln for ln in rows), (check, r.stdout)


def test_uniform_9_as_written_is_held_by_the_preflight_naming_netem(quickstart):
    """kubectl apply -f manifests/examples/uniform-9.yaml, unchanged: the operator's preflight holds it
    (100 ms RTT needs netem), names the node and the module, and every other check passed: Chaos Mesh,
    mariadb-operator, the bucket with the Secret hack/deps.sh made, the placement on one node."""
    tc = quickstart["tc"]
    tc.kubectl("apply", "-n", "default", "-f", str(EXAMPLE))

    def held():
        b = tc.kubectl_json("get", "benchmark", "uniform-9", "-n", "default")
        c = _conditions(b).get("Preflight")
        return b if c and c["status"] == "False" and (b["status"].get("preflight") or {}).get("checks") else None

    b = wait_for(held, 600, "uniform-9 held by its preflight", interval=5)
    msg = _conditions(b)["Preflight"]["message"]
    print(msg)
    assert NODE in msg and "sch_netem" in msg, msg
    checks = b["status"]["preflight"]["checks"]
    print(json.dumps(checks, indent=1))
    bad = [c for c in checks if c.get("state") != "ok"]
    assert [c["what"] for c in bad] == ["netem on every region node"], checks
    names = {c["what"] for c in checks}
    assert {"Chaos Mesh", "chaos-daemon on every region node", "mariadb-operator", "results store"} <= names, names
    assert tc.kubectl_json("get", "trials", "-n", "default")["items"] == [] or all(
        (t.get("status") or {}).get("phase") in (None, "", "Pending") for t in
        tc.kubectl_json("get", "trials", "-n", "default")["items"])
    tc.kubectl("delete", "benchmark", "uniform-9", "-n", "default", "--wait=true", timeout=600)
    tc.kubectl("delete", "topology", "uniform-9", "-n", "default", "--wait=true")


def _mirror(tc, tmp: Path) -> None:
    """The keystone chart served over HTTP in the cluster, as a chart mirror of an air-gapped cluster."""
    src = run([REPO / "hack" / "upstream-charts.sh", "path", "keystone"]).stdout.strip()
    out = tmp / "charts"
    out.mkdir(exist_ok=True)
    tc.helm("package", src, "--destination", str(out), timeout=300)
    tc.helm("repo", "index", str(out), "--url", MIRROR)
    files = sorted(out.iterdir())
    tc.kubectl("create", "configmap", "charts", "-n", SYSTEM_NS, *[f"--from-file={f}" for f in files])
    tc.apply(yaml.safe_dump_all([
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "charts", "namespace": SYSTEM_NS},
         "spec": {"selector": {"matchLabels": {"app": "charts"}}, "template": {
             "metadata": {"labels": {"app": "charts"}},
             "spec": {"containers": [{
                 "name": "http", "image": _ref("wanwide"), "command": ["python", "-m", "http.server", "8080",
                                                                      "-d", "/charts"],
                 "ports": [{"containerPort": 8080}], "readinessProbe": {"tcpSocket": {"port": 8080}},
                 "volumeMounts": [{"name": "charts", "mountPath": "/charts"}]}],
                 "volumes": [{"name": "charts", "configMap": {"name": "charts"}}]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "charts", "namespace": SYSTEM_NS},
         "spec": {"selector": {"app": "charts"}, "ports": [{"port": 8080}]}},
    ]))
    tc.kubectl("rollout", "status", "-n", SYSTEM_NS, "deploy/charts", "--timeout=300s", timeout=360)


def test_uniform_9_at_0ms_runs_to_complete_with_its_bundle_in_the_bucket(quickstart):
    """The same example with only what this machine forces changed (0 ms: no netem; the keystone chart
    from the in-cluster mirror and the images built here: no registry; no exporters: their images cannot
    be built here): 9 regions, central MariaDB, light load, to Complete, the bundle in the bucket."""
    tc = quickstart["tc"]
    _mirror(tc, quickstart["tmp"])
    topo, bench = yaml.safe_load_all(EXAMPLE.read_text())
    topo["spec"]["network"]["default"]["rtt"] = "0ms"
    ks = _ref("keystone")
    bench["spec"]["openstack"] = {"keystone": {
        "chartRepo": MIRROR, "chart": "keystone", "chartVersion": CHART_VERSION,
        "images": {"keystoneApi": ks, "keystoneDbSync": ks, "keystoneDomainManage": ks, "bootstrap": ks,
                   "depCheck": _ref("dep-check"), "memcached": _ref("memcached")}}}
    bench["spec"]["database"]["image"] = _ref("mariadb")
    bench["spec"]["monitoring"] = {"enabled": False}
    t0 = time.monotonic()
    tc.apply(yaml.safe_dump_all([topo, bench]), namespace="default")

    def done():
        b = tc.kubectl_json("get", "benchmark", "uniform-9", "-n", "default")
        c = _conditions(b)
        phases = {t["metadata"]["name"]: (t.get("status") or {}).get("phase")
                  for t in tc.kubectl_json("get", "trials", "-n", "default")["items"]}
        print(f"[{time.monotonic() - t0:5.0f} s] {(b.get('status') or {}).get('phase')} {phases}", flush=True)
        return b if "True" in (c.get("Complete", {}).get("status"), c.get("Failed", {}).get("status")) else None

    b = wait_for(done, 5400, "uniform-9 at 0 ms Complete or Failed", interval=30)
    took = time.monotonic() - t0
    print(f"uniform-9 at 0 ms: {took:.0f} s to {b['status'].get('phase')}")
    trials = tc.kubectl_json("get", "trials", "-n", "default")["items"]
    said = [{k: (t.get("status") or {}).get(k) for k in ("phase", "outcome", "reason", "message")} for t in trials]
    events = tc.kubectl("get", "events", "-n", "default", "--sort-by=.lastTimestamp", check=False).stdout[-6000:]
    assert _conditions(b)["Complete"]["status"] == "True", f"{said}\n{events}"
    assert trials and all(t["status"]["phase"] == "Succeeded" for t in trials), [t["status"] for t in trials]
    uri = b["status"].get("resultsURI", "")
    print(uri, [t["status"].get("resultsURI") for t in trials])
    assert uri.startswith("s3://wanwide-results/uniform-9/"), b["status"]
    # the bucket, read back in the cluster with the Secret hack/deps.sh made
    ls = ("import boto3,os; s3=boto3.client('s3',endpoint_url='http://s3.wanwide-system.svc:7070',region_name='us-east-1');"
          "print('\\n'.join(o['Key'] for o in s3.list_objects_v2(Bucket='wanwide-results',Prefix='uniform-9/')"
          ".get('Contents',[])))")
    tc.apply(yaml.safe_dump({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "ls-results"},
                             "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [{
                                 "name": "ls", "image": _ref("wanwide"), "command": ["python", "-c", ls],
                                 "envFrom": [{"secretRef": {"name": "wanwide-results"}}]}]}}}}), namespace="default")
    tc.kubectl("wait", "--for=condition=complete", "job/ls-results", "-n", "default", "--timeout=300s", timeout=360)
    keys = tc.kubectl("logs", "-n", "default", "job/ls-results").stdout.split()
    tc.kubectl("delete", "job", "ls-results", "-n", "default", "--wait=false", check=False)
    print("\n".join(keys))
    assert any(k.endswith("manifest.json") for k in keys), keys
