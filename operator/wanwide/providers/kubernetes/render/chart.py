"""A rendered Helm chart (``helm template`` output) as ordered stages, applied the way Argo CD syncs one. Pure.

Helm's install order, kept: ``pre-install`` hooks, then the chart's objects, then ``post-install``
hooks; hooks by ``helm.sh/hook-weight`` (ascending), each stage's objects in Helm's kind order. A
stage's Jobs must be Complete before the next stage is applied (Helm's ``WatchUntilReady``); other
kinds are ready once applied, as in Helm. Hooks of one weight go together (Argo CD's sync waves;
Helm runs them one by one). Only installing happens here: hooks of upgrades, rollbacks, deletion
and tests are left out (a trial's namespaces are deleted, never uninstalled), as are delete policies
(hook Jobs stay until their namespace goes, which is what the keystone chart's own policy,
``before-hook-creation``, amounts to for a single install).

What a chart may render is confined (docs/security.md): a Benchmark author names the chart and its values,
and the operator applies what it renders with the operator's rights, so only the kinds the trial's
ClusterRole exists for (:data:`ALLOWED`), only into the release's namespace (a dependency-check Role and
its RoleBinding also into the database's), RoleBindings only of the chart's own Roles to ServiceAccounts of
the release's namespace, Roles granting only what openstack-helm's dependency checks read, Services only
inside the cluster; ``wanwide.io/`` labels and annotations are taken off (they steer the operator: a Secret
``wanwide.io/copy-from`` another namespace would be filled from it). A chart that renders anything else is
refused whole (:class:`ChartRefused`), before any of its objects is applied.

Progress is re-derived from the hook Jobs alone: a stage's Jobs exist only once every stage before
it is done, so the latest stage with a Job says how far a release got (a restarted operator
repeats at most the applies of one stage, which are idempotent).
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
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
RBAC = "rbac.authorization.k8s.io/v1"
# The kinds a chart may render: what the keystone, rabbitmq, placement, glance and nova charts need (the bus and the
# fake computes are StatefulSets), and what the trial ClusterRole lets the
# operator write (charts/wanwide/templates/rbac.yaml), each under its one API version.
ALLOWED = frozenset({
    ("v1", "ConfigMap"), ("v1", "Secret"), ("v1", "Service"), ("v1", "ServiceAccount"),
    ("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("batch/v1", "Job"), ("policy/v1", "PodDisruptionBudget"),
    (RBAC, "Role"), (RBAC, "RoleBinding"),
})
# What a chart's Role may grant: openstack-helm's dependency checks (helm-toolkit's kubernetes_pod_rbac_roles)
# read these; the trial ClusterRole holds exactly this, so the API server's escalation check agrees.
GRANTABLE_GROUPS = frozenset({"", "extensions", "batch", "apps"})
GRANTABLE_RESOURCES = frozenset({"services", "endpoints", "jobs", "pods"})
GRANTABLE_VERBS = frozenset({"get", "list"})
OWN_PREFIX = "wanwide.io/"  # labels and annotations that steer the operator: never taken from a chart
RESERVED_NAMES = ("wanwide", "rally", "network-probe")  # name prefixes of the operator's own objects in a region


class ChartError(PermanentError, ValueError):
    """The rendered chart cannot be applied this way (the message says why and what to do)."""

    reason = "ChartRefused"


class ChartRefused(ChartError):
    """The chart renders objects wanwide does not apply (kinds, namespaces, grants): nothing of it is applied."""


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


MAX_OBJECTS = 2000  # objects one release may render (the keystone chart renders ~30)


def documents(text: str) -> list[dict[str, Any]]:
    """The objects of ``helm template`` output, empty documents dropped and null entries left out.

    Templates write ``annotations:`` with nothing under it (the openstack-helm keystone chart does); the
    API server stores such a field as absent, so leaving it out changes nothing applied, and nothing that
    reads the object later meets None where a map or a list belongs. YAML aliases are refused (helm's own
    output has none; a template can write them, and a few nested ones expand to gigabytes), and so is
    more than :data:`MAX_OBJECTS` objects.
    """
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    if "*" in text and "&" in text and any(isinstance(e, yaml.AliasEvent) for e in yaml.parse(text, Loader=loader)):
        raise ChartRefused("the rendered chart uses YAML aliases (*name): wanwide does not expand them; render "
                           "plain YAML")
    out = []
    for d in yaml.load_all(text, Loader=loader):
        if isinstance(d, dict) and d.get("kind"):
            if len(out) == MAX_OBJECTS:
                raise ChartRefused(f"the rendered chart has more than {MAX_OBJECTS} objects")
            out.append(without_nulls(d, keep=()))
    return out


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


def _own(m: Mapping[str, Any] | None) -> dict[str, Any]:
    """Labels or annotations without wanwide's own keys."""
    return {k: v for k, v in (m or {}).items() if not str(k).startswith(OWN_PREFIX)}


def _placed(o: dict[str, Any], namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """The object in the release's namespace (unless it names one, or is cluster-scoped), with ``labels``
    (a chart's own ``wanwide.io/`` labels and annotations dropped)."""
    meta = dict(o.get("metadata") or {})
    if not isinstance(meta.get("name"), str) or not meta["name"]:
        raise ChartError(f"a {o['kind']} without metadata.name in the rendered chart")
    if o["kind"] not in CLUSTER_SCOPED:
        meta.setdefault("namespace", namespace)
    meta["labels"] = {**_own(meta.get("labels")), **labels}
    if "annotations" in meta:
        meta["annotations"] = _own(meta["annotations"])
    return {**o, "metadata": meta}


def _listed(v: Any) -> list[str]:
    return [str(x) for x in v] if isinstance(v, list) else []


def refusals(objects: Iterable[dict[str, Any]], namespace: str, also: Collection[str] = ()) -> list[str]:
    """Why wanwide would not apply these objects of a release in ``namespace`` (placed by :func:`_placed`);
    ``also``: namespaces where a dependency-check Role and RoleBinding may go too (the database's). Empty: fine."""
    objs = list(objects)
    roles = {(o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs
             if (o.get("apiVersion"), o["kind"]) == (RBAC, "Role")}
    out: list[str] = []
    for o in objs:
        kind, m = o["kind"], o["metadata"]
        ns = m.get("namespace")
        ref = f"{kind} {ns + '/' if ns else ''}{m['name']}"
        if (o.get("apiVersion"), kind) not in ALLOWED:
            out.append(f"{ref} ({o.get('apiVersion')}) is not a kind a chart may render here (only "
                       + ", ".join(sorted(k for _, k in ALLOWED)) + ")")
            continue
        rbac = kind in ("Role", "RoleBinding")
        if ns != namespace and not (rbac and ns in also):
            out.append(f"{ref} is outside the release's namespace {namespace}")
            continue
        if m["name"].startswith(RESERVED_NAMES):
            out.append(f"{ref}: names starting {', '.join(RESERVED_NAMES)} are the operator's own")
        if kind == "Role":
            for i, rule in enumerate(o.get("rules") or []):
                rule = rule if isinstance(rule, dict) else {}
                groups, res, verbs = (set(_listed(rule.get(k))) for k in ("apiGroups", "resources", "verbs"))
                if (rule.get("nonResourceURLs") or not groups <= GRANTABLE_GROUPS or not res <= GRANTABLE_RESOURCES
                        or not verbs <= GRANTABLE_VERBS):
                    out.append(f"{ref} rules[{i}] grants {sorted(verbs)} on {sorted(res)} of {sorted(groups)}: a chart's "
                               f"Role may grant only {sorted(GRANTABLE_VERBS)} on {sorted(GRANTABLE_RESOURCES)}")
        elif kind == "RoleBinding":
            ref_ = o.get("roleRef") if isinstance(o.get("roleRef"), dict) else {}
            if ref_.get("kind") != "Role" or (ns, ref_.get("name")) not in roles:
                out.append(f"{ref} binds {ref_.get('kind')} {ref_.get('name')}: a chart may bind only a Role it "
                           "renders in the same namespace")
            for s in o.get("subjects") or []:
                s = s if isinstance(s, dict) else {}
                if s.get("kind") != "ServiceAccount" or (s.get("namespace") or ns) != namespace:
                    out.append(f"{ref} binds {s.get('kind')} {s.get('namespace') or ns}/{s.get('name')}: a chart may "
                               f"bind only ServiceAccounts of {namespace}")
        elif kind == "Service":
            spec = o.get("spec") if isinstance(o.get("spec"), dict) else {}
            if spec.get("type", "ClusterIP") != "ClusterIP" or spec.get("externalIPs"):
                out.append(f"{ref} is a {spec.get('type', 'ClusterIP')} Service"
                           + (" with externalIPs" if spec.get("externalIPs") else "")
                           + ": a trial's Services stay inside the cluster (ClusterIP)")
    return out


def stages(docs: Iterable[dict[str, Any]], release: str, namespace: str, labels: Mapping[str, str],
           also: Collection[str] = ()) -> Chart:
    """The release's stages from its rendered objects; ``labels`` go on every object (its trial, region).
    Objects wanwide does not apply (:func:`refusals`; ``also``: the database's namespace) refuse the chart."""
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
                             "switch it off in the service's values (spec.openstack.<service>.values)")
        for p in phases:
            hooks.setdefault((PHASES.index(p), _weight(o)), []).append(o)
    out = [Stage(f"{PHASES[p]} {w}", tuple(sorted(objs, key=_order)))
           for (p, w), objs in sorted(hooks.items()) if p == 0]
    out.append(Stage("main", tuple(sorted(main, key=_order))))
    out += [Stage(f"{PHASES[p]} {w}", tuple(sorted(objs, key=_order)))
            for (p, w), objs in sorted(hooks.items()) if p == 1]
    names = Counter(f"{o['kind']}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}"
                    for s in out for o in s.objects)
    twice = sorted(n for n, k in names.items() if k > 1)
    if twice:
        raise ChartError(f"the rendered chart has {', '.join(twice[:3])} more than once")
    refused = refusals([o for s in out for o in s.objects], namespace, also)  # hooks not installed are never applied
    if refused:
        raise ChartRefused(f"the chart renders {len(refused)} object(s) wanwide does not apply, so nothing of it is "
                           f"applied: {'; '.join(refused[:4])}{' …' if len(refused) > 4 else ''} (docs/security.md: "
                           "what a chart may render)")
    return Chart(release, namespace, tuple(out), tuple(skipped))


def _pointer(path: str) -> list[str]:
    if not path.startswith("/"):
        raise ChartError(f"patch path {path!r}: a JSON pointer starts with /")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _step(node: Any, key: str, path: str) -> Any:
    if isinstance(node, list):
        if not key.isdigit() or int(key) >= len(node):
            raise ChartError(f"patch path {path}: no item {key}")
        return node[int(key)]
    if not isinstance(node, dict) or key not in node:
        raise ChartError(f"patch path {path}: no {key!r}")
    return node[key]


def _apply(doc: dict[str, Any], op: Mapping[str, Any]) -> None:
    """One RFC 6902 operation (test, add, replace, remove) on ``doc``, in place."""
    kind, path = op.get("op"), str(op.get("path", ""))
    *parents, last = _pointer(path)
    node: Any = doc
    for k in parents:
        node = _step(node, k, path)
    if kind == "test":
        if _step(node, last, path) != op.get("value"):
            raise ChartError(f"patch test {path}: the chart renders {_step(node, last, path)!r}, not "
                             f"{op.get('value')!r} (a newer chart? review the patch)")
    elif kind == "remove":
        _step(node, last, path)
        del node[int(last) if isinstance(node, list) else last]
    elif kind in ("add", "replace"):
        if isinstance(node, list):
            if last == "-" and kind == "add":
                node.append(op.get("value"))
                return
            _step(node, last, path)
            i = int(last)
            if kind == "add":
                node.insert(i, op.get("value"))
            else:
                node[i] = op.get("value")
        else:
            if kind == "replace":
                _step(node, last, path)
            node[last] = op.get("value")
    else:
        raise ChartError(f"patch op {kind!r}: only test, add, replace and remove")


def patched(docs: list[dict[str, Any]], patches: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``docs`` with each patch's operations applied to the object of its ``kind`` and ``name`` (copies; the object
    must be there, and each ``test`` must hold: a chart that renders otherwise is an error naming the patch)."""
    out = list(docs)
    for p in patches:
        i = next((i for i, d in enumerate(out) if d.get("kind") == p["kind"]
                  and (d.get("metadata") or {}).get("name") == p["name"]), None)
        if i is None:
            raise ChartError(f"the chart renders no {p['kind']} {p['name']} to patch")
        doc = copy.deepcopy(out[i])
        for op in p["ops"]:
            _apply(doc, op)
        out[i] = doc
    return out


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


__all__ = ["ALLOWED", "Chart", "ChartError", "ChartRefused", "Next", "Stage", "documents", "next_step", "patched",
           "refusals", "stages"]
