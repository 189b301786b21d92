"""Placement of each control plane: an openstack-helm ``placement`` release where the plane's Placement runs (pure).

Its schema is made by wanwide's database objects (``render/osdb.py``: the control plane's own MariaDB, or names in
the trial's database), so the chart's ``db-init`` is off; ``db-sync`` and the Keystone Jobs (user, service,
endpoints in the plane's region) run as hooks, in order.
"""

from __future__ import annotations

from typing import Any

from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render import openstack as osr
from wanwide.providers.kubernetes.render.common import deep_merge
from wanwide.providers.kubernetes.render.keystone import HelmRelease

SERVICE = "placement"
RELEASE = "placement"


def values(plan: TrialPlan, region: str, plane_name: str, pw: dict[str, str] | None = None) -> dict[str, Any]:
    s = plan.spec.openstack.placement
    plane = next(p for p in osr.control(plan).planes if p.name == plane_name)
    at = plane.databases[SERVICE]
    v: dict[str, Any] = {
        "endpoints": {
            "identity": osr.identity(plan, region, plane, pw, {"placement": SERVICE}),
            "oslo_db": osr.oslo_db(plan, at, at.schemas[0], SERVICE, pw),
            "oslo_cache": {**osr.oslo_cache(plan, region), "auth": {"memcache_secret_key": osr.password(pw, SERVICE)}},
            "placement": osr.api(plan, "placement", plane),
        },
        "pod": {"replicas": {"api": s.replicas}, "labels": {"default": plan.labels(region, SERVICE)}},
        "labels": osr.node_labels(plan, region, ("api", "job")),
        "manifests": {"job_db_init": False, "job_db_drop": False, "job_image_repo_sync": False, "ingress": False,
                      "service_ingress": False, "secret_ingress_tls": False, "secret_registry": False,
                      "network_policy": False},
        **osr.images(s.images.model_dump(exclude_none=True), osr.keystone_client_image(plan)),
    }
    return deep_merge(v, s.values)


def releases(plan: TrialPlan, passwords: dict[str, str] | None = None) -> list[HelmRelease]:
    return osr.plane_releases(plan, SERVICE, "placement", RELEASE, lambda r, p: values(plan, r, p.name, passwords))


__all__ = ["RELEASE", "SERVICE", "releases", "values"]
