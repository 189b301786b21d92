"""Issue 45's control plane against the real charts: every release wanwide renders for a Nova Benchmark (both shapes)
is what the mirrored openstack-helm 2026.1.0 charts (rabbitmq, placement, glance, nova, with helm-toolkit:
hack/upstream-charts.sh) render with ``helm template``, confined as the operator confines it, in the hook order the
operator applies, and its workloads are what a trial's namespace admits (Pod Security baseline, checked by the API
server on a server-side dry run).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re

import pytest
import yaml

from tests.cluster.operator_env import OPENSTACK_CHARTS, keystone_chart, openstack_chart
from tests.test_nova_render import PW, REGIONS, STRETCHED, _plan
from wanwide.providers.kubernetes.controller.observe import also
from wanwide.providers.kubernetes.kube import helm
from wanwide.providers.kubernetes.render import chart_releases
from wanwide.providers.kubernetes.render.nova import COMPUTE_STATEFULSET

pytestmark = pytest.mark.cluster
CHART_OF = {"keystone": "keystone", "messaging": "rabbitmq", "placement": "placement", "glance": "glance",
            "nova": "nova", "nova-compute": "nova", "neutron": "neutron"}
HOOKS = {  # each service's hook Jobs, in the order they run (their weights)
    "keystone": ["keystone-db-sync", "keystone-domain-manage", "keystone-bootstrap"],
    "messaging": [],
    "placement": ["placement-db-sync", "placement-ks-service", "placement-ks-user", "placement-ks-endpoints"],
    "glance": ["glance-db-sync", "glance-ks-service", "glance-ks-endpoints", "glance-ks-user"],
    "nova": ["nova-db-sync", "nova-ks-service", "nova-ks-endpoints", "nova-ks-user"],
    "nova-compute": [],
    "neutron": ["neutron-db-sync", "neutron-ks-service", "neutron-ks-endpoints", "neutron-ks-user"],
}
WORKLOADS = ("Deployment", "StatefulSet", "Job")


@pytest.fixture(scope="module")
def charts(testcluster, request):
    paths = {n: str(openstack_chart(testcluster, n)) for n in OPENSTACK_CHARTS}
    paths["keystone"] = str(keystone_chart(testcluster)[0])
    mp = pytest.MonkeyPatch()
    mp.setenv("WANWIDE_HELM", str(testcluster.bin_dir / "helm"))
    request.addfinalizer(mp.undo)
    return paths


def _rendered(p, paths):
    renders = helm.Renders(workers=2, policy=helm.Policy(tuple(paths.values())))
    out = {}
    for (svc, region), rel in chart_releases(p, PW).items():
        rel = dataclasses.replace(rel, repo="", chart=paths[CHART_OF[svc]])
        out[(svc, region)] = renders.render(rel, p.labels(region, svc), also(p, rel.namespace))
    return out


def _secret(chart, name: str, key: str) -> str:
    o = next(o for o in chart.objects if o["kind"] == "Secret" and o["metadata"]["name"] == name)
    return base64.b64decode(o["data"][key]).decode()


@pytest.mark.parametrize("doc", [REGIONS, STRETCHED], ids=["regions", "stretched"])
def test_every_release_renders_with_the_mirrored_chart_in_hook_order_and_confined(testcluster, charts, doc):
    p = _plan(doc)
    rendered = _rendered(p, charts)
    cp = p.control_plane
    for (svc, region), c in rendered.items():
        jobs = [j.split("/", 1)[1] for s in c.stages for j in s.jobs]
        first = svc not in cp.services or cp.planes[0].where[svc] == region
        # the catalog's service entity is made once, by the first plane's release (render/openstack.py)
        want = HOOKS[svc] if first else [j for j in HOOKS[svc] if not j.endswith("-ks-service")]
        assert jobs == want, (svc, region, jobs)
        assert {o["metadata"]["namespace"] for o in c.objects} <= {p.namespace(x) for x in p.region_names} | {
            p.db_namespace}
        kinds = {o["kind"] for o in c.objects}
        assert "PersistentVolumeClaim" not in kinds and "DaemonSet" not in kinds and "Ingress" not in kinds
    for r in cp.regions_of("nova-compute"):
        c = rendered[("nova-compute", r)]
        (sts,) = [o for o in c.objects if o["kind"] == "StatefulSet"]
        assert sts["metadata"]["name"] == COMPUTE_STATEFULSET
        assert sts["spec"]["replicas"] == cp.count(r, "nova-compute")
        spec = sts["spec"]["template"]["spec"]
        assert not spec.get("hostPID") and not any("hostPath" in v for v in spec["volumes"])
        assert {"name": "OS_DEFAULT__HOST", "value": f"{r}-$(POD_NAME)"} in spec["containers"][0]["env"]
        assert not [o for o in c.objects if o["kind"] in ("Deployment", "Job")]  # computes only
        # its nova-compute.conf (its own, or the region's nova release's) runs the fake driver on its plane's bus
        etc = c if any(o["metadata"]["name"] == "nova-etc" for o in c.objects) else rendered[("nova", r)]
        conf = _secret(etc, "nova-etc", "nova-compute.conf")
        bus = p.namespace(cp.plane_of(r).where["messaging"])
        assert "compute_driver = fake.FakeDriver" in conf
        assert f"@rabbitmq-rabbitmq-0.rabbitmq.{bus}.svc.cluster.local:5672/nova" in conf
        assert "fake.FakeDriver" in _secret(etc, "nova-etc", "nova-ironic.conf")
    for plane in cp.planes:
        at = plane.where["nova"]
        nova = rendered[("nova", at)]
        conf = _secret(nova, "nova-etc", "nova.conf")
        db = plane.databases["nova"]
        host = "osdb" if db.place == "local" else f"galera-{db.region}"
        for schema in db.schemas:  # [api_database], [database]: the plan's schemas where the plan put them
            assert re.search(rf"connection = mysql\+pymysql://nova:[^@]+@{host}\.[^/]+/{schema}\b", conf), schema
        assert {o["metadata"]["name"] for o in nova.objects if o["kind"] == "Deployment"} == {
            "nova-api-osapi", "nova-conductor", "nova-scheduler"}
        bus = rendered[("messaging", plane.where["messaging"])]
        users = json.loads(_secret(bus, "rabbitmq-users-credentials", "RABBITMQ_USERS"))
        assert users["nova"]["auth"]["nova"]["password"] == PW["nova-password"]


def test_the_workloads_pass_the_trial_namespaces_pod_security(testcluster, charts):
    """Server-side dry runs into a namespace labelled as a trial's (enforce baseline): the API server warns about
    a workload whose pods the namespace would refuse, and refuses nothing here."""
    from wanwide.providers.kubernetes.render import POD_SECURITY_LABELS

    ns = testcluster.namespace("nova-psa")
    # as a trial's, but warning at baseline too (a workload is only warned about: its pods would be refused)
    testcluster.kubectl("label", "--overwrite", "namespace", ns, *(f"{k}=baseline" for k in POD_SECURITY_LABELS))
    assert POD_SECURITY_LABELS["pod-security.kubernetes.io/enforce"] == "baseline"
    try:
        p = _plan(STRETCHED)
        for (svc, region), c in _rendered(p, charts).items():
            for o in c.objects:
                if o["kind"] not in WORKLOADS:
                    continue
                o = {**o, "metadata": {**o["metadata"], "namespace": ns}}
                r = testcluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-",
                                        input=yaml.safe_dump(o), check=False)
                assert r.returncode == 0 and "violate PodSecurity" not in r.stderr, (svc, region, o["kind"],
                                                                                     o["metadata"]["name"], r.stderr)
    finally:
        testcluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)
