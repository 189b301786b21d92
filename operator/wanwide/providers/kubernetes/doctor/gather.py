"""What ``wanwide doctor`` reads from the cluster, and its probes: a netem qdisc added inside a pod's own
network namespace on each node that will host a region, and one object written to the results bucket
(from a pod in the Benchmark's namespace when the endpoint is a name only the cluster resolves)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wanwide import DEFAULT_IMAGE
from wanwide.providers.kubernetes.doctor.checks import CHAOS_DAEMON, WANWIDE_CRDS, Observed, hosts
from wanwide.providers.kubernetes.kube.client import Kube

if TYPE_CHECKING:
    from wanwide.core.api.benchmark import S3

CHAOS_API, MARIADB_API, CRDB_API = "chaos-mesh.org/v1alpha1", "k8s.mariadb.com/v1alpha1", "crdb.cockroachlabs.com/v1alpha1"
NETEM_SCRIPT = "tc qdisc add dev lo root netem delay 1ms && tc qdisc show dev lo"
PROBE_LABEL = "wanwide.io/doctor"
# one object written and deleted, with the runner's own client (env: the Benchmark's endpoint and keys)
BUCKET_SCRIPT = """
import os, sys
from wanwide.pipeline.runner.upload import s3_client
c = s3_client(os.environ["S3_ENDPOINT"], os.environ["S3_REGION"], None, connect_timeout=5)
try:
    c.put_object(Bucket=os.environ["BUCKET"], Key=os.environ["KEY"], Body=b"wanwide doctor")
    c.delete_object(Bucket=os.environ["BUCKET"], Key=os.environ["KEY"])
except Exception as e:
    sys.exit(f"{type(e).__name__}: {str(e)[:200]}")
print("writable")
"""


def cluster(kube: Kube) -> Observed:
    """The CRDs, operators, dependencies, nodes and storage, as served."""
    from wanwide.crds import crds

    o = Observed()
    for name in WANWIDE_CRDS:
        crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
        if crd:
            o.crds[name] = crd
    o.expected_crds = {c["metadata"]["name"]: c for c in crds()}
    o.served = served(kube)
    deployments = kube.list("apps/v1", "Deployment")  # one list: the operator's and the database operators'
    o.operators = [d for d in deployments if (d["metadata"].get("labels") or {}).get("app.kubernetes.io/name") == "wanwide"]
    o.dependency_deployments = dependencies(deployments)
    o.nodes = kube.list("v1", "Node")
    o.chaos_daemons = kube.list("v1", "Pod", {"app.kubernetes.io/component": CHAOS_DAEMON})
    o.storage_classes = kube.list("storage.k8s.io/v1", "StorageClass")
    o.volumes = kube.list("v1", "PersistentVolume")
    return o


def served(kube: Kube) -> dict[str, bool]:
    """Whether the kinds of the dependencies are served (NetworkChaos, MariaDB, CrdbCluster)."""
    return {"NetworkChaos": kube.serves(CHAOS_API, "NetworkChaos"), "MariaDB": kube.serves(MARIADB_API, "MariaDB"),
            "CrdbCluster": kube.serves(CRDB_API, "CrdbCluster")}


def dependencies(deployments: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The database operators' Deployments among ``deployments`` (by name, as their charts call them)."""
    return {name: [d for d in deployments if d["metadata"]["name"].startswith(name)]
            for name in ("mariadb-operator", "cockroach-operator")}


def netem_job(node: str, index: int, namespace: str, image: str, run: str,
              tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A one-shot pod on ``node`` that adds a netem qdisc to its own loopback: root with NET_ADMIN in its own
    network namespace (a non-root user does not get the added capability: tc would say "Operation not
    permitted" whatever the kernel); the last lines it prints become its termination message. ``image``: the
    operator's own (never a Benchmark's: this pod is root with NET_ADMIN); ``tolerations``: the region pods'
    (the nodes probed are those they may use), no others; no ServiceAccount token."""
    name = f"netem-{run}-{index}"
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {PROBE_LABEL: run}},
        "spec": {"backoffLimit": 0, "ttlSecondsAfterFinished": 600, "template": {
            "metadata": {"labels": {PROBE_LABEL: run}},
            "spec": {"restartPolicy": "Never", "nodeName": node, "automountServiceAccountToken": False,
                     **({"tolerations": list(tolerations)} if tolerations else {}),
                     "securityContext": {"runAsUser": 0, "runAsNonRoot": False},
                     "containers": [{"name": "netem", "image": image, "command": ["sh", "-c", NETEM_SCRIPT],
                                     "terminationMessagePolicy": "FallbackToLogsOnError",
                                     "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}]}}},
    }


def netem(kube: Kube, o: Observed, namespace: str, image: str = DEFAULT_IMAGE, timeout_s: float = 180,
          logs: Callable[[str, str], str] | None = None, progress: Callable[[str], None] = print) -> None:
    """Run the netem probe on every node that will host a region; record (usable, why) per node."""
    run = uuid.uuid4().hex[:6]
    nodes = [n["metadata"]["name"] for n in hosts(o)]
    if kube.get("v1", "Namespace", namespace) is None:
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": {
            "pod-security.kubernetes.io/enforce": "privileged"}}})  # NET_ADMIN: not allowed by baseline
    for i, node in enumerate(nodes):
        kube.apply(netem_job(node, i, namespace, image, run, o.tolerations))
    progress(f"netem probe on {len(nodes)} node(s) (namespace {namespace}, image {image})")
    results: dict[str, tuple[bool | None, str]] = {}
    deadline = time.time() + timeout_s
    while time.time() < deadline and len(results) < len(nodes):
        for p in kube.list("v1", "Pod", {PROBE_LABEL: run}, namespace):
            node = (p.get("spec") or {}).get("nodeName")
            phase = (p.get("status") or {}).get("phase")
            if node in results or phase not in ("Succeeded", "Failed"):
                continue
            said = logs(namespace, p["metadata"]["name"]) if logs else ""
            results[node] = (phase == "Succeeded", said or terminated(p))
        time.sleep(2)
    for node in nodes:
        results.setdefault(node, (None, f"the probe pod did not finish within {timeout_s:.0f} s"))
    for j in kube.list("batch/v1", "Job", {PROBE_LABEL: run}, namespace):
        kube.delete("batch/v1", "Job", j["metadata"]["name"], namespace)
    o.netem = results


def terminated(pod: dict[str, Any]) -> str:
    for c in (pod.get("status") or {}).get("containerStatuses") or []:
        t = (c.get("state") or {}).get("terminated") or {}
        if t:
            return f"exit {t.get('exitCode')}: {t.get('message') or t.get('reason') or ''}"
    return (pod.get("status") or {}).get("message") or ""


def bucket(kube: Kube, bench: dict[str, Any], pod: dict[str, Any] | None = None) -> tuple[bool, str]:
    """Write and delete one object in the Benchmark's results bucket, with its credentials; with ``pod``
    (image, timeout_s, progress) from a pod when only the cluster resolves the endpoint."""
    from wanwide.core.api.benchmark import Benchmark
    from wanwide.pipeline.runner.upload import Credentials, s3_client

    model = Benchmark.model_validate({**bench, "status": None})
    s3 = model.spec.results.s3
    if s3 is None:
        return True, "results.objectBucketClaim: the claim's bucket (not probed)"
    creds = None  # none: the SDK's own chain, as the pods' ambient credentials
    if s3.secret_ref is not None:
        import base64

        ns = bench["metadata"].get("namespace") or "default"
        secret = kube.get("v1", "Secret", s3.secret_ref.name, ns)
        if secret is None:
            return False, f"Secret {ns}/{s3.secret_ref.name} not found"
        data = secret.get("data") or {}
        try:
            creds = Credentials(*(base64.b64decode(data[k]).decode()
                                  for k in (s3.secret_ref.access_key_key, s3.secret_ref.secret_key_key)))
        except KeyError as e:
            return False, f"Secret {ns}/{s3.secret_ref.name} has no key {e}"
    key = f"{s3.prefix.strip('/')}/.wanwide-doctor-{uuid.uuid4().hex[:8]}".lstrip("/")
    if pod is not None and cluster_only(s3.endpoint):
        return _bucket_from_a_pod(kube, s3, bench["metadata"].get("namespace") or "default", key, **pod)
    client = s3_client(s3.endpoint, s3.region, creds, connect_timeout=5)
    try:
        client.put_object(Bucket=s3.bucket, Key=key, Body=b"wanwide doctor")
        client.delete_object(Bucket=s3.bucket, Key=key)
    except Exception as e:  # noqa: BLE001 - any refusal is the answer
        return False, f"{s3.endpoint} bucket {s3.bucket}: {type(e).__name__}: {str(e)[:200]}"
    return True, f"{s3.endpoint} bucket {s3.bucket} writable"


def cluster_only(endpoint: str) -> bool:
    """Whether ``endpoint`` names a Service only the cluster's DNS resolves (``s3.ns.svc``, a bare
    ``minio``) and this process runs outside the cluster."""
    from urllib.parse import urlparse

    host = urlparse(endpoint).hostname or ""
    inside = bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    return not inside and (host.endswith((".svc", ".cluster.local")) or ("." not in host and host != "localhost"))


def bucket_job(s3: S3, namespace: str, key: str, image: str, run: str) -> dict[str, Any]:
    """A one-shot pod in the Benchmark's namespace writing ``key`` as its Rally Jobs will: the same
    endpoint, the Secret's keys (or the pod's ambient credentials), restricted Pod Security."""
    env = [{"name": "S3_ENDPOINT", "value": s3.endpoint}, {"name": "S3_REGION", "value": s3.region or "us-east-1"},
           {"name": "BUCKET", "value": s3.bucket}, {"name": "KEY", "value": key}]
    if s3.secret_ref is not None:
        env += [{"name": var, "valueFrom": {"secretKeyRef": {"name": s3.secret_ref.name, "key": k}}}
                for var, k in (("AWS_ACCESS_KEY_ID", s3.secret_ref.access_key_key),
                               ("AWS_SECRET_ACCESS_KEY", s3.secret_ref.secret_key_key))]
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": f"wanwide-doctor-bucket-{run}", "namespace": namespace, "labels": {PROBE_LABEL: run}},
        "spec": {"backoffLimit": 0, "ttlSecondsAfterFinished": 600, "template": {
            "metadata": {"labels": {PROBE_LABEL: run}},
            "spec": {"restartPolicy": "Never",
                     "securityContext": {"runAsNonRoot": True, "runAsUser": 10001,
                                         "seccompProfile": {"type": "RuntimeDefault"}},
                     "containers": [{"name": "bucket", "image": image, "command": ["python", "-c", BUCKET_SCRIPT],
                                     "env": env, "terminationMessagePolicy": "FallbackToLogsOnError",
                                     "securityContext": {"allowPrivilegeEscalation": False,
                                                         "capabilities": {"drop": ["ALL"]}}}]}}},
    }


def _bucket_from_a_pod(kube: Kube, s3: S3, namespace: str, key: str, image: str = DEFAULT_IMAGE,
                       timeout_s: float = 180, progress: Callable[[str], None] = print) -> tuple[bool, str]:
    run = uuid.uuid4().hex[:6]
    job = bucket_job(s3, namespace, key, image, run)
    progress(f"{s3.endpoint} resolves only in the cluster: writing from a pod in {namespace} (image {image})")
    kube.apply(job)
    where = f"{s3.endpoint} bucket {s3.bucket} (from a pod in {namespace})"
    try:
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            for p in kube.list("v1", "Pod", {PROBE_LABEL: run}, namespace):
                phase = (p.get("status") or {}).get("phase")
                if phase in ("Succeeded", "Failed"):
                    return phase == "Succeeded", f"{where}: {'writable' if phase == 'Succeeded' else terminated(p)}"
            time.sleep(2)
        return False, f"{where}: the pod did not finish within {timeout_s:.0f} s"
    finally:
        kube.delete("batch/v1", "Job", job["metadata"]["name"], namespace)
