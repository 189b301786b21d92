"""Running the real operator against the loopback cluster, as the chart's ServiceAccount.

What does not run here is stood in for honestly: kwok moves pods, Jobs and the
dependency CRs along (hack/testcluster/stages), and ``RallyStandIn`` does what a
Rally Job's container would have done: it uploads a result bundle captured from a
real runner run (tests/data/bundles/), re-keyed for the trial, region and attempt.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import boto3
import yaml
from botocore.config import Config

from tests.ports import free_port
from tests.upstream import upstream_dir, upstream_env

REPO = Path(__file__).resolve().parents[2]
FIXTURE_CHART = REPO / "charts" / "fixtures" / "keystone"
REAL_CHART_VERSION = "2026.1.0"
BUNDLE = REPO / "tests" / "data" / "bundles" / "runner-real"
SYSTEM_NS = "wanwide-system"
RELEASE = "wanwide"


def fullname(release: str) -> str:
    """The chart's object name prefix (helm's convention: the release alone when it names the chart)."""
    return release if "wanwide" in release else f"{release}-wanwide"


SA = fullname(RELEASE)
USER = f"system:serviceaccount:{SYSTEM_NS}:{SA}"  # the operator, as the API server logs it
BUCKET = "wanwide-e2e"


def install_crds(tc) -> None:
    tc.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=wanwide-test", "-f", str(REPO / "crds"))
    for name in ("topologies", "benchmarks", "trials"):
        tc.kubectl("wait", "--for=condition=Established", f"crd/{name}.wanwide.io", "--timeout=60s")


def install_rbac(tc, watch: list[str]) -> Path:
    """The chart's ServiceAccount and RBAC (not its Deployment: the operator runs here as a process)."""
    tc.kubectl("create", "namespace", SYSTEM_NS, check=False)
    args = ["template", RELEASE, str(REPO / "charts" / "wanwide"), "--namespace", SYSTEM_NS,
            "--set", "crds.enabled=false"]  # install_crds has them
    for i, ns in enumerate(watch):
        args += ["--set", f"watchNamespaces[{i}]={ns}"]
    out = tc.helm(*args).stdout
    docs = [d for d in yaml.safe_load_all(out) if d and d["kind"] not in ("Deployment", "Service")]
    tc.apply(yaml.safe_dump_all(docs))
    return sa_kubeconfig(tc, SYSTEM_NS, SA, tc.state / "kubeconfig-operator")


def sa_kubeconfig(tc, namespace: str, sa: str, path: Path) -> Path:
    """A kubeconfig that authenticates as a ServiceAccount (a token, as in a pod)."""
    token = tc.kubectl("create", "token", sa, "-n", namespace, "--duration=4h").stdout.strip()
    cfg = yaml.safe_load(Path(tc.kubeconfig).read_text())
    cfg["users"] = [{"name": "wanwide-sa", "user": {"token": token}}]
    for c in cfg["contexts"]:
        c["context"]["user"] = "wanwide-sa"
    path.write_text(yaml.safe_dump(cfg))
    return path


class Operator:
    """``wanwide operator`` as a child process; kill it any time, start it again."""

    def __init__(self, tc, kubeconfig: Path, namespaces: list[str], log: Path, release: str = RELEASE,
                 system_ns: str = SYSTEM_NS, tmpdir: Path | None = None):
        self.tc, self.kubeconfig, self.namespaces, self.log = tc, kubeconfig, namespaces, log
        self.release, self.system_ns = release, system_ns
        self.tmpdir = tmpdir  # the operator's TMPDIR (helm values files live there while helm runs)
        self.proc: subprocess.Popen | None = None
        self.metrics_port = free_port()
        self.health_port = free_port()
        self.starts = 0
        self.extra_env: dict[str, str] = {}  # e.g. WANWIDE_HELM of a fault-injecting wrapper (next start)
        self.extra_charts: list[str] = []  # chart sources allowed besides the tier's own (next start)

    def allowed_charts(self) -> list[str]:
        """What this tier's Benchmarks name (docs/security.md: the admin's list): the fixture chart, the real
        keystone chart, a path that does not exist (a chart helm cannot render), the in-cluster mirror and the real
        charts of issue 45's control plane."""
        return [str(FIXTURE_CHART), str(keystone_chart(self.tc)[0]), "/nonexistent/",
                f"http://charts.{SYSTEM_NS}.svc:8080/", *(str(openstack_chart(self.tc, n)) for n in OPENSTACK_CHARTS),
                *self.extra_charts]

    def start(self) -> None:
        env = dict(self.tc.env)
        env.update({"KUBECONFIG": str(self.kubeconfig),
                    "WANWIDE_SERVICE_ACCOUNT": f"{self.system_ns}/{fullname(self.release)}",
                    "WANWIDE_HELM": str(self.tc.bin_dir / "helm"), **self.extra_env})
        if self.tmpdir:
            env["TMPDIR"] = str(self.tmpdir)
        self.starts += 1
        fh = open(self.log, "a")  # noqa: SIM115 - closed with the process
        fh.write(f"\n===== start {self.starts} =====\n")
        fh.flush()
        # no --namespaces at all for cluster-wide mode: the operator started as documented
        ns_args = ["--namespaces", ",".join(self.namespaces)] if self.namespaces else []
        self.proc = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "wanwide"), "operator", "--kubeconfig", str(self.kubeconfig),
             *ns_args, "--trial-clusterrole", f"{fullname(self.release)}-trial",
             "--metrics-port", str(self.metrics_port), "--health-port", str(self.health_port),
             "--log-format", "plain", "--allowed-charts", ",".join(self.allowed_charts())],
            stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def kill(self) -> None:
        """SIGKILL: no chance to clean up, as a crashed pod."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


def results_store(tc, ns: str) -> None:
    """The results bucket (once) and the Secret with its keys in ``ns``, as a user sets them up."""
    import contextlib

    s3 = s3_client(tc)
    with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou, s3.exceptions.BucketAlreadyExists):
        s3.create_bucket(Bucket=BUCKET)
    tc.kubectl("create", "secret", "generic", "s3-keys", "-n", ns,
               f"--from-literal=AWS_ACCESS_KEY_ID={tc.s3['AWS_ACCESS_KEY_ID']}",
               f"--from-literal=AWS_SECRET_ACCESS_KEY={tc.s3['AWS_SECRET_ACCESS_KEY']}")


def s3_client(tc):
    return boto3.client("s3", endpoint_url=tc.s3["S3_ENDPOINT"], aws_access_key_id=tc.s3["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=tc.s3["AWS_SECRET_ACCESS_KEY"], region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}))


class RallyStandIn(threading.Thread):
    """For each new Rally Job, upload the bundle its container would have written; for each network probe
    Job, the measurement its container would have stored on a WAN that is what the plan asks (its
    requested RTT plus 0.2 ms), or ``off[benchmark]`` times it (a WAN shaped wrong)."""

    def __init__(self, tc, bucket: str):
        super().__init__(daemon=True)
        self.tc, self.bucket = tc, bucket
        self.seen: dict[str, dict[str, Any]] = {}  # job uid -> info
        self.hold: set[str] = set()  # benchmarks whose Rally "never finishes" (no bundle uploaded)
        self.off: dict[str, float] = {}  # benchmark -> factor on the RTT its probes measure
        self.probed: list[dict[str, Any]] = []  # the probe configs answered
        self.stop_flag = threading.Event()
        self.s3 = s3_client(tc)

    def runs(self, benchmark: str) -> list[dict[str, Any]]:
        """The Rally Jobs of ``benchmark`` answered (not its probe Jobs)."""
        return [s for s in self.seen.values() if "probe" not in s and s["benchmark"] == benchmark]

    def probes(self) -> None:
        jobs = self.tc.kubectl_json("get", "jobs", "-A", "-l", "wanwide.io/role=probe")["items"]
        for job in jobs:
            uid = job["metadata"]["uid"]
            if uid in self.seen:
                continue
            ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
            cm = self.tc.kubectl("get", "configmap", name, "-n", ns, "-o", "json", check=False)
            if cm.returncode != 0:
                continue
            cfg = json.loads(json.loads(cm.stdout)["data"]["probe.json"])
            factor = self.off.get(cfg["benchmark"], 1.0)
            doc = {"benchmark": cfg["benchmark"], "trial": cfg["trial"], "source": cfg["region"],
                   "check": cfg["check"], "method": "tcp-connect (kwok stand-in)",
                   "targets": [{**t, "samples_ms": [round(t["requested_rtt_ms"] * factor + 0.2, 3)] * 5}
                               for t in cfg["targets"]]}
            from wanwide.core.contracts import probe_key

            key = probe_key(cfg["results"]["prefix"], cfg["benchmark"], cfg["trial"], cfg["check"], cfg["region"])
            self.s3.put_object(Bucket=cfg["results"]["bucket"], Key=key, Body=json.dumps(doc).encode())
            self.seen[uid] = {"namespace": ns, "probe": cfg}
            self.probed.append(cfg)

    def run(self) -> None:
        while not self.stop_flag.is_set():
            try:
                self.probes()
            except Exception as e:  # noqa: BLE001 - API server or storage busy; try again
                print(f"stand-in probe failed, will retry: {e}")
            try:
                jobs = self.tc.kubectl_json("get", "jobs", "-A", "-l", "wanwide.io/role=load")["items"]
            except Exception:  # noqa: BLE001 - API server busy; try again
                time.sleep(1)
                continue
            for job in jobs:
                uid = job["metadata"]["uid"]
                if uid in self.seen:
                    continue
                ns = job["metadata"]["namespace"]
                cm = self.tc.kubectl("get", "configmap", "rally-config", "-n", ns, "-o", "json", check=False)
                if cm.returncode != 0:  # namespace being deleted; nothing would run there
                    continue
                cfg = json.loads(json.loads(cm.stdout)["data"]["runner.json"])
                if cfg["benchmark"] in self.hold:
                    continue
                self.seen[uid] = {"namespace": ns, "trial": cfg["trial"]["id"], "region": cfg["region"],
                                  "attempt": cfg["attempt"], "benchmark": cfg["benchmark"]}
                try:
                    self.upload(cfg)
                except Exception as e:  # noqa: BLE001 - a storage hiccup must not stop the stand-in
                    self.seen.pop(uid, None)
                    print(f"stand-in upload failed, will retry: {e}")
            time.sleep(0.5)

    def upload(self, cfg: dict[str, Any]) -> None:
        s3 = cfg["results"]["s3"]
        run_id = uuid.uuid4().hex[:12]
        base = (f"{s3['prefix'].strip('/')}/{cfg['benchmark']}/{cfg['trial']['id']}/{cfg['region']}/"
                f"attempt-{cfg['attempt']}-{run_id}/")
        manifest = json.loads((BUNDLE / "manifest.json").read_text())
        manifest.update({"benchmark": cfg["benchmark"], "namespace": cfg["namespace"], "region": cfg["region"],
                         "attempt": cfg["attempt"], "run_id": run_id, "trial": cfg["trial"]})
        for f in sorted(BUNDLE.rglob("*")):
            if f.is_file():
                body = json.dumps(manifest).encode() if f.name == "manifest.json" else f.read_bytes()
                self.s3.put_object(Bucket=self.bucket, Key=base + str(f.relative_to(BUNDLE)), Body=body)


def owned(tc, kind: str, bench_ns: str, bench: str) -> list[dict[str, Any]]:
    """Objects of ``kind`` (cluster-wide) that belong to this Benchmark (not a namesake elsewhere)."""
    from wanwide.core.plan.names import bench_tag

    tag = f"-{bench_tag(bench_ns, bench)}-t"
    items = tc.kubectl_json("get", kind, "-A", "-l", f"wanwide.io/benchmark={bench}")["items"]
    return [i for i in items if tag in (i["metadata"].get("namespace") or i["metadata"]["name"])]


@functools.cache
def _keystone_chart(helm: str) -> tuple[Path, str]:
    """(chart directory, version): the real openstack-helm keystone chart with its helm-toolkit
    (hack/upstream-charts.sh: the mirror, else fetched at the pinned commit as a user would)."""
    mirror = upstream_dir()
    p = subprocess.run([str(REPO / "hack" / "upstream-charts.sh"), "path", "keystone"], capture_output=True,
                       text=True, env={**upstream_env(), "HELM": helm}, timeout=600)
    if p.returncode == 0:
        return Path(p.stdout.strip().splitlines()[-1]), REAL_CHART_VERSION
    if mirror is not None:  # the mirror is there: failing to use it is a failure, not a reason to fall back
        raise AssertionError(f"hack/upstream-charts.sh path keystone failed with {mirror}:\n{p.stderr[-3000:]}")
    warnings.warn("no upstream mirror and openstack-helm unreachable: the kwok tier deploys the fixture "
                  f"keystone chart instead of the real one ({p.stderr.strip()[-300:]})", stacklevel=2)
    return FIXTURE_CHART, "0.1.0"


@functools.cache
def _openstack_chart(helm: str, name: str) -> Path:
    p = subprocess.run([str(REPO / "hack" / "upstream-charts.sh"), "path", name], capture_output=True, text=True,
                       env={**upstream_env(), "HELM": helm}, timeout=600)
    if p.returncode != 0:
        raise AssertionError(f"hack/upstream-charts.sh path {name} failed:\n{p.stderr[-3000:]}")
    return Path(p.stdout.strip().splitlines()[-1])


OPENSTACK_CHARTS = ("rabbitmq", "placement", "glance", "nova", "neutron")
"""The charts of issue 45's control plane besides keystone (spec.openstack.messaging, placement, glance, nova,
neutron)."""


def openstack_chart(tc, name: str) -> Path:
    """The real openstack-helm chart ``name`` (one of :data:`OPENSTACK_CHARTS`) with its helm-toolkit, as
    :func:`keystone_chart` (hack/upstream-charts.sh; no fixture stands in for them)."""
    return _openstack_chart(str(tc.bin_dir / "helm"), name)


def keystone_chart(tc) -> tuple[Path, str]:
    """The keystone chart the operator deploys in this tier: the real one (issue 24; the fixture only when
    no mirror is here and upstream cannot be reached)."""
    return _keystone_chart(str(tc.bin_dir / "helm"))


def example(tc, name: str, *, cleanup: str = "Always", extra: dict | None = None) -> str:
    """An example file adapted to this cluster: the real keystone chart, local S3, short timeouts."""
    docs = list(yaml.safe_load_all((REPO / "manifests" / "examples" / name).read_text()))
    chart, version = keystone_chart(tc)
    for d in docs:
        if d["kind"] == "Benchmark":
            s = d["spec"]
            s["openstack"] = {"keystone": {"chartRepo": "", "chart": str(chart), "chartVersion": version}}
            s["results"] = {"s3": {"endpoint": tc.s3["S3_ENDPOINT"], "bucket": BUCKET, "prefix": "e2e",
                                   "secretRef": {"name": "s3-keys"}}}
            s["cleanup"] = cleanup
            s["timeouts"] = {"provisioning": "4m", "verifyingNetwork": "2m", "injecting": "2m", "loading": "3m",
                             "collecting": "2m", "cleaningUp": "3m"}
            s["workload"]["startDelay"] = "2s"
            s.update(extra or {})
            # no storage for Galera's claims here (the mariadb-operator stand-in makes no pods): its preflight
            # says so and the trials start (Warn); tests/cluster/test_preflight.py holds one on it
            if "galera" in [(s.get("database") or {}).get("backend"), *((s.get("matrix") or {}).get("backend") or [])]:
                s["preflight"] = {"mode": "Warn"}
    return yaml.safe_dump_all(docs)


def session_events(state: Path, since: datetime) -> Iterator[dict[str, Any]]:
    """The operator's audit events of this pytest session, once per request."""
    seen: set[str] = set()
    for f in sorted((state / "audit").glob("audit*.log")):
        for line in f.read_text().splitlines():
            e = json.loads(line)
            if (e["user"]["username"] != USER or e["auditID"] in seen
                    or datetime.fromisoformat(e["requestReceivedTimestamp"]) < since):
                continue
            seen.add(e["auditID"])
            yield e


def three_regions(tc, name: str, placement: dict, **spec: object) -> str:
    """uniform-9's Benchmark as ``name`` on 3 inline regions at 20 ms, placed as ``placement``, namespaces kept
    (cleanup Never); ``spec`` entries replace the Benchmark's."""
    docs = list(yaml.safe_load_all(example(tc, "uniform-9.yaml", cleanup="Never")))
    b = next(d for d in docs if d["kind"] == "Benchmark")
    b["metadata"]["name"] = name
    del b["spec"]["topologyRef"]
    b["spec"]["topology"] = {"generate": {"count": 3}, "network": {"default": {"rtt": "20ms"}},
                             "placement": placement}
    b["spec"].update(spec)
    return yaml.safe_dump(b)
