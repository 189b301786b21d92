"""Issue 45's control plane as the Kubernetes provider renders it: a release per service and plane, the fake computes
of every region, their databases, passwords and NetworkPolicies (render/rabbitmq, placement, glance, nova, osdb,
netpol). The charts themselves render these values in tests/cluster/test_nova_charts.py.

Regenerate the golden files on purpose with ``UPDATE_GOLDEN=1 pytest tests/test_nova_render.py`` and review the diff.
"""

from __future__ import annotations

import base64
import os
from typing import Any

import pytest
import yaml

from tests.plan.specs import benchmark
from wanwide.cli import plan_stream
from wanwide.core import lifecycle as lc
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import TrialPlan, plan
from wanwide.providers.kubernetes.controller import deploy, keys
from wanwide.providers.kubernetes.kube import readiness
from wanwide.providers.kubernetes.render import (
    CHARTS,
    chart_releases,
    netpol,
    osdb,
    render_trial,
    secrets,
)
from wanwide.providers.kubernetes.render.chart import ChartError, patched
from wanwide.providers.kubernetes.render.keystone import HelmRelease
from wanwide.providers.kubernetes.render.nova import (
    COMPUTE_STATEFULSET,
    FAKE_DRIVER,
    compute_patches,
)

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
SCENARIOS = [{"name": "authenticate_user_and_validate_token", "times": 10, "concurrency": 2},
             {"name": "GlanceImages.create_and_delete_image", "times": 4, "concurrency": 1}]
PW = {k: f"pw-{k}" for k in ("admin-password", "db-root-password", "keystone-db-password", "nova-password",
                             "placement-password", "glance-password", "neutron-password", "rabbitmq-password")}


def _doc(backend: str, shape: str, **openstack: Any) -> dict[str, Any]:
    d = benchmark(backend, "uniform")
    d["metadata"]["name"] = f"nova-{shape[:4]}-{backend[:6]}"
    d["spec"]["openstack"] = {"shape": shape, "nova": {"enabled": True, "computes": 2}, **openstack}
    d["spec"]["workload"]["scenarios"] = [dict(s) for s in SCENARIOS]
    return d


def _plan(doc: dict[str, Any]) -> TrialPlan:
    docs = load_documents([yaml.safe_dump(doc)])
    (bench,) = docs.benchmarks
    return plan(bench, docs.topology_for(bench))[0]


REGIONS = _doc("mariadb", "regions", neutron={"enabled": True})
REGIONS["spec"]["workload"]["scenarios"].append({"name": "NovaServers.boot_and_delete_server", "times": 2})
STRETCHED = _doc("galera", "stretched", controlRegion="r2", messaging={"fileDescriptors": 256},
                 nova={"enabled": True, "computes": 3, "computeRegions": ["r1", "r3"], "database": "shared"})


@pytest.mark.parametrize(("name", "doc"), [("nova-regions-mariadb", REGIONS), ("nova-stretched-galera", STRETCHED)])
def test_golden(name: str, doc: dict[str, Any]) -> None:
    text = plan_stream([yaml.safe_dump(doc)], 0, False, False)
    path = os.path.join(GOLDEN, f"{name}.yaml")
    if os.environ.get("UPDATE_GOLDEN"):
        with open(path, "w") as f:
            f.write(text)
    with open(path) as f:
        assert text == f.read(), f"rendering changed: review, then UPDATE_GOLDEN=1 to accept ({path})"


def test_every_deploy_stage_of_a_service_has_its_renderer_and_one_release_per_region():
    for doc in (REGIONS, STRETCHED):
        p = _plan(doc)
        rels = chart_releases(p, PW)
        regions: dict[str, set[str]] = {}
        for s in lc.stages(p):
            if s.service not in ("namespaces", "database", "openstack-db"):
                assert s.service in CHARTS, s
                regions.setdefault(s.service, set()).update(s.regions)
        assert {svc: {r for (x, r) in rels if x == svc} for svc in regions} == regions
        assert {"keystone", "messaging", "placement", "glance", "nova", "nova-compute"} <= set(regions)


def test_shape_regions_each_region_runs_its_own_services_on_its_own_bus_database_and_keystone():
    p = _plan(REGIONS)
    rels = chart_releases(p, PW)
    for r in p.region_names:
        ns = p.namespace(r)
        nova = rels[("nova", r)].values
        ep = nova["endpoints"]
        assert ep["oslo_messaging"]["namespace"] == ns and ep["oslo_messaging"]["path"] == "/nova"
        assert ep["oslo_messaging"]["auth"]["nova"]["password"] == "pw-nova-password"
        assert {ep[k]["namespace"] for k in ("identity", "oslo_db", "oslo_db_api", "oslo_db_cell0", "placement",
                                            "image", "compute")} == {ns}
        assert ep["oslo_db"]["hosts"]["default"] == "osdb"  # database: local (the default): the region's own MariaDB
        assert [ep[k]["path"] for k in ("oslo_db_api", "oslo_db_cell0", "oslo_db")] == ["/nova_api", "/nova_cell0",
                                                                                       "/nova"]
        assert ep["identity"]["auth"]["nova"]["region_name"] == r  # its services are in its own region's catalog
        compute = rels[("nova-compute", r)]
        assert compute.namespace == ns and compute.values["pod"]["replicas"]["compute_ironic"] == 2
        # the region's nova release owns nova-etc, nova-bin and the keystone sections; the compute release mounts them
        m = compute.values["manifests"]
        assert m["statefulset_compute_ironic"] and not m["configmap_etc"] and not m["deployment_api_osapi"]
        assert compute.values["pod"]["etcSources"]["nova_compute_ironic"] == [{"secret": {"name": "nova-ks-etc"}}]
        assert not rels[("nova", r)].values["manifests"]["statefulset_compute_ironic"]
        bus = rels[("messaging", r)].values
        assert bus["conf"]["users"] == {u: {"auth": {u: {"username": u, "password": f"pw-{u}-password"}},
                                            "path": f"/{u}"} for u in ("nova", "neutron")}
        neutron = rels[("neutron", r)].values
        assert neutron["endpoints"]["oslo_messaging"]["namespace"] == ns and neutron["network"]["backend"] == []
        assert not any(v for k, v in neutron["manifests"].items() if k.startswith("daemonset_"))
        assert ep["network"]["namespace"] == ns  # Nova asks its own region's Neutron
        assert bus["volume"]["enabled"] is False  # no PersistentVolumeClaim
        assert rels[("glance", r)].values["storage"] == "file" and not rels[("glance", r)].values["manifests"]["pvc_images"]


def test_stretched_one_control_plane_in_the_control_region_and_computes_in_theirs_reaching_it():
    p = _plan(STRETCHED)
    rels = chart_releases(p, PW)
    ctl = p.namespace("r2")
    assert sorted(k for k in rels if k[0] != "keystone") == [
        ("glance", "r2"), ("messaging", "r2"), ("nova", "r2"), ("nova-compute", "r1"), ("nova-compute", "r3"),
        ("placement", "r2")]
    for r in ("r1", "r3"):
        c = rels[("nova-compute", r)]
        ep = c.values["endpoints"]
        assert c.namespace == p.namespace(r) and c.values["pod"]["replicas"]["compute_ironic"] == 3
        assert ep["oslo_messaging"]["namespace"] == ctl  # the bus across the WAN
        assert ep["placement"]["namespace"] == ctl and ep["image"]["namespace"] == ctl
        assert ep["identity"]["namespace"] == p.namespace(r)  # its own region's Keystone …
        assert ep["identity"]["auth"]["placement"]["region_name"] == "r2"  # … looking the services up in r2's catalog
        # no nova release here: this one renders the configuration its StatefulSet mounts
        m = c.values["manifests"]
        assert m["configmap_etc"] and m["configmap_bin"] and m["secret_ks_etc"] and not m["job_db_sync"]
        assert "etcSources" not in c.values["pod"]
        assert c.patches == compute_patches(r)
    # nova's databases are names in the trial's Galera, each region's member answering its own region
    nova = rels[("nova", "r2")].values["endpoints"]
    assert nova["oslo_db"]["hosts"]["default"] == "galera-r2" and nova["oslo_db"]["namespace"] == p.db_namespace


def test_fake_computes_run_the_fake_driver_with_a_host_name_per_region_and_pod():
    p = _plan(STRETCHED)
    c = chart_releases(p, PW)[("nova-compute", "r3")]
    assert c.values["conf"]["nova_ironic"]["DEFAULT"]["compute_driver"] == FAKE_DRIVER
    assert c.values["conf"]["nova"]["DEFAULT"]["compute_driver"] == FAKE_DRIVER
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": COMPUTE_STATEFULSET}, "spec": {
        "template": {"spec": {"hostPID": True, "containers": [{"name": COMPUTE_STATEFULSET}],
                              "volumes": [{"name": n, "emptyDir": {}} for n in
                                          ("pod-tmp", "oslo-lock-path", "nova-bin", "nova-etc", "nova-etc-snippets")]
                              + [{"name": "varlibironic", "hostPath": {"path": "/var/lib/ironic"}}]}}}}
    (out,) = patched([sts], c.patches)
    spec = out["spec"]["template"]["spec"]
    assert "hostPID" not in spec and spec["volumes"][5] == {"name": "varlibironic", "emptyDir": {}}
    env = {e["name"]: e for e in spec["containers"][0]["env"]}
    assert env["OS_DEFAULT__HOST"]["value"] == "r3-$(POD_NAME)"
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert sts["spec"]["template"]["spec"]["hostPID"] is True  # the rendered object itself is left as it was


def test_a_patch_that_no_longer_fits_the_chart_is_an_error_naming_what_it_found():
    other = {"kind": "StatefulSet", "metadata": {"name": COMPUTE_STATEFULSET},
             "spec": {"template": {"spec": {"hostPID": False}}}}
    with pytest.raises(ChartError, match=r"/spec/template/spec/hostPID: the chart renders False, not True"):
        patched([other], compute_patches("r1"))
    with pytest.raises(ChartError, match="renders no StatefulSet nova-compute-ironic to patch"):
        patched([], compute_patches("r1"))


def test_the_bus_runs_under_the_open_file_limit_asked_for():
    (bus,) = [r for (svc, _), r in chart_releases(_plan(STRETCHED), PW).items() if svc == "messaging"]
    sts = {"kind": "StatefulSet", "metadata": {"name": "rabbitmq-rabbitmq"}, "spec": {"template": {"spec": {
        "containers": [{"name": "rabbitmq", "command": ["/tmp/rabbitmq-start.sh"]}]}}}}
    (out,) = patched([sts], bus.patches)
    assert out["spec"]["template"]["spec"]["containers"][0]["command"] == [
        "bash", "-c", "ulimit -n 256 && exec /tmp/rabbitmq-start.sh"]
    assert all(not r.patches for (svc, _), r in chart_releases(_plan(REGIONS), PW).items() if svc == "messaging")


def test_databases_local_a_mariadb_per_region_shared_names_in_the_trials_database():
    p = _plan(REGIONS)
    local = osdb.local(p)
    assert sorted((o["kind"], o["metadata"]["namespace"]) for o in local if o["kind"] == "MariaDB") == [
        ("MariaDB", p.namespace(r)) for r in p.region_names]
    r1 = [o for o in local if o["metadata"]["namespace"] == p.namespace("r1")]
    assert sorted(o["spec"]["name"] for o in r1 if o["kind"] == "Database") == [
        "glance", "neutron", "nova", "nova_api", "nova_cell0", "placement"]
    users = {o["metadata"]["name"]: o["spec"]["passwordSecretKeyRef"] for o in r1 if o["kind"] == "User"}
    assert users == {s: {"name": secrets.CREDENTIALS, "key": f"{s}-password"}
                     for s in ("glance", "neutron", "nova", "placement")}
    grants = {(o["spec"]["username"], o["spec"]["database"]) for o in r1 if o["kind"] == "Grant"}
    assert ("nova", "nova_cell0") in grants and ("placement", "placement") in grants and len(grants) == 6
    assert all(o["spec"].get("mariaDbRef", {"name": "osdb"})["name"] == "osdb" for o in r1)
    assert osdb.shared(p) == []
    s = _plan(STRETCHED)
    shared = osdb.shared(s)
    assert {o["metadata"]["namespace"] for o in shared} == {s.db_namespace}
    assert sorted(o["spec"]["name"] for o in shared if o["kind"] == "Database") == ["nova", "nova_api", "nova_cell0"]
    assert {o["spec"]["mariaDbRef"]["name"] for o in shared} == {"galera"}
    # the stages wait for them: the shared ones with the trial's database, the local ones in openstack-db
    stages = {st.name: st for st in lc.stages(s)}
    assert "openstack-db" in stages and "database" in stages


def test_service_passwords_reach_only_trials_that_deploy_the_services():
    p = _plan(STRETCHED)
    creds = [o for o in secrets.render(p) if o["metadata"]["name"] == secrets.CREDENTIALS]
    keys_ = set(creds[0]["metadata"]["annotations"]["wanwide.io/copy-keys"].split(","))
    assert {"nova-password=nova-password", "rabbitmq-password=rabbitmq-password", "glance-password=glance-password",
            "placement-password=placement-password"} <= keys_ and "neutron-password=neutron-password" not in keys_
    plain = _plan(benchmark("mariadb", "uniform"))
    assert secrets.password_keys(plain) == secrets.KEY_FIELDS["passwords"]


def test_a_key_secret_made_before_the_services_gets_their_passwords_and_keeps_the_rest():
    old = {k: v for k, v in keys.generate().items() if k not in secrets.KEY_FIELDS["service-passwords"]}
    done = keys.completed(old)
    assert done is not None and {k: done[k] for k in old} == old
    assert set(done) - set(old) == set(secrets.KEY_FIELDS["service-passwords"])
    assert all(len(base64.b64decode(done[k])) >= 24 for k in secrets.KEY_FIELDS["service-passwords"])
    assert keys.completed(done) is None


def _policies(p: TrialPlan, region: str) -> dict[str, dict[str, Any]]:
    ns = p.namespace(region)
    return {o["metadata"]["name"]: o for o in netpol.render(p) if o["metadata"]["namespace"] == ns}


def _from(policy: dict[str, Any], port: int) -> set[tuple[str, str]]:
    out = set()
    for rule in policy["spec"]["ingress"]:
        if rule.get("ports") == [{"protocol": "TCP", "port": port}]:
            for peer in rule["from"]:
                out.add((peer["namespaceSelector"]["matchLabels"][netpol.NS_NAME],
                         peer["podSelector"]["matchLabels"]["wanwide.io/role"]))
    return out


def test_network_policies_admit_exactly_the_links_of_the_stretched_control_plane():
    p = _plan(STRETCHED)
    ns = {r: p.namespace(r) for r in p.region_names}
    ctl = _policies(p, "r2")
    # the bus in r2: Nova's services there and the computes of r1 and r3, on AMQP, and its own nodes among themselves
    assert _from(ctl["wanwide-messaging"], 5672) == {(ns["r2"], "nova"), (ns["r1"], "nova-compute"),
                                                     (ns["r3"], "nova-compute")}
    assert ctl["wanwide-messaging"]["spec"]["ingress"][-1] == {"from": [{
        "namespaceSelector": {"matchLabels": {netpol.NS_NAME: ns["r2"]}},
        "podSelector": {"matchLabels": {"wanwide.io/trial": p.name, "wanwide.io/role": "messaging"}}}]}
    assert _from(ctl["wanwide-placement"], 8778) == {(ns["r2"], "nova"), (ns["r1"], "nova-compute"),
                                                     (ns["r3"], "nova-compute")}
    # Glance: Nova, the computes, and Rally of every load region (uniform load: all three)
    assert _from(ctl["wanwide-glance"], 9292) == {(ns["r2"], "nova"), (ns["r1"], "nova-compute"),
                                                  (ns["r3"], "nova-compute"), *((ns[r], "load") for r in ns)}
    assert _from(ctl["wanwide-nova"], 8774) == {(ns[r], "load") for r in ns}
    # nothing reaches a compute; where only computes run, no service policy admits anything
    for r in ("r1", "r3"):
        assert not {n for n in _policies(p, r) if n.startswith("wanwide-") and n[8:] in netpol.PORTS}
    # the services' pods are out of the trial-wide ingress, Keystone's and the database's stay in it
    trial = ctl[netpol.TRIAL]["spec"]["podSelector"]["matchExpressions"][0]
    assert trial["operator"] == "NotIn" and "keystone" not in trial["values"] and "nova-compute" in trial["values"]
    services = ctl[netpol.SERVICES]["spec"]
    assert services["egress"] == ctl[netpol.TRIAL]["spec"]["egress"]
    assert all("namespaceSelector" in peer and "podSelector" not in peer
               for rule in services["ingress"] for peer in rule["from"])  # the admitted namespaces only


def test_network_policies_shape_regions_a_region_admits_only_its_own():
    p = _plan(REGIONS)
    for r in p.region_names:
        pol = _policies(p, r)
        me = p.namespace(r)
        assert _from(pol["wanwide-openstack-db"], 3306) == {(me, "nova"), (me, "placement"), (me, "glance"),
                                                            (me, "neutron")}
        assert _from(pol["wanwide-messaging"], 5672) == {(me, "nova"), (me, "nova-compute"), (me, "neutron")}
        assert _from(pol["wanwide-neutron"], 9696) == {(me, "nova"), (me, "nova-compute"), (me, "load")}


def test_keystone_alone_renders_the_policies_as_before():
    p = _plan(benchmark("mariadb", "uniform"))
    names = {o["metadata"]["name"] for o in netpol.render(p)}
    assert names == {netpol.DENY, netpol.TRIAL, netpol.RUNNER}
    assert all(o["spec"]["podSelector"] == {} for o in netpol.render(p) if o["metadata"]["name"] == netpol.TRIAL)


def _sts(ready: int, want: int = 2, current: str = "a", update: str = "a") -> dict[str, Any]:
    return {"metadata": {"generation": 1}, "spec": {"replicas": want},
            "status": {"replicas": want, "readyReplicas": ready, "observedGeneration": 1,
                       "currentRevision": current, "updateRevision": update}}


def test_a_statefulset_is_ready_when_every_replica_of_its_revision_is():
    assert readiness.statefulset_ready(_sts(2))
    assert not readiness.statefulset_ready(_sts(1))
    assert not readiness.statefulset_ready(_sts(2, update="b"))
    assert not readiness.statefulset_ready(None)


def test_a_compute_stage_waits_for_its_statefulsets_and_the_control_planes_databases_for_theirs():
    p = _plan(STRETCHED)
    r = render_trial(p, passwords=PW)
    stage = next(s for s in lc.stages(p) if s.service == "nova-compute")
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": COMPUTE_STATEFULSET}}
    charts = {("nova-compute", reg): _chart([{**sts, "metadata": {**sts["metadata"], "namespace": p.namespace(reg)}}],
                                           p.namespace(reg)) for reg in stage.regions}
    want = sorted(f"{p.namespace(reg)}/{COMPUTE_STATEFULSET}" for reg in stage.regions)
    assert [a for a in deploy.awaited(p, stage, r, charts) if COMPUTE_STATEFULSET in a] == want
    status = {"applied": ["namespaces"], "done": [s.name for s in lc.stages(p) if s.name != stage.name]}
    obs = {"passwords": PW, "charts": {**charts, **{k: _chart([], "x") for k in deploy.charted(p, status)
                                                    if k not in charts}},
           "jobs": {}, "deployments": {a: True for a in deploy.awaited(p, stage, r, charts)},
           "statefulsets": {want[0]: True, want[1]: False}}
    prog = deploy.progress(p, status, obs, r, stage)
    assert not prog.done and want[1] in prog.waiting
    obs["statefulsets"][want[1]] = True
    assert deploy.progress(p, status, obs, r, stage).done
    db = next(s for s in lc.stages(_plan(REGIONS)) if s.service == "openstack-db")
    pr = _plan(REGIONS)
    waiting = deploy.progress(pr, {"applied": ["namespaces"]}, {"openstack_db_ready": {"MariaDB/x/osdb": False}},
                              render_trial(pr), db)
    assert not waiting.done and "MariaDB/x/osdb" in waiting.waiting


def _chart(objs: list[dict[str, Any]], ns: str):
    from wanwide.providers.kubernetes.render.chart import stages

    return stages(objs, "nova-compute", ns, {})


def test_a_release_shows_its_patches_and_they_change_its_identity():
    p = _plan(STRETCHED)
    c = chart_releases(p, PW)[("nova-compute", "r1")]
    assert c.document()["helmRelease"]["patches"] == list(compute_patches("r1"))
    bare = HelmRelease(c.name, c.namespace, c.region, c.repo, c.chart, c.version, c.values, c.wave, c.field)
    assert bare.digest != c.digest and "patches" not in bare.document()["helmRelease"]


def test_a_benchmark_naming_a_service_chart_the_operator_does_not_render_is_refused_naming_its_field():
    from wanwide.core.plan.errors import PlanError
    from wanwide.providers.kubernetes.controller.benchmark import validate

    bench = _doc("mariadb", "regions", nova={"enabled": True, "chartRepo": "", "chart": "/opt/charts/nova"})
    with pytest.raises(PlanError) as e:
        validate(None, bench)  # type: ignore[arg-type]  # refused before the API server is asked
    (p,) = e.value.problems
    assert p.field == "spec.openstack.nova.chart" and "not a chart source this operator renders" in p.message
    bench = _doc("mariadb", "regions", placement={"chartRepo": "https://charts.example"})
    with pytest.raises(PlanError) as e:
        validate(None, bench)  # type: ignore[arg-type]  # refused before the API server is asked
    assert e.value.problems[0].field == "spec.openstack.placement.chart"


def test_the_charts_observed_while_helm_still_renders_some_are_waited_for_not_a_crash(monkeypatch):
    """The operator's helm renders in the background (kube/helm.py ``Renders.get``: None until done): a step that
    looks while some releases are rendered and others not (one with a StatefulSet among the rendered) waits."""
    from tests.fakekube import FakeKube, FakeRenders, FakeS3
    from tests.fakelab import Clock
    from wanwide.providers.kubernetes.controller import observe
    from wanwide.providers.kubernetes.kube import helm

    p = _plan(STRETCHED)
    fake = FakeRenders()

    class Halfway:
        def get(self, rel, labels, also=()):
            return fake.get(rel, labels, also) if rel.name == "nova-compute" else None

    monkeypatch.setattr(helm, "RENDERS", Halfway())
    status = {"applied": ["namespaces"], "done": ["namespaces", "database", "openstack-db"]}
    obs = {"passwords": PW}
    observe._charts(observe.Where(FakeKube(Clock(), p, FakeS3())), p, status, obs)
    assert [k for k, c in obs["charts"].items() if c is not None] == [("nova-compute", "r1"), ("nova-compute", "r3")]
    stage = next(s for s in lc.stages(p) if s.service == "messaging")
    prog = deploy.progress(p, status, obs, render_trial(p, passwords=PW), stage)
    assert not prog.done and not prog.failed and "rendering the charts" in prog.waiting


def test_every_service_charts_images_go_where_the_chart_reads_them():
    """``images.tags`` of each release: the Benchmark's overrides, the Keystone Jobs on the keystone client image.
    They once went to a top-level ``tags`` the charts never read, so real pods pulled quay.io's defaults (the kwok
    tier pulls nothing; the real node found it)."""
    ks, mine = "wanwide.local/keystone:1", "wanwide.local/{}:1"
    doc = _doc("mariadb", "stretched", controlRegion="r1", neutron={"enabled": True},
               placement={"images": {"placement": mine.format("placement"), "placementDbSync": mine.format("placement")}},
               glance={"images": {"glanceApi": mine.format("glance")}},
               nova={"enabled": True, "computes": 1, "images": {"novaApi": mine.format("nova"),
                                                              "novaCompute": mine.format("nova")}})
    doc["spec"]["openstack"]["neutron"]["images"] = {"neutronServer": mine.format("neutron")}
    doc["spec"]["openstack"]["keystone"] = {"images": {"bootstrap": ks}}
    rel = chart_releases(_plan(doc), PW)
    want = {"placement": {"placement": mine.format("placement"), "placement_db_sync": mine.format("placement")},
            "glance": {"glance_api": mine.format("glance")},
            "neutron": {"neutron_server": mine.format("neutron"), "neutron_rpc_server": mine.format("neutron")},
            "nova": {"nova_api": mine.format("nova")},
            "nova-compute": {"nova_compute": mine.format("nova"), "nova_compute_ironic": mine.format("nova")}}
    for stage, tags in want.items():
        v = rel[(stage, "r1")].values
        assert "tags" not in v, stage
        for k, image in {**tags, "ks_user": ks, "ks_service": ks, "ks_endpoints": ks}.items():
            if stage != "nova-compute" or k.startswith("nova_compute"):
                assert v["images"]["tags"][k] == image, (stage, k, v.get("images"))


def test_each_catalog_service_is_made_by_one_plane_only():
    """Shape regions, three planes over one identity database: only the first plane's release makes each service
    entity (``ks-service``); the others register their endpoints once it exists. All three making theirs at once
    made three services of a type, and every ``ks-endpoints`` Job failed on the ambiguous lookup (the real node,
    stop 60). The Jobs the others' ``ks-endpoints`` still wait for are the chart's own minus its ``ks-service``."""
    doc = _doc("mariadb", "regions", neutron={"enabled": True}, nova={"enabled": True, "computes": 1})
    rel = chart_releases(_plan(doc), PW)
    for stage in ("placement", "glance", "neutron", "nova"):
        first, *others = [rel[(stage, r)].values for r in ("r1", "r2", "r3")]
        assert first.get("manifests", {}).get("job_ks_service", True) is True, stage
        assert "ks_endpoints" not in first.get("dependencies", {}).get("static", {}), stage
        for v in others:
            assert v["manifests"]["job_ks_service"] is False, stage
            assert f"{stage}-ks-service" not in v["dependencies"]["static"]["ks_endpoints"]["jobs"], stage
    assert "job_ks_service" not in rel[("messaging", "r2")].values.get("manifests", {})
    # stretched: one plane, it makes them
    one = chart_releases(_plan(_doc("mariadb", "stretched", controlRegion="r1", nova={"enabled": True, "computes": 1})),
                         PW)
    assert one[("nova", "r1")].values.get("manifests", {}).get("job_ks_service", True) is True


def test_what_ks_endpoints_waits_for_is_the_mirrored_charts_own_minus_ks_service():
    from tests.upstream import upstream_dir
    from wanwide.providers.kubernetes.render.openstack import KS_ENDPOINTS_AFTER

    up = upstream_dir()
    if up is None:
        pytest.skip("no mirror of the upstream charts here (WANWIDE_UPSTREAM_DIR)")
    for chart, after in KS_ENDPOINTS_AFTER.items():
        values = yaml.safe_load((up / "openstack-helm-2026.1.0" / chart / "values.yaml").read_text())
        jobs = values["dependencies"]["static"]["ks_endpoints"]["jobs"]
        assert f"{chart}-ks-service" in jobs and [j for j in jobs if j != f"{chart}-ks-service"] == after, chart
