"""Neutron's server of each control plane (spec.openstack.neutron, optional): an openstack-helm ``neutron`` release
where the plane's Neutron runs (pure).

The server and its RPC workers only, ML2 with no agent (no DaemonSet: networks and ports are API objects; nothing
wires them), its database where the plan puts it (render/osdb.py), its bus user from the bus's definitions (no
rabbit-init). Nova asks it for a project's networks at boot and a server's ports at delete.
"""

from __future__ import annotations

from typing import Any

from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render import openstack as osr
from wanwide.providers.kubernetes.render.common import deep_merge
from wanwide.providers.kubernetes.render.keystone import HelmRelease

SERVICE = "neutron"
RELEASE = "neutron"
AGENTS = ("daemonset_dhcp_agent", "daemonset_l3_agent", "daemonset_lb_agent", "daemonset_metadata_agent",
          "daemonset_ovs_agent", "daemonset_sriov_agent", "daemonset_l2gw_agent", "daemonset_bagpipe_bgp",
          "daemonset_bgp_dragent", "daemonset_netns_cleanup_cron", "daemonset_ovn_metadata_agent",
          "daemonset_ovn_vpn_agent", "deployment_ironic_agent", "cron_job_ovn_db_sync")
OFF = {**dict.fromkeys(AGENTS, False), "ingress_server": False, "service_ingress_server": False,
       "job_bootstrap": False, "job_db_init": False, "job_db_drop": False, "job_image_repo_sync": False,
       "job_rabbit_init": False, "pod_rally_test": False, "network_policy": False, "secret_ingress_tls": False,
       "secret_registry": False}


def values(plan: TrialPlan, region: str, plane_name: str, pw: dict[str, str] | None = None) -> dict[str, Any]:
    s = plan.spec.openstack.neutron
    plane = next(p for p in osr.control(plan).planes if p.name == plane_name)
    at = plane.databases[SERVICE]
    services = ["oslo_db", "oslo_messaging", "identity", *(["oslo_cache"] if plan.keystone.cache else [])]
    deps = [{"endpoint": "internal", "service": x} for x in services]
    v: dict[str, Any] = {
        "network": {"backend": []},  # no agent wires anything
        "endpoints": {
            "identity": osr.identity(plan, region, plane, pw, dict.fromkeys(("neutron", "nova", "placement"),
                                                                             SERVICE)),
            "oslo_db": osr.oslo_db(plan, at, at.schemas[0], SERVICE, pw),
            "oslo_messaging": osr.oslo_messaging(plan, plane, pw, SERVICE),
            "oslo_cache": {**osr.oslo_cache(plan, region), "auth": {"memcache_secret_key": osr.password(pw, SERVICE)}},
            "network": osr.api(plan, "network", plane),
            "compute": osr.api(plan, "compute", plane),
        },
        "dependencies": {"static": {
            "server": {"jobs": ["neutron-db-sync", "neutron-ks-user", "neutron-ks-endpoints"], "services": deps},
            "rpc_server": {"jobs": ["neutron-db-sync"], "services": deps}}},
        "pod": {"replicas": {"server": s.replicas, "rpc_server": 1}, "labels": {"default": plan.labels(region, SERVICE)}},
        "labels": osr.node_labels(plan, region, ("job", "server", "rpc_server", "test")),
        "manifests": OFF,
        # the RPC workers run the server's image (the chart has a tag for each)
        **osr.images(s.images.model_dump(exclude_none=True), osr.keystone_client_image(plan),
                     same_as={"neutron_rpc_server": "neutron_server"}),
    }
    return deep_merge(v, s.values)


def releases(plan: TrialPlan, passwords: dict[str, str] | None = None) -> list[HelmRelease]:
    return osr.plane_releases(plan, SERVICE, "neutron", RELEASE, lambda r, p: values(plan, r, p.name, passwords))


__all__ = ["RELEASE", "SERVICE", "releases", "values"]
