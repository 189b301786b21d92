"""A Nova Benchmark (issue 45, shape stretched) through the real operator with the real openstack-helm charts on the
loopback cluster (kwok runs the pods: see operator_env for what is stood in for): its services come up stage by stage
(the bus, Placement and Glance, Nova, then the fake computes of every region), each stage's hooks in order, the
computes' pods admitted by the trial namespaces' Pod Security, and the trial succeeds.
"""

from __future__ import annotations

import pytest
import yaml

from tests.cluster.operator_env import OPENSTACK_CHARTS, example, openstack_chart
from tests.cluster.test_operator import wait_phase
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan

pytestmark = [pytest.mark.cluster]  # gates CI since stop 57 (a whole cluster-tier session with it: docs/verification.md)
NAME = "nova-str"
SERVICE_OF = {"rabbitmq": "messaging", "placement": "placement", "glance": "glance", "nova": "nova",
              "neutron": "neutron"}


def _benchmark(tc) -> str:
    docs = list(yaml.safe_load_all(example(tc, "uniform-9.yaml", cleanup="Never")))
    b = next(d for d in docs if d["kind"] == "Benchmark")
    b["metadata"]["name"] = NAME
    del b["spec"]["topologyRef"]
    b["spec"]["topology"] = {"generate": {"count": 3}, "network": {"default": {"rtt": "20ms"}}}
    os_ = b["spec"]["openstack"]
    os_.update({"shape": "stretched", "controlRegion": "r1",
                "nova": {"enabled": True, "computes": 2, "computeRegions": ["r2", "r3"]}})
    for chart in OPENSTACK_CHARTS:
        os_.setdefault(SERVICE_OF[chart], {}).update(
            {"chartRepo": "", "chart": str(openstack_chart(tc, chart)), "chartVersion": "2026.1.0"})
    b["spec"]["workload"]["scenarios"] = [{"name": "authenticate_user_and_validate_token"},
                                          {"name": "GlanceImages.create_and_delete_image", "times": 2}]
    b["spec"]["timeouts"]["provisioning"] = "8m"
    return yaml.safe_dump(b)


def test_a_stretched_nova_benchmark_deploys_stage_by_stage_and_succeeds(env):
    tc, ns = env["tc"], env["ns"]
    text = _benchmark(tc)
    tc.apply(text, ns)
    bench = wait_phase(tc, ns, NAME, ("Succeeded", "Failed"), 720)
    trial = tc.kubectl_json("get", "trial", f"{NAME}-t000", "-n", ns)
    assert bench["status"]["phase"] == "Succeeded", (bench["status"], trial.get("status"))
    docs = load_documents([text.replace("namespace: default", f"namespace: {ns}")])
    b = docs.benchmarks[0].model_copy(update={"metadata": docs.benchmarks[0].metadata.model_copy(update={"namespace": ns})})
    (p,) = plan(b, docs.topology_for(docs.benchmarks[0]))
    mine = set(p.namespaces)
    ctl, computes = p.namespace("r1"), [p.namespace("r2"), p.namespace("r3")]
    sel = f"wanwide.io/trial={p.name}"
    jobs = {(j["metadata"]["namespace"], j["metadata"]["name"]): j
            for j in tc.kubectl_json("get", "jobs", "-A", "-l", sel)["items"] if j["metadata"]["namespace"] in mine}
    done = {k: j["status"]["completionTime"] for k, j in jobs.items()}
    started = {k: j["metadata"]["creationTimestamp"] for k, j in jobs.items()}
    # the control plane's services in the control region, their hooks in order, Nova's after Placement's and Glance's
    for svc, hooks in (("placement", ["db-sync", "ks-service", "ks-user", "ks-endpoints"]),
                       ("glance", ["db-sync", "ks-service", "ks-endpoints", "ks-user"]),
                       ("nova", ["db-sync", "ks-service", "ks-endpoints", "ks-user"])):
        names = [(ctl, f"{svc}-{h}") for h in hooks]
        assert all(n in done for n in names), (svc, sorted(jobs))
        assert all(done[a] <= started[b] for a, b in zip(names, names[1:], strict=False)), svc
    assert all(done[(ctl, f"{s}-ks-endpoints")] <= started[(ctl, "nova-db-sync")] for s in ("placement", "glance"))
    assert not [k for k in jobs if k[0] in computes and k[1].startswith(("nova", "placement", "glance"))]
    sts = {(s["metadata"]["namespace"], s["metadata"]["name"]): s
           for s in tc.kubectl_json("get", "statefulsets", "-A", "-l", sel)["items"] if s["metadata"]["namespace"] in mine}
    assert set(sts) == {(ctl, "rabbitmq-rabbitmq"), *((n, "nova-compute-ironic") for n in computes)}
    for n in computes:  # two fake computes each, their pods admitted (Pod Security baseline) and ready
        s = sts[(n, "nova-compute-ironic")]
        assert s["spec"]["replicas"] == 2 and s["status"].get("readyReplicas") == 2, s["status"]
        pods = tc.kubectl_json("get", "pods", "-n", n, "-l", "component=compute-ironic")["items"]
        assert len(pods) == 2 and not any(p_["spec"].get("hostPID") for p_ in pods)
        env_ = {e["name"]: e.get("value") for e in pods[0]["spec"]["containers"][0]["env"]}
        assert env_["OS_DEFAULT__HOST"] == f"{n.rsplit('-', 1)[1]}-$(POD_NAME)"
    deps = {(d["metadata"]["namespace"], d["metadata"]["name"])
            for d in tc.kubectl_json("get", "deployments", "-A", "-l", sel)["items"] if d["metadata"]["namespace"] in mine}
    assert {(ctl, d) for d in ("placement-api", "glance-api", "nova-api-osapi", "nova-conductor",
                               "nova-scheduler")} <= deps
    assert not [d for d in deps if d[0] in computes and d[1].startswith(("nova", "placement", "glance"))]
    pols = {(o["metadata"]["namespace"], o["metadata"]["name"])
            for o in tc.kubectl_json("get", "networkpolicies", "-A", "-l", sel)["items"]}
    assert {(ctl, "wanwide-messaging"), (ctl, "wanwide-nova"), (ctl, "wanwide-openstack-db")} <= pols
    events = tc.kubectl("get", "events", "-n", ns, "--field-selector", f"involvedObject.name={NAME}-t000").stdout
    assert "Succeeded" in events
