"""Nova of each control plane, and its fake compute nodes: openstack-helm ``nova`` releases (pure).

- ``nova`` (stage ``nova``): API (uwsgi), conductor and scheduler where the plane's Nova runs; its hooks make the
  schemas (``db-sync``: nova_api, cell0 mapped, cell1 created) and the Keystone users, service and endpoints.
  Off: the metadata API, consoles, the compute DaemonSet, bootstrap (flavors: Rally makes its own), cell setup
  (it waits for a compute to be up, which comes in a later stage: the scheduler discovers new computes itself,
  ``discover_hosts_in_cells_interval``), rabbit-init (the bus's own definitions make the user).
- ``nova-compute`` (stage ``nova-compute``): in each region with fake computes, a release that runs only the
  chart's compute StatefulSet (``statefulset_compute_ironic``) with ``pod.replicas.compute_ironic`` = the region's
  computes, nova's fake virt driver in ``nova-ironic.conf`` (the file that StatefulSet reads after nova.conf).

Why that StatefulSet and not the chart's compute DaemonSet: a DaemonSet runs one pod per node, on the host's
network, PID and IPC namespaces with libvirt's host paths (a node can hold one compute, and Pod Security baseline
refuses such pods); the StatefulSet runs N pods of its own network namespace, each a nova-compute service, a
count per region, on any node. Two things no value changes are patched (``HelmRelease.patches``, checked against
what the chart renders): its ``hostPID`` (and the ``/var/lib/ironic`` host path, an emptyDir here: the fake driver
keeps nothing), which baseline refuses; and each pod's nova host name, ``OS_DEFAULT__HOST`` = ``<region>-<pod>``
(oslo.config reads ``[DEFAULT] host`` from the environment): the pods of every region are named
``nova-compute-ironic-<i>``, and two computes of one cell must not share a host name.

A region that runs the plane's Nova as well (shape ``regions``; the control region of ``stretched``) keeps one
``nova-bin``, ``nova-etc`` and ``nova-ks-etc``: the ``nova`` release's (both releases render them from the same
configuration), so its compute release renders only the StatefulSet and its ServiceAccount.
"""

from __future__ import annotations

from typing import Any

from wanwide.core.plan.controlplane import NOVA_COMPUTE, Plane
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render import openstack as osr
from wanwide.providers.kubernetes.render.common import deep_merge
from wanwide.providers.kubernetes.render.keystone import HelmRelease

SERVICE = "nova"
COMPUTE_SERVICE = "nova-compute"
RELEASE = "nova"
COMPUTE_RELEASE = "nova-compute"
COMPUTE_STATEFULSET = "nova-compute-ironic"
FAKE_DRIVER = "fake.FakeDriver"
KEYSTONE_USERS = ("nova", "neutron", "placement", "cinder", "service", "ironic")  # the ks-user Job makes nova_<key>
COMPONENTS = ("api_metadata", "conductor", "job", "novncproxy", "osapi", "scheduler", "serialproxy", "spiceproxy",
              "test")
OFF = {  # what a trial's Nova does not run
    "cron_job_cell_setup": False, "cron_job_service_cleaner": False, "cron_job_archive_deleted_rows": False,
    "daemonset_compute": False, "deployment_api_metadata": False, "deployment_novncproxy": False,
    "deployment_serialproxy": False, "deployment_spiceproxy": False, "ingress_metadata": False,
    "ingress_novncproxy": False, "ingress_serialproxy": False, "ingress_spiceproxy": False, "ingress_osapi": False,
    "job_bootstrap": False, "job_storage_init": False, "job_db_init": False, "job_db_drop": False,
    "job_image_repo_sync": False, "job_rabbit_init": False, "job_cell_setup": False, "pdb_metadata": False,
    "pod_rally_test": False, "network_policy": False, "secret_ingress_tls": False, "secret_registry": False,
    "secret_ssh": False, "service_ingress_metadata": False, "service_ingress_novncproxy": False,
    "service_ingress_serialproxy": False, "service_ingress_spiceproxy": False, "service_ingress_osapi": False,
    "service_metadata": False, "service_novncproxy": False, "service_serialproxy": False, "service_spiceproxy": False,
    "statefulset_compute_ironic": False,
}
CONTROL_ONLY = ("configmap_bin", "configmap_etc", "deployment_api_osapi", "deployment_conductor",
                "deployment_scheduler", "job_db_sync", "job_ks_endpoints", "job_ks_service", "job_ks_user",
                "pdb_osapi", "secret_db_api", "secret_db_cell0", "secret_db", "secret_keystone", "secret_ks_etc",
                "secret_rabbitmq", "service_osapi")
"""What the nova release renders and a compute release does not (where the region has no nova release, a compute
release renders what its StatefulSet mounts: ``SHARED``)."""
SHARED = ("configmap_bin", "configmap_etc", "secret_ks_etc")


def _plane(plan: TrialPlan, name: str) -> Plane:
    return next(p for p in osr.control(plan).planes if p.name == name)


def values(plan: TrialPlan, region: str, plane: Plane, pw: dict[str, str] | None = None, *,
           computes: int = 0, with_control: bool = True) -> dict[str, Any]:
    """Chart values of a nova release in ``region`` for ``plane``: its control services (``with_control``), or
    ``computes`` fake compute nodes (a compute release, which renders the configuration its StatefulSet mounts
    only where no nova release does)."""
    n = plan.spec.openstack.nova
    cp = osr.control(plan)
    at = plane.databases[SERVICE]
    api_db, cell0_db, main_db = at.schemas
    manifests = dict(OFF)
    pod: dict[str, Any] = {}
    if not with_control:
        control_here = plane.where[SERVICE] == region
        manifests |= {k: (k in SHARED and not control_here) for k in CONTROL_ONLY}
        manifests["statefulset_compute_ironic"] = True
        if control_here:  # the nova release's keystone sections ([placement], [service_user] …), which the chart
            # mounts into nova.conf.d only when this release renders them
            pod["etcSources"] = {"nova_compute_ironic": [{"secret": {"name": "nova-ks-etc"}}]}
    elif computes:
        raise ValueError("the nova release runs no computes: they are the nova-compute release's")
    nova_conf = {k: dict(v) for k, v in cp.nova_sections.items()}  # the plan's: the fake driver, no quota …
    endpoints: dict[str, Any] = {
        "identity": osr.identity(plan, region, plane, pw, dict.fromkeys(KEYSTONE_USERS, SERVICE)),
        "oslo_db": osr.oslo_db(plan, at, main_db, SERVICE, pw),
        "oslo_db_api": osr.oslo_db(plan, at, api_db, SERVICE, pw),
        "oslo_db_cell0": osr.oslo_db(plan, at, cell0_db, SERVICE, pw),
        "oslo_messaging": osr.oslo_messaging(plan, plane, pw, SERVICE),
        "oslo_cache": {**osr.oslo_cache(plan, region), "auth": {"memcache_secret_key": osr.password(pw, SERVICE)}},
        "compute": osr.api(plan, "compute", plane),
        "placement": osr.api(plan, "placement", plane),
        "image": osr.api(plan, "image", plane),
    }
    if "neutron" in cp.services:
        endpoints["network"] = osr.api(plan, "network", plane)
    services = [{"endpoint": "internal", "service": s} for s in ("oslo_messaging", "image", "compute", "placement")]
    v: dict[str, Any] = {
        "endpoints": endpoints,
        "console": {"console_kind": "none"},
        "conf": {
            "nova": nova_conf,
            # the file the compute StatefulSet reads after nova.conf: the fake driver, not ironic's
            "nova_ironic": {"DEFAULT": {"compute_driver": FAKE_DRIVER, "scheduler_host_manager": None,
                                        "ram_allocation_ratio": None, "cpu_allocation_ratio": None,
                                        "reserved_host_memory_mb": None}},
        },
        "dependencies": {"static": {"compute_ironic": {"jobs": ["nova-db-sync"], "services": services}}},
        "pod": {
            "replicas": {"osapi": n.api.replicas, "conductor": n.conductor.replicas,
                         "scheduler": n.scheduler.replicas, "compute_ironic": computes},
            "labels": {"default": plan.labels(region, COMPUTE_SERVICE if not with_control else SERVICE)},
            **pod,
        },
        "labels": {**osr.node_labels(plan, region, COMPONENTS),
                   "agent": osr.node_labels(plan, region, ("compute", "compute_ironic"))},
        "manifests": manifests,
        # the fake computes (the chart's ironic StatefulSet) run the image given for the computes
        **osr.images(n.images.model_dump(exclude_none=True), osr.keystone_client_image(plan),
                     same_as={"nova_compute_ironic": "nova_compute"}),
    }
    return deep_merge(v, n.values)


def compute_patches(region: str) -> tuple[dict[str, Any], ...]:
    """What no value of the chart changes in its compute StatefulSet (see the module's text), checked first."""
    spec = "/spec/template/spec"
    return ({"kind": "StatefulSet", "name": COMPUTE_STATEFULSET, "ops": [
        {"op": "test", "path": f"{spec}/hostPID", "value": True},
        {"op": "remove", "path": f"{spec}/hostPID"},
        {"op": "test", "path": f"{spec}/volumes/5/name", "value": "varlibironic"},
        {"op": "replace", "path": f"{spec}/volumes/5", "value": {"name": "varlibironic", "emptyDir": {}}},
        {"op": "test", "path": f"{spec}/containers/0/name", "value": COMPUTE_STATEFULSET},
        {"op": "add", "path": f"{spec}/containers/0/env", "value": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "OS_DEFAULT__HOST", "value": f"{region}-$(POD_NAME)"}]},
    ]},)


def releases(plan: TrialPlan, passwords: dict[str, str] | None = None) -> list[HelmRelease]:
    """The nova release of each plane, where its Nova runs."""
    return osr.plane_releases(plan, SERVICE, "nova", RELEASE, lambda r, p: values(plan, r, p, passwords))


def compute_releases(plan: TrialPlan, passwords: dict[str, str] | None = None) -> list[HelmRelease]:
    """The compute release of each region with fake computes (its plane's computes there)."""
    n = plan.spec.openstack.nova
    cp = osr.control(plan)
    if SERVICE not in cp.services:
        return []
    out = []
    for r in cp.regions_of(NOVA_COMPUTE):
        plane = cp.plane_of(r)
        vals = values(plan, r, plane, passwords, computes=cp.count(r, NOVA_COMPUTE), with_control=False)
        out.append(HelmRelease(name=COMPUTE_RELEASE, namespace=plan.namespace(r), region=r, repo=n.chart_repo,
                               chart=n.chart, version=n.chart_version, values=vals, wave=0,
                               field="spec.openstack.nova", patches=compute_patches(r)))
    return out


__all__ = ["COMPUTE_RELEASE", "COMPUTE_SERVICE", "COMPUTE_STATEFULSET", "FAKE_DRIVER", "RELEASE", "SERVICE",
           "compute_patches", "compute_releases", "releases", "values"]
