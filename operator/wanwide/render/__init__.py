"""Trial plan → Kubernetes objects and Helm releases (pure functions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..plan import names
from ..plan.trial import TrialPlan
from ..runner.config import S3Target
from . import chaos, database, keystone, monitors, rally, secrets
from .common import meta, obj
from .keystone import HelmRelease

# Apply order; deletion goes the other way.
KIND_ORDER = [
    "Namespace", "Trial", "Secret", "ConfigMap", "Service", "MariaDB", "Database", "User", "Grant", "CrdbCluster",
    "Deployment", "Job", "PodMonitor", "ServiceMonitor", "NetworkChaos", "Schedule",
]


@dataclass(frozen=True)
class Rendered:
    """The desired state of one trial, grouped by when the operator applies it."""

    plan: TrialPlan
    base: list[dict[str, Any]]  # Provisioning: namespaces, secrets, database, memcached, monitors
    releases: list[HelmRelease]  # Provisioning: keystone per region (wave 0, then wave 1)
    wan: list[dict[str, Any]]  # Injecting: the emulated WAN
    load: list[dict[str, Any]]  # Loading: runner ConfigMaps + Jobs
    faults: list[chaos.FaultObjects]  # Loading: the fault timeline (wanwide.io/start-after)

    @property
    def objects(self) -> list[dict[str, Any]]:
        return [*self.base, *self.wan, *self.load, *(o for f in self.faults for o in f.objects)]


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


def namespaces(plan: TrialPlan) -> list[dict[str, Any]]:
    out = []
    region_of = {plan.namespace(r): r for r in plan.region_names}
    for ns in plan.namespaces:
        region = region_of.get(ns)
        out.append(obj("v1", "Namespace", meta(ns, None, plan.labels(region, None if region else "database"),
                                               {names.A_PARAMETERS: _params(plan)})))
    return out


def render_trial(
    plan: TrialPlan,
    *,
    start_at: str | None = None,
    attempt: int = 1,
    passwords: dict[str, str] | None = None,
    results: S3Target | None = None,
    plan_generation: int = 0,
) -> Rendered:
    base = [
        *namespaces(plan),
        trial_object(plan, plan_generation),
        *secrets.render(plan),
        *database.render(plan),
        *keystone.memcached(plan),
        *monitors.render(plan),
    ]
    base.sort(key=lambda o: KIND_ORDER.index(o["kind"]))
    return Rendered(
        plan=plan,
        base=base,
        releases=keystone.releases(plan, passwords),
        wan=chaos.wan(plan),
        load=rally.jobs(plan, start_at=start_at, attempt=attempt, results=results),
        faults=chaos.faults(plan),
    )

