"""kopf handlers: thin; the modules decide and act."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import kopf

from wanwide import API_GROUP, API_VERSION
from wanwide.core import lifecycle as lc
from wanwide.core import timestamps as ts
from wanwide.core.api.topology import TopologySpec
from wanwide.core.errors import PermanentError, backoff_s, transient
from wanwide.core.plan import topology as topo
from wanwide.core.plan.errors import PlanError, Problems
from wanwide.core.plan.links import LinkMap
from wanwide.core.plan.trial import plan as plan_trials
from wanwide.providers.kubernetes.controller import benchmark as bm
from wanwide.providers.kubernetes.controller import metrics, monitoring, preflight, trialstate
from wanwide.providers.kubernetes.controller.actions import Decision, Executor
from wanwide.providers.kubernetes.controller.runtime import RUNTIME
from wanwide.providers.kubernetes.controller.trial import (
    InvalidPlan,
    NotOwned,
    check_owner,
    step,
    trial_plan,
    where,
)
from wanwide.providers.kubernetes.controller.wakeups import WAKEUPS, sleep

log = logging.getLogger("wanwide")
GROUP, VERSION = API_GROUP, API_VERSION
SAFETY_NET_S = 30.0  # the Benchmarks' slow timer behind the trials' phase events
_SCHEDULING: dict[str, threading.Lock] = {}
_PHASES_SEEN: dict[str, str] = {}
_WAKES: dict[str, tuple[float, threading.Timer]] = {}  # Benchmark → its preflight's next look
MIN_STEP_GAP_S = 2.0  # at most one Trial step per 2 s, however many events arrive
GAP_PER_REGION_S = 0.02  # and, woken by events, one per 20 ms of regions (10 s at 500)


def event_gap(regions: int, phase: str, wake_s: float) -> float:
    """The least time between two steps of a Trial when an event woke it. Every step observes and decides over
    all its regions, and events stream in while they provision: a trial of many regions waits longer, so its
    steps (and the operator's CPU) grow with the trial's length, not with length × regions. In Loading the
    time the lifecycle asked to look again at (``wake_s``: a fault window's start or end, the load's start) is
    kept; elsewhere it is a poll, and the longer gap wins. A wake that is not an event keeps the 2 s gap."""
    gap = max(MIN_STEP_GAP_S, GAP_PER_REGION_S * regions)
    return min(gap, max(MIN_STEP_GAP_S, wake_s)) if phase == "Loading" else gap


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
        conds = trialstate.set_condition(conds, "Valid", "True", "Valid", "topology resolves", gen, ts.now())
    except (PlanError, ValueError) as e:
        conds = trialstate.set_condition(conds, "Valid", "False", "Invalid", str(e), gen, ts.now())
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
    bench = bm.with_runner_image(dict(body), RUNTIME.runner_image, RUNTIME.runner_pod)  # frozen into the plans
    try:
        model, tp = bm.validate(kube, bench, RUNTIME.allowed_charts)
    except PlanError as e:
        msg = "; ".join(str(p) for p in e.problems)
        conds = trialstate.set_condition(conds, "Valid", "False", "InvalidSpec", msg, gen, ts.now())
        if not status.get("trials", {}).get("total"):  # nothing planned yet: the Benchmark cannot run
            patch.status["phase"] = "Invalid"
            conds = trialstate.outcome_conditions(conds, "Invalid", "InvalidSpec", msg, gen, ts.now())
        patch.status["conditions"] = conds
        patch.status["observedGeneration"] = gen
        kopf.warn(body, reason="InvalidSpec", message=msg[:1000])
        return
    bm.ensure_keys(kube, bench)
    changed, kept = bm.sync_trials(kube, bench, model, tp)
    conds = trialstate.set_condition(conds, "Valid", "True", "Planned", "spec plans cleanly", gen, ts.now())
    conds = monitoring.condition(kube, model, conds, gen, ts.now())
    if kept:
        conds = trialstate.set_condition(
            conds, "SpecApplied", "True", "AppliedToPendingTrials",
            f"generation {gen} applies to trials not yet started; {kept} started trial(s) keep their plan", gen,
            ts.now())
    else:  # stale: every trial follows this generation
        conds = [c for c in conds if c.get("type") != "SpecApplied"]
    if changed:
        kopf.info(body, reason="Planned", message=f"{changed} trial(s) planned from generation {gen}")
    # one status write with the schedule's (a kopf patch applied after it would replace its conditions)
    _schedule(bench, {"conditions": conds, "observedGeneration": gen, "planGeneration": gen,
                      "startTime": status.get("startTime") or ts.iso(ts.now())})
    metrics.RECONCILE.labels("benchmark").observe(time.monotonic() - t0)


@kopf.timer(GROUP, VERSION, "benchmarks", interval=SAFETY_NET_S, initial_delay=1, idle=None)
def schedule(body: kopf.Body, status: kopf.Status, **_: Any) -> None:
    """The safety net: a trial's phase change schedules at once (``trial_changed``)."""
    if status.get("phase") == "Invalid":
        return
    _schedule(dict(body))


def _schedule_owner(namespace: str, benchmark: str) -> None:
    """A trial moved: start the next ones and update the Benchmark's summary now."""
    _schedule({"metadata": {"name": benchmark, "namespace": namespace}})


def _schedule(bench: dict[str, Any], planned: dict[str, Any] | None = None) -> None:
    """Start trials and write the Benchmark's status; ``planned``: the spec handler's fields, written with it."""
    key = f"{bench['metadata']['namespace']}/{bench['metadata']['name']}"
    with _SCHEDULING.setdefault(key, threading.Lock()):
        if planned:  # the preflight's fields as last written (the handler's body may predate a pass's write)
            fresh = RUNTIME.kube.get(bm.API, "Benchmark", bench["metadata"]["name"], bench["metadata"]["namespace"])
            fs = (fresh or {}).get("status") or {}
            conds = [c for c in planned.get("conditions") or [] if c.get("type") != preflight.CONDITION]
            conds += [c for c in fs.get("conditions") or [] if c.get("type") == preflight.CONDITION]
            planned = {**planned, "conditions": conds}
            bench = {**bench, "status": {**(bench.get("status") or {}), "preflight": fs.get("preflight"), **planned}}
        else:  # the status as written last (a timer's body can predate the spec handler's write)
            fresh = RUNTIME.kube.get(bm.API, "Benchmark", bench["metadata"]["name"], bench["metadata"]["namespace"])
            if (fresh is None or (fresh.get("status") or {}).get("phase") == "Invalid"
                    or fresh["metadata"].get("deletionTimestamp")):  # being deleted: start nothing more
                return
            bench = fresh
        now = ts.now()
        trials = bm.trials(RUNTIME.kube, bench)
        pre = _preflight(bench, trials, now)
        if pre.status:
            bench = {**bench, "status": {**(bench.get("status") or {}), **pre.status}}
        for kind, reason, message in pre.events:
            kopf.event(bench, type=kind, reason=reason, message=message[:1000])
        if pre.wake_s is not None:
            _wake_later(bench["metadata"]["namespace"], bench["metadata"]["name"], pre.wake_s)
        started, patch = bm.schedule(RUNTIME.kube, bench, now, start=pre.passed, ts=trials, failed=pre.failed, post=post)
        patch = {**(planned or {}), **pre.status, **patch}
        for name in started:
            WAKEUPS.poke(f"{bench['metadata']['namespace']}/{name}")
            kopf.info(bench, reason="TrialStarted", message=f"{name} started")
        counts = patch.get("trials") or (bench.get("status") or {}).get("trials") or {}
        metrics.record_trials(key, counts)
        if patch:
            RUNTIME.kube.patch_status(bm.API, "Benchmark", bench["metadata"]["name"], bench["metadata"]["namespace"], patch)
        if patch.get("completionTime"):
            now_status = {**(bench.get("status") or {}), **patch}
            c = now_status.get("trials") or counts
            said = (f"no trial started: {pre.failed}" if pre.failed else
                    f"{now_status.get('progress')} trials done, {c.get('failed', 0)} failed")
            kopf.info(bench, reason=now_status["phase"], message=said[:1000])


def _wake_later(namespace: str, name: str, after_s: float) -> None:
    """Schedule the Benchmark again in ``after_s`` (its preflight's probe pods are running; the timer is
    slower): one pending wake per Benchmark, the sooner wins."""
    key = f"{namespace}/{name}"
    due = time.monotonic() + max(0.5, after_s)
    old = _WAKES.get(key)
    if old is not None and old[0] <= due and old[1].is_alive():
        return
    if old is not None:
        old[1].cancel()
    # in a copy of this context: kopf posts events only from its own (as trial_changed does)
    t = threading.Timer(max(0.5, after_s), contextvars.copy_context().run, (_schedule_owner, namespace, name))
    t.daemon = True
    _WAKES[key] = (due, t)
    t.start()


def _preflight(bench: dict[str, Any], trials: list[dict[str, Any]], now: Any) -> preflight.Outcome:
    """The preflight's pass for ``bench`` (its status as last written): passed, or what it found."""
    status = bench.get("status") or {}
    started = any((t.get("status") or {}).get("phase") not in (None, "Pending") for t in trials)
    conds, gen = list(status.get("conditions") or []), bench["metadata"].get("generation")
    if preflight.passed_before(conds, gen, started):
        return preflight.Outcome(True)
    if preflight.current(status, gen).get("gaveUp"):  # failed for this spec: nothing to check again
        return preflight.Outcome(False, failed=preflight.message_of(conds))
    full = bm.with_runner_image(bench, RUNTIME.runner_image, RUNTIME.runner_pod)
    try:
        model, spec = bm.validate(RUNTIME.kube, full, RUNTIME.allowed_charts)
    except PlanError:
        return preflight.Outcome(False)  # the spec handler says why
    return preflight.step(RUNTIME.kube, full, model, plan_trials(model, spec), started, now,
                          RUNTIME.subject, RUNTIME.trial_clusterrole, RUNTIME.probe_image)


@kopf.on.delete(GROUP, VERSION, "benchmarks")
def teardown(body: kopf.Body, **_: Any) -> None:
    key = f"{body['metadata']['namespace']}/{body['metadata']['name']}"
    left, stuck = bm.teardown(RUNTIME.kube, dict(body), ts.now(), running=WAKEUPS.loops_of(key))
    WAKEUPS.end_loops(key)  # its Trials are deleted: their loops end even where kopf cannot stop them
    if left:
        raise kopf.TemporaryError(f"waiting for {len(left)} to go: {', '.join(left[:5])}", delay=3)
    metrics.forget(f"{body['metadata']['namespace']}/{body['metadata']['name']}")
    if stuck:
        kopf.warn(body, reason="NamespacesStuck", message=(
            f"not waiting any longer (spec.timeouts.cleaningUp) for {len(stuck)} terminating namespace(s): "
            + ", ".join(stuck[:5]) + "; remove what holds them (see docs/operations.md)")[:1000])


# ---- Trial --------------------------------------------------------------------------------

@kopf.daemon(GROUP, VERSION, "trials", cancellation_timeout=10)
async def trial(body: kopf.Body, name: str, namespace: str, stopped: kopf.DaemonStopped, **_: Any) -> None:
    """The Trial's loop: a step whenever something it waits for changes, at the latest after the safety net."""
    key = f"{namespace}/{name}"
    uid = body["metadata"].get("uid") or ""
    wake = WAKEUPS.event(key, owner=f"{namespace}/{(body.get('spec') or {}).get('benchmark')}", uid=uid)
    failed_steps = 0
    last = 0.0
    written: dict[str, Any] | None = None  # the Trial as our last status patch left it
    seen = None  # the body's resourceVersion at the last step
    gap = MIN_STEP_GAP_S
    try:
        while not stopped:
            # Events come in bursts (45 regions' Deployments turning Available): one step for a burst.
            await asyncio.sleep(max(0.0, last + gap - time.monotonic()))
            if WAKEUPS.is_gone(uid):  # deleted before kopf's finalizer landed: kopf will not stop us
                log.info("trial %s: deleted (or its Benchmark); its loop ends", key)
                return
            last = time.monotonic()
            wake.clear()
            snapshot = copy.deepcopy(dict(body))
            rv = snapshot["metadata"].get("resourceVersion")
            if written is not None and rv == seen:  # the watch has not brought our last write yet: step on it
                snapshot = written
            else:
                written = None
            seen = rv
            phase = (snapshot.get("status") or {}).get("phase") or "Pending"
            if phase in trialstate.TERMINAL:
                return
            wait_s, poked_gap = RUNTIME.safety_net_s, MIN_STEP_GAP_S
            if phase != "Pending":
                try:
                    wait_s, wrote, poked_gap = await asyncio.to_thread(contextvars.copy_context().run,
                                                                       reconcile_trial, snapshot)
                    written = wrote or written
                    failed_steps = 0
                except Exception as e:  # transient (API, network): again with backoff
                    if await asyncio.to_thread(_trial_gone, namespace, name, uid):
                        log.info("trial %s: deleted during a %s step; its loop ends", key, phase)
                        return
                    failed_steps += 1
                    metrics.STEP_ERRORS.labels(phase).inc()
                    wait_s = backoff_s(failed_steps)
                    # a bug here is in writing the status itself (the step's own bugs end the Trial): say where
                    log.warning("trial %s: %s step failed (%s: %s); again in %.0fs", key, phase, type(e).__name__, e,
                                wait_s, exc_info=not transient(e))
            gap = poked_gap if await sleep(wake, wait_s) else MIN_STEP_GAP_S
    finally:
        WAKEUPS.forget(key, uid)
        metrics.forget_trial(namespace, name)


def _trial_gone(namespace: str, name: str, uid: str) -> bool:
    """Whether this Trial (by uid) is gone; False when unsure."""
    try:
        return bm.trial_gone(RUNTIME.kube, namespace, name, uid)
    except Exception as e:
        if not transient(e):
            raise
        return False  # the API server unreachable: unsure


def post(obj: dict[str, Any], e: lc.Event) -> None:
    """An event of the lifecycle's log, as a Kubernetes event of ``obj``."""
    kopf.event(obj, type=e.type, reason=e.reason, message=e.message[:1000])


def reconcile_trial(trial: dict[str, Any], clock: Callable[[], dt.datetime] = ts.now
                    ) -> tuple[float, dict[str, Any] | None, float]:
    """One step, recorded with the lifecycle's reducer, its status patch and events; how long to wait at most
    before the next, the Trial as the status patch left it (None: nothing patched) and the least gap before the
    next when an event wakes it. A Trial that must not run (its plan no longer plans, its Benchmark did not
    make it) and a step that raised (not transient) are the lifecycle's to decide too."""
    t0 = time.monotonic()
    kube = RUNTIME.kube
    meta, status = trial["metadata"], trial.get("status") or {}
    phase = lc.phase_of(status)

    def emit(reason: str, message: str, typ: str) -> None:
        post(trial, lc.Event(reason, message, typ))

    w = where(trial, kube=kube, trial_clusterrole=RUNTIME.trial_clusterrole,
              operator_subject=RUNTIME.subject, network_policy=RUNTIME.network_policy)
    timeouts, regions, plan = None, 0, None
    try:
        plan = trial_plan(trial)
        check_owner(trial, plan, lambda: ((kube.get(bm.API, "Benchmark", plan.benchmark, meta["namespace"]) or {})
                                          .get("metadata") or {}).get("uid"))
        timeouts, regions = plan.spec.timeouts, len(plan.region_names)
        WAKEUPS.watch_namespaces(f"{meta['namespace']}/{meta['name']}", plan.namespaces)
        d = step(w, Executor(kube, emit), plan, status, clock())
    except InvalidPlan as e:  # NotOwned too: nothing is done for it, not even a clean-up
        if isinstance(e, NotOwned):
            log.warning("trial %s/%s: %s", meta["namespace"], meta["name"], e)
        why = str(e) if isinstance(e, NotOwned) else f"the trial's frozen plan no longer validates: {e}"
        d = Decision(lc.decide(None, status, lc.Seen(refused=(e.reason, why)), clock()))
    except Exception as e:
        if transient(e):
            raise  # the loop tries again with back-off
        bug = not isinstance(e, PermanentError)  # a permanent error names its reason; anything else is a bug
        log.error("trial %s/%s: %s step failed%s (%s: %s); the Trial fails", meta["namespace"], meta["name"],
                  phase, " with a bug" if bug else "", type(e).__name__, e, exc_info=bug)
        metrics.STEP_ERRORS.labels(phase).inc()
        d = Decision(lc.decide(plan, status, lc.Seen(crashed=e), clock()))
    finally:
        metrics.RECONCILE.labels("trial").observe(time.monotonic() - t0)
    at = clock()
    new, events = lc.apply(status, d.step, at, d.recorded)
    patch = trialstate.status_patch(status, new, meta.get("generation"), at)
    written = None
    if patch:
        written = kube.patch_status(bm.API, "Trial", meta["name"], meta["namespace"], patch)
    now_phase = lc.phase_of(new)
    if now_phase != phase:
        metrics.PHASE_CHANGES.labels(now_phase).inc()
        if status.get("phaseStartTime"):
            metrics.PHASE_SECONDS.labels(phase).observe((at - ts.parse(status["phaseStartTime"])).total_seconds())
    for e in events:
        post(trial, e)
    metrics.record_phase(meta["namespace"], meta["name"], now_phase,
                         metrics.deadline(now_phase, new.get("phaseStartTime"), timeouts))
    wait_s = min(d.wake_s, RUNTIME.safety_net_s) if d.wake_s is not None else RUNTIME.safety_net_s
    return wait_s, written, event_gap(regions, now_phase, wait_s)


@kopf.on.event(GROUP, VERSION, "trials")
async def trial_changed(name: str, namespace: str, spec: kopf.Spec, status: kopf.Status,
                        event: kopf.RawEvent, **_: Any) -> None:
    """Wake the Trial's loop; when its phase changed, schedule its Benchmark at once.

    (Status changes do not reach kopf's change-detecting handlers, hence the raw event.)
    """
    key = f"{namespace}/{name}"
    WAKEUPS.poke(key)
    if event.get("type") == "DELETED":
        _PHASES_SEEN.pop(key, None)
        WAKEUPS.gone(key, ((event.get("object") or {}).get("metadata") or {}).get("uid") or "")
        return
    phase = status.get("phase") or "Pending"
    if _PHASES_SEEN.get(key) != phase:
        _PHASES_SEEN[key] = phase
        if spec.get("benchmark"):  # its name as written (the label value may be shortened)
            await asyncio.to_thread(contextvars.copy_context().run, _schedule_owner, namespace,
                                    spec["benchmark"])


# Only core kinds: a watch of a kind whose CRD is deleted (Chaos Mesh, mariadb-operator uninstalled)
# ends in a 404 that stops kopf altogether; the phases waiting on those ask to be woken instead.
@kopf.on.event("batch", "v1", "jobs")
@kopf.on.event("apps", "v1", "deployments")
async def child_changed(namespace: str, **_: Any) -> None:
    """A child in a trial namespace changed (seen in cluster-wide mode): wake its Trial."""
    WAKEUPS.poke_namespace(namespace)
