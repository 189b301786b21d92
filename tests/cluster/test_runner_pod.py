"""spec.runner.pod on a real API server: the ServiceAccount (with its cloud-identity annotation) and the pull
Secret are copied into each region's namespace, the runner and probe pods run as and where it says; what the
API server refuses (a malformed affinity) fails the trial at once, saying why, rather than being retried
until a phase times out."""

from __future__ import annotations

import time

import pytest

from tests.cluster.operator_env import three_regions
from tests.cluster.test_operator import wait_phase

pytestmark = pytest.mark.cluster
ROLE = "arn:aws:iam::111122223333:role/wanwide-rally"
POD = {
    "serviceAccountName": "rally",
    "imagePullSecrets": ["registry-keys"],
    "nodeSelector": {"wanwide.test/pool": "bench"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "bench", "effect": "NoSchedule"}],
    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "1Gi"}},
}


def _bench(tc, name: str, pod: dict) -> str:
    # pinned by wanwide.io/region: the kwok nodes carry it
    return three_regions(tc, name, {"mode": "regionLabel"}, runner={"pod": pod})


def _jobs(tc, bench: str, role: str) -> list[dict]:
    sel = f"wanwide.io/benchmark={bench},wanwide.io/role={role}"
    return tc.kubectl_json("get", "jobs", "-A", "-l", sel)["items"]


def test_runner_pods_run_as_and_where_spec_runner_pod_says(env):
    tc, ns = env["tc"], env["ns"]
    tc.kubectl("create", "serviceaccount", "rally", "-n", ns)
    tc.kubectl("annotate", "serviceaccount", "rally", "-n", ns, f"eks.amazonaws.com/role-arn={ROLE}")
    tc.kubectl("create", "secret", "docker-registry", "registry-keys", "-n", ns, "--docker-server=r.example",
               "--docker-username=u", "--docker-password=p")
    # kwok nodes carrying the extra label: the runners stay schedulable
    for n in tc.kubectl("get", "nodes", "-o", "name", "-l", "type=kwok").stdout.split():
        tc.kubectl("label", "--overwrite", n, "wanwide.test/pool=bench")
    # a malformed affinity, refused by the API server when the first Job is created
    bad = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                         {"nodeSelectorTerms": []}}}}
    tc.apply(_bench(tc, "runner-pod", POD), ns)
    tc.apply(_bench(tc, "refused-pod", bad), ns)

    refused = wait_phase(tc, ns, "refused-pod", ("Succeeded", "Failed"), 420)
    trial = tc.kubectl_json("get", "trial", "refused-pod-t000", "-n", ns)["status"]
    assert (refused["status"]["phase"], trial["reason"]) == ("Failed", "ObjectRefused"), trial
    assert "the API server refused Job" in trial["message"] and "nodeSelectorTerms" in trial["message"], trial
    assert "bug" not in trial["message"]

    bench = wait_phase(tc, ns, "runner-pod", ("Succeeded", "Failed"), 420)
    assert bench["status"]["phase"] == "Succeeded", bench["status"]
    runners, probes = _jobs(tc, "runner-pod", "load"), _jobs(tc, "runner-pod", "probe")
    assert runners and probes
    for job in runners + probes:
        pod, where = job["spec"]["template"]["spec"], job["metadata"]["namespace"]
        assert pod["serviceAccountName"] == "rally" and pod["imagePullSecrets"] == [{"name": "registry-keys"}]
        assert pod["tolerations"] == POD["tolerations"]
        assert pod["nodeSelector"]["wanwide.test/pool"] == "bench"
        assert pod["nodeSelector"]["wanwide.io/region"] == where.rsplit("-", 1)[1]
        sa = tc.kubectl_json("get", "serviceaccount", "rally", "-n", where)
        assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == ROLE
        keys = tc.kubectl_json("get", "secret", "registry-keys", "-n", where)
        assert keys["type"] == "kubernetes.io/dockerconfigjson" and ".dockerconfigjson" in keys["data"]
    for job in runners:
        assert job["spec"]["template"]["spec"]["containers"][0]["resources"] == POD["resources"]
    # the pods the Jobs made were admitted with that identity
    pods = tc.kubectl_json("get", "pods", "-n", runners[0]["metadata"]["namespace"],
                           "-l", f"job-name={runners[0]['metadata']['name']}")["items"]
    assert pods and all(p["spec"]["serviceAccountName"] == "rally" for p in pods)
    for name in ("runner-pod", "refused-pod"):
        tc.kubectl("delete", "benchmark", name, "-n", ns, "--wait=false")


def test_a_missing_service_account_is_an_invalid_spec_naming_the_field(env):
    tc, ns = env["tc"], env["ns"]
    tc.apply(_bench(tc, "no-sa", {"serviceAccountName": "nobody"}), ns)
    deadline = time.time() + 60
    conds: dict = {}
    while time.time() < deadline and "Valid" not in conds:
        b = tc.kubectl_json("get", "benchmark", "no-sa", "-n", ns)
        conds = {c["type"]: c for c in (b.get("status") or {}).get("conditions", [])}
        time.sleep(1)
    assert conds["Valid"]["status"] == "False"
    msg = conds["Valid"]["message"]
    assert "spec.runner.pod.serviceAccountName" in msg and f"ServiceAccount {ns}/nobody not found" in msg
    assert tc.kubectl_json("get", "trials", "-n", ns, "-l", "wanwide.io/benchmark=no-sa")["items"] == []
    tc.kubectl("delete", "benchmark", "no-sa", "-n", ns)
