"""One lab deployment (network, database, Keystones, the other OpenStack services), re-shaped between the trials it serves.

Which trials share one, and in which order, is the lifecycle's decision
(core/lifecycle/order.py ``deployments``: a round's trials of one deployment key); the
lab deploys once per group and re-shapes the links between its trials, as the
studies' harness did (deploy, then for each network setting: constrain, bench,
back up). The bundles record the deployment and each trial's place on it;
``wanwide lab run --fresh`` deploys anew for every trial instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wanwide.core.plan.links import OneWay
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.lab.cloud import Cloud, region_memory
from wanwide.providers.lab.netns import Network
from wanwide.providers.lab.services import Service, Services


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
    shaped_for: str | None = None  # the trial its links are shaped for
    up: set[str] = field(default_factory=set)  # the deployment stages brought up
    by_stage: dict[str, list[Service]] = field(default_factory=dict)  # what each stage started
    cloud: Cloud = field(default_factory=Cloud)  # the OpenStack services beyond Keystone (providers/lab/cloud.py)

    @property
    def id(self) -> str:
        return self.net.tag

    def adapt(self, p: TrialPlan) -> None:
        """Shape every link as ``p`` asks, set the trial's dynamic Galera options and empty
        the Keystone caches (each trial starts cold, as on a new deployment)."""
        zero = OneWay()
        self.net.reshape({(a, b): p.links.get((a, b), zero) for a in p.region_names for b in p.region_names if a != b})
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
                "services_started_on": "unconstrained WAN",  # then shaped (bringup.bring_up)
                "layout": "mesh" if self.net.layout is None else self.net.layout.kind,
                "links": len(self.net.pairs) + len(self.net.edges),
                **({"galera_dynamic_options": dict(self.galera_dynamic)} if self.galera_dynamic else {}),
                **({"openstack": {**self.cloud.describe(),
                                  "memory": region_memory({r: self.net.netns(r) for r in p.region_names})}}
                   if self.cloud.apis else {})}

    def close(self) -> None:
        try:
            self.svc.stop_all()
        finally:
            self.net.destroy()

