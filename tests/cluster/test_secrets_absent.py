"""After a run, the generated passwords, fernet/credential keys and the S3 keys are only in Secrets.

Read from the Secrets the operator created (``<benchmark>-wanwide-keys``) and the
results store's keys, then looked for (plain and base64) in: the operator's log,
all Events, the Benchmark and its Trials, every object except Secrets in the
trial namespaces (ConfigMaps, Jobs, Pods, the dependency CRs, chaos), all
ConfigMaps of the cluster, every object in the results bucket, what
``wanwide results fetch`` prints and writes, and the operator's TMPDIR (helm
values files). Runner logs: the Rally Jobs' pods do not run on kwok (the stand-in
uploads a captured bundle), so there are none to read here.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.cluster.operator_env import BUCKET, example, s3_client
from tests.cluster.test_operator import wait_phase
from tests.secrets_scan import needles, scan, scan_tree

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
NAME = "secrets-scan"  # distinct from the other tests' Benchmarks


def _wanwide(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("wanwide")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300, env=env)


def test_no_secret_value_outside_secrets(env, tmp_path):
    tc, ns, op = env["tc"], env["ns"], env["op"]
    docs = list(yaml.safe_load_all(example(tc, "uniform-9.yaml", cleanup="Never")))
    for d in docs:
        d["metadata"]["name"] = NAME
    docs[0]["spec"]["generate"]["count"] = 2
    docs[1]["spec"]["topologyRef"] = NAME
    tc.apply(yaml.safe_dump_all(docs), ns)
    bench = wait_phase(tc, ns, NAME, ("Succeeded", "Failed"), 600)
    assert bench["status"]["phase"] == "Succeeded", bench["status"]

    keys = tc.kubectl_json("get", "secret", f"{NAME}-wanwide-keys", "-n", ns)
    values = {k: base64.b64decode(v).decode() for k, v in keys["data"].items()}
    assert {"admin-password", "db-root-password", "keystone-db-password", "fernet-0", "credential-1"} <= set(values)
    values |= {k: tc.s3[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    found = needles(values)
    # the scan sees what it looks for: the values are in the Secrets (base64) and the trial's copies
    assert len(scan("keys Secret", json.dumps(keys), found)) >= len(values) - 2
    trial_nss = [n["metadata"]["name"] for n in
                 tc.kubectl_json("get", "namespaces", "-l", f"wanwide.io/benchmark={NAME}")["items"]]
    assert trial_nss
    copies = tc.kubectl("get", "secrets", "-n", trial_nss[0], "-o", "json").stdout
    assert scan("trial Secrets", copies, found)

    hits: list[str] = []
    hits += scan("operator log", env["log"].read_text(), found)
    hits += scan("events", tc.kubectl("get", "events", "-A", "-o", "json").stdout, found)
    hits += scan("benchmark", tc.kubectl("get", "benchmark", NAME, "-n", ns, "-o", "json").stdout, found)
    hits += scan("trials", tc.kubectl("get", "trials", "-n", ns, "-o", "json").stdout, found)
    hits += scan("configmaps", tc.kubectl("get", "configmaps", "-A", "-o", "json").stdout, found)
    kinds = [k for k in tc.kubectl("api-resources", "--verbs=list", "--namespaced", "-o", "name").stdout.split()
             if k.split(".")[0] not in ("secrets", "events")]
    for tns in trial_nss:
        objs = tc.kubectl("get", ",".join(kinds), "-n", tns, "-o", "json", check=False)
        assert objs.returncode == 0 or "the server doesn't have a resource type" in objs.stderr, objs.stderr
        assert '"kind": "ConfigMap"' in objs.stdout  # rendered ConfigMaps were read
        hits += scan(f"objects in {tns}", objs.stdout, found)
    # every object of every bundle in the bucket
    s3 = s3_client(tc)
    objects = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
               for o in page.get("Contents", [])]
    assert any(f"/{NAME}/" in k for k in objects), "no bundle of this Benchmark in the bucket"
    for k in objects:
        hits += scan(f"s3://{BUCKET}/{k}", s3.get_object(Bucket=BUCKET, Key=k)["Body"].read(), found)
    # what a user fetches, and what the fetch prints
    fenv = {k: v for k, v in tc.env.items() if not k.startswith("AWS_") and k != "S3_ENDPOINT"}
    fenv |= {"HOME": str(tmp_path), "PYTHONPATH": str(REPO / "operator")}
    r = _wanwide("results", "fetch", NAME, "-n", ns, "--kubeconfig", str(tc.kubeconfig), "-o", str(tmp_path / "got"),
                 env=fenv)
    assert r.returncode == 0, r.stderr
    hits += scan("results fetch stdout", r.stdout, found) + scan("results fetch stderr", r.stderr, found)
    n, more = scan_tree(tmp_path / "got", found)
    assert n > 0
    hits += more
    # helm's values files (passwords) and logs are removed once helm is done; whatever else is there is scanned
    _, more = scan_tree(op.tmpdir, found)
    hits += more + [f"helm file left: {f.name}" for f in op.tmpdir.glob("*.yaml*")]
    assert hits == []
    tc.kubectl("delete", "benchmark", NAME, "-n", ns, "--timeout=240s")
