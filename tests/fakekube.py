"""The Kubernetes provider's lowest layer as plain data: an API server of dicts, helm, S3, on a clock of its own.

:class:`FakeKube` stands where :class:`wanwide.providers.kubernetes.kube.client.Kube` does (server-side apply, get, list by
label and field, delete, discovery). Each :meth:`FakeKube.tick` plays the controllers a trial meets,
the way the kwok tier's stages and stand-ins do: Deployments available, database objects Ready, hook
Jobs complete, Chaos Mesh objects injected (and gone once deleted), probe Jobs storing what the
links in force give, Rally Jobs finishing ``run_s`` after the load start as ``results`` says
(complete, failed, or stopped: measured but not stored), their bundles in the fake store.
``FakeRenders`` renders the fixture keystone chart for any region (its recorded ``helm template``
output, re-addressed); ``FakeS3`` holds objects by key. Nothing here decides: the operator's own
observe → decide → act runs on top (:func:`drive`).
"""

from __future__ import annotations

import base64
import copy
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.chartdata import RENDERED, fixture_plan, release
from wanwide.core import lifecycle as lc
from wanwide.core import timestamps as ts
from wanwide.core.contracts import event_entry, probe_key
from wanwide.core.plan.links import OneWay
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.controller import phases, trialstate
from wanwide.providers.kubernetes.controller.actions import Emit, Executor
from wanwide.providers.kubernetes.controller.observe import Where, observe
from wanwide.providers.kubernetes.render.chart import documents, stages

T0 = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
FIXTURE_NS = release().namespace  # the namespace the fixture chart was rendered for
FIXTURE_DB_NS = fixture_plan().db_namespace  # and its database's



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
            e = KeyError(Key)
            e.response = {"Error": {"Code": "NoSuchKey"}}  # type: ignore[attr-defined]
            raise e
        return {"Body": io.BytesIO(self.objects[f"{Bucket}/{Key}"])}

    def put(self, bucket: str, key: str, doc: Any) -> None:
        self.objects[f"{bucket}/{key}"] = json.dumps(doc).encode()


class FakeRenders:
    """``helm template`` of the fixture keystone chart for any release: its recorded output, re-addressed
    (each release rendered once, as the operator's ``Renders`` caches them)."""

    def __init__(self) -> None:
        self.done: dict[tuple[str, str], Any] = {}

    def get(self, rel: Any, labels: dict[str, str], also: tuple[str, ...] = ()) -> Any:
        key = (rel.namespace, repr(sorted(labels.items())))
        if key not in self.done:
            text = RENDERED.read_text().replace(FIXTURE_NS, rel.namespace)
            # the fixture's dependency-check Roles in the database's namespace follow the trial's
            db = next(iter(also), None)
            if db:
                text = text.replace(FIXTURE_DB_NS, db)
            self.done[key] = stages(documents(text), rel.name, rel.namespace, labels, also)
        return self.done[key]


def _key(kind: str, ns: str | None, name: str) -> tuple[str, str, str]:
    return (kind, ns or "", name)


def _cond(*types: str) -> dict[str, Any]:
    return {"conditions": [{"type": t, "status": "True"} for t in types]}


@dataclass
class FakeKube:
    """An API server of dicts, with the controllers a trial meets (see the module's docstring)."""

    clock: Any
    plan: TrialPlan
    s3: FakeS3
    run_s: float = 60.0
    results: dict[int, dict[str, str]] = field(default_factory=dict)  # attempt → region → complete|failed|stopped
    rtt_factor: float = 1.0
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
        if old is None and obj["kind"] == "Job" and (m.get("labels") or {}).get("wanwide.io/role") == "load":
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
            new["metadata"]["uid"] = f"uid-{len(self.objects)}"
            new["metadata"]["creationTimestamp"] = ts.iso(self.clock.now())
        self.objects[k] = new

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        self.requests += 1
        if kind == "Secret" and name.endswith("-keys") and _key(kind, namespace, name) not in self.objects:
            pw = base64.b64encode(b"pw").decode()
            return {"data": {k: pw for k in ("admin-password", "db-root-password", "keystone-db-password",
                                             "db-password", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}}
        o = self.objects.get(_key(kind, namespace, name))
        return copy.deepcopy(o) if o is not None else None

    def list(self, api_version: str, kind: str, selector: dict[str, str] | None = None,
             namespace: str | None = None, cached: bool = False, fields: dict[str, str] | None = None) -> list:
        self.requests += 1
        out = []
        for (k, ns, _), o in self.objects.items():
            if k != kind or (namespace is not None and ns != namespace):
                continue
            labels = o["metadata"].get("labels") or {}
            if all(labels.get(a) == b for a, b in (selector or {}).items()):
                out.append(copy.deepcopy(o))
        if kind == "Pod":  # a running pod in every namespace that has a Deployment
            out += [{"metadata": {"namespace": ns}, "status": {"phase": "Running"}}
                    for (k, ns, _) in list(self.objects) if k == "Deployment" and (namespace in (None, ns))]
        if fields and "status.phase" in fields:  # the one field selector the operator uses
            out = [o for o in out if (o.get("status") or {}).get("phase") == fields["status.phase"]]
        return out

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None,
               propagation: str = "Background") -> bool:
        self.requests += 1
        gone = self.objects.pop(_key(kind, namespace, name), None)
        if kind == "Namespace":
            for k in [k for k in self.objects if k[1] == name]:
                del self.objects[k]
        return gone is not None

    def secret_value(self, name: str, namespace: str, key: str) -> str | None:
        return "x"

    # ---- the controllers --------------------------------------------------------------------------

    def links_in_force(self) -> dict[tuple[str, str], OneWay]:
        """What the live NetworkChaos objects shape (all of the plan's links when they are the WAN)."""
        from wanwide.providers.kubernetes.render import chaos

        live = [o for (k, _, _), o in self.objects.items() if k == "NetworkChaos"]
        for t in [None, *sorted({e.at_s for e in lc.fault_events(self.plan.faults, 4 * 3600)})]:
            want = chaos.at(self.plan, t)
            if sorted(o["metadata"]["name"] for o in want) == sorted(o["metadata"]["name"] for o in live):
                w = lc.wan_at(self.plan, lc.in_force(self.plan.faults, t) if t is not None else ())
                return {pair: w.effective(pair) for pair in self.plan.links}
        return dict(self.plan.links)

    def tick(self, status: dict[str, Any]) -> None:
        now = self.clock.now()
        start = status.get("loadStartAt")
        for (kind, ns, name), o in list(self.objects.items()):
            st = o.setdefault("status", {})
            labels = o["metadata"].get("labels") or {}
            if kind == "Deployment":
                o["status"] = {"availableReplicas": 1, **_cond("Available")}
            elif kind in phases.DB_KINDS:
                o["status"] = _cond("Ready")
            elif kind == "NetworkChaos":
                o["status"] = {**_cond("AllInjected")}
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
                        if result == "complete":
                            cfg = json.loads(self.objects[("ConfigMap", ns, "rally-config")]["data"]["runner.json"])
                            s3 = cfg["results"]["s3"]
                            key = (f"{s3['prefix'].strip('/')}/{cfg['benchmark']}/{cfg['trial']['id']}/{region}/"
                                   f"attempt-{attempt}-run/manifest.json")
                            self.s3.put(s3["bucket"], key, {"status": {"result": "succeeded"}})
                            o["status"] = _cond("Complete")
                        elif result == "stopped":
                            o["status"] = {"conditions": [{"type": "Failed", "status": "True",
                                                           "reason": "PodFailurePolicy"}]}
                        else:
                            o["status"] = {"conditions": [{"type": "Failed", "status": "True",
                                                           "reason": "BackoffLimitExceeded"}]}
                else:  # keystone hook Jobs
                    o["status"] = _cond("Complete")


def drive(plan: TrialPlan, kube: FakeKube, clock: Any, limit_s: float = 6 * 3600) -> tuple[dict[str, Any], list, list]:
    """The operator's loop for one Trial (observe → decide → act, the status patched as the handler does),
    stepping at the lifecycle's wake times (at most 1 s apart) until the Trial ends; (final status, event log,
    the WAN's changes as (seconds from the attempt's load start, attempt, links unlike the plan's))."""
    from unittest import mock

    from wanwide.providers.kubernetes.controller import results
    from wanwide.providers.kubernetes.kube import helm

    log: list[dict[str, Any]] = []
    trace: list[tuple] = []
    status: dict[str, Any] = {"phase": "Provisioning", "phaseStartTime": ts.iso(clock.now()), "attempt": 1}

    def emit(reason: str, message: str, typ: str) -> None:
        start = status.get("loadStartAt")
        log.append(event_entry(plan.id, lc.attempt_of(status), status.get("phase"), reason, message, typ,
                               clock.now(), ts.parse(start) if start else None))

    emit("Provisioning", "Pending → Provisioning", "Normal")
    w = Where(kube=kube, instance="b1c2d3e4-uid")  # type: ignore[arg-type]
    end = clock.now() + timedelta(seconds=limit_s)
    with mock.patch.object(results, "_client", lambda *_: kube.s3), mock.patch.object(helm, "RENDERS", FakeRenders()):
        while status.get("phase") not in ("Succeeded", "Failed") and clock.now() < end:
            kube.tick(status)
            obs = observe(w, plan, status)
            d = phases.decide(plan, status, obs, clock.now())
            Executor(kube, emit).run(d.actions)  # type: ignore[arg-type]
            if any(k == "NetworkChaos" for k, _, _ in kube.objects) or trace:
                diff = tuple(sorted((pair, s) for pair, s in kube.links_in_force().items() if s != plan.links[pair]))
                if diff != (trace[-1][2] if trace else ()):
                    start = status.get("loadStartAt")
                    rel = round((clock.now() - ts.parse(start)).total_seconds(), 3) if start else None
                    trace.append((rel, lc.attempt_of(status) if start else None, diff))
            patch = trialstate.trial_status(status, d.phase, d.reason, d.message, d.status, 1, clock.now())
            phase = status.get("phase")
            status.update({k: v for k, v in patch.items()})
            if patch.get("phase"):
                failed = patch["phase"] == "Failed" or (patch["phase"] == "CleaningUp" and d.status.get("outcome") == "Failed")
                emit(patch["phase"], f"{phase} → {patch['phase']}: {d.message or d.reason}",
                     "Warning" if failed else "Normal")
                continue
            clock.sleep(min(d.wake_s if d.wake_s is not None else 1.0, 1.0))
    return status, log, trace


__all__ = ["T0", "FakeKube", "FakeRenders", "FakeS3", "drive", "Emit"]
