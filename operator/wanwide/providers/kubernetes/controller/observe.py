"""What a phase needs to know about a Trial's world, read from the API server and S3 (and helm's renders).

Each function returns plain data (the observation the pure decisions in
:mod:`.phases` take); only what the current phase needs is read.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from wanwide.core import lifecycle as lc
from wanwide.core.plan import names
from wanwide.core.plan.monitoring import MONITOR_KINDS
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.controller import deploy, ownership, results
from wanwide.providers.kubernetes.controller.deploy import DB_KINDS, Obs
from wanwide.providers.kubernetes.kube import helm, readiness
from wanwide.providers.kubernetes.kube.client import Kube, MissingSource
from wanwide.providers.kubernetes.render import OBJECTS, chart_releases, database, netpol
from wanwide.providers.kubernetes.render.chaos import CHAOS_API
from wanwide.providers.kubernetes.render.chart import ChartError
from wanwide.providers.kubernetes.render.keystone import HelmRelease
from wanwide.providers.kubernetes.render.monitors import MON_API
from wanwide.providers.kubernetes.render.rally import JOB, PROBE
from wanwide.providers.kubernetes.render.secrets import keys_secret_name, password_keys


@dataclass
class Where:
    """The Trial's identity and the operator's settings observations depend on."""

    kube: Kube
    instance: str | None = None  # the owning Benchmark's uid (part of the results prefix)
    plan_generation: int = 0
    trial_clusterrole: str | None = None
    operator_subject: dict[str, str] | None = None
    network_policy: netpol.Settings | None = None  # the operator's setting (None: the defaults)


def passwords(w: Where, plan: TrialPlan) -> dict[str, str]:
    """The Benchmark's generated passwords (one read of its key Secret)."""
    name = keys_secret_name(plan.benchmark)
    data = (w.kube.get("v1", "Secret", name, plan.bench_namespace) or {}).get("data") or {}
    out = {}
    for k in password_keys(plan):
        if k not in data:
            raise MissingSource(f"Secret {plan.bench_namespace}/{name} lacks {k}: "
                                "the operator creates it with the Benchmark; do not edit it")
        out[k] = base64.b64decode(data[k]).decode()
    return out


def rolebinding(w: Where, plan: TrialPlan, ns: str) -> dict[str, Any] | None:
    """The operator's RoleBinding in a trial namespace (when the chart names a trial ClusterRole)."""
    if not w.trial_clusterrole or not w.operator_subject:
        return None
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "wanwide-operator", "namespace": ns, "labels": plan.labels()},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": w.trial_clusterrole},
        "subjects": [w.operator_subject],
    }


def chaos_children(w: Where, plan: TrialPlan) -> list[dict[str, Any]]:
    """The trial's chaos objects: one labelled list per kind across namespaces (the chart's ClusterRole
    lets the operator list them cluster-wide), kept to the trial's own namespaces."""
    sel = {names.L_TRIAL: plan.name}
    mine = set(plan.namespaces)
    # a kind no longer served (Chaos Mesh's CRDs removed) took its objects with it: nothing to remove
    if not w.kube.serves(CHAOS_API, "NetworkChaos"):
        return []
    return [c for c in w.kube.list(CHAOS_API, "NetworkChaos", sel) if c["metadata"].get("namespace") in mine]


_RELEASES: dict[tuple[int, tuple[tuple[str, str], ...]], tuple[TrialPlan, dict[tuple[str, str], HelmRelease]]] = {}


def _releases(plan: TrialPlan, passwords: dict[str, str]) -> dict[tuple[str, str], HelmRelease]:
    """The trial's chart releases by (service, region), made once per plan (a trial's plan object lives as long as
    it runs: see providers/kubernetes/controller/trial.py) and passwords: hundreds of regions' values are not
    recomputed every step."""
    key = (id(plan), tuple(sorted(passwords.items())))
    hit = _RELEASES.get(key)
    if hit is None or hit[0] is not plan:
        while len(_RELEASES) >= 16:
            _RELEASES.pop(next(iter(_RELEASES)))
        hit = _RELEASES[key] = (plan, chart_releases(plan, passwords))
    return hit[1]


def _charts(w: Where, plan: TrialPlan, status: dict[str, Any], obs: Obs) -> None:
    """The chart releases of the stages not done yet, rendered and confined (None while helm renders one; all of
    them before any is applied), what was refused or failed to render, the trial's hook Jobs (one list across its
    namespaces) and its Deployments."""
    releases = _releases(plan, obs["passwords"])
    charts: dict[tuple[str, str], Any] = {}
    refused: dict[tuple[str, str], str] = {}
    failed: dict[tuple[str, str], str] = {}
    for key in deploy.charted(plan, status):
        rel = releases[key]
        try:
            charts[key] = helm.RENDERS.get(rel, plan.labels(rel.region, key[0]), also(plan, rel.namespace))
        except ChartError as e:  # its source or what it renders is not allowed: permanent
            refused[key] = f"{rel.namespace}: {e}"
        except helm.HelmError as e:  # counted in wanwide_chart_errors_total
            failed[key] = str(e)
    obs |= {"charts": charts, "chart_refused": refused, "render_failed": failed}
    mine = set(plan.namespaces)
    obs["jobs"] = {f"{j['metadata']['namespace']}/{j['metadata']['name']}": readiness.job_state(j)
                   for j in w.kube.list("batch/v1", "Job", {names.L_TRIAL: plan.name}, cached=True)
                   if j["metadata"]["namespace"] in mine and (j["metadata"].get("labels") or {}).get(names.L_ROLE)
                   in {s for s, _ in charts}}
    helm.CHART_ERRORS.labels("hook").inc(sum(s == "failed" for s in obs["jobs"].values()))  # deleted by this step
    obs["deployments"] = {f"{d['metadata']['namespace']}/{d['metadata']['name']}": readiness.deployment_available(d)
                          for d in w.kube.list("apps/v1", "Deployment", {names.L_TRIAL: plan.name}, cached=True)
                          if d["metadata"]["namespace"] in mine}
    if any(o["kind"] == "StatefulSet" for c in charts.values() if c is not None for o in c.objects):
        obs["statefulsets"] = {f"{d['metadata']['namespace']}/{d['metadata']['name']}": readiness.statefulset_ready(d)
                               for d in w.kube.list("apps/v1", "StatefulSet", {names.L_TRIAL: plan.name}, cached=True)
                               if d["metadata"]["namespace"] in mine}


def also(plan: TrialPlan, namespace: str) -> tuple[str, ...]:
    """Where a release in ``namespace`` may put its dependency-check Roles besides its own namespace: the database's,
    and the trial's other namespaces (a region's fake computes wait for the bus and APIs of their control plane,
    which runs in another region in shape stretched; Keystone alone needs only the database's)."""
    others = () if plan.control_plane is None or not plan.control_plane.services else \
        tuple(ns for ns in plan.namespaces if ns not in (namespace, plan.db_namespace))
    return (plan.db_namespace, *others)


def database_ready(w: Where, plan: TrialPlan, service: str = "database") -> dict[str, bool]:
    """Each object of a database stage (render.OBJECTS: MariaDB, Database, User, Grant, CrdbCluster) by ``Kind/name``
    (``Kind/namespace/name`` outside the database's namespace): Ready or not."""
    ready: dict[str, bool] = {}
    for o in OBJECTS[service](plan):
        if o["kind"] in DB_KINDS:
            m = o["metadata"]
            live = w.kube.get(o["apiVersion"], o["kind"], m["name"], m["namespace"])
            where = "" if m["namespace"] == plan.db_namespace else f"{m['namespace']}/"
            ready[f"{o['kind']}/{where}{m['name']}"] = readiness.dependency_ready(live)
    return ready


def provisioning(w: Where, plan: TrialPlan, status: dict[str, Any], obs: Obs) -> None:
    """What the deployment's stages not done yet need: before the trial's place, whether its namespaces are free;
    then the database's objects, and the charts."""
    if lc.PLACE not in deploy.applied(status):
        # one list of every namespace: any named like the trial's that is not its own stops it before it applies
        existing = {n["metadata"]["name"]: n for n in w.kube.list("v1", "Namespace", cached=True)}
        obs["namespaces_taken"] = ownership.foreign(existing, plan.namespaces, w.instance, plan.name)
        obs["rolebindings"] = {ns: rb for ns in plan.namespaces if (rb := rolebinding(w, plan, ns))}
        if plan.monitoring.enabled:
            obs["monitoring_crds"] = w.kube.serves(MON_API, *MONITOR_KINDS)
        return
    finished = lc.done(status)
    for stage in lc.stages(plan):
        if stage.service in deploy.READY and stage.name not in finished:
            obs[deploy.READY[stage.service]] = database_ready(w, plan, stage.service)
    if not deploy.charted(plan, status):
        return
    try:
        obs["passwords"] = passwords(w, plan)
    except MissingSource as e:
        obs["missing"] = str(e)
        return
    _charts(w, plan, status, obs)


def injecting(w: Where, plan: TrialPlan, status: dict[str, Any], obs: Obs) -> None:
    if not lc.needs_shaping(plan):
        return
    obs["chaos_installed"] = w.kube.serves(CHAOS_API, "NetworkChaos")
    if not obs["chaos_installed"]:
        return
    obs["chaos"] = chaos_children(w, plan)  # one list: what to change, and what Chaos Mesh says of each
    obs["service_addresses"] = service_addresses(plan, services(w, plan))
    if "wan" not in lc.done(status):
        obs["running_pods"] = {
            r: any((p.get("status") or {}).get("phase") == "Running"
                   for p in w.kube.list("v1", "Pod", None, plan.namespace(r)))
            for r in plan.region_names}


def running_pods(w: Where, plan: TrialPlan) -> list[dict[str, Any]]:
    """The trial's running pods (one list across namespaces, from the API server's cache)."""
    mine = set(plan.namespaces)
    return [p for p in w.kube.list("v1", "Pod", None, cached=True, fields={"status.phase": "Running"})
            if p["metadata"].get("namespace") in mine]


def services(w: Where, plan: TrialPlan) -> list[dict[str, Any]]:
    """The trial's Services (one list across namespaces, from the API server's cache)."""
    mine = set(plan.namespaces)
    return [s for s in w.kube.list("v1", "Service", None, cached=True) if s["metadata"].get("namespace") in mine]


def service_addresses(plan: TrialPlan, services: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Region → the cluster IPs of its Services (of ``services``): every one in its namespace, and in a database
    namespace of its own those labelled with the region (its member's); a Service of several regions' pods
    (mariadb-operator's primary) and a headless one have none to give. Regions with none are left out."""
    region_of = {plan.namespace(r): r for r in plan.region_names}
    regions = set(plan.region_names)
    out: dict[str, set[str]] = {}
    for s in services:
        md, spec = s.get("metadata") or {}, s.get("spec") or {}
        ns = md.get("namespace")
        region = region_of.get(ns)
        if region is None and ns == plan.db_namespace:
            label = (md.get("labels") or {}).get(names.L_REGION)
            region = label if label in regions else None
        ips = {ip for ip in [*(spec.get("clusterIPs") or []), spec.get("clusterIP")] if ip and ip != "None"}
        if region and ips and spec.get("type") != "ExternalName":
            out.setdefault(region, set()).update(ips)
    return {r: sorted(v) for r, v in out.items()}


def _late_chaos(w: Where, plan: TrialPlan, obs: Obs) -> None:
    """What the WAN for pods started after its objects needs (render/chaos.py ``late_pods``): the trial's chaos
    objects with Chaos Mesh's records of what they selected, its running pods, and its Services' addresses."""
    obs["chaos_installed"] = w.kube.serves(CHAOS_API, "NetworkChaos")
    if obs["chaos_installed"]:
        obs["chaos"] = chaos_children(w, plan)
        obs["running"] = running_pods(w, plan)
        obs["service_addresses"] = service_addresses(plan, services(w, plan))


def verifying_network(w: Where, plan: TrialPlan, status: dict[str, Any], obs: Obs) -> None:
    if lc.needs_shaping(plan):
        _late_chaos(w, plan, obs)
    obs["results"] = results.target(w.kube, plan, w.instance)  # where the probes store what they measure
    check = lc.check_of(status)
    if obs["results"] is None or f"probe-{check}" not in lc.done(status):
        return
    sources = lc.probe_sources(plan)
    obs["probes"] = results.probes(w.kube, plan, check, sources, w.instance)
    mine = {plan.namespace(s): s for s in sources}
    obs["probe_jobs"] = {mine[j["metadata"]["namespace"]]: readiness.job_state(j)
                         for j in w.kube.list("batch/v1", "Job", {names.L_TRIAL: plan.name, names.L_ROLE: "probe"},
                                              cached=True)
                         if j["metadata"]["namespace"] in mine and j["metadata"]["name"] == f"{PROBE}-{check}"}


def loading(w: Where, plan: TrialPlan, status: dict[str, Any], obs: Obs) -> None:
    if lc.needs_shaping(plan):
        # the fault schedule is kept by comparing what is in force with what is there, and pods started after the
        # WAN's objects (the runners) get theirs
        _late_chaos(w, plan, obs)
        if not obs["chaos_installed"]:
            return
        if any(f.kind in lc.CUT for f in plan.faults):  # a cut is injected on its own side, with the others' addresses
            obs["pod_addresses"] = pod_addresses(plan, obs["running"])
    if not status.get("loadStartAt"):
        return
    if f"load-{lc.attempt_of(status)}" not in lc.done(status):
        obs["results"] = results.target(w.kube, plan, w.instance)  # the runners' upload target, applied now
    else:
        # one labelled list across the trial's namespaces, not a request per region; read from etcd, not the
        # watch cache: a Job created by the step before must not look missing (missing counts as failed)
        region_of = {plan.namespace(r): r for r in plan.load_regions}
        live = {region_of[j["metadata"]["namespace"]]: j
                for j in w.kube.list("batch/v1", "Job", {names.L_TRIAL: plan.name, names.L_ROLE: "load"})
                if j["metadata"]["namespace"] in region_of and j["metadata"]["name"] == JOB}
        obs["jobs"] = {r: readiness.job_state(live.get(r)) for r in plan.load_regions}
        failed = [r for r, s in obs["jobs"].items() if s == "failed"]
        if failed:  # the step that sees it retries or fails the trial: read once, with the runners' own words
            obs["runner_said"], obs["runner_late"] = results.runner_said(w.kube, plan, lc.attempt_of(status), failed,
                                                                         w.instance)
        if any(s not in ("complete", "failed", "missing") for s in obs["jobs"].values()):
            obs["store"] = results.probe(w.kube, plan, w.instance)  # a runner may be waiting for it


def pod_addresses(plan: TrialPlan, running: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Region → the addresses of its running pods (of ``running``): its namespace's, and its database member's
    in a database namespace of their own; regions with none are left out."""
    region_of = {plan.namespace(r): r for r in plan.region_names}
    member_of = {(plan.db_namespace, pod): r for r, pod in database.members(plan).items()}
    out: dict[str, set[str]] = {}
    for p in running:
        md, st = p.get("metadata") or {}, p.get("status") or {}
        ns = md.get("namespace")
        region = region_of.get(ns) or member_of.get((ns, md.get("name")))
        ips = {a["ip"] for a in st.get("podIPs") or [] if a.get("ip")} | ({st["podIP"]} if st.get("podIP") else set())
        if region and ips and not (p.get("spec") or {}).get("hostNetwork"):
            out.setdefault(region, set()).update(ips)
    return {r: sorted(v) for r, v in out.items()}


def collecting(w: Where, plan: TrialPlan, status: dict[str, Any], obs: Obs) -> None:
    obs["bundles"] = results.bundles(w.kube, plan, lc.attempt_of(status), w.instance)


def pod_chaos(w: Where, plan: TrialPlan, chaos: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The PodNetworkChaos of each pod (in the trial's namespaces) a deleted chaos object's recovery waits on."""
    mine, out = set(plan.namespaces), {}
    waits = sorted({p for c in chaos for p in readiness.recovery_waits_on(c)})
    if not waits or not w.kube.serves(CHAOS_API, "PodNetworkChaos"):
        return out
    for pid in waits:
        ns, _, name = pid.partition("/")
        if ns in mine and (o := w.kube.get(CHAOS_API, "PodNetworkChaos", name, ns)) is not None:
            out[pid] = o
    return out


def running_pods_of_chaos(kube: Kube, chaos: list[dict[str, Any]]) -> set[str]:
    """Of the pods deleted chaos objects have not recovered, those still running (``namespace/name``): one list
    of running pods from the API server's cache, and only while some pod is left to recover."""
    left = {readiness.pod_of(i) for c in chaos for i in readiness.unrecovered(c)}
    if not left:
        return set()
    running = kube.list("v1", "Pod", None, cached=True, fields={"status.phase": "Running"})
    return {pid for p in running if (pid := f"{p['metadata'].get('namespace')}/{p['metadata'].get('name')}") in left}


def cleaning_up(w: Where, plan: TrialPlan, status: dict[str, Any], obs: Obs) -> None:
    obs["chaos"] = chaos_children(w, plan)
    if obs["chaos"]:
        obs["pod_chaos"] = pod_chaos(w, plan, obs["chaos"])
        obs["running_pods_of_chaos"] = running_pods_of_chaos(w.kube, obs["chaos"])
        return
    live = {ns: o for ns in plan.namespaces
            if (o := w.kube.get("v1", "Namespace", ns)) is not None and ownership.namespace_ours(o, w.instance, plan.name)}
    obs["namespaces"] = {ns: bool(o["metadata"].get("deletionTimestamp")) for ns, o in live.items() if o is not None}
    obs["namespaces_why"] = {ns: why for ns, o in live.items() if o is not None and (why := readiness.terminating_why(o))}



def placement(w: Where, plan: TrialPlan, status: dict[str, Any], obs: Obs) -> None:
    """The trial's pods not yet running (one list across namespaces, from the API server's cache)."""
    mine = set(plan.namespaces)
    obs["pending_pods"] = [p for p in w.kube.list("v1", "Pod", None, cached=True, fields={"status.phase": "Pending"})
                           if p["metadata"].get("namespace") in mine]


OBSERVERS = {  # each part of what the lifecycle reads (core/lifecycle/machine.py ``parts``), as it is read here
    "deployment": provisioning,
    "wan": injecting,
    "network": verifying_network,
    "load": loading,
    "bundles": collecting,
    "cleanup": cleaning_up,
    "placement": placement,
}


def observe(w: Where, plan: TrialPlan, status: dict[str, Any]) -> Obs:
    """What the Trial's current phase reads."""
    obs: Obs = {"plan_generation": w.plan_generation, "owner": w.instance, "network_policy": w.network_policy}
    for part in lc.parts(status):
        if part in OBSERVERS:
            OBSERVERS[part](w, plan, status, obs)
    return obs
