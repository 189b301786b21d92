"""What a phase decision asks for, and the one place that carries it out."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kubernetes.dynamic.exceptions import ForbiddenError

from wanwide.providers.kubernetes.controller import metrics
from wanwide.providers.kubernetes.kube.client import Kube

# Requests in flight at once, for all trials. Most of an apply is waiting: a Role or RoleBinding the
# operator creates takes ~100 ms in the API server (its RBAC escalation check) for ~7 ms of its CPU.
LANES = ThreadPoolExecutor(32, thread_name_prefix="apply")
RBAC_LAG_S = (0.2, 0.5, 1.0, 2.0, None)  # a refused action in a lane is tried again after these


@dataclass(frozen=True)
class Apply:
    """Server-side apply; actions of one ``lane`` keep their order, lanes side by side go in parallel."""

    obj: dict[str, Any]
    lane: str | None = None


@dataclass(frozen=True)
class Delete:
    api_version: str
    kind: str
    name: str
    namespace: str | None = None
    lane: str | None = None

    @classmethod
    def of(cls, o: dict[str, Any], lane: str | None = None) -> Delete:
        m = o["metadata"]
        return cls(o["apiVersion"], o["kind"], m["name"], m.get("namespace"), lane)


@dataclass(frozen=True)
class Emit:
    reason: str
    message: str
    type: str = "Normal"


@dataclass(frozen=True)
class DropFinalizer:
    """Remove a finalizer its controller will never remove (``obj`` as read)."""

    obj: dict[str, Any]
    finalizer: str


Action = Apply | Delete | DropFinalizer | Emit


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
    """Carries out actions against the API server; nothing else in the controller writes.

    Actions run in order; a run of consecutive actions with lanes runs lane by lane in parallel
    (each lane in order), and the next action waits for all of them. A failure raises once its
    run is over (the step is retried; every action is idempotent).
    """

    kube: Kube
    emit: Callable[[str, str, str], None] = lambda *_: None

    def run(self, actions: list[Action]) -> None:
        for laned, group in itertools.groupby(actions, key=lambda a: getattr(a, "lane", None) is not None):
            batch = list(group)
            if not laned:
                for a in batch:
                    self._one(a)
                continue
            lanes: dict[str, list[Action]] = {}
            for a in batch:
                lanes.setdefault(a.lane, []).append(a)  # type: ignore[union-attr]
            futures = [LANES.submit(self._lane, acts) for acts in lanes.values()]
            errors = [e for f in futures if (e := f.exception()) is not None]
            if errors:
                raise errors[0]

    def _lane(self, actions: list[Action]) -> None:
        for a in actions:
            for delay in RBAC_LAG_S:
                try:
                    self._one(a)
                    break
                except ForbiddenError:  # the authorizer's cache may trail the namespace's new RoleBinding
                    if delay is None:
                        raise
                    time.sleep(delay)

    def _one(self, a: Action) -> None:
        try:
            if isinstance(a, Apply):
                self.kube.apply(a.obj)
            elif isinstance(a, Delete):
                self.kube.delete(a.api_version, a.kind, a.name, a.namespace)
            elif isinstance(a, DropFinalizer):
                self.kube.drop_finalizer(a.obj, a.finalizer)
            else:
                self.emit(a.reason, a.message, a.type)
        except Exception:
            if isinstance(a, Apply):
                metrics.APPLY_ERRORS.labels("apply", a.obj["kind"]).inc()
            elif isinstance(a, Delete):
                metrics.APPLY_ERRORS.labels("delete", a.kind).inc()
            raise
