"""The operator reconciles Benchmarks on the real control plane (see operator_env for what is simulated)."""

from __future__ import annotations

import concurrent.futures
import itertools
import json
import time
from pathlib import Path

import pytest
import yaml

from tests.argocd import healths
from tests.cluster.operator_env import BUCKET, SA, example, owned
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan
from wanwide.providers.kubernetes.render import render_trial

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]


def wait_phase(tc, ns: str, name: str, phases: tuple[str, ...], timeout: float) -> dict:
    deadline = time.time() + timeout
    last = {}
    while time.time() < deadline:
        last = tc.kubectl_json("get", "benchmark", name, "-n", ns)
        if (last.get("status") or {}).get("phase") in phases:
            return last
        time.sleep(2)
    trials = tc.kubectl("get", "trials", "-n", ns, "-o", "wide", check=False).stdout
    raise AssertionError(f"{name} not in {phases} after {timeout}s: {last.get('status')}\n{trials}")


def test_uniform_example_succeeds_and_objects_match_the_plan(env):
    tc, ns = env["tc"], env["ns"]
    text = example(tc, "uniform-9.yaml", cleanup="Never")
    tc.apply(text, ns)
    # what a user scripts: kubectl wait on the Benchmark's condition, started before it can be true
    waiter = concurrent.futures.ThreadPoolExecutor(1).submit(
        tc.kubectl, "wait", "-n", ns, "--for=condition=Complete", "benchmark/uniform-9", "--timeout=420s",
        check=False, timeout=450)
    bench = wait_phase(tc, ns, "uniform-9", ("Succeeded", "Failed"), 420)
    assert bench["status"]["phase"] == "Succeeded", bench["status"]
    w = waiter.result(timeout=60)
    assert w.returncode == 0 and "condition met" in w.stdout, w.stdout + w.stderr
    w = tc.kubectl("wait", "-n", ns, "--for=condition=Complete", "trial/uniform-9-t000", "--timeout=30s", check=False)
    assert w.returncode == 0, w.stderr
    for obj in (bench, tc.kubectl_json("get", "trial", "uniform-9-t000", "-n", ns)):
        conds = {c["type"]: c for c in obj["status"]["conditions"]}
        assert (conds["Complete"]["status"], conds["Failed"]["status"], conds["Progressing"]["status"]) == \
            ("True", "False", "False"), conds
        assert conds["Complete"]["observedGeneration"] == obj["metadata"]["generation"]
    assert bench["status"]["progress"] == "1/1"
    uid8 = bench["metadata"]["uid"][:8]
    assert bench["status"]["resultsURI"] == f"s3://{BUCKET}/e2e/{ns}/{uid8}/uniform-9/"
    # every object the planner promised exists, with its labels, in its namespace
    docs = load_documents([text.replace("namespace: default", f"namespace: {ns}")])
    b = docs.benchmarks[0].model_copy(update={"metadata": docs.benchmarks[0].metadata.model_copy(update={"namespace": ns})})
    (p,) = plan(b, docs.topology_for(docs.benchmarks[0]))
    r = render_trial(p)
    for o in r.base + r.load:
        if o["kind"] in ("NetworkChaos", "Schedule", "Trial"):
            continue
        args = ["get", o["kind"].lower() if "." not in o["apiVersion"] else
                f"{o['kind'].lower()}.{o['apiVersion'].split('/')[0]}", o["metadata"]["name"]]
        if "namespace" in o["metadata"]:
            args += ["-n", o["metadata"]["namespace"]]
        live = tc.kubectl_json(*args)
        for k, v in o["metadata"]["labels"].items():
            assert live["metadata"]["labels"].get(k) == v, (o["kind"], o["metadata"]["name"], k)
    # the Trial is owned by the Benchmark; the WAN was removed before the end
    trial = tc.kubectl_json("get", "trial", "uniform-9-t000", "-n", ns)
    assert trial["metadata"]["ownerReferences"][0]["name"] == "uniform-9"
    assert trial["status"]["phase"] == "Succeeded"
    (b_health, b_msg), (t_health, t_msg) = healths([bench, trial])  # what Argo CD shows
    assert (b_health, t_health) == ("Healthy", "Healthy") and "trials 1/1" in b_msg and "results in s3://" in t_msg
    assert owned(tc, "networkchaos", ns, "uniform-9") == []
    events = tc.kubectl("get", "events", "-n", ns, "--field-selector", "involvedObject.name=uniform-9-t000").stdout
    for reason in ("Injecting", "VerifyingNetwork", "Loading", "Collecting", "Succeeded"):
        assert reason in events
    # the network was measured between the WAN's injection and the load: every probed pair within tolerance
    assert "VerifyingNetwork → Loading: " in events and "pair(s) within tolerance of the requested RTT" in events
    probed = [c for c in env["standin"].probed if c["trial"] == "t000" and c["benchmark"] == "uniform-9"]
    assert probed and {c["check"] for c in probed} == {1}
    # keystone per region: the chart rendered by helm template and applied by the operator in hook order
    # (no helm release: listed by label instead), the schema owner's hooks before any other region's
    regions = {p.namespace(x) for x in p.region_names}
    assert [r for r in json.loads(tc.helm("list", "-A", "-o", "json").stdout) if r["namespace"] in regions] == []
    sel = f"wanwide.io/trial={p.name},wanwide.io/role=keystone"
    api = {d["metadata"]["namespace"] for d in tc.kubectl_json("get", "deployments", "-A", "-l", sel)["items"]
           if d["metadata"]["name"] == "keystone-api"}
    assert api == regions
    jobs = {(j["metadata"]["namespace"], j["metadata"]["name"]): j
            for j in tc.kubectl_json("get", "jobs", "-A", "-l", sel)["items"] if j["metadata"]["namespace"] in regions}
    hooks = ["keystone-db-sync", "keystone-domain-manage", "keystone-bootstrap"]  # weights -4, 0, 5
    assert set(jobs) == {(n, h) for n in regions for h in hooks}
    for n in regions:
        for before, after in itertools.pairwise(hooks):  # a stage starts once the one before is Complete
            assert jobs[(n, before)]["status"]["completionTime"] <= jobs[(n, after)]["metadata"]["creationTimestamp"]
    owner = p.namespace(p.schema_region)
    assert all(jobs[(owner, "keystone-bootstrap")]["status"]["completionTime"]
               <= jobs[(n, "keystone-db-sync")]["metadata"]["creationTimestamp"] for n in regions - {owner})
    # deleting the Benchmark removes namespaces (cleanup: Never keeps them until then)
    tc.kubectl("delete", "benchmark", "uniform-9", "-n", ns, "--timeout=180s")
    nss = [n for n in tc.kubectl_json("get", "namespaces", "-l", "wanwide.io/benchmark=uniform-9")["items"]
           if n["metadata"]["name"] in p.namespaces]
    assert all(n["metadata"].get("deletionTimestamp") for n in nss)


def test_invalid_benchmark_gets_a_condition_not_trials(env):
    tc, ns = env["tc"], env["ns"]
    text = example(tc, "uniform-9.yaml")
    docs = list(yaml.safe_load_all(text))
    docs[1]["metadata"]["name"] = "missing-topo"
    docs[1]["spec"]["topologyRef"] = "nope"
    tc.apply(yaml.safe_dump(docs[1]), ns)
    deadline = time.time() + 60
    while time.time() < deadline:
        b = tc.kubectl_json("get", "benchmark", "missing-topo", "-n", ns)
        conds = {c["type"]: c for c in (b.get("status") or {}).get("conditions", [])}
        if "Valid" in conds:
            break
        time.sleep(1)
    assert conds["Valid"]["status"] == "False"
    assert "Topology 'nope' not found" in conds["Valid"]["message"]
    assert b["status"]["phase"] == "Invalid"
    # a script waiting for the end is not left hanging: an invalid spec is Failed (until fixed)
    w = tc.kubectl("wait", "-n", ns, "--for=condition=Failed", "benchmark/missing-topo", "--timeout=30s", check=False)
    assert w.returncode == 0, w.stderr
    assert conds["Failed"]["reason"] == "InvalidSpec" and conds["Complete"]["status"] == "False"
    assert conds["Failed"]["observedGeneration"] == b["metadata"]["generation"]
    assert healths([b]) == [("Degraded", f"invalid spec: {conds['Valid']['message']}")]  # what Argo CD shows
    assert tc.kubectl_json("get", "trials", "-n", ns, "-l", "wanwide.io/benchmark=missing-topo")["items"] == []
    tc.kubectl("delete", "benchmark", "missing-topo", "-n", ns)


def test_rbac_of_the_chart_service_account(env):
    tc = env["tc"]
    sa = f"system:serviceaccount:wanwide-system:{SA}"

    def can(*args):
        return tc.kubectl("auth", "can-i", *args, "--as", sa, check=False).stdout.strip() == "yes"

    assert can("get", "secrets", "-n", env["ns"])
    assert not can("get", "secrets", "-n", "kube-system")
    assert not can("get", "secrets", "-n", "default")
    assert not can("create", "networkchaos.chaos-mesh.org", "-n", "default")
    assert can("create", "namespaces")
    assert not can("create", "clusterrolebindings")
