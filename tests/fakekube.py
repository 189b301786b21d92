"""The Kubernetes provider's lowest layer as plain data: an API server of dicts, helm, S3, on a clock of its own.

:class:`FakeKube` stands where :class:`wanwide.providers.kubernetes.kube.client.Kube` does (server-side apply,
get, list by label and field, delete, status patches, discovery). Each :meth:`FakeKube.tick` plays the
controllers a trial meets, the way the kwok tier's stages and stand-ins do: Deployments available, database
objects Ready, hook Jobs complete (or failed, ``hooks_fail``), probe Jobs storing what the links in force give,
Rally Jobs finishing ``run_s`` after the load start as ``results`` says (complete, failed, or stopped: measured
but not stored), their bundles in the fake store. Chaos Mesh is played from the objects' contents
(:meth:`FakeKube.links_in_force`: each netem object's delay, jitter, loss and rate between the regions its
selectors name, each partition's cut), injected at once, a partition ``late_s`` late, or refused
(``chaos_refused``: a record failed, as on a node without netem). ``bug``: the Rally Job's apply raises a
TypeError, as a bug in a step would. ``FakeRenders`` renders the fixture keystone chart for any keystone release (issue 45's services: ``service_chart``) (its
recorded ``helm template`` output, re-addressed); ``FakeS3`` holds objects by key. Nothing here decides: the
operator's own handlers run on top (:func:`drive`).
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tests.chartdata import RENDERED, fixture_plan, release
from wanwide.core import lifecycle as lc
from wanwide.core import timestamps as ts
from wanwide.core.api.units import mbit, ms, pct
from wanwide.core.contracts import event_entry, probe_key
from wanwide.core.plan import names
from wanwide.core.plan.links import OneWay, Pair
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.controller.deploy import DB_KINDS
from wanwide.providers.kubernetes.render.chart import documents, stages
from wanwide.providers.kubernetes.render.database import members
from wanwide.providers.kubernetes.render.secrets import KEY_FIELDS

T0 = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
FIXTURE_NS = release().namespace  # the namespace the fixture chart was rendered for
FIXTURE_DB_NS = fixture_plan().db_namespace  # and its database's
BUG = "injected bug"


class ChaosSpecChanged(RuntimeError):
    """What Chaos Mesh's validating webhook answers to a changed spec (HTTP 403): a chaos object is
    deleted and made again, never updated."""


def _chaos_mesh_defaults(o: dict[str, Any]) -> None:
    """Chaos Mesh 2.8.3's mutating webhook, as seen on the real node: a selector without namespaces gets
    the object's own namespace (a pod selector too)."""
    ns = o["metadata"].get("namespace")
    for sel in (o["spec"].get("selector"), (o["spec"].get("target") or {}).get("selector")):
        if isinstance(sel, dict) and "namespaces" not in sel:
            sel["namespaces"] = [ns]


class FakeS3:
    """list_objects_v2 / get_object / put_object on a dict (what providers/kubernetes/controller/results.py asks of boto3)."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def list_objects_v2(self, Bucket: str, Prefix: str = "", MaxKeys: int = 1000) -> dict[str, Any]:  # noqa: N803
        keys = sorted(k for k in self.objects if k.startswith(f"{Bucket}/{Prefix}"))
        return {"Contents": [{"Key": k.split("/", 1)[1]} for k in keys[:MaxKeys]]}

    def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:  # noqa: N803
        import io

        if f"{Bucket}/{Key}" not in self.objects:
            from botocore.exceptions import ClientError

            raise ClientError({"Error": {"Code": "NoSuchKey", "Message": "The specified key does not exist."}},
                              "GetObject")
        return {"Body": io.BytesIO(self.objects[f"{Bucket}/{Key}"])}

    def put(self, bucket: str, key: str, doc: Any) -> None:
        self.objects[f"{bucket}/{key}"] = json.dumps(doc).encode()


class FakeRenders:
    """``helm template`` of the fixture keystone chart for any release: its recorded output, re-addressed
    (each release rendered once, as the operator's ``Renders`` caches them). Where the database lives in the
    release's own namespace, the dependency-check Role the chart renders for it is the one of its own
    namespace (helm-toolkit renders one per namespace)."""

    def __init__(self) -> None:
        self.done: dict[tuple[str, str], Any] = {}
        self.fixture = documents(RENDERED.read_text())  # read once, re-addressed for each release

    def get(self, rel: Any, labels: dict[str, str], also: tuple[str, ...] = ()) -> Any:
        key = (rel.namespace, repr(sorted(labels.items())))
        if key not in self.done and rel.name != "keystone":  # issue 45's services: a chart of their shape
            self.done[key] = stages(service_chart(rel), rel.name, rel.namespace, labels, also)
        if key not in self.done:
            db = next(iter(also), None)
            swap = [(FIXTURE_NS, rel.namespace), *([(FIXTURE_DB_NS, db)] if db else [])]
            seen: set[tuple[str, str, str]] = set()
            docs = []
            for d in _readdressed(self.fixture, swap):
                k = (d["kind"], d["metadata"].get("namespace", rel.namespace), d["metadata"]["name"])
                if k not in seen:
                    seen.add(k)
                    docs.append(d)
            self.done[key] = stages(docs, rel.name, rel.namespace, labels, also)
        return self.done[key]


SCHEMA_OWNERS = ("placement", "glance", "nova", "neutron")  # releases whose chart has a db-sync hook


def service_chart(rel: Any) -> list[dict[str, Any]]:
    """``helm template`` of one of issue 45's service releases as wanwide's renders shape it (the unit tier has no
    helm, and keeps no copy of upstream charts; tests/cluster/test_nova_charts.py renders the real ones): the bus
    and the fake computes a StatefulSet of ``replicas`` from the values, a service an API Deployment behind its
    ``db-sync`` hook Job."""
    values = rel.values
    if rel.name in ("rabbitmq", "nova-compute"):
        replicas = (values["pod"]["replicas"].get("server") if rel.name == "rabbitmq"
                    else values["pod"]["replicas"]["compute_ironic"])
        return [{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": f"{rel.name}-server"},
                 "spec": {"replicas": replicas}}]
    out: list[dict[str, Any]] = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"{rel.name}-api"},
                                  "spec": {"replicas": 1}}]
    if rel.name in SCHEMA_OWNERS:
        out.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": f"{rel.name}-db-sync", "annotations": {"helm.sh/hook": "post-install", "helm.sh/hook-weight": "-5"}}})
    return out


def _readdressed(o: Any, swap: list[tuple[str, str]]) -> Any:
    """``o`` with every string's ``old`` replaced by ``new`` for each pair of ``swap``, in order."""
    if isinstance(o, dict):
        return {_readdressed(k, swap): _readdressed(v, swap) for k, v in o.items()}
    if isinstance(o, list):
        return [_readdressed(v, swap) for v in o]
    if isinstance(o, str):
        for old, new in swap:
            o = o.replace(old, new)
    return o


def _copy(o: Any) -> Any:
    """A deep copy of plain JSON data (what the API server returns is the caller's to change)."""
    return json.loads(json.dumps(o))


def _key(kind: str, ns: str | None, name: str) -> tuple[str, str, str]:
    return (kind, ns or "", name)


def _cond(*types: str) -> dict[str, Any]:
    return {"conditions": [{"type": t, "status": "True"} for t in types]}


def _merge(old: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """A JSON merge patch (RFC 7386): None removes a field."""
    out = dict(old)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


@dataclass
class FakeKube:
    """An API server of dicts, with the controllers a trial meets (see the module's docstring)."""

    clock: Any
    plan: TrialPlan
    s3: FakeS3
    run_s: float = 60.0
    results: dict[int, dict[str, str]] = field(default_factory=dict)  # attempt → region → complete|failed|stopped
    rtt_factor: float = 1.0
    hooks_fail: bool = False  # every keystone hook Job fails
    chaos_refused: bool = False  # Chaos Mesh cannot inject the WAN (no netem on the node)
    late_s: float = 0.0  # a partition is in force this long after it is made
    bug: bool = False  # applying a Rally Job raises a TypeError (a bug in a step)
    slo: list[dict[str, Any]] | None = None  # the objectives each runner records in its manifest (the slo rows)
    runner_said: str = ""  # "<reason>: <message>" a failed runner stores in its bundle's manifest
    runner_late_s: float = 0.0  # with it: how late past the common start it was (start.late_s), when above 0
    objects: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    requests: int = 0
    probed: list[dict[str, Any]] = field(default_factory=list)  # the probe configs answered
    attempts_started: list[int] = field(default_factory=list)  # each attempt whose Rally Jobs were created

    # ---- the client ------------------------------------------------------------------------------

    def serves(self, api_version: str, *kinds: str) -> bool:
        return True

    def apply(self, obj: dict[str, Any]) -> None:
        self.requests += 1
        m = obj["metadata"]
        k = _key(obj["kind"], m.get("namespace"), m["name"])
        if obj["kind"] == "Secret" and "wanwide.io/copy-from" in (m.get("annotations") or {}):
            obj = {**obj, "data": {"AWS_ACCESS_KEY_ID": "eA==", "AWS_SECRET_ACCESS_KEY": "eA=="}}
        old = self.objects.get(k)
        role = (m.get("labels") or {}).get(names.L_ROLE)
        if old is None and obj["kind"] == "Job" and role == "load":
            if self.bug:
                raise TypeError(BUG)
            attempt = int(m["annotations"]["wanwide.io/attempt"])
            if attempt not in self.attempts_started:
                self.attempts_started.append(attempt)
        new = copy.deepcopy(obj)
        if obj["kind"] == "NetworkChaos":
            _chaos_mesh_defaults(new)
            if old is not None and {k: v for k, v in old["spec"].items()} != new["spec"]:
                raise ChaosSpecChanged(f"admission webhook \"vnetworkchaos.kb.io\" denied the request: "
                                       f"Cannot update chaos spec ({m['name']})")
        if old is not None:
            new["status"] = old.get("status", {})
            new["metadata"] = {**old["metadata"], **new["metadata"]}
        else:
            new["metadata"]["uid"] = new["metadata"].get("uid") or f"uid-{len(self.objects)}"
            new["metadata"]["creationTimestamp"] = ts.iso(self.clock.now())
            if obj["kind"] == "Service" and (new.get("spec") or {}).get("clusterIP") != "None":
                ip = self.service_address(m.get("namespace"), m["name"])  # allocated, as the API server does
                new.setdefault("spec", {}).update(clusterIP=ip, clusterIPs=[ip])
            if obj["kind"] == "NetworkChaos":
                new["status"] = self._chaos_status(new)
        self.objects[k] = new

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        self.requests += 1
        if kind == "Secret" and name.endswith("-keys") and _key(kind, namespace, name) not in self.objects:
            pw = base64.b64encode(b"pw").decode()
            return {"data": {k: pw for k in ("admin-password", "db-root-password", "keystone-db-password",
                                             "db-password", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                             *KEY_FIELDS["service-passwords"])}}
        o = self.objects.get(_key(kind, namespace, name))
        return _copy(o) if o is not None else None

    def list(self, api_version: str, kind: str, selector: dict[str, str] | None = None,
             namespace: str | None = None, cached: bool = False, fields: dict[str, str] | None = None) -> list:
        self.requests += 1
        out = []
        for (k, ns, _), o in self.objects.items():
            if k != kind or (namespace is not None and ns != namespace):
                continue
            labels = o["metadata"].get("labels") or {}
            if all(labels.get(a) == b for a, b in (selector or {}).items()):
                out.append(_copy(o))
        if kind == "Pod":  # a running pod in every namespace that has a Deployment, one address each
            spaces = sorted({ns for (k, ns, _) in self.objects if k == "Deployment" and namespace in (None, ns)})
            out += [{"metadata": {"namespace": ns, "name": "pod-0"},
                     "status": {"phase": "Running", "podIP": self.address(ns)}} for ns in spaces]
        for f, want in (fields or {}).items():
            if f == "status.phase":
                out = [o for o in out if (o.get("status") or {}).get("phase") == want]
            elif f == "metadata.name":
                out = [o for o in out if o["metadata"].get("name") == want]
        return out

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None,
               propagation: str = "Background") -> bool:
        self.requests += 1
        gone = self.objects.pop(_key(kind, namespace, name), None)
        if kind == "Namespace":
            for k in [k for k in self.objects if k[1] == name]:
                del self.objects[k]
        return gone is not None

    def patch_status(self, api_version: str, kind: str, name: str, namespace: str,
                     status: dict[str, Any]) -> dict[str, Any]:
        self.requests += 1
        o = self.objects[_key(kind, namespace, name)]
        o["status"] = _merge(o.get("status") or {}, status)
        return _copy(o)

    def drop_finalizer(self, obj: dict[str, Any], finalizer: str) -> None:
        self.requests += 1

    def secret_value(self, name: str, namespace: str, key: str) -> str | None:
        return "x"

    # ---- Chaos Mesh -------------------------------------------------------------------------------

    def address(self, namespace: str) -> str:
        """The address of a namespace's one running pod."""
        if not hasattr(self, "_spaces"):
            self._spaces = {ns: i for i, ns in enumerate(self.plan.namespaces)}
        return f"10.0.{self._spaces.get(namespace, 250)}.1"

    def service_address(self, namespace: str, name: str) -> str:
        """The cluster IP of a namespace's Service (its own per namespace and name)."""
        self.address(namespace)
        ips = self.__dict__.setdefault("_service_ips", {})
        return ips.setdefault((namespace, name), f"10.96.{self._spaces.get(namespace, 250)}.{len(ips) % 250 + 1}")

    def _regions(self, selector: dict[str, Any] | None) -> set[str]:
        """The regions whose pods a chaos selector names (its pods when it names any, else its namespaces)."""
        sel = selector or {}
        if sel.get("pods"):
            member_of = {(self.plan.db_namespace, pod): r for r, pod in members(self.plan).items()}
            return {member_of[(ns, p)] for ns, pods in sel["pods"].items() for p in pods}
        region_of = {self.plan.namespace(r): r for r in self.plan.region_names}
        return {region_of[ns] for ns in sel.get("namespaces") or [] if ns in region_of}

    def _chaos_status(self, o: dict[str, Any]) -> dict[str, Any]:
        if self.chaos_refused:
            return {"experiment": {"containerRecords": [{"id": f"{o['metadata']['namespace']}/pod-0", "events": [
                {"type": "Failed", "operation": "Apply", "message": "tc qdisc add: Specified qdisc kind is unknown"}]}]}}
        if o["spec"]["action"] == "partition" and self.late_s:
            return {}  # in force late_s after it was made (tick)
        return _cond("AllInjected")

    def _injected(self, o: dict[str, Any]) -> bool:
        return any(c.get("type") == "AllInjected" for c in (o.get("status") or {}).get("conditions") or [])

    def links_in_force(self) -> dict[Pair, OneWay]:
        """What the injected NetworkChaos objects shape, read from their contents: each directed link's netem
        (none: unshaped), a cut link losing everything (its delay kept)."""
        chaos = json.dumps(sorted((k, o.get("spec"), self._injected(o)) for k, o in self.objects.items()
                                  if k[0] == "NetworkChaos"))
        if getattr(self, "_in_force", (None,))[0] != chaos:
            self._in_force = (chaos, self._links_in_force())
        return self._in_force[1]

    def _links_in_force(self) -> dict[Pair, OneWay]:
        links = {pair: OneWay() for pair in self.plan.links}
        cut: set[Pair] = set()
        region_at = {self.address(self.plan.namespace(r)): r for r in self.plan.region_names}
        region_at |= {ip: r for (ns, _), ip in self.__dict__.get("_service_ips", {}).items() for r in self.plan.region_names
                      if ns == self.plan.namespace(r)}
        for (kind, _, _), o in sorted(self.objects.items()):
            if kind != "NetworkChaos" or not self._injected(o):
                continue
            spec = o["spec"]
            src = self._regions(spec.get("selector"))
            dst = (self._regions((spec.get("target") or {}).get("selector"))
                   | {region_at[ip] for ip in spec.get("externalTargets") or [] if ip in region_at})
            way = spec.get("direction", "to")
            pairs = {pair for a in src for b in dst if a != b
                     for pair in ([(a, b)] if way == "to" else [(b, a)] if way == "from" else [(a, b), (b, a)])}
            if spec["action"] == "netem":
                d, loss, rate = spec.get("delay") or {}, spec.get("loss") or {}, spec.get("rate") or {}
                shaping = OneWay(ms(d.get("latency")), ms(d.get("jitter")), pct(loss.get("loss")),
                                 mbit(rate.get("rate")))
                links |= dict.fromkeys(pairs, shaping)
            elif spec["action"] == "partition":
                cut |= pairs
        return {pair: OneWay(s.delay_ms, s.jitter_ms, 100.0, s.rate_mbit) if pair in cut else s
                for pair, s in links.items()}

    # ---- the controllers --------------------------------------------------------------------------

    def tick(self, status: dict[str, Any]) -> None:
        now = self.clock.now()
        start = status.get("loadStartAt")
        for (kind, ns, name), o in list(self.objects.items()):
            if kind not in ("Deployment", "StatefulSet", "NetworkChaos", "Job") and kind not in DB_KINDS:
                continue
            st = o.setdefault("status", {})
            if (st.get("conditions") or st.get("readyReplicas") is not None) and kind != "Job":
                continue  # settled
            labels = o["metadata"].get("labels") or {}
            if kind == "Deployment":
                o["status"] = {"availableReplicas": 1, **_cond("Available")}
            elif kind == "StatefulSet":
                n = (o.get("spec") or {}).get("replicas", 1)
                o["status"] = {"replicas": n, "readyReplicas": n, "currentRevision": "r1", "updateRevision": "r1"}
            elif kind in DB_KINDS:
                o["status"] = _cond("Ready")
            elif kind == "NetworkChaos" and not st:
                made = ts.parse(o["metadata"]["creationTimestamp"])
                if (now - made).total_seconds() >= self.late_s:
                    o["status"] = _cond("AllInjected")
            elif kind == "Job" and not st.get("conditions"):
                role = labels.get("wanwide.io/role")
                if role == "probe":
                    cfg = json.loads(self.objects[("ConfigMap", ns, name)]["data"]["probe.json"])
                    self.probed.append(cfg)
                    links = self.links_in_force()
                    tg = []
                    for t in cfg["targets"]:
                        a, b = cfg["region"], t["region"]
                        if a == b:  # its own region: the platform's round trip alone
                            tg.append({**t, "samples_ms": [0.2] * 5})
                            continue
                        cut = links[(a, b)].loss_pct >= 100 or links[(b, a)].loss_pct >= 100
                        rtt = (links[(a, b)].delay_ms + links[(b, a)].delay_ms) * self.rtt_factor + 0.2
                        tg.append({**t, "samples_ms": [] if cut else [rtt] * 5})
                    self.s3.put(cfg["results"]["bucket"], probe_key(cfg["results"]["prefix"], cfg["benchmark"],
                                                                    cfg["trial"], cfg["check"], cfg["region"]),
                                {"source": cfg["region"], "targets": tg})
                    o["status"] = _cond("Complete")
                elif role == "load":
                    attempt = int(o["metadata"]["annotations"]["wanwide.io/attempt"])
                    if start and (now - ts.parse(start)).total_seconds() >= self.run_s:
                        region = labels["wanwide.io/region"]
                        result = self.results.get(attempt, {}).get(region, "complete")
                        manifest: dict[str, Any] | None = None  # what the runner stores in its bundle
                        if result == "complete":
                            manifest = {"status": {"result": "succeeded"},
                                        **({"slo": self.slo} if self.slo is not None else {})}
                            o["status"] = _cond("Complete")
                        elif result == "stopped":
                            o["status"] = {"conditions": [{"type": "Failed", "status": "True",
                                                           "reason": "PodFailurePolicy"}]}
                        else:
                            if self.runner_said:  # the failed runner's bundle, its word in its status
                                reason, _, message = self.runner_said.partition(": ")
                                manifest = {"status": {"result": "failed", "reason": reason, "message": message},
                                            **({"start": {"late_s": self.runner_late_s}} if self.runner_late_s else {})}
                            o["status"] = {"conditions": [{"type": "Failed", "status": "True",
                                                           "reason": "BackoffLimitExceeded"}]}
                        if manifest is not None:
                            cfg = json.loads(self.objects[("ConfigMap", ns, "rally-config")]["data"]["runner.json"])
                            s3 = cfg["results"]["s3"]
                            self.s3.put(s3["bucket"], f"{s3['prefix'].strip('/')}/{cfg['benchmark']}/"
                                        f"{cfg['trial']['id']}/{region}/attempt-{attempt}-run/manifest.json", manifest)
                elif self.hooks_fail:  # keystone hook Jobs
                    o["status"] = {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}
                else:
                    o["status"] = _cond("Complete")


API = "wanwide.io/v1alpha1"


def drive(bench: dict[str, Any], plan: TrialPlan, kube: FakeKube, clock: Any, monkeypatch: Any,
          sample: Callable[[dict[str, Any]], None] = lambda _: None, limit_s: float = 6 * 3600,
          ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The operator's own code for one Trial of ``bench`` (the Benchmark as a user applies it): its Trials made as
    the Benchmark's handler makes them, this one started as its scheduler starts it, then stepped by the Trial
    loop's step (``handlers.reconcile_trial``) at the times it asks for (at most 1 s apart) until it ends;
    ``sample(status)`` before each wait. Returns (its final status, its event log as the lab writes one)."""
    import kopf

    from wanwide.providers.kubernetes.controller import benchmark as bm
    from wanwide.providers.kubernetes.controller import handlers, results
    from wanwide.providers.kubernetes.controller.runtime import RUNTIME
    from wanwide.providers.kubernetes.kube import helm

    log: list[dict[str, Any]] = []

    def event(obj: dict[str, Any], type: str, reason: str, message: str) -> None:  # noqa: A002 - kopf's words
        status = obj.get("status") or {}
        start = status.get("loadStartAt")
        log.append(event_entry(plan.id, lc.attempt_of(status), status.get("phase"), reason, message, type,
                               clock.now(), ts.parse(start) if start else None))

    monkeypatch.setattr(kopf, "event", event)
    monkeypatch.setattr(results, "_client", lambda *_: kube.s3)
    monkeypatch.setattr(helm, "RENDERS", FakeRenders())
    monkeypatch.setitem(RUNTIME.__dict__, "kube", kube)
    bench = {**copy.deepcopy(bench), "metadata": {**bench["metadata"], "uid": "b1c2d3e4-uid", "generation": 1}}
    kube.apply(bench)
    model, topology = bm.validate(kube, bench)  # its Topology as the API server has it
    bm.sync_trials(kube, bench, model, topology)
    name, ns = plan.name, plan.bench_namespace
    bm.start_trial(kube, kube.get(API, "Trial", name, ns), clock.now(), handlers.post)
    deadline = (clock.now() - T0).total_seconds() + limit_s
    while (clock.now() - T0).total_seconds() < deadline:
        trial = kube.get(API, "Trial", name, ns)
        status = trial.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            break
        kube.tick(status)
        wait_s, written, _ = handlers.reconcile_trial(trial, clock.now)
        after = (written or trial).get("status") or {}
        if after.get("phase") != status.get("phase"):
            continue
        sample(after)
        clock.sleep(min(wait_s, 1.0))
    return kube.get(API, "Trial", name, ns)["status"], log


__all__ = ["BUG", "T0", "FakeKube", "FakeRenders", "FakeS3", "drive"]
