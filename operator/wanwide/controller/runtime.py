"""Process-wide settings of a running operator (set once by the CLI)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ..kube.client import Kube, load_config


@dataclass
class Runtime:
    kubeconfig: str | None = None
    metrics_port: int = 0
    trial_clusterrole: str | None = None
    subject: dict[str, str] | None = None

    @cached_property
    def kube(self) -> Kube:
        return Kube(load_config(self.kubeconfig))


RUNTIME = Runtime()
