"""Process-wide settings of a running operator (set once by the CLI)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from wanwide import DEFAULT_IMAGE
from wanwide.providers.kubernetes.kube.client import Kube, load_config
from wanwide.providers.kubernetes.render import chartsource, netpol


@dataclass
class Runtime:
    kubeconfig: str | None = None
    metrics_port: int = 0
    trial_clusterrole: str | None = None
    subject: dict[str, str] | None = None
    runner_image: str = DEFAULT_IMAGE  # spec.runner.image when a Benchmark leaves it unset
    probe_image: str = DEFAULT_IMAGE  # the preflight's netem probe (root, NET_ADMIN): the operator's own image
    allowed_charts: tuple[str, ...] = chartsource.DEFAULT_ALLOWED  # chart sources it renders (charts.allowed)
    network_policy: netpol.Settings = field(default_factory=netpol.Settings)  # the trials' (networkPolicy)
    runner_pod: dict = field(default_factory=dict)  # spec.runner.pod's fields a Benchmark leaves unset
    clusterwide: bool = True  # children's events reach the operator only when it watches every namespace

    @property
    def safety_net_s(self) -> float:
        """The longest a Trial waits without an event: children's events wake it sooner cluster-wide;
        watching some namespaces only, it cannot see them and looks every 5 s."""
        return 30.0 if self.clusterwide else 5.0

    @cached_property
    def kube(self) -> Kube:
        return Kube(load_config(self.kubeconfig))


RUNTIME = Runtime()
