"""Where a Benchmark's bundles are, read from the cluster with kubectl (no Kubernetes client needed).

``status.resultsURI`` (``s3://bucket/<prefix>/<namespace>/<uid>/<benchmark>/``, set once a
trial has uploaded) says where; ``spec.results.s3`` or the ObjectBucketClaim's ConfigMap
give the endpoint the operator used, and its Secret the keys, used only when boto3's
credential chain finds none.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from wanwide.core.contracts import object_bucket
from wanwide.pipeline.results.s3 import S3Error, StaticKeys


@dataclass(frozen=True)
class Kubectl:
    """How to reach the cluster: kubeconfig and context as given (None: kubectl's defaults)."""

    kubeconfig: str | None = None
    context: str | None = None

    def get(self, kind: str, name: str, namespace: str | None) -> dict[str, Any]:
        """``kubectl get KIND NAME -o json``; S3Error with kubectl's own message on failure."""
        exe = shutil.which("kubectl")
        if exe is None:
            raise S3Error(f"reading {kind} {name} from the cluster needs kubectl on PATH; "
                          "or give the results as s3://bucket/prefix")
        cmd = [exe, "get", kind, name, "-o", "json"]
        cmd += [f"--kubeconfig={self.kubeconfig}"] if self.kubeconfig else []
        cmd += [f"--context={self.context}"] if self.context else []
        cmd += ["-n", namespace] if namespace else []
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            msg = " ".join(p.stderr.split()) or f"kubectl exited {p.returncode}"
            raise S3Error(f"kubectl get {kind} {name}: {msg}")
        return json.loads(p.stdout)


@dataclass(frozen=True)
class BenchmarkResults:
    """Where one Benchmark's results are."""

    name: str
    namespace: str
    uri: str
    endpoint: str | None
    region: str | None
    secret: tuple[str, str, str] | None  # Secret name, access key's key, secret key's key


def locate(kc: Kubectl, name: str, namespace: str | None) -> BenchmarkResults:
    """The Benchmark's results URI and the endpoint/Secret its spec names."""
    b = kc.get("benchmarks.wanwide.io", name, namespace)
    ns = b["metadata"]["namespace"]
    status = b.get("status") or {}
    uri = status.get("resultsURI")
    if not uri:
        raise S3Error(f"Benchmark {ns}/{name} has no status.resultsURI yet (phase {status.get('phase') or 'none'}, "
                      f"progress {status.get('progress') or '-'}): no trial has uploaded results")
    results = (b.get("spec") or {}).get("results") or {}
    s3, obc = results.get("s3"), results.get("objectBucketClaim")
    if s3:
        ref = s3.get("secretRef") or {}  # absent: the default chain of whoever fetches
        return BenchmarkResults(name, ns, uri, s3.get("endpoint"), s3.get("region"),
                                (ref["name"], ref.get("accessKeyKey", "AWS_ACCESS_KEY_ID"),
                                 ref.get("secretKeyKey", "AWS_SECRET_ACCESS_KEY")) if ref.get("name") else None)
    if obc:
        found = object_bucket(kc.get("configmap", obc, ns).get("data") or {})
        return BenchmarkResults(name, ns, uri, found[0] if found else None, found[2] if found else None,
                                (obc, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"))
    return BenchmarkResults(name, ns, uri, None, None, None)


def secret_keys(kc: Kubectl, where: BenchmarkResults) -> StaticKeys | None:
    """The keys in the Benchmark's Secret; None when it cannot be read."""
    if where.secret is None:
        return None
    name, ak, sk = where.secret
    try:
        data = kc.get("secret", name, where.namespace).get("data") or {}
    except S3Error:
        return None
    if ak not in data or sk not in data:
        return None
    return StaticKeys(base64.b64decode(data[ak]).decode(), base64.b64decode(data[sk]).decode(),
                      f"Secret {where.namespace}/{name}")
