"""Glance of each control plane: an openstack-helm ``glance`` release where the plane's Glance runs (pure).

Images are kept on local files in an emptyDir (``storage: file``: neither a PersistentVolumeClaim, which a chart
may not render here, nor Ceph or Swift; the chart's file store; a trial's images live as long as its namespace).
No notifications (Glance would send them over the bus, which nothing here reads), so the API does not wait for
the bus; no bootstrap Job (it downloads an image from the internet: Rally uploads the small one wanwide makes),
no storage-init, no metadefs.
"""

from __future__ import annotations

from typing import Any

from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render import openstack as osr
from wanwide.providers.kubernetes.render.common import deep_merge
from wanwide.providers.kubernetes.render.keystone import HelmRelease

SERVICE = "glance"
RELEASE = "glance"
STORAGE = "file"  # not one of the chart's named stores: the file store in an emptyDir


def values(plan: TrialPlan, region: str, plane_name: str, pw: dict[str, str] | None = None) -> dict[str, Any]:
    s = plan.spec.openstack.glance
    plane = next(p for p in osr.control(plan).planes if p.name == plane_name)
    at = plane.databases[SERVICE]
    v: dict[str, Any] = {
        "storage": STORAGE,
        "endpoints": {
            "identity": osr.identity(plan, region, plane, pw, {"glance": SERVICE}),
            "oslo_db": osr.oslo_db(plan, at, at.schemas[0], SERVICE, pw),
            "oslo_cache": {**osr.oslo_cache(plan, region), "auth": {"memcache_secret_key": osr.password(pw, SERVICE)}},
            "image": osr.api(plan, "image", plane),
        },
        "conf": {"glance": {"oslo_messaging_notifications": {"driver": "noop"}}},
        "dependencies": {"static": {"api": {
            "jobs": ["glance-db-sync", "glance-ks-user", "glance-ks-endpoints"],
            "services": [{"endpoint": "internal", "service": "oslo_db"},
                         {"endpoint": "internal", "service": "identity"}]}}},
        "pod": {"replicas": {"api": s.replicas}, "labels": {"default": plan.labels(region, SERVICE)}},
        "labels": osr.node_labels(plan, region, ("api", "job", "test")),
        "manifests": {"job_db_init": False, "job_db_drop": False, "job_image_repo_sync": False, "job_bootstrap": False,
                      "job_storage_init": False, "job_metadefs_load": False, "job_rabbit_init": False,
                      "job_clean": False, "pvc_images": False, "pod_rally_test": False, "ingress_api": False,
                      "service_ingress_api": False, "secret_ingress_tls": False, "secret_registry": False,
                      "network_policy": False},
        **osr.images(s.images.model_dump(exclude_none=True), osr.keystone_client_image(plan)),
    }
    return deep_merge(v, s.values)


def releases(plan: TrialPlan, passwords: dict[str, str] | None = None) -> list[HelmRelease]:
    return osr.plane_releases(plan, SERVICE, "glance", RELEASE, lambda r, p: values(plan, r, p.name, passwords))


__all__ = ["RELEASE", "SERVICE", "STORAGE", "releases", "values"]
