"""A trial's NetworkPolicies: nothing reaches its services but the trial itself and what the admin lets in. Pure.

A trial's MariaDB (with its root password), memcached and Keystones would otherwise answer any pod of the
cluster. In each of the trial's namespaces (docs/security.md):

- ``wanwide-deny``: every pod, ingress and egress denied by default;
- ``wanwide-trial``: ingress from the trial's own namespaces (its regions reach each other across the
  emulated WAN; Galera's members talk among themselves) and from the namespaces the operator's setting
  names (the database operator, which connects to its MariaDB; Prometheus, which scrapes the exporters);
  egress to the trial's namespaces, to cluster DNS, and what the setting allows (by default TCP 443 and
  6443 anywhere: the API server, which openstack-helm's dependency checks ask, and HTTPS);
- ``wanwide-runner``: the Rally, probe and watch pods' egress as the setting says (by default anywhere: the
  results store may be in or outside the cluster, on any port).

With a control plane beyond Keystone (core/plan/controlplane.py), the pods of its new services (the bus, Placement,
Glance, Nova, the fake computes, the control planes' own MariaDBs: :data:`SERVICE_ROLES`) are left out of
``wanwide-trial``'s ingress: ``wanwide-services`` gives them its egress and ingress from the admitted namespaces
only, and ``wanwide-<role>`` in each region where such a service runs admits exactly the flows the plan's links
name (each source's pods by their region's namespace and role, on the destination's port): a fake compute
reaches its plane's bus and Placement and Glance, nothing reaches a compute, Rally reaches Nova's and Glance's
API. The bus's nodes talk among themselves (clustering) on any port.

They hold only where the cluster's network plugin enforces NetworkPolicy (Calico, Cilium, …; kindnet
does since Kubernetes 1.32 on kind; the plain bridge plugin of this project's real node does not).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wanwide.core.plan import controlplane as ctl
from wanwide.core.plan import names
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render.common import meta, obj

API = "networking.k8s.io/v1"
DENY, TRIAL, RUNNER, SERVICES = "wanwide-deny", "wanwide-trial", "wanwide-runner", "wanwide-services"
ROLE_OF = {  # a process of the plan's links → the wanwide.io/role of its pods (a chart's Jobs carry its pods' role)
    ctl.KEYSTONE_API: "keystone", ctl.NOVA_API: "nova", ctl.NOVA_CONDUCTOR: "nova", ctl.NOVA_SCHEDULER: "nova",
    ctl.NOVA_COMPUTE: "nova-compute", ctl.PLACEMENT_API: "placement", ctl.GLANCE_API: "glance", ctl.BUS: "messaging",
    ctl.NEUTRON_SERVER: "neutron", ctl.OPENSTACK_DB: "openstack-db", ctl.DATABASE: "database", ctl.RALLY: "load",
}
SERVICE_ROLES = ("messaging", "placement", "glance", "nova", "nova-compute", "neutron", "openstack-db")
"""The roles of the pods whose ingress is the links' (the trial's database and Keystone keep wanwide-trial's)."""
PORTS = {"messaging": 5672, "placement": 8778, "glance": 9292, "nova": 8774, "neutron": 9696, "openstack-db": 3306}
"""Where each service's pods are reached (the charts' ports; osdb: MariaDB's)."""
NS_NAME = "kubernetes.io/metadata.name"
DNS = {"to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
       "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}


@dataclass(frozen=True)
class Settings:
    """The operator's setting (the chart's ``networkPolicy`` value, flag ``--network-policy``)."""

    enabled: bool = True
    ingress_namespaces: tuple[str, ...] = ("mariadb-operator", "cockroach-operator-system", "monitoring")
    egress: tuple[dict[str, Any], ...] = ({"ports": [{"protocol": "TCP", "port": 443},
                                                     {"protocol": "TCP", "port": 6443}]},)
    runner_egress: tuple[dict[str, Any], ...] = ({},)  # {}: anywhere

    @classmethod
    def of(cls, raw: dict[str, Any] | None) -> Settings:
        raw = raw or {}
        d = cls()
        return cls(enabled=bool(raw.get("enabled", d.enabled)),
                   ingress_namespaces=tuple(raw.get("ingressNamespaces", d.ingress_namespaces)),
                   egress=tuple(raw.get("egress", d.egress)),
                   runner_egress=tuple(raw.get("runnerEgress", d.runner_egress)))


def render(plan: TrialPlan, settings: Settings | None = None) -> list[dict[str, Any]]:
    """The three policies in each of the trial's namespaces (none when the setting turns them off)."""
    s = settings or Settings()
    if not s.enabled:
        return []
    trial = {"namespaceSelector": {"matchLabels": {names.L_TRIAL: plan.name}}}
    admitted = ([{"namespaceSelector": {"matchExpressions": [
        {"key": NS_NAME, "operator": "In", "values": sorted(s.ingress_namespaces)}]}}] if s.ingress_namespaces else [])
    region_of = {plan.namespace(r): r for r in plan.region_names}
    services = plan.control_plane is not None and bool(plan.control_plane.services)
    egress = [{"to": [trial]}, DNS, *[dict(e) for e in s.egress]]
    out = []
    for ns in plan.namespaces:
        labels = plan.labels(region_of.get(ns), "network-policy")
        out += [
            obj(API, "NetworkPolicy", meta(DENY, ns, labels),
                spec={"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
            obj(API, "NetworkPolicy", meta(TRIAL, ns, labels), spec={
                "podSelector": _roles("NotIn") if services else {}, "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [trial, *admitted]}], "egress": egress}),
        ]
        if services:
            out.append(obj(API, "NetworkPolicy", meta(SERVICES, ns, labels), spec={
                "podSelector": _roles("In"), "policyTypes": ["Ingress", "Egress"],
                **({"ingress": [{"from": admitted}]} if admitted else {}), "egress": egress}))
            if ns in region_of:
                out += links(plan, region_of[ns], labels)
        if ns in region_of:
            out.append(obj(API, "NetworkPolicy", meta(RUNNER, ns, labels), spec={
                "podSelector": {"matchExpressions": [{"key": names.L_ROLE, "operator": "In", "values": ["load", "probe", "watch"]}]},
                "policyTypes": ["Egress"], "egress": [dict(e) for e in s.runner_egress]}))
    return out


def _roles(op: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": names.L_ROLE, "operator": op, "values": list(SERVICE_ROLES)}]}


def _peer(plan: TrialPlan, region: str, role: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {NS_NAME: plan.namespace(region)}},
            "podSelector": {"matchLabels": {names.L_TRIAL: plan.name, names.L_ROLE: role}}}


def links(plan: TrialPlan, region: str, labels: dict[str, str]) -> list[dict[str, Any]]:
    """``wanwide-<role>`` for each service role with a link into ``region``: ingress from each link's source pods on
    the role's port (sources sorted, each once)."""
    cp = plan.control_plane
    assert cp is not None
    sources: dict[str, set[tuple[str, str]]] = {}
    for lk in cp.links:
        dst = ROLE_OF[lk.dst]
        if lk.dst_region == region and dst in PORTS:
            sources.setdefault(dst, set()).add((lk.src_region, ROLE_OF[lk.src]))
    if any(p.where.get("messaging") == region for p in cp.planes) and "messaging" in cp.services:
        sources.setdefault("messaging", set())
    out = []
    ns = plan.namespace(region)
    for role in sorted(sources):
        rules = [{"from": [_peer(plan, r, src) for r, src in sorted(sources[role])],
                  "ports": [{"protocol": "TCP", "port": PORTS[role]}]}] if sources[role] else []
        if role == "messaging":  # the bus's nodes among themselves: clustering, epmd, management
            rules.append({"from": [_peer(plan, region, role)]})
        out.append(obj(API, "NetworkPolicy", meta(f"wanwide-{role}", ns, labels), spec={
            "podSelector": {"matchLabels": {names.L_ROLE: role}}, "policyTypes": ["Ingress"], "ingress": rules}))
    return out


__all__ = ["DENY", "PORTS", "ROLE_OF", "RUNNER", "SERVICES", "SERVICE_ROLES", "Settings", "TRIAL", "links", "render"]
