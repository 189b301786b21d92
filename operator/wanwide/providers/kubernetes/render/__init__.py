"""Trial plan → Kubernetes objects and Helm releases (pure functions)."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from wanwide.core.api.units import seconds
from wanwide.core.contracts import S3Target
from wanwide.core.plan import names
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render import (
    chaos,
    database,
    glance,
    keystone,
    monitors,
    netpol,
    neutron,
    nova,
    osdb,
    placement,
    rabbitmq,
    rally,
    secrets,
)
from wanwide.providers.kubernetes.render.common import meta, obj
from wanwide.providers.kubernetes.render.keystone import HelmRelease

CHARTS = {"keystone": keystone.releases, "messaging": rabbitmq.releases, "placement": placement.releases,
          "glance": glance.releases, "neutron": neutron.releases, "nova": nova.releases,
          "nova-compute": nova.compute_releases}
"""The services deployed as chart releases (one per region of a deployment stage, core/lifecycle/deploy.py), each with
its renderer: a new service's chart is its renderer here and its stages there."""
OBJECTS = {"database": lambda p: [*database.render(p), *osdb.shared(p)], "openstack-db": osdb.local}
"""The stages whose objects are applied with the trial's place and are done once every one is Ready (the database
operators' kinds), each with its renderer."""

# Apply order; deletion goes the other way.
KIND_ORDER = [
    "Namespace", "NetworkPolicy", "Trial", "ServiceAccount", "Secret", "ConfigMap", "Service", "MariaDB", "Database", "User", "Grant", "CrdbCluster",
    "Deployment", "Job", "PodMonitor", "ServiceMonitor", "NetworkChaos",
]


class Rendered:
    """The desired state of one trial, grouped by when the operator applies it; each group is rendered
    when first asked for (a step needs one group, and at hundreds of regions each costs)."""

    def __init__(self, plan: TrialPlan, *, start_at: str | None = None, attempt: int = 1,
                 passwords: dict[str, str] | None = None, results: S3Target | None = None,
                 plan_generation: int = 0, owner: str | None = None,
                 network_policy: netpol.Settings | None = None, services: chaos.Services | None = None) -> None:
        self.plan, self.start_at, self.attempt, self.owner = plan, start_at, attempt, owner
        self.network_policy, self.services = network_policy, services
        self.passwords, self.results, self.plan_generation = passwords, results, plan_generation

    @cached_property
    def base(self) -> list[dict[str, Any]]:
        """Provisioning: namespaces, secrets, database, memcached, monitors."""
        p = self.plan
        out = [*namespaces(p, self.owner), *netpol.render(p, self.network_policy), trial_object(p, self.plan_generation), *secrets.render(p), *database.render(p),
               *osdb.render(p), *keystone.memcached(p), *monitors.render(p)]
        out.sort(key=lambda o: KIND_ORDER.index(o["kind"]))
        return out

    @cached_property
    def releases(self) -> list[HelmRelease]:
        """Provisioning: every chart release of the trial (each service's, a release per region)."""
        return list(chart_releases(self.plan, self.passwords).values())

    @cached_property
    def wan(self) -> list[dict[str, Any]]:
        """Injecting: the emulated WAN (toward the regions' Services too, when observed)."""
        return chaos.wan(self.plan, services=self.services)

    @cached_property
    def load(self) -> list[dict[str, Any]]:
        """Loading: runner ConfigMaps + Jobs."""
        return rally.jobs(self.plan, start_at=self.start_at, attempt=self.attempt, results=self.results)

    def probes(self, check: int, results: S3Target) -> list[dict[str, Any]]:
        """VerifyingNetwork: the network check's probe ConfigMaps and Jobs (measurement ``check``)."""
        return rally.probe_jobs(self.plan, check, results)

    def chaos_at(self, elapsed_s: float | None, addresses: chaos.Addresses | None = None) -> list[dict[str, Any]]:
        """Injecting to Collecting: the chaos in force ``elapsed_s`` after the load start (None: the WAN);
        ``addresses``: region → its running pods' addresses (a cut is then injected on its side only)."""
        return chaos.at(self.plan, elapsed_s, addresses, self.services)

    def late(self, elapsed_s: float | None, pods: chaos.Late) -> list[dict[str, Any]]:
        """VerifyingNetwork and Loading: the WAN for ``pods`` (region → names), which started after its objects
        (Chaos Mesh selected theirs without them), at ``elapsed_s`` as :meth:`chaos_at`."""
        return chaos.late_at(self.plan, elapsed_s, pods, self.services)

    @cached_property
    def faults(self) -> list[dict[str, Any]]:
        """Loading: the chaos objects the fault schedule brings (``wanwide.io/fault`` names the window)."""
        return chaos.timeline(self.plan, seconds(self.plan.spec.timeouts.loading))

    @property
    def objects(self) -> list[dict[str, Any]]:
        return [*self.base, *self.wan, *self.load, *self.faults]


def chart_releases(plan: TrialPlan, passwords: dict[str, str] | None = None) -> dict[tuple[str, str], HelmRelease]:
    """Every chart release of the trial by (service, region)."""
    return {(service, rel.region): rel for service, render in CHARTS.items() for rel in render(plan, passwords)}


def trial_object(plan: TrialPlan, plan_generation: int = 0) -> dict[str, Any]:
    return obj(
        "wanwide.io/v1alpha1",
        "Trial",
        meta(plan.name, plan.bench_namespace, plan.labels(), {names.A_PARAMETERS: _params(plan)}),
        spec={"benchmark": plan.benchmark, "index": plan.index, "repetition": plan.repetition,
              **({} if plan.position is None else {"position": plan.position}),
              "parameters": dict(plan.parameters), "planGeneration": plan_generation},
    )


def _params(plan: TrialPlan) -> str:
    return ",".join(f"{k}={v}" for k, v in plan.parameters.items())


# Pod Security Admission on the trial namespaces: what runs there (the keystone chart, memcached, the
# database operators' pods, Rally and probe Jobs) is admitted at baseline; what would not pass restricted is
# reported (kubectl warnings, the audit log), not refused. Chaos Mesh injects from its own namespace.
POD_SECURITY_LABELS = {"pod-security.kubernetes.io/enforce": "baseline",
                       "pod-security.kubernetes.io/warn": "restricted",
                       "pod-security.kubernetes.io/audit": "restricted"}


def namespaces(plan: TrialPlan, owner: str | None = None) -> list[dict[str, Any]]:
    """The trial's namespaces; ``owner``: the uid of the Benchmark that makes them (``wanwide.io/owner-uid``: the
    operator changes and deletes only namespaces that carry it, controller/ownership.py)."""
    out = []
    region_of = {plan.namespace(r): r for r in plan.region_names}
    for ns in plan.namespaces:
        region = region_of.get(ns)
        labels = {**plan.labels(region, None if region else "database"), **POD_SECURITY_LABELS,
                  **({names.L_OWNER: owner} if owner else {})}
        out.append(obj("v1", "Namespace", meta(ns, None, labels, {names.A_PARAMETERS: _params(plan)})))
    return out


def render_trial(
    plan: TrialPlan,
    *,
    start_at: str | None = None,
    attempt: int = 1,
    passwords: dict[str, str] | None = None,
    results: S3Target | None = None,
    plan_generation: int = 0,
    owner: str | None = None,
    network_policy: netpol.Settings | None = None,
    services: chaos.Services | None = None,
) -> Rendered:
    return Rendered(plan, start_at=start_at, attempt=attempt, passwords=passwords, results=results,
                    plan_generation=plan_generation, owner=owner, network_policy=network_policy, services=services)
