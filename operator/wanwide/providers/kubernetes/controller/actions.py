"""What a phase decision asks for, and the one place that carries it out."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kubernetes.dynamic.exceptions import ForbiddenError

from wanwide.core.errors import retry
from wanwide.core.lifecycle import Step
from wanwide.providers.kubernetes.controller import metrics
from wanwide.providers.kubernetes.kube.client import Kube

# Requests in flight at once, for all trials. Most of an apply is waiting: a Role or RoleBinding the
# operator creates takes ~100 ms in the API server (its RBAC escalation check) for ~7 ms of its CPU.
LANES = ThreadPoolExecutor(32, thread_name_prefix="apply")
T = TypeVar("T")
RBAC_TRIES, RBAC_FIRST_S = 5, 0.25  # a forbidden action is tried again after 0.25 s, 0.5 s, 1 s, 2 s


def when_bound(fn: Callable[[], T], what: str) -> T:
    """``fn()``, tried again while the API server forbids it: the authorizer's cache may trail a namespace's new
    RoleBinding by a second or two (the one retry, core/errors.py)."""
    return retry(fn, what=what, attempts=RBAC_TRIES, backoff_s=RBAC_FIRST_S, max_backoff_s=2.0,
                 again=lambda e: isinstance(e, ForbiddenError))


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
    """The lifecycle's step for a Trial and how it is carried out here: the actions, what the provider records
    besides (never a field the lifecycle owns), when to look again."""

    step: Step = field(default_factory=Step)
    actions: list[Action] = field(default_factory=list)
    recorded: dict[str, Any] = field(default_factory=dict)
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
            when_bound(lambda a=a: self._one(a), f"{type(a).__name__} in lane {getattr(a, 'lane', '')}")

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
