"""A trial's NetworkPolicies: nothing reaches its services but the trial itself and what the admin lets in. Pure.

A trial's MariaDB (with its root password), memcached and Keystones would otherwise answer any pod of the
cluster. In each of the trial's namespaces (docs/security.md):

- ``wanwide-deny``: every pod, ingress and egress denied by default;
- ``wanwide-trial``: ingress from the trial's own namespaces (its regions reach each other across the
  emulated WAN; Galera's members talk among themselves) and from the namespaces the operator's setting
  names (the database operator, which connects to its MariaDB; Prometheus, which scrapes the exporters);
  egress to the trial's namespaces, to cluster DNS, and what the setting allows (by default TCP 443 and
  6443 anywhere: the API server, which openstack-helm's dependency checks ask, and HTTPS);
- ``wanwide-runner``: the Rally and probe pods' egress as the setting says (by default anywhere: the
  results store may be in or outside the cluster, on any port).

They hold only where the cluster's network plugin enforces NetworkPolicy (Calico, Cilium, …; kindnet
does since Kubernetes 1.32 on kind; the plain bridge plugin of this project's real node does not).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wanwide.core.plan import names
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render.common import meta, obj

API = "networking.k8s.io/v1"
DENY, TRIAL, RUNNER = "wanwide-deny", "wanwide-trial", "wanwide-runner"
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
    out = []
    for ns in plan.namespaces:
        labels = plan.labels(region_of.get(ns), "network-policy")
        out += [
            obj(API, "NetworkPolicy", meta(DENY, ns, labels),
                spec={"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
            obj(API, "NetworkPolicy", meta(TRIAL, ns, labels), spec={
                "podSelector": {}, "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [trial, *admitted]}],
                "egress": [{"to": [trial]}, DNS, *[dict(e) for e in s.egress]]}),
        ]
        if ns in region_of:
            out.append(obj(API, "NetworkPolicy", meta(RUNNER, ns, labels), spec={
                "podSelector": {"matchExpressions": [{"key": names.L_ROLE, "operator": "In", "values": ["load", "probe"]}]},
                "policyTypes": ["Egress"], "egress": [dict(e) for e in s.runner_egress]}))
    return out


__all__ = ["DENY", "RUNNER", "Settings", "TRIAL", "render"]
