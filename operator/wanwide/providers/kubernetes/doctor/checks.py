"""What ``wanwide doctor`` judges, from what it observed: one pure function per line of its table.

Each takes plain objects as the API server returns them (and the probes' results) and says whether the
cluster is ready for a Benchmark, and if not, how to fix it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from wanwide import __version__

OK, FAIL, WARN = "ok", "FAIL", "warn"
WANWIDE_CRDS = ("topologies.wanwide.io", "benchmarks.wanwide.io", "trials.wanwide.io")
CHAOS_DAEMON = "chaos-daemon"


@dataclass(frozen=True)
class Check:
    """One line of the doctor's table."""

    what: str
    state: str  # ok | FAIL | warn
    detail: str
    fix: str = ""


@dataclass
class Observed:
    """Everything the doctor read from the cluster (and measured with its probes)."""

    crds: dict[str, dict[str, Any]] = field(default_factory=dict)  # wanwide's, as served
    expected_crds: dict[str, dict[str, Any]] = field(default_factory=dict)  # this version's (wanwide crds)
    served: dict[str, bool] = field(default_factory=dict)  # kind → served (NetworkChaos, MariaDB, CrdbCluster)
    operators: list[dict[str, Any]] = field(default_factory=list)  # Deployments named wanwide
    dependency_deployments: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # which → Deployments
    nodes: list[dict[str, Any]] = field(default_factory=list)
    chaos_daemons: list[dict[str, Any]] = field(default_factory=list)  # chaos-daemon pods
    netem: dict[str, tuple[bool | None, str]] | None = None  # node → (usable, what the probe said); None: not probed
    storage_classes: list[dict[str, Any]] = field(default_factory=list)
    volumes: list[dict[str, Any]] = field(default_factory=list)  # PersistentVolumes
    s3: tuple[bool, str] | None = None  # (bucket writable, detail); None: no Benchmark given
    backend: str | None = None  # the Benchmark's, when one is given
    regions: dict[str, dict[str, str] | None] = field(default_factory=dict)  # region → node selector (plan)
    tolerations: list[dict[str, Any]] = field(default_factory=list)  # the region pods' (spec.runner.pod)
    netem_off: tuple[str, str] = ("not probed (--no-netem)", "run without --no-netem")  # (why, fix) when None


def _ready(d: dict[str, Any]) -> bool:
    st = d.get("status") or {}
    return (st.get("availableReplicas") or 0) >= 1


def _where(o: dict[str, Any]) -> str:
    return f"{o['metadata'].get('namespace')}/{o['metadata']['name']}"


def crds(o: Observed) -> Check:
    missing = [n for n in WANWIDE_CRDS if n not in o.crds]
    if missing:
        return Check("wanwide CRDs", FAIL, f"missing: {', '.join(missing)}",
                     "install the chart (it installs them, crds.enabled) or kubectl apply --server-side -f crds/")
    stale = [n for n in WANWIDE_CRDS if n in o.expected_crds
             and _schemas(o.crds[n]) != _schemas(o.expected_crds[n])]
    if stale:
        return Check("wanwide CRDs", FAIL, f"not those of wanwide {__version__}: {', '.join(stale)}",
                     f"helm upgrade the chart of wanwide {__version__} (it upgrades them), or kubectl apply "
                     "--server-side -f crds/ of that version")
    return Check("wanwide CRDs", OK, f"{len(WANWIDE_CRDS)} installed, those of wanwide {__version__}")


def _schemas(crd: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(v.get("name"), (v.get("schema") or {}).get("openAPIV3Schema")) for v in crd["spec"]["versions"]]


def operator(o: Observed) -> Check:
    ready = [d for d in o.operators if _ready(d)]
    if ready:
        return Check("wanwide operator", OK, ", ".join(f"{_where(d)} running" for d in ready))
    if o.operators:
        return Check("wanwide operator", FAIL, f"{', '.join(map(_where, o.operators))} not available",
                     "kubectl describe deployment and kubectl logs of its pod say why")
    return Check("wanwide operator", FAIL, "no Deployment of the wanwide chart",
                 "helm install wanwide charts/wanwide -n wanwide-system --create-namespace")


def _usable(o: Observed) -> list[dict[str, Any]]:
    """The schedulable nodes the region pods may use: not cordoned, every NoSchedule/NoExecute taint tolerated."""
    return [n for n in o.nodes if not (n.get("spec") or {}).get("unschedulable")
            and all(_tolerated(t, o.tolerations) for t in (n.get("spec") or {}).get("taints") or []
                    if t.get("effect") in ("NoSchedule", "NoExecute"))]


def hosts(o: Observed) -> list[dict[str, Any]]:
    """The nodes that will host a region: those the placement selects among :func:`_usable`, else all of them."""
    usable = _usable(o)
    selectors = [s for s in o.regions.values() if s]
    if not selectors:
        return usable
    return [n for n in usable if any(_matches(n, s) for s in selectors)]


def _tolerated(taint: dict[str, Any], tolerations: list[dict[str, Any]]) -> bool:
    """Whether one of ``tolerations`` tolerates ``taint`` (Kubernetes' rules)."""
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t["key"] == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _matches(node: dict[str, Any], selector: dict[str, str]) -> bool:
    labels = node["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def placement(o: Observed) -> Check:
    if not o.regions:
        return Check("nodes for the placement", OK, f"{len(hosts(o))} schedulable node(s); no Benchmark given")
    nowhere = {r: s for r, s in o.regions.items() if s and not any(_matches(n, s) for n in o.nodes)}
    if nowhere:
        first = next(iter(nowhere.values()))
        sample = ", ".join(f"{r} ({', '.join(f'{k}={v}' for k, v in s.items())})" for r, s in list(nowhere.items())[:5])
        key, value = next(iter(first.items()))
        return Check("nodes for the placement", FAIL,
                     f"{len(nowhere)} of {len(o.regions)} region(s) have no node: {sample}",
                     f"label nodes (kubectl label node NODE {key}={value}) or change the Topology's spec.placement "
                     "(mode: none runs anywhere; mode: nodes names the nodes)")
    usable = _usable(o)
    blocked = {r: s for r, s in o.regions.items() if s and not any(_matches(n, s) for n in usable)}
    if blocked:
        r, s = next(iter(blocked.items()))
        node = next(n for n in o.nodes if _matches(n, s))
        why = [f"{t['key']}={t.get('value', '')}:{t['effect']}" for t in (node.get("spec") or {}).get("taints") or []
               if t.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(t, o.tolerations)]
        return Check("nodes for the placement", FAIL,
                     f"{len(blocked)} of {len(o.regions)} region(s) only on nodes their pods cannot use: {r} on "
                     f"{node['metadata']['name']} ({'taint ' + ', '.join(why) if why else 'cordoned'})",
                     "give the region pods a toleration (spec.runner.pod.tolerations), or untaint or uncordon the "
                     "node, or change the Topology's spec.placement")
    pinned = sum(1 for s in o.regions.values() if s)
    return Check("nodes for the placement", OK,
                 f"{len(o.regions)} region(s) on {len(hosts(o))} node(s)" + (f", {pinned} pinned" if pinned else ""))


def chaos_mesh(o: Observed) -> list[Check]:
    if not o.served.get("NetworkChaos"):
        return [Check("Chaos Mesh", FAIL, "NetworkChaos is not served",
                      "install Chaos Mesh ≥ 2.8 (hack/deps.sh install --only chaos-mesh; docs/chameleon.md)")]
    out = [Check("Chaos Mesh", OK, "NetworkChaos served")]
    running = {(p.get("spec") or {}).get("nodeName") for p in o.chaos_daemons
               if (p.get("status") or {}).get("phase") == "Running"}
    without = [n["metadata"]["name"] for n in hosts(o) if n["metadata"]["name"] not in running]
    if without:
        out.append(Check("chaos-daemon on every region node", FAIL, f"none running on {', '.join(without[:8])}"
                         + (" …" if len(without) > 8 else ""),
                         "the chaos-daemon DaemonSet must run on every node that hosts a region: check its "
                         "tolerations and nodeSelector (kubectl -n chaos-mesh describe ds chaos-daemon)"))
    else:
        out.append(Check("chaos-daemon on every region node", OK, f"{len(hosts(o))} node(s)"))
    return out


def netem(o: Observed) -> Check:
    if o.netem is None:
        return Check("netem on every region node", WARN, *o.netem_off)
    no_tc = {n for n, (ok, why) in o.netem.items() if ok is False and "tc: not found" in why}
    if no_tc:
        return Check("netem on every region node", WARN, f"the probe image has no tc ({', '.join(sorted(no_tc))})",
                     "give --image an image with iproute2 (the wanwide image of this version has it)")
    bad = {n: why for n, (ok, why) in o.netem.items() if ok is False}
    unknown = {n: why for n, (ok, why) in o.netem.items() if ok is None}
    if bad:
        node, why = next(iter(bad.items()))
        return Check("netem on every region node", FAIL,
                     f"unusable on {', '.join(sorted(bad))}: {why.strip()[:200]}",
                     "the kernel needs the sch_netem module: on Debian/Ubuntu install linux-modules-extra-$(uname -r) "
                     "(or the distribution's kernel-modules-extra) on those nodes and modprobe sch_netem; "
                     "without it Chaos Mesh cannot delay or drop packets (the trials fail with ChaosFailed)")
    if unknown:
        return Check("netem on every region node", WARN, f"no answer from {', '.join(sorted(unknown))}: "
                     f"{next(iter(unknown.values())).strip()[:200]}", "see the probe Job's events and log")
    return Check("netem on every region node", OK, f"a netem qdisc added in a pod on {len(o.netem)} node(s)")


def database_operator(o: Observed) -> list[Check]:
    backend = o.backend
    out: list[Check] = []
    wanted = [("mariadb-operator", "MariaDB")] if backend in (None, "mariadb", "galera") else []
    if backend == "cockroachdb":
        wanted.append(("cockroach-operator", "CrdbCluster"))
    for name, kind in wanted:
        deps = o.dependency_deployments.get(name, [])
        if not o.served.get(kind):
            out.append(Check(name, FAIL if backend else WARN, f"{kind} is not served",
                             f"install {name} (hack/deps.sh installs mariadb-operator: --only mariadb-operator; docs/chameleon.md)"
                             + ("" if name == "mariadb-operator" else ": no source usable here, bring your own")))
        elif not any(_ready(d) for d in deps):
            out.append(Check(name, FAIL, f"{kind} served but no {name} Deployment is available",
                             f"kubectl get deploy -A | grep {name}; its log says why"))
        else:
            out.append(Check(name, OK, ", ".join(_where(d) for d in deps if _ready(d))))
    return out


def storage(o: Observed) -> Check | None:
    if o.backend not in (None, "galera"):
        return None
    default = [sc["metadata"]["name"] for sc in o.storage_classes
               if (sc["metadata"].get("annotations") or {}).get("storageclass.kubernetes.io/is-default-class") == "true"]
    free = [pv for pv in o.volumes if (pv.get("status") or {}).get("phase") == "Available"]
    need = len(o.regions) if o.regions else None
    if default:
        return Check("storage for Galera", OK, f"default StorageClass {default[0]}")
    if free and (need is None or len(free) >= need):
        return Check("storage for Galera", OK, f"{len(free)} PersistentVolume(s) available, no default StorageClass")
    state = FAIL if o.backend == "galera" else WARN
    return Check("storage for Galera", state,
                 f"no default StorageClass and {len(free)} available PersistentVolume(s)"
                 + (f" for {need} member(s)" if need else ""),
                 "Galera members claim 1 GiB each: install a provisioner (k3s has local-path) and mark its "
                 "StorageClass default, or create PersistentVolumes")


def s3(o: Observed) -> Check | None:
    if o.s3 is None:
        return None
    ok, detail = o.s3
    return Check("results store", OK if ok else FAIL, detail,
                 "" if ok else "check spec.results.s3 (endpoint, bucket, secretRef) and that the bucket exists")


def all_checks(o: Observed) -> list[Check]:
    """The table, in the order a user fixes things."""
    out = [crds(o), operator(o), *chaos_mesh(o), netem(o), *database_operator(o), storage(o), placement(o), s3(o)]
    return [c for c in out if c is not None]


def for_benchmark(o: Observed, backends: list[str], chaos: bool, netem_needed: bool) -> list[Check]:
    """What the operator checks before a Benchmark's first trial: not its own CRDs and Deployment (it is
    running), Chaos Mesh when the plan shapes links or injects faults, netem only when it shapes links or
    adds loss (a partition alone needs no netem), the database operators of ``backends``."""
    out: list[Check] = []
    if chaos:
        out += chaos_mesh(o)
    if netem_needed:
        out.append(netem(o))
    seen: set[str] = set()
    for b in backends:
        for c in [*database_operator(replace(o, backend=b)), storage(replace(o, backend=b))]:
            if c is not None and c.what not in seen:
                seen.add(c.what)
                out.append(c)
    return [*out, placement(o), *([c] if (c := s3(o)) else [])]


def table(checks: list[Check]) -> str:
    """A plain table: state, what, detail, and the fix under a failing line."""
    width = max(len(c.what) for c in checks)
    lines = []
    for c in checks:
        lines.append(f"{c.state:<4}  {c.what:<{width}}  {c.detail}")
        if c.state != OK and c.fix:
            lines.append(f"{'':<4}  {'':<{width}}  fix: {c.fix}")
    return "\n".join(lines)
