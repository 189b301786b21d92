"""kopf handlers: thin; the modules decide and act."""

from __future__ import annotations

import logging
import time
from typing import Any

import kopf

from .. import API_GROUP, API_VERSION
from ..api.topology import TopologySpec
from ..plan import topology as topo
from ..plan.errors import PlanError, Problems
from ..plan.links import LinkMap
from . import benchmark as bm
from . import metrics, trialstate
from .runtime import RUNTIME
from .trial import TrialContext, step

log = logging.getLogger("wanwide")
GROUP, VERSION = API_GROUP, API_VERSION


@kopf.on.startup()
def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.finalizer = "wanwide.io/finalizer"
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="wanwide.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="wanwide.io", key="last-handled")
    settings.posting.level = logging.INFO
    settings.watching.server_timeout = 60
    settings.execution.max_workers = 8
    if RUNTIME.metrics_port:
        metrics.serve(RUNTIME.metrics_port)


@kopf.on.probe(id="kube")
def probe(**_: Any) -> str:
    return "ok"


# ---- Topology -----------------------------------------------------------------------------

@kopf.on.create(GROUP, VERSION, "topologies")
@kopf.on.update(GROUP, VERSION, "topologies")
@kopf.on.resume(GROUP, VERSION, "topologies")
def topology(spec: kopf.Spec, meta: kopf.Meta, status: kopf.Status, patch: kopf.Patch, **_: Any) -> None:
    problems = Problems()
    gen = meta.get("generation")
    conds = list(status.get("conditions") or [])
    try:
        t = TopologySpec.model_validate(dict(spec))
        rs = topo.regions(t, None, problems)
        topo.check_network(t.network, {r.name for r in rs}, problems)
        problems.raise_if_any()
        lm: LinkMap = topo.links(t.network, rs)
        patch.status["regions"] = len(rs)
        patch.status["groups"] = len({r.group for r in rs})
        patch.status["matrix"] = topo.rtt_summary(lm)
        conds = trialstate.set_condition(conds, "Valid", "True", "Valid", "topology resolves", gen, trialstate.now())
    except (PlanError, ValueError) as e:
        conds = trialstate.set_condition(conds, "Valid", "False", "Invalid", str(e), gen, trialstate.now())
    patch.status["conditions"] = conds
    patch.status["observedGeneration"] = gen


# ---- Benchmark ----------------------------------------------------------------------------

@kopf.on.create(GROUP, VERSION, "benchmarks")
@kopf.on.update(GROUP, VERSION, "benchmarks", field="spec")
@kopf.on.resume(GROUP, VERSION, "benchmarks")
def benchmark(body: kopf.Body, meta: kopf.Meta, status: kopf.Status, patch: kopf.Patch, **_: Any) -> None:
    t0 = time.monotonic()
    kube = RUNTIME.kube
    gen = meta.get("generation")
    conds = list(status.get("conditions") or [])
    bench = dict(body)
    try:
        model, tp = bm.validate(kube, bench)
    except PlanError as e:
        msg = "; ".join(str(p) for p in e.problems)
        patch.status["conditions"] = trialstate.set_condition(conds, "Valid", "False", "InvalidSpec", msg, gen,
                                                              trialstate.now())
        patch.status["observedGeneration"] = gen
        if not status.get("trials", {}).get("total"):
            patch.status["phase"] = "Invalid"
        kopf.warn(body, reason="InvalidSpec", message=msg[:1000])
        return
    bm.ensure_keys(kube, bench)
    changed, kept = bm.sync_trials(kube, bench, model, tp)
    conds = trialstate.set_condition(conds, "Valid", "True", "Planned", "spec plans cleanly", gen, trialstate.now())
    if kept:
        conds = trialstate.set_condition(
            conds, "SpecApplied", "True", "AppliedToPendingTrials",
            f"generation {gen} applies to trials not yet started; {kept} started trial(s) keep their plan", gen,
            trialstate.now())
    patch.status["conditions"] = conds
    patch.status["observedGeneration"] = gen
    patch.status["planGeneration"] = gen
    patch.status.setdefault("startTime", status.get("startTime") or trialstate.iso(trialstate.now()))
    if changed:
        kopf.info(body, reason="Planned", message=f"{changed} trial(s) planned from generation {gen}")
    metrics.RECONCILE.labels("benchmark").observe(time.monotonic() - t0)


@kopf.timer(GROUP, VERSION, "benchmarks", interval=3, initial_delay=1, idle=None)
def schedule(body: kopf.Body, spec: kopf.Spec, status: kopf.Status, patch: kopf.Patch, **_: Any) -> None:
    """Start trials within parallelism; keep the status summary current."""
    if status.get("phase") == "Invalid":
        return
    kube = RUNTIME.kube
    bench = dict(body)
    ts = bm.trials(kube, bench)
    parallelism = int((spec.get("matrix") or {}).get("parallelism", 1))
    for t in trialstate.to_start(ts, parallelism):
        kube.patch_status(bm.API, "Trial", t["metadata"]["name"], t["metadata"]["namespace"],
                          {"phase": "Provisioning", "phaseStartTime": trialstate.iso(trialstate.now()),
                           "startTime": trialstate.iso(trialstate.now()), "attempt": 1})
        t.setdefault("status", {})["phase"] = "Provisioning"
        kopf.info(body, reason="TrialStarted", message=f"{t['metadata']['name']} started")
    s = bm.summary(bench, ts)
    metrics.record_trials(f"{body['metadata']['namespace']}/{body['metadata']['name']}", s["trials"])
    for k, v in s.items():
        if status.get(k) != v:
            patch.status[k] = v
    if s["phase"] in ("Succeeded", "Failed") and not status.get("completionTime"):
        patch.status["completionTime"] = trialstate.iso(trialstate.now())
        kopf.info(body, reason=s["phase"], message=f"{s['progress']} trials done, {s['trials']['failed']} failed")


@kopf.on.delete(GROUP, VERSION, "benchmarks")
def teardown(body: kopf.Body, **_: Any) -> None:
    left = bm.teardown(RUNTIME.kube, dict(body))
    metrics.forget(f"{body['metadata']['namespace']}/{body['metadata']['name']}")
    if left:
        raise kopf.TemporaryError(f"waiting for {len(left)} to go: {', '.join(left[:5])}", delay=3)


# ---- Trial --------------------------------------------------------------------------------

@kopf.timer(GROUP, VERSION, "trials", interval=2, initial_delay=1, idle=None)
def trial(body: kopf.Body, status: kopf.Status, patch: kopf.Patch, **_: Any) -> None:
    phase = status.get("phase") or "Pending"
    if phase in trialstate.TERMINAL or phase == "Pending":
        return
    t0 = time.monotonic()
    ctx = TrialContext(
        kube=RUNTIME.kube,
        trial=dict(body),
        kubeconfig=RUNTIME.kubeconfig,
        trial_clusterrole=RUNTIME.trial_clusterrole,
        operator_subject=RUNTIME.subject,
        emit=lambda reason, message, typ: kopf.event(body, type=typ, reason=reason, message=message),
    )
    try:
        res = step(ctx)
    except Exception as e:
        metrics.APPLY_ERRORS.labels(phase).inc()
        log.exception("trial step failed")
        raise kopf.TemporaryError(f"{phase}: {e}", delay=5) from e
    finally:
        metrics.RECONCILE.labels("trial").observe(time.monotonic() - t0)
    for k, v in res.status.items():
        patch.status[k] = v
    if res.message:
        patch.status["message"] = res.message
    if res.phase and trialstate.forward(phase, res.phase):
        at = trialstate.iso(trialstate.now())
        patch.status["phase"] = res.phase
        patch.status["phaseStartTime"] = at
        patch.status["reason"] = res.reason
        if res.phase == "CleaningUp" and res.status.get("outcome") == "Failed":
            patch.status["outcomeMessage"] = res.message
        if res.phase in trialstate.TERMINAL:
            patch.status["completionTime"] = at
        metrics.PHASE_CHANGES.labels(res.phase).inc()
        typ = "Warning" if res.phase == "Failed" or (res.phase == "CleaningUp" and res.status.get("outcome") == "Failed") \
            else "Normal"
        kopf.event(body, type=typ, reason=res.phase, message=f"{phase} → {res.phase}: {res.message or res.reason}")
