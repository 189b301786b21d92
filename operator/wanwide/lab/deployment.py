"""One lab deployment (network, database, Keystones) and which trials may share it.

Trials of a Benchmark that differ only in what the WAN does (RTT, jitter,
loss, rate, faults) or in how it is loaded (light/high, scenarios,
repetitions) need the same services: the lab deploys once and re-shapes the
links between them, as the studies' harness did (deploy, then for each
network setting: constrain, bench, back up). The bundles record the
deployment and each trial's place on it; ``wanwide lab run --fresh``
deploys anew for every trial instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..plan.links import OneWay
from ..plan.trial import TrialPlan
from .netns import Network
from .services import Service, Services


def deployment_key(p: TrialPlan) -> str:
    """What a deployment is made of; trials with equal keys can share one."""
    return json.dumps({
        "benchmark": [p.bench_namespace, p.benchmark],
        "backend": p.backend,
        "regions": p.region_names,
        "primary": p.primary_region,
        "database": p.spec.database.model_dump(mode="json"),
        "openstack": p.spec.openstack.model_dump(mode="json"),
        "server": p.database.server,
        "galera": p.database.galera_static if p.backend == "galera" else None,
    }, sort_keys=True)


def in_run_order(trials: list[TrialPlan]) -> list[TrialPlan]:
    """Each Benchmark's trials in its run order (``spec.matrix.order``), Benchmarks as listed."""
    first: dict[str, int] = {}
    for i, p in enumerate(trials):
        first.setdefault(p.benchmark, i)
    return sorted(trials, key=lambda p: (first[p.benchmark], p.index if p.position is None else p.position))


def groups(trials: list[TrialPlan], fresh: bool = False) -> list[list[TrialPlan]]:
    """Trials grouped by deployment, in order of first appearance (one per group if ``fresh``)."""
    if fresh:
        return [[p] for p in trials]
    out: dict[str, list[TrialPlan]] = {}
    for p in trials:
        out.setdefault(deployment_key(p), []).append(p)
    return list(out.values())


@dataclass
class Deployment:
    """A running deployment; :meth:`close` removes it."""

    net: Network
    svc: Services
    db: dict[str, Service]  # region → the database endpoint its Keystone uses
    ks: dict[str, Service]  # region → its Keystone
    shared: bool  # built to be re-shaped for several trials
    trials: list[str] = field(default_factory=list)  # ids of the trials run on it, in order
    galera_dynamic: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.net.tag

    def adapt(self, p: TrialPlan) -> None:
        """Shape every link as ``p`` asks, set the trial's dynamic Galera options and empty
        the Keystone caches (each trial starts cold, as on a new deployment)."""
        zero = OneWay()
        for a in p.region_names:
            for b in p.region_names:
                want = p.links.get((a, b), zero)
                if a != b and self.net.links.get((a, b), zero) != want:
                    self.net.set_link(a, b, want)
        dyn = p.database.galera_dynamic
        if dyn and dyn != self.galera_dynamic:
            self.svc.set_provider_options(list(self.db.values()), dyn)
            self.galera_dynamic = dyn
        for s in self.svc.started:
            if s.kind == "memcached":
                self.svc.flush_memcached(s)

    def describe(self, p: TrialPlan) -> dict[str, Any]:
        """For the bundle: which deployment, and how many trials ran on it before this one."""
        return {"provider": "lab", "id": self.id, "shared": self.shared,
                "trial_index": self.trials.index(p.id) if p.id in self.trials else len(self.trials),
                "previous_trials": [t for t in self.trials if t != p.id],
                **({"galera_dynamic_options": dict(self.galera_dynamic)} if self.galera_dynamic else {})}

    def close(self) -> None:
        try:
            self.svc.stop_all()
        finally:
            self.net.destroy()

