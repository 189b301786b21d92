"""Chaos Mesh objects: the WAN in force (one netem object per source region × link class × pod-set
kind) and a partition object per cut in force (partitions, each cut of a dropout); loss windows are
the WAN with their links' shaping. What is in force when is the lifecycle's fault schedule.

A region is reached by its pods' addresses and by its Services' cluster IPs. Chaos Mesh filters on
the first only (a ``target``'s ipset holds its pods' ``status.podIP``), and kube-proxy translates a
cluster IP to a pod's address outside the sending pod's network namespace, where the filter is: a
request to another region's Service would leave unshaped and only its reply be delayed (half the
WAN's round trip, as the VM node measured: docs/chaos-mesh.md, "Stop 55"). So every object toward a
region also lists its Services' cluster IPs (``externalTargets``), as observed.

Every selector names the trial's own namespaces (or its own database pods) and
nothing else, so chaos can never reach outside the trial.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from wanwide.core.api.units import fmt_ms, fmt_pct, fmt_rate
from wanwide.core.lifecycle import Active, fault_events, in_force, wan_in_force
from wanwide.core.plan import names
from wanwide.core.plan.latency import LinkClass, classes
from wanwide.core.plan.links import LinkMap, OneWay
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render.common import meta, obj
from wanwide.providers.kubernetes.render.database import members

CHAOS_API = "chaos-mesh.org/v1alpha1"


RUNNING = {"podPhaseSelectors": ["Running"]}
"""Only running pods: a region's namespace also holds the chart's finished Jobs (db-sync, bootstrap) and
the network probes; Chaos Mesh cannot inject into or recover a pod with no running container, and one
such pod held a partition's recovery for minutes on the real node."""


def _pod_sets(plan: TrialPlan, regions: list[str] | tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
    """Selectors covering the regions' running pods: ('n', namespaces) and, with members, ('m', pods)."""
    out: list[tuple[str, dict[str, Any]]] = [("n", {"namespaces": [plan.namespace(r) for r in regions], **RUNNING})]
    mem = members(plan)
    if mem:
        pods = [mem[r] for r in regions]
        out.append(("m", {"pods": {plan.db_namespace: pods}, **RUNNING}))
    return out


def _tag(plan: TrialPlan) -> str:
    """Chaos Mesh derives ipset names from the object name alone: make names unique per trial."""
    return names.short_hash(f"{plan.bench_namespace}/{plan.name}", 6)


def netem(shaping: OneWay) -> dict[str, Any]:
    """The netem fields of one object: delay, loss and rate together, so none overrides another."""
    body: dict[str, Any] = {}
    if shaping.delay_ms or shaping.jitter_ms:
        body["delay"] = {"latency": fmt_ms(shaping.delay_ms), "jitter": fmt_ms(shaping.jitter_ms), "correlation": "0"}
    loss = shaping.loss_pct
    if loss:
        body["loss"] = {"loss": fmt_pct(loss), "correlation": "0"}
    if shaping.rate_mbit is not None:
        body["rate"] = {"rate": fmt_rate(shaping.rate_mbit)}
    return body


Services = Mapping[str, Sequence[str]]
"""Region → the cluster IPs of its Services, as observed (controller/observe.py ``service_addresses``)."""


def _service_ips(regions: Sequence[str], services: Services | None) -> list[str]:
    return sorted({ip for r in regions for ip in (services or {}).get(r, ())})


def _netem_object(plan: TrialPlan, name: str, src_region: str, src: dict[str, Any], dst: dict[str, Any],
                  shaping: OneWay, annotations: dict[str, str] | None = None,
                  external: Sequence[str] = ()) -> dict[str, Any]:
    """One netem object: ``src``'s pods toward ``dst``'s (and ``external``: addresses, the cluster IPs of the
    destination's Services), with ``shaping``."""
    toward: dict[str, Any] = {"target": {"mode": "all", "selector": dst}}
    if external:
        toward["externalTargets"] = list(external)
    return obj(CHAOS_API, "NetworkChaos", meta(name, plan.namespace(src_region), plan.labels(src_region, "wan"), annotations),
               spec={"action": "netem", "mode": "all", "selector": src, "direction": "to", **toward, **netem(shaping)})


def _class_name(plan: TrialPlan, c: LinkClass) -> str:
    """A link class's object name stem (the same class, the same name: a WAN that comes back after a loss window
    is the same objects again)."""
    return f"wan-{_tag(plan)}-{c.src}-{names.short_hash(repr((c.shaping, c.dsts)), 5)}"


def _class_objects(plan: TrialPlan, c: LinkClass, services: Services | None) -> list[dict[str, Any]]:
    """A link class's netem objects: one per pair of pod-set kinds (source, destination); the destinations'
    Services' cluster IPs with their namespaces (one object each, so no address is in two of a pod's filters)."""
    stem = _class_name(plan, c)
    ips = _service_ips(c.dsts, services)
    return [_netem_object(plan, stem + (f"-{s_kind}{t_kind}" if members(plan) else ""), c.src, src, dst, c.shaping,
                          external=ips if t_kind == "n" else ())
            for s_kind, src in _pod_sets(plan, [c.src]) for t_kind, dst in _pod_sets(plan, c.dsts)]


def _classes(plan: TrialPlan, links: LinkMap | None) -> dict[str, list[LinkClass]]:
    return plan.classes if links is None or links == plan.links else classes(links, plan.region_names)


def wan(plan: TrialPlan, links: LinkMap | None = None, services: Services | None = None) -> list[dict[str, Any]]:
    """NetworkChaos objects shaping ``links`` (default: the plan's WAN, present from Injecting to CleaningUp);
    ``services``: region → its Services' cluster IPs (None: not observed, ``wanwide plan``'s preview)."""
    cls = _classes(plan, links)
    return [o for r in plan.region_names for c in cls[r] for o in _class_objects(plan, c, services)]


Late = Mapping[str, Sequence[str]]
"""Region → the names of pods in its namespace that started after the WAN's objects selected its pods."""

A_FOR_POD = "wanwide.io/for-pod"
"""On the objects :func:`late` makes: ``namespace/name`` of the pod they are for."""


def late(plan: TrialPlan, pods: Late, links: LinkMap | None = None,
         services: Services | None = None) -> list[dict[str, Any]]:
    """The WAN for pods that started after its objects were made. Chaos Mesh selects an object's pods (and its
    target's) once, when the object is created: a pod that starts later (the network probe's and the runners'
    Jobs, a pod made again) is neither shaped toward the other regions nor in their objects' targets, so its
    traffic would cross the WAN unshaped both ways (docs/chaos-mesh.md, "VM nodes"). For each such pod: an
    object per link class of its region selecting the pod alone toward the class's destinations, and an object
    per link class of every other region that reaches it, selecting that region's pods toward the pod alone,
    each with the class's shaping (``links``: the WAN in force; default the plan's). Each has a target of its
    own, so none adds to another on a pod (Chaos Mesh gives each target its own band); a pod covered by a late
    object and by a later object of the WAN gets the same shaping from either. The pod's objects also reach the
    destinations' Services (``services``, as :func:`wan`); the others' reach the pod alone (no Service has it
    alone: one that does, as a database member's, is already in the WAN's objects by its cluster IP)."""
    cls = _classes(plan, links)
    out = []
    for r in plan.region_names:
        for pod in sorted(set(pods.get(r) or ())):
            ns = plan.namespace(r)
            tag = names.short_hash(f"{ns}/{pod}", 6)
            one = {"pods": {ns: [pod]}, **RUNNING}
            note = {A_FOR_POD: f"{ns}/{pod}"}
            for c in cls[r]:
                ips = _service_ips(c.dsts, services)
                for t_kind, dst in _pod_sets(plan, c.dsts):
                    out.append(_netem_object(plan, f"{_class_name(plan, c)}-p{tag}{t_kind}", r, one, dst, c.shaping, note,
                                             external=ips if t_kind == "n" else ()))
            for s in plan.region_names:
                for c in cls[s] if s != r else ():
                    if r in c.dsts:
                        for s_kind, src in _pod_sets(plan, [s]):
                            out.append(_netem_object(plan, f"{_class_name(plan, c)}-{s_kind}p{tag}", s, src, one,
                                                     c.shaping, note))
    return out


def late_at(plan: TrialPlan, elapsed_s: float | None, pods: Late,
            services: Services | None = None) -> list[dict[str, Any]]:
    """:func:`late` for the WAN in force ``elapsed_s`` after the load start (None: not loading: the plan's)."""
    if elapsed_s is None or not plan.faults:
        return late(plan, pods, services=services)
    return late(plan, pods, wan_in_force(plan, elapsed_s).links, services)


def late_pods(plan: TrialPlan, running: Sequence[dict[str, Any]], live: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """Region → its running pods (of ``running``, in its namespace) that a live WAN object (of ``live``: not one of
    :func:`late`'s, not being deleted, its pods already selected) selects or targets by namespace but did not
    select: those that started after it was made."""
    region_of = {plan.namespace(r): r for r in plan.region_names}
    mine: dict[str, set[str]] = {}
    for p in running:
        md = p.get("metadata") or {}
        if md.get("namespace") in region_of and not (p.get("spec") or {}).get("hostNetwork"):
            mine.setdefault(md["namespace"], set()).add(md["name"])
    out: dict[str, set[str]] = {}
    for o in live:
        md, spec = o.get("metadata") or {}, o.get("spec") or {}
        records = ((o.get("status") or {}).get("experiment") or {}).get("containerRecords") or []
        if (md.get("deletionTimestamp") or A_FOR_POD in (md.get("annotations") or {}) or spec.get("action") != "netem"
                or not records):
            continue
        for key, sel in ((".", spec.get("selector") or {}), (".Target", (spec.get("target") or {}).get("selector") or {})):
            seen = {"/".join(r["id"].split("/")[:2]) for r in records if r.get("selectorKey") == key and r.get("id")}
            for ns in sel.get("namespaces") or []:
                for pod in mine.get(ns, ()):
                    if f"{ns}/{pod}" not in seen:
                        out.setdefault(region_of[ns], set()).add(pod)
    return {r: sorted(v) for r, v in out.items()}


Addresses = Mapping[str, Sequence[str]]
"""Region → the addresses of its running pods (its namespace's and its database member's), as observed."""


def cuts(plan: TrialPlan, cutting: tuple[Active, ...], elapsed_s: float,
         addresses: Addresses | None = None, services: Services | None = None) -> list[dict[str, Any]]:
    """``partition`` objects per cutting window in force (both ways between its regions and the rest),
    for what is left of it: Chaos Mesh ends it by itself should the operator be down then.

    With ``addresses`` of every other region, only the cut side is injected: its pods drop what goes to
    and comes from the others' addresses (``externalTargets``, which Chaos Mesh takes in both directions
    for a partition), one object per pod set: a cut of one region of 9 is 3 pods to inject, not ≈ 54
    (both sides, every pair of pod sets), which on the real node put a 40 s partition in force 14–21 s
    late. The others' addresses include their Services' cluster IPs (``services``): the cut side's requests to
    them would otherwise leave, reach the other region's pod and be answered from an address not in the set
    (kube-proxy's translation is undone outside the pod). The addresses are the ones running when the cut began (a pod of another region that restarts
    during it comes back with a new one, not cut: its region's members record says so). Without them
    (``wanwide plan``'s preview, or a region with no running pod), both sides by selector."""
    out = []
    for a in cutting:
        cut = list(a.window.regions)
        others = [r for r in plan.region_names if r not in cut]
        left = max(1, math.ceil(a.end_s - max(elapsed_s, a.start_s)))
        if addresses is not None and all(addresses.get(r) for r in others):
            peers = sorted({ip for r in others for ip in addresses[r]} | set(_service_ips(others, services)))
            sides = [(s_kind, src, {"externalTargets": peers}) for s_kind, src in _pod_sets(plan, cut)]
        else:
            sides = [(s_kind + t_kind, src, {"target": {"mode": "all", "selector": dst}})
                     for s_kind, src in _pod_sets(plan, cut) for t_kind, dst in _pod_sets(plan, others)]
        for suffix, src, toward in sides:
            name = f"{a.name}-{_tag(plan)}" + (f"-{suffix}" if members(plan) else "")
            out.append(obj(CHAOS_API, "NetworkChaos", meta(name, plan.namespace(cut[0]), plan.labels(cut[0], "fault"),
                                                           {names.A_FAULT: a.name}),
                           spec={"action": "partition", "mode": "all", "selector": src, "direction": "both",
                                 **toward, "duration": f"{left}s"}))
    return out


def at(plan: TrialPlan, elapsed_s: float | None, addresses: Addresses | None = None,
       services: Services | None = None) -> list[dict[str, Any]]:
    """Every chaos object in force ``elapsed_s`` seconds after the load start (None: not loading: the
    plan's WAN alone), as the lifecycle's fault schedule says (core/lifecycle/schedule.py); ``addresses``: see
    :func:`cuts`; ``services``: see :func:`wan`."""
    if elapsed_s is None or not plan.faults:
        return wan(plan, services=services)
    active = in_force(plan.faults, elapsed_s)
    w = wan_in_force(plan, elapsed_s)
    netems = wan(plan, w.links, services)
    if len(w.cut_by) < len(active):  # loss windows in force: their objects say which
        base = {o["metadata"]["name"] for o in wan(plan)}
        losses = ",".join(a.name for a in active if a.window.kind == "loss")
        netems = [o if o["metadata"]["name"] in base else
                  {**o, "metadata": {**o["metadata"], "annotations": {names.A_FAULT: losses}}} for o in netems]
    return netems + cuts(plan, w.cut_by, elapsed_s, addresses, services)


def timeline(plan: TrialPlan, until_s: float) -> list[dict[str, Any]]:
    """The chaos objects the fault schedule puts in force before ``until_s`` beyond the plan's WAN, once
    each, in the order they come, a dropout's first cut standing for the others (for ``wanwide plan``:
    what the operator will apply; ``wanwide.io/fault`` names the windows)."""
    base = {o["metadata"]["name"] for o in wan(plan)}
    seen: dict[str, dict[str, Any]] = {}
    for e in fault_events(plan.faults, until_s):
        if e.begins and e.occurrence == 0:
            for o in at(plan, e.at_s):
                if o["metadata"]["name"] not in base:
                    seen.setdefault(o["metadata"]["name"], o)
    return list(seen.values())


def needs_netem(plan: TrialPlan) -> bool:
    """Whether the plan needs the kernel's netem: a link shaped (delay, jitter, loss, rate) or a loss window.
    Partitions and dropouts alone do not (Chaos Mesh cuts with iptables and ipset)."""
    return any(plan.classes.values()) or any(w.kind == "loss" for w in plan.faults)


def _within(want: Any, live: Any) -> bool:
    """Every field ``want`` sets, at any depth, has its value in ``live``; what else ``live`` has is not
    compared (Chaos Mesh's webhook adds defaults: a pod selector gains ``namespaces: [<the object's
    namespace>]``)."""
    if isinstance(want, dict):
        return isinstance(live, dict) and all(k in live and _within(v, live[k]) for k, v in want.items())
    return bool(want == live)


def same(live: dict[str, Any], want: dict[str, Any]) -> bool:
    """Whether a live chaos object is the one wanted (a cut's duration counts from its creation; the addresses
    an object lists, a cut's peers or a WAN object's Services, are those of when it was made: neither compared). Chaos Mesh forbids changing a chaos object's
    spec, so a false "not the same" costs a delete and a re-create: the fault late, as the real-node
    partition test found."""
    return _within({k: v for k, v in want["spec"].items() if k not in ("duration", "externalTargets")},
                   live.get("spec") or {})
