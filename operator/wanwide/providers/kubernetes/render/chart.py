"""A rendered Helm chart (``helm template`` output) as ordered stages, applied the way Argo CD syncs one. Pure.

Helm's install order, kept: ``pre-install`` hooks, then the chart's objects, then ``post-install``
hooks; hooks by ``helm.sh/hook-weight`` (ascending), each stage's objects in Helm's kind order. A
stage's Jobs must be Complete before the next stage is applied (Helm's ``WatchUntilReady``); other
kinds are ready once applied, as in Helm. Hooks of one weight go together (Argo CD's sync waves;
Helm runs them one by one). Only installing happens here: hooks of upgrades, rollbacks, deletion
and tests are left out (a trial's namespaces are deleted, never uninstalled), as are delete policies
(hook Jobs stay until their namespace goes, which is what the keystone chart's own policy,
``before-hook-creation``, amounts to for a single install).

Progress is re-derived from the hook Jobs alone: a stage's Jobs exist only once every stage before
it is done, so the latest stage with a Job says how far a release got (a restarted operator
repeats at most the applies of one stage, which are idempotent).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from wanwide.core.errors import PermanentError
from wanwide.core.plan.load import without_nulls

HOOK = "helm.sh/hook"
WEIGHT = "helm.sh/hook-weight"
PHASES = ("pre-install", "post-install")  # the install hooks; every other event is not run
KNOWN_EVENTS = {"pre-install", "post-install", "pre-upgrade", "post-upgrade", "pre-delete", "post-delete",
                "pre-rollback", "post-rollback", "test", "test-success", "test-failure"}
# helm.sh/helm/v3 pkg/releaseutil/kind_sorter.go InstallOrder (v3.22.0); other kinds go last, by name
KIND_ORDER = (
    "PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
    "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
    "PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole", "ClusterRoleList",
    "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList",
    "Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment", "HorizontalPodAutoscaler",
    "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
)
CLUSTER_SCOPED = {"PriorityClass", "Namespace", "StorageClass", "PersistentVolume", "CustomResourceDefinition",
                  "ClusterRole", "ClusterRoleBinding", "IngressClass", "APIService", "PodSecurityPolicy"}
WAITED = {"Job"}  # kinds whose completion a stage waits for (Helm also waits for hook Pods: refused below)


class ChartError(PermanentError, ValueError):
    """The rendered chart cannot be applied this way (the message says why and what to do)."""


@dataclass(frozen=True)
class Stage:
    name: str  # "pre-install -5", "main", "post-install 5"
    objects: tuple[dict[str, Any], ...]

    @property
    def jobs(self) -> tuple[str, ...]:
        """The Jobs (``namespace/name``) this stage waits for (Complete) before the next one is applied."""
        return tuple(f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in self.objects if o["kind"] in WAITED)


@dataclass(frozen=True)
class Chart:
    """One release's objects, ready to apply: stages in order, and the hooks left out."""

    release: str
    namespace: str
    stages: tuple[Stage, ...]
    skipped: tuple[str, ...] = ()  # "Pod/keystone-test (test-success)"

    @property
    def objects(self) -> list[dict[str, Any]]:
        return [o for s in self.stages for o in s.objects]


def documents(text: str) -> list[dict[str, Any]]:
    """The objects of ``helm template`` output, empty documents dropped and null entries left out.

    Templates write ``annotations:`` with nothing under it (the openstack-helm keystone chart does); the
    API server stores such a field as absent, so leaving it out changes nothing applied, and nothing that
    reads the object later meets None where a map or a list belongs.
    """
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [without_nulls(d, keep=()) for d in yaml.load_all(text, Loader=loader) if isinstance(d, dict) and d.get("kind")]


def _order(o: dict[str, Any]) -> tuple[int, str]:
    kind = o["kind"]
    return (KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER), f"{kind}/{o['metadata']['name']}")


def _events(o: dict[str, Any]) -> list[str]:
    raw = ((o.get("metadata") or {}).get("annotations") or {}).get(HOOK)
    return [e.strip().lower() for e in raw.split(",") if e.strip()] if raw else []


def _weight(o: dict[str, Any]) -> int:
    try:
        return int(((o.get("metadata") or {}).get("annotations") or {}).get(WEIGHT, "0"))
    except ValueError:  # Helm: an unparsable weight is 0
        return 0


def _placed(o: dict[str, Any], namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """The object in the release's namespace (unless it names one, or is cluster-scoped), with ``labels``."""
    meta = dict(o.get("metadata") or {})
    if "name" not in meta:
        raise ChartError(f"a {o['kind']} without metadata.name in the rendered chart")
    if o["kind"] not in CLUSTER_SCOPED:
        meta.setdefault("namespace", namespace)
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    return {**o, "metadata": meta}


def stages(docs: Iterable[dict[str, Any]], release: str, namespace: str, labels: Mapping[str, str]) -> Chart:
    """The release's stages from its rendered objects; ``labels`` go on every object (its trial, region)."""
    main: list[dict[str, Any]] = []
    hooks: dict[tuple[int, int], list[dict[str, Any]]] = {}
    skipped: list[str] = []
    for d in docs:
        o = _placed(d, namespace, labels)
        events = _events(o)
        if not events:
            main.append(o)
            continue
        ref = f"{o['kind']}/{o['metadata']['name']}"
        if any(e not in KNOWN_EVENTS for e in events):  # Helm skips a hook with an unknown event
            skipped.append(f"{ref} ({','.join(events)})")
            continue
        phases = [p for p in PHASES if p in events]
        if not phases:
            skipped.append(f"{ref} ({','.join(events)})")
            continue
        if o["kind"] == "Pod":
            raise ChartError(f"{ref} is a {phases[0]} hook Pod: wanwide waits for hook Jobs only; "
                             "switch it off in spec.openstack.keystone.values")
        for p in phases:
            hooks.setdefault((PHASES.index(p), _weight(o)), []).append(o)
    out = [Stage(f"{PHASES[p]} {w}", tuple(sorted(objs, key=_order)))
           for (p, w), objs in sorted(hooks.items()) if p == 0]
    out.append(Stage("main", tuple(sorted(main, key=_order))))
    out += [Stage(f"{PHASES[p]} {w}", tuple(sorted(objs, key=_order)))
            for (p, w), objs in sorted(hooks.items()) if p == 1]
    names = [f"{o['kind']}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for s in out for o in s.objects]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ChartError(f"the rendered chart has {', '.join(twice[:3])} more than once")
    return Chart(release, namespace, tuple(out), tuple(skipped))


@dataclass(frozen=True)
class Next:
    """What a release needs now: objects to apply (in order), hook Jobs that failed, whether it is done."""

    apply: tuple[dict[str, Any], ...] = ()
    failed: tuple[str, ...] = ()
    done: bool = False  # every stage applied (with ``apply``) and every hook Job Complete
    waiting: str = ""  # the stage it waits for


def next_step(chart: Chart, jobs: Mapping[str, str], *, hooks: bool = True, ahead: bool = False) -> Next:
    """The next step of ``chart`` given the Jobs (``namespace/name`` → missing | running | complete | failed).

    ``hooks`` False: only the stages before the first one with Jobs (a release whose hooks must wait);
    ``ahead``: those stages were applied already.
    """
    st = chart.stages
    lead = next((i for i, s in enumerate(st) if s.jobs), len(st))
    if not hooks:
        return Next(apply=tuple(o for s in st[:lead] for o in s.objects), waiting=st[lead].name if lead < len(st) else "")
    started = [i for i, s in enumerate(st) if any(jobs.get(j, "missing") != "missing" for j in s.jobs)]
    i = started[-1] if started else (lead if ahead else 0)  # every stage before the latest one with a Job is done
    if started:
        here = [jobs.get(j, "missing") for j in st[i].jobs]
        failed = tuple(j for j in st[i].jobs if jobs.get(j) == "failed")
        if failed:
            return Next(failed=failed, waiting=st[i].name)
        if "missing" in here:  # a kill between two applies of the stage: apply it again (idempotent)
            return Next(apply=st[i].objects, waiting=st[i].name)
        if "running" in here:
            return Next(waiting=st[i].name)
        i += 1
    apply: list[dict[str, Any]] = []
    for s in st[i:]:  # stages without Jobs need no waiting: apply on to the next stage with Jobs
        apply += s.objects
        if s.jobs:
            return Next(apply=tuple(apply), waiting=s.name)
    return Next(apply=tuple(apply), done=True)


__all__ = ["Chart", "ChartError", "Next", "Stage", "documents", "next_step", "stages"]
