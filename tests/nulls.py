"""Kubernetes objects as templates write them, with ``null`` where a map or a list belongs.

A chart's template often writes a field with nothing under it (``annotations:`` when no
annotation is set: the openstack-helm keystone chart does); YAML reads that as null. The API
server stores such a field as absent. :func:`objects_with_nulls` draws a chart's worth of such
objects (Secrets, a copy-from Secret, ConfigMaps, a Deployment, hook Jobs, a Service, a Role),
each with nulls at positions drawn from the ones templates leave empty; :func:`without` is the
same object with those keys left out, which is what the objects must amount to.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

Obj = dict[str, Any]
Path = tuple[str | int, ...]
POD = ("spec", "template")
CONTAINER = (*POD, "spec", "containers", 0)
POD_PATHS: tuple[Path, ...] = (
    (*POD, "metadata", "annotations"), (*POD, "metadata", "labels"),
    (*POD, "spec", "volumes"), (*POD, "spec", "nodeSelector"),
    (*POD, "spec", "tolerations"), (*POD, "spec", "affinity"), (*POD, "spec", "securityContext"),
    (*CONTAINER, "env"), (*CONTAINER, "ports"), (*CONTAINER, "volumeMounts"), (*CONTAINER, "args"),
    (*CONTAINER, "command"), (*CONTAINER, "resources"), (*CONTAINER, "envFrom"),
    (*POD, "spec", "initContainers", 0, "volumeMounts"),  # the real chart's api Deployment and its Jobs
)
META_PATHS: tuple[Path, ...] = (("metadata", "annotations"), ("metadata", "labels"))


def _container() -> Obj:
    return {"name": "main", "image": "wanwide.local/keystone:never-pulled", "command": ["sleep", "1"]}


def _pod_template(restart: str = "Never") -> Obj:
    return {"metadata": {"labels": {"app": "x"}},
            "spec": {"initContainers": [{**_container(), "name": "init"}], "containers": [_container()],
                     "restartPolicy": restart}}


def _kinds(name: str) -> list[tuple[Obj, tuple[Path, ...]]]:
    """(object, the positions where a null may stand) for each kind a chart renders."""
    hook = {"helm.sh/hook": "post-install", "helm.sh/hook-weight": "1"}
    return [
        ({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"{name}-secret"},
          "type": "Opaque", "data": {"k": "dg=="}}, (*META_PATHS, ("data",), ("stringData",))),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-cm"}, "data": {"a": "b"}},
         (*META_PATHS, ("data",), ("binaryData",))),
        ({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": f"{name}-sa"}},
         (*META_PATHS, ("imagePullSecrets",), ("secrets",))),
        ({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": f"{name}-role"},
          "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}, (*META_PATHS, ("rules",))),
        ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"{name}-svc"},
          "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}}, (*META_PATHS, ("spec", "selector"))),
        ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"{name}-api"},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "x"}},
                   "template": _pod_template("Always")}},
         (*META_PATHS, *(p for p in POD_PATHS if p[-1] != "labels"))),  # its selector needs the pod labels
        ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": f"{name}-sync", "annotations": hook},
          "spec": {"backoffLimit": 0, "template": _pod_template()}}, (("metadata", "labels"), *POD_PATHS)),
    ]


def set_path(obj: Obj, path: Path, value: Any) -> None:
    cur: Any = obj
    for k in path[:-1]:
        cur = cur.setdefault(k, {}) if isinstance(k, str) else cur[k]
    cur[path[-1]] = value


def without(obj: Obj, paths: tuple[Path, ...]) -> Obj:
    """``obj`` with the keys at ``paths`` left out (what the API server stores for a null there)."""
    out = copy.deepcopy(obj)
    for p in paths:
        cur: Any = out
        for k in p[:-1]:
            cur = cur[k]
        cur.pop(p[-1], None)
    return out


@st.composite
def objects_with_nulls(draw: st.DrawFn, name: str = "n") -> list[tuple[Obj, tuple[Path, ...]]]:
    """A chart's objects, each with one or more nulls: (object, where the nulls are)."""
    out = []
    for obj, paths in _kinds(name):
        chosen = tuple(draw(st.lists(st.sampled_from(paths), min_size=1, max_size=4, unique=True)))
        o = copy.deepcopy(obj)
        for p in chosen:
            set_path(o, p, None)
        out.append((o, chosen))
    return out


def copy_from_secret(name: str, source: str) -> Obj:
    """A Secret the operator fills from ``source`` (``namespace/name``), with null labels as templates write them."""
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": name, "labels": None,
        "annotations": {"wanwide.io/copy-from": source, "wanwide.io/copy-keys": "k=k"}}, "data": None}


def nulls_in(value: Any) -> list[str]:
    """Where ``value`` holds a null (``spec.template.spec.initContainers[0].volumeMounts``); empty when none."""
    def join(head: str, rest: str) -> str:
        return head + ("" if not rest else rest if rest.startswith("[") else "." + rest)

    if isinstance(value, dict):
        return [join(str(k), p) for k, v in value.items() for p in ([""] if v is None else nulls_in(v))]
    if isinstance(value, list):
        return [join(f"[{i}]", p) for i, v in enumerate(value) for p in ([""] if v is None else nulls_in(v))]
    return []
