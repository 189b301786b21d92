"""wanwide doctor's judgments: what a user reads for a ready cluster and for each thing missing."""

from __future__ import annotations

import copy

from wanwide.crds import crds
from wanwide.providers.kubernetes.doctor import checks
from wanwide.providers.kubernetes.doctor.checks import FAIL, OK, Observed


def _node(name: str, **labels: str) -> dict:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}}, "spec": {}}


def _deploy(ns: str, name: str, ready: bool = True) -> dict:
    return {"metadata": {"namespace": ns, "name": name}, "status": {"availableReplicas": 1 if ready else 0}}


def _daemon(node: str) -> dict:
    return {"metadata": {"namespace": "chaos-mesh", "name": f"chaos-daemon-{node}"},
            "spec": {"nodeName": node}, "status": {"phase": "Running"}}


def ready() -> Observed:
    expected = {c["metadata"]["name"]: c for c in crds()}
    nodes = [_node(f"n{i}", **{"wanwide.io/region": f"r{i}"}) for i in (1, 2, 3)]
    return Observed(
        crds=copy.deepcopy(expected), expected_crds=expected,
        served={"NetworkChaos": True, "MariaDB": True, "CrdbCluster": False},
        operators=[_deploy("wanwide-system", "wanwide")],
        dependency_deployments={"mariadb-operator": [_deploy("mariadb-operator", "mariadb-operator")]},
        nodes=nodes, chaos_daemons=[_daemon(n["metadata"]["name"]) for n in nodes],
        netem={n["metadata"]["name"]: (True, "qdisc netem 8001: root refcnt 2 limit 1000 delay 1ms") for n in nodes},
        storage_classes=[{"metadata": {"name": "local-path", "annotations": {
            "storageclass.kubernetes.io/is-default-class": "true"}}}],
        s3=(True, "http://s3:7070 bucket results writable"), backend="galera",
        regions={f"r{i}": {"wanwide.io/region": f"r{i}"} for i in (1, 2, 3)})


def _by_what(o: Observed) -> dict[str, checks.Check]:
    return {c.what: c for c in checks.all_checks(o)}


def test_a_prepared_cluster_is_all_green():
    table = checks.all_checks(ready())
    assert [c.state for c in table] == [OK] * len(table), checks.table(table)
    assert {c.what for c in table} >= {"wanwide CRDs", "wanwide operator", "Chaos Mesh", "chaos-daemon on every region node",
                                       "netem on every region node", "mariadb-operator", "storage for Galera",
                                       "nodes for the placement", "results store"}
    assert "fix:" not in checks.table(table)


def test_a_node_without_netem_is_named_with_the_kernel_module_to_install():
    o = ready()
    o.netem["n2"] = (False, 'Error: Specified qdisc kind is unknown.')
    c = _by_what(o)["netem on every region node"]
    assert c.state == FAIL and "n2" in c.detail and "Specified qdisc kind is unknown" in c.detail
    assert "sch_netem" in c.fix
    assert "fix: the kernel needs the sch_netem module" in checks.table(checks.all_checks(o))


def test_missing_or_stale_crds_say_how_to_install_or_upgrade_them():
    o = ready()
    del o.crds["trials.wanwide.io"]
    c = _by_what(o)["wanwide CRDs"]
    assert c.state == FAIL and "trials.wanwide.io" in c.detail and "crds/" in c.fix
    o = ready()
    o.crds["benchmarks.wanwide.io"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"].pop("spec")
    c = _by_what(o)["wanwide CRDs"]
    assert c.state == FAIL and "benchmarks.wanwide.io" in c.detail and "helm upgrade" in c.fix


def test_a_region_no_node_carries_the_label_of_names_the_label():
    o = ready()
    o.regions["r4"] = {"wanwide.io/region": "r4"}
    c = _by_what(o)["nodes for the placement"]
    assert c.state == FAIL and "r4 (wanwide.io/region=r4)" in c.detail
    assert "kubectl label node NODE wanwide.io/region=r4" in c.fix


def test_regions_pinned_to_nodes_their_pods_cannot_use_fail_naming_the_taint():
    """A region whose only nodes carry a taint the region pods do not tolerate is not placed (it would stay
    Pending): the check fails naming the node and the taint, and passes once the pods tolerate it."""
    o = ready()
    o.nodes[2]["spec"]["taints"] = [{"key": "wanwide.io/vm-node", "value": "true", "effect": "NoSchedule"}]
    c = _by_what(o)["nodes for the placement"]
    assert c.state == FAIL, c
    assert "r3 on n3 (taint wanwide.io/vm-node=true:NoSchedule)" in c.detail and "spec.runner.pod.tolerations" in c.fix
    o.tolerations = [{"key": "wanwide.io/vm-node", "operator": "Exists"}]
    assert _by_what(o)["nodes for the placement"].state == OK
    o.tolerations, o.nodes[2]["spec"] = [], {"unschedulable": True}
    assert "(cordoned)" in _by_what(o)["nodes for the placement"].detail


def test_chaos_daemon_must_run_on_every_node_that_hosts_a_region():
    o = ready()
    o.chaos_daemons = o.chaos_daemons[:2]
    c = _by_what(o)["chaos-daemon on every region node"]
    assert c.state == FAIL and "n3" in c.detail and "tolerations" in c.fix
    o.regions = {"r1": {"wanwide.io/region": "r1"}}  # only n1 hosts a region now
    assert _by_what(o)["chaos-daemon on every region node"].state == OK


def test_dependencies_missing():
    o = ready()
    o.served["NetworkChaos"] = False
    o.served["MariaDB"] = False
    o.storage_classes = []
    o.operators = []
    by = _by_what(o)
    assert by["Chaos Mesh"].state == FAIL and "Chaos Mesh" in by["Chaos Mesh"].fix
    assert by["mariadb-operator"].state == FAIL and "MariaDB is not served" in by["mariadb-operator"].detail
    assert by["storage for Galera"].state == FAIL and "StorageClass" in by["storage for Galera"].fix
    assert by["wanwide operator"].state == FAIL and "helm install" in by["wanwide operator"].fix
    o = ready()
    o.backend, o.regions = "mariadb", {"r1": None}
    assert "storage for Galera" not in _by_what(o)  # only Galera claims volumes


def test_an_unwritable_bucket_fails():
    o = ready()
    o.s3 = (False, "http://s3:7070 bucket results: ClientError: NoSuchBucket")
    c = _by_what(o)["results store"]
    assert c.state == FAIL and "NoSuchBucket" in c.detail and "spec.results.s3" in c.fix


def test_a_bucket_behind_a_cluster_name_is_written_from_a_pod_as_the_runner_would(monkeypatch):
    """From a laptop, s3.wanwide-system.svc does not resolve: the doctor writes from a pod in the
    Benchmark's namespace, with the Secret's keys, under restricted Pod Security."""
    from wanwide.providers.kubernetes.doctor import gather

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert gather.cluster_only("http://s3.wanwide-system.svc:7070")
    assert gather.cluster_only("http://minio:9000")
    assert gather.cluster_only("http://s3.x.svc.cluster.local")
    assert not gather.cluster_only("https://s3.eu-west-1.amazonaws.com")
    assert not gather.cluster_only("http://localhost:9000")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")  # the operator's preflight: in the cluster
    assert not gather.cluster_only("http://s3.wanwide-system.svc:7070")
    bench = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": "b", "namespace": "lab"},
             "spec": {"topologyRef": "t", "results": {"s3": {"endpoint": "http://s3.wanwide-system.svc:7070",
                                                             "bucket": "res", "secretRef": {"name": "keys"}}},
                      "workload": {"scenarios": [{"name": "authenticate_user_and_validate_token"}]}}}
    from wanwide.core.api.benchmark import Benchmark

    s3 = Benchmark.model_validate(bench).spec.results.s3
    job = gather.bucket_job(s3, "lab", "p/.wanwide-doctor-x", "img", "abc")
    assert job["metadata"]["namespace"] == "lab"
    pod = job["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") or e["valueFrom"]["secretKeyRef"] for e in pod["containers"][0]["env"]}
    assert env["S3_ENDPOINT"] == "http://s3.wanwide-system.svc:7070" and env["BUCKET"] == "res"
    assert env["AWS_ACCESS_KEY_ID"] == {"name": "keys", "key": "AWS_ACCESS_KEY_ID"}
    assert pod["securityContext"]["runAsNonRoot"] and pod["containers"][0]["securityContext"]["capabilities"] == {
        "drop": ["ALL"]}
