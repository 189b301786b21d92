"""spec.runner.pod and credential-less S3 reach the Rally and probe Jobs as a real cluster needs them."""

from __future__ import annotations

import json

import yaml

from tests.plan.specs import benchmark
from wanwide.core.contracts import s3_target
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan
from wanwide.providers.kubernetes.controller.benchmark import with_runner_image
from wanwide.providers.kubernetes.render import render_trial
from wanwide.providers.kubernetes.render.rally import JOB, RUNNER_RESOURCES, WATCH, probe_jobs

POD = {
    "serviceAccountName": "rally",
    "imagePullSecrets": ["registry-keys"],
    "nodeSelector": {"pool": "bench", "wanwide.io/region": "elsewhere"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "bench", "effect": "NoSchedule"}],
    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                           "labelSelector": {"matchLabels": {"app": "rally"}}}}]}},
    "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"memory": "4Gi"}},
}


def _plans(doc: dict) -> list:
    d = load_documents([yaml.safe_dump(doc)])
    b = d.benchmarks[0]
    return plan(b, d.topology_for(b))


def _pods(p, kind: str = "runner") -> list[dict]:
    if kind in ("runner", "watch"):
        name = JOB if kind == "runner" else WATCH
        jobs = [o for o in render_trial(p).load if o["kind"] == "Job" and o["metadata"]["name"] == name]
    else:
        jobs = [o for o in probe_jobs(p, 1, s3_target(p.spec.results.s3)) if o["kind"] == "Job"]
    assert jobs, f"no {kind} Job rendered"
    return [j["spec"]["template"]["spec"] for j in jobs]


def test_runner_and_probe_pods_run_as_and_where_spec_runner_pod_says():
    doc = benchmark("mariadb", "uniform", runner={"pod": POD}, workload={
        "load": "high", "scenarios": [{"name": "authenticate_user_and_validate_token"}]})
    doc["spec"]["topology"]["placement"] = {"mode": "regionLabel"}  # pinned by wanwide.io/region
    (p, *_) = _plans(doc)
    for kind in ("runner", "probe", "watch"):
        for pod in _pods(p, kind):
            assert pod["serviceAccountName"] == "rally"
            assert pod["imagePullSecrets"] == [{"name": "registry-keys"}]
            assert pod["tolerations"] == POD["tolerations"]
            assert pod["affinity"] == POD["affinity"]
            assert pod["nodeSelector"]["pool"] == "bench"
            # the security context is not the user's to loosen
            assert pod["securityContext"]["runAsNonRoot"] is True
    # the region's placement wins over the extra selector: a runner stays in its region
    regions = sorted(pod["nodeSelector"]["wanwide.io/region"] for pod in _pods(p))
    assert regions == sorted(p.load_regions) and "elsewhere" not in regions, regions
    # resources: the runner's only; a probe keeps its small ones
    runner = _pods(p)[0]["containers"][0]
    assert runner["resources"] == POD["resources"]
    probe = _pods(p, "probe")[0]["containers"][0]
    assert probe["resources"]["requests"]["cpu"] == "50m"


def test_without_runner_pod_the_defaults_hold():
    (p, *_) = _plans(benchmark("mariadb", "uniform"))
    pod = _pods(p)[0]
    assert pod["containers"][0]["resources"] == RUNNER_RESOURCES
    assert not {"serviceAccountName", "imagePullSecrets", "tolerations", "affinity"} & set(pod)


def test_the_operators_runner_pod_defaults_fill_what_the_benchmark_leaves_unset():
    chart = {"serviceAccountName": "chart-sa", "imagePullSecrets": ["chart-keys"],
             "tolerations": [{"operator": "Exists"}]}
    own = benchmark("mariadb", "uniform", runner={"pod": {"serviceAccountName": "mine"}})
    merged = with_runner_image(own, "wanwide:1", chart)
    assert merged["spec"]["runner"]["pod"] == {"serviceAccountName": "mine", "imagePullSecrets": ["chart-keys"],
                                                "tolerations": [{"operator": "Exists"}]}
    assert merged["spec"]["runner"]["image"] == "wanwide:1"
    assert own["spec"]["runner"] == {"pod": {"serviceAccountName": "mine"}}, "the Benchmark itself is not changed"
    (p, *_) = _plans(merged)
    assert _pods(p)[0]["serviceAccountName"] == "mine"


def test_s3_without_a_secret_ref_uses_the_pods_identity():
    doc = benchmark("mariadb", "uniform", runner={"pod": {"serviceAccountName": "irsa-rally"}})
    del doc["spec"]["results"]["s3"]["secretRef"]
    (p, *_) = _plans(doc)
    r = render_trial(p)
    objs = r.objects
    # no Secret is copied into the trial's namespaces, and no pod reads keys from one
    assert not [o for o in objs if o["kind"] == "Secret" and "s3" in o["metadata"]["name"]]
    for kind in ("runner", "probe", "watch"):
        for pod in _pods(p, kind):
            env = {e["name"] for e in pod["containers"][0].get("env") or []}
            assert not {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} & env, (kind, env)
            assert pod["serviceAccountName"] == "irsa-rally"
    config = next(o for o in objs if o["kind"] == "ConfigMap" and "runner.json" in (o.get("data") or {}))
    target = json.loads(config["data"]["runner.json"])["results"]["s3"]
    assert target["ambient"] is True


def test_with_a_secret_ref_the_keys_come_from_it():
    (p, *_) = _plans(benchmark("mariadb", "uniform"))
    env = {e["name"]: e for e in _pods(p)[0]["containers"][0]["env"]}
    assert env["AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"]
