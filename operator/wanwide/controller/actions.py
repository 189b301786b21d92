"""What a phase decision asks for, and the one place that carries it out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..kube import helm
from ..kube.client import Kube
from ..render.keystone import HelmRelease
from . import metrics


@dataclass(frozen=True)
class Apply:
    obj: dict[str, Any]


@dataclass(frozen=True)
class Delete:
    api_version: str
    kind: str
    name: str
    namespace: str | None = None

    @classmethod
    def of(cls, o: dict[str, Any]) -> Delete:
        m = o["metadata"]
        return cls(o["apiVersion"], o["kind"], m["name"], m.get("namespace"))


@dataclass(frozen=True)
class Install:
    """``helm upgrade --install`` in the background (``reset``: uninstall a release a killed helm left stuck)."""

    release: HelmRelease
    reset: bool = False
    timeout_s: float = 1800


@dataclass(frozen=True)
class Emit:
    reason: str
    message: str
    type: str = "Normal"


Action = Apply | Delete | Install | Emit


@dataclass
class Decision:
    """A phase's decision: where the Trial goes, what to do, when to look again."""

    phase: str | None = None  # next phase (None = stay)
    reason: str = ""
    message: str = ""
    status: dict[str, Any] = field(default_factory=dict)  # other status fields to merge
    actions: list[Action] = field(default_factory=list)
    wake_s: float | None = None  # look again after this long at the latest (None: on events, or the safety net)


@dataclass
class Executor:
    """Carries out actions against the API server and Helm; nothing else in the controller writes."""

    kube: Kube
    kubeconfig: str | None = None
    emit: Callable[[str, str, str], None] = lambda *_: None

    def run(self, actions: list[Action]) -> None:
        for a in actions:
            try:
                self._one(a)
            except Exception:
                if isinstance(a, Apply):
                    metrics.APPLY_ERRORS.labels("apply", a.obj["kind"]).inc()
                elif isinstance(a, Delete):
                    metrics.APPLY_ERRORS.labels("delete", a.kind).inc()
                raise  # helm failures count in wanwide_helm_errors_total

    def _one(self, a: Action) -> None:
        if isinstance(a, Apply):
            self.kube.apply(a.obj)
        elif isinstance(a, Delete):
            self.kube.delete(a.api_version, a.kind, a.name, a.namespace)
        elif isinstance(a, Install):
            helm.BACKGROUND.start(a.release, self.kubeconfig, a.timeout_s, reset=a.reset)
        else:
            self.emit(a.reason, a.message, a.type)
