"""The Kubernetes provider's side of the lifecycle: observations in the lifecycle's words, its actions as objects.

:func:`decide` turns the observation of the Trial's children (:mod:`.observe`) into the lifecycle's
``Seen``, asks the lifecycle (core/lifecycle.py: the one state machine, shared with the lab) for its
step, and translates the step's abstract actions: ``Deploy`` into the keystone charts' stages and the
database objects, ``ShapeWan`` into Chaos Mesh objects made what is in force, ``Measure`` into probe
Jobs, ``StartRunners``/``StopRunners`` into Rally Jobs, ``CleanUp`` into deletions, ``Event`` into
Kubernetes events. It decides nothing the lab would decide otherwise. Pure.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from wanwide.core import lifecycle as lc
from wanwide.core import timestamps as ts
from wanwide.core.api.units import seconds
from wanwide.core.plan import monitoring, names
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.controller.actions import (
    Apply,
    Decision,
    Delete,
    DropFinalizer,
    Emit,
)
from wanwide.providers.kubernetes.kube import readiness
from wanwide.providers.kubernetes.render import Rendered, chaos, render_trial
from wanwide.providers.kubernetes.render.chart import next_step
from wanwide.providers.kubernetes.render.rally import JOB, PROBE

Obs = dict[str, Any]
DB_KINDS = {"MariaDB", "Database", "User", "Grant", "CrdbCluster"}
done, marked, needs_chaos = lc.done, lc.marked, lc.needs_chaos


def attempt(status: dict[str, Any]) -> int:
    return lc.attempt_of(status)


def rendered(plan: TrialPlan, status: dict[str, Any], obs: Obs) -> Rendered:
    """The desired state for this status (start time, attempt) and what was observed (passwords, results,
    monitoring CRDs missing: no exporters and no monitors)."""
    if obs.get("monitoring_crds") is False:
        plan = dataclasses.replace(plan, monitoring=monitoring.OFF)
    return render_trial(plan, start_at=status.get("loadStartAt"), attempt=attempt(status),
                        passwords=obs.get("passwords"), results=obs.get("results"),
                        plan_generation=int(obs.get("plan_generation", 0)), owner=obs.get("owner"),
                        network_policy=obs.get("network_policy"))


def fail_trial(reason: str, message: str) -> Decision:
    """Clean up (chaos first), then end Failed with this reason and message."""
    return Decision("CleaningUp", reason, message, {"outcome": "Failed"})


CHART_TRIES = 3  # a failed render or hook Job is tried again up to this many times in all (per trial)


def chart_failed(status: dict[str, Any], error: str, actions: list[Any] | None = None) -> Decision:
    """A failed ``helm template`` or hook Job is tried again, with back-off, until CHART_TRIES failures."""
    n = int(status.get("chartFailures") or 0) + 1
    if n >= CHART_TRIES:
        return fail_trial("ChartFailed", f"keystone chart failed {n} times; last: {error}")
    message = f"keystone chart failed ({n} of {CHART_TRIES} tries), trying again: {error}"
    return Decision(message=message, status={"chartFailures": n},
                    actions=[*(actions or []), Emit("ChartRetry", message, "Warning")], wake_s=5.0 * n)


# ---- Deploy -------------------------------------------------------------------------------

def deploying(plan: TrialPlan, status: dict[str, Any], obs: Obs) -> Decision:
    """Deploy, in Kubernetes: base objects, then (once the database's objects are Ready) Keystone wave 0 (schema
    owner), then wave 1, then wait until all is ready (the phase ``Injecting`` means done; a ``CleaningUp`` one, failed)."""
    if obs.get("missing"):
        return fail_trial("MissingSecret", obs["missing"])
    if obs.get("chart_refused"):  # nothing of the chart was applied (every release is rendered first)
        return fail_trial("ChartRefused", obs["chart_refused"])
    if obs.get("render_failed"):
        return chart_failed(status, obs["render_failed"])
    r = rendered(plan, status, obs)
    if obs.get("namespaces_taken"):  # named like the trial's, made by someone else: nothing is applied there
        taken = obs["namespaces_taken"]
        return fail_trial("NamespaceTaken", f"namespace(s) {', '.join(taken[:5])} exist and are not this trial's "
                                            "(wanwide changes only namespaces it made): delete or rename them")
    if "base" not in done(status):
        rbs = obs.get("rolebindings", {})  # namespace → the operator's RoleBinding there, right after it
        first: list[Any] = []  # each Namespace with the operator's RoleBinding there, in parallel
        then: list[Any] = []  # once all are there (the authorizer's cache trails new bindings): the rest
        for o in r.base:
            if o["kind"] == "Trial":
                continue
            lane = o["metadata"].get("namespace") or o["metadata"]["name"]
            if o["kind"] == "Namespace":
                first += [Apply(o, lane)] + ([Apply(rbs[lane], lane)] if lane in rbs else [])
            else:
                then.append(Apply(o, lane))
        acts = [*first, Emit("Provisioning", f"applying {len(r.base) - 1} objects in {len(plan.namespaces)} namespaces"),
                *then]
        if obs.get("monitoring_crds") is False:
            acts.append(Emit("MonitorsSkipped", monitoring.CRDS_MISSING, "Warning"))
        return Decision(status=marked(status, "base"), actions=acts)
    rendering = [ns for ns, c in obs.get("charts", {}).items() if c is None]
    if "wave0" not in done(status) and rendering:  # every release rendered and confined before any is applied
        return Decision(message=f"rendering the keystone chart: {len(rendering)} of {len(obs['charts'])} release(s) "
                                "left (none is applied before all are checked)", wake_s=poll_s(plan))
    if "wave0" not in done(status):
        db_waiting = [k for k, ok in obs.get("database_ready", {}).items() if not ok]
        if db_waiting:  # Keystone's db-sync would be refused (its User, Grant not there yet) and back off for minutes
            return ahead(plan, status, obs, Decision(message="waiting for the database before Keystone's db-sync: "
                                                             + ", ".join(db_waiting[:5]), wake_s=5))
        return ahead(plan, status, obs, keystone_wave(plan, status, obs, 0))
    if "wave1" not in done(status):
        return keystone_wave(plan, status, obs, 1)
    waiting = [k for k, ready in obs.get("ready", {}).items() if not ready]
    if waiting:
        # no watch on the database operator's kinds (see handlers.child_changed): look again soon
        crs = any(k.split("/", 1)[0] in DB_KINDS for k in waiting)
        return Decision(message=f"waiting for {len(waiting)}: " + ", ".join(waiting[:5]) + (" …" if len(waiting) > 5 else ""),
                        wake_s=5 if crs else None)
    return Decision("Injecting", "Deployed", f"database and {len(plan.regions)} Keystones ready")


AHEAD_CHUNK = 50  # wave-1 releases whose objects go ahead per step (a step must stay short: wave 0 waits for it)


def ahead(plan: TrialPlan, status: dict[str, Any], obs: Obs, d: Decision) -> Decision:
    """While wave 0 runs, wave 1's objects before its first hooks (Services, Roles, the api Deployment, whose
    pods wait for their own db-sync): AHEAD_CHUNK releases a step, in region order (``status.keystoneAhead``)."""
    regions, k = wave_regions(plan, 1), int(status.get("keystoneAhead") or 0)
    if d.phase:
        return d
    charts, acts, n = obs.get("charts", {}), list(d.actions), k
    for r in regions[k:k + AHEAD_CHUNK]:
        c = charts.get(plan.namespace(r))
        if c is None:  # not rendered yet: next step
            break
        acts += [Apply(o, plan.namespace(r)) for o in next_step(c, {}, hooks=False).apply]
        n += 1
    if n == k:
        return d
    return dataclasses.replace(d, actions=acts, status={**d.status, "keystoneAhead": n},
                               wake_s=min(d.wake_s or poll_s(plan), poll_s(plan)))


def poll_s(plan: TrialPlan) -> float:
    """How often a wave looks at its hook Jobs: 2 s, up to 5 s at 500 regions (each look lists them all)."""
    return min(5.0, max(2.0, len(plan.regions) / 100))


def wave_regions(plan: TrialPlan, wave: int) -> list[str]:
    """Wave 0: the schema owner's region; wave 1: every other region."""
    return [r for r in plan.region_names if (r == plan.schema_region) == (wave == 0)]


def keystone_wave(plan: TrialPlan, status: dict[str, Any], obs: Obs, wave: int) -> Decision:
    """One wave of keystone releases, each stage by stage (providers/kubernetes/render/chart.py); the wave is done when every
    release's hook Jobs are Complete. Wave 0 is the schema owner's release, wave 1 all the others."""
    namespaces = [plan.namespace(r) for r in wave_regions(plan, wave)]
    charts, jobs = obs.get("charts", {}), obs.get("jobs", {})
    acts: list[Any] = []
    failed: list[str] = []
    stages: dict[str, int] = {}
    early = int(status.get("keystoneAhead") or 0) if wave == 1 else 0
    for i, ns in enumerate(namespaces):
        c = charts.get(ns)
        if c is None:
            stages["rendering"] = stages.get("rendering", 0) + 1
            continue
        nxt = next_step(c, jobs, ahead=i < early)
        acts += [Apply(o, ns) for o in nxt.apply]
        failed += nxt.failed
        if not nxt.done:
            stages[nxt.waiting] = stages.get(nxt.waiting, 0) + 1
    if failed:
        deletes = [Delete("batch/v1", "Job", j.split("/", 1)[1], j.split("/", 1)[0], j.split("/", 1)[0]) for j in failed]
        return chart_failed(status, f"hook Job(s) failed: {', '.join(failed[:3])} (see kubectl logs job/NAME -n NS)"
                                    "; running them again", [*acts, *deletes])
    if stages:
        where = ", ".join(f"{n} {s}" for s, n in sorted(stages.items()))
        return Decision(message=f"keystone wave {wave}: {len(namespaces)} release(s); waiting: {where}",
                        actions=acts, wake_s=poll_s(plan))
    emit = Emit("KeystoneInstalled", f"keystone in {len(namespaces)} region(s)" + (" (schema owner first)" if wave == 0 else ""))
    return Decision(status=marked(status, f"wave{wave}"), actions=[*acts, emit])


# ---- ShapeWan, Measure, CleanUp --------------------------------------------------------------

def reconcile_chaos(want: list[dict[str, Any]], live: list[dict[str, Any]]) -> tuple[list[Any], bool]:
    """Actions making the trial's live chaos objects the wanted ones (stale or changed ones deleted first,
    missing ones applied); whether a wanted name is still being removed (apply it once it is gone)."""
    wanted = {o["metadata"]["name"]: o for o in want}
    there = {c["metadata"]["name"]: c for c in live}
    going = {n for n, c in there.items() if c["metadata"].get("deletionTimestamp")}
    stale = [c for n, c in there.items() if n not in going and (n not in wanted or not chaos.same(c, wanted[n]))]
    missing = [o for n, o in wanted.items() if n not in there or (n not in going and not chaos.same(there[n], o))]
    acts: list[Any] = [*(Delete.of(c) for c in stale), *(Apply(o) for o in missing if o["metadata"]["name"] not in going)]
    return acts, any(o["metadata"]["name"] in going for o in missing)


NETEM_HINT = ("chaos-daemon could not set the tc rules on that pod's node: its kernel may lack netem "
              "(modprobe sch_netem); chaos-daemon's log has tc's own words")


def wan_progress(plan: TrialPlan, status: dict[str, Any], obs: Obs, r: Rendered) -> tuple[lc.Progress, list[Any]]:
    """Injecting: how far the plan's WAN is (Chaos Mesh's word on each object), and the objects to change."""
    first = "wan" not in done(status)
    if first:
        empty = [x for x in plan.region_names if not obs.get("running_pods", {}).get(x)]
        if empty:
            return lc.Progress(waiting=f"no running pod yet in regions {', '.join(empty)}", wake_s=5), []
    wan = r.wan
    acts, going = reconcile_chaos(wan, obs.get("chaos", []))
    if first or acts or going:
        said = [Emit("Injecting", f"applying {len(wan)} NetworkChaos objects (the emulated WAN)")] if first else []
        return lc.Progress(waiting=f"applying the WAN ({len(acts)} change(s))", wake_s=2), [*acts, *said]
    live = {c["metadata"]["name"]: c for c in obs.get("chaos", [])}
    failed = [(o["metadata"]["name"], why) for o in wan
              if (why := readiness.chaos_failed(live.get(o["metadata"]["name"])))]
    if failed:
        name, why = failed[0]
        return lc.Progress(failed=("ChaosFailed", f"Chaos Mesh could not inject {len(failed)} of {len(wan)} WAN "
                                                  f"objects; {name}: {why}" + (f" ({NETEM_HINT})" if "tc" in why else ""))), []
    pending = [o["metadata"]["name"] for o in wan if not readiness.chaos_injected(live.get(o["metadata"]["name"]))]
    if pending:
        return lc.Progress(waiting=f"waiting for AllInjected on {len(pending)}: {', '.join(pending[:4])}", wake_s=2), []
    return lc.Progress(done=True, waiting=f"Chaos Mesh reports AllInjected on {len(wan)} objects"), []


def faults_in_force(plan: TrialPlan, status: dict[str, Any], obs: Obs, r: Rendered,
                    now: dt.datetime) -> tuple[dict[str, float], str | None]:
    """Loading: each fault occurrence in force whose chaos objects are all there and injected (Chaos Mesh's
    AllInjected) → seconds after the load start when the last of them was first applied (its records' Apply
    events; this observation's time when they carry none); and Chaos Mesh's word on one it could not inject."""
    start = ts.parse(status["loadStartAt"])
    live = {c["metadata"]["name"]: c for c in obs.get("chaos", []) if not c["metadata"].get("deletionTimestamp")}
    windows: dict[str, list[str]] = {}
    for o in r.chaos_at((now - start).total_seconds(), obs.get("pod_addresses")):
        for n in ((o["metadata"].get("annotations") or {}).get(names.A_FAULT) or "").split(","):
            if n:
                windows.setdefault(n, []).append(o["metadata"]["name"])
    out: dict[str, float] = {}
    why = None
    for n, objs in windows.items():
        got = [live.get(x) for x in objs]
        if all(g is not None and readiness.chaos_injected(g) for g in got):
            out[n] = max(((readiness.injected_at(g) or now) - start).total_seconds() for g in got if g is not None)
        elif why is None:
            why = next((f"Chaos Mesh: {w}" for g in got if g is not None and (w := readiness.chaos_failed(g))), None)
    return out, why


def network_seen(plan: TrialPlan, status: dict[str, Any], obs: Obs) -> dict[str, Any]:
    """VerifyingNetwork: the probes' measurement as the lifecycle reads it."""
    if obs.get("results") is None:
        return {"network_unmeasurable": "no results store to collect the network probes in: the network is not "
                                        "verified"}
    check = max(1, int(status.get("networkCheck") or 0))
    sources = sorted({a for a, _ in lc.probe_pairs(plan)}, key=plan.region_names.index)
    measured, missing, error = obs.get("probes", ({}, sources, None))
    broken = [s for s in missing if obs.get("probe_jobs", {}).get(s) in ("failed", "stopped")]
    if broken:
        return {"network_failed": f"the network probe failed in {', '.join(broken)}: "
                                  f"kubectl logs job/{PROBE}-{check} -n {plan.namespace(broken[0])}"}
    if missing:
        return {"network_waiting": f"measuring the network: waiting for the probes of {', '.join(missing[:5])}",
                "store_error": error}
    return {"network": measured}


def cleanup_progress(plan: TrialPlan, status: dict[str, Any], obs: Obs,
                     now: dt.datetime) -> tuple[lc.Progress, list[Any]]:
    """CleaningUp: chaos first (always), then the namespaces as spec.cleanup says."""
    left_chaos = obs.get("chaos", [])
    if left_chaos:
        stuck = [c for c in left_chaos if readiness.chaos_stuck(c, now)]
        running = obs.get("running_pods_of_chaos")  # None: not observed, nothing released for it
        orphaned = [c for c in left_chaos
                    if running is not None and c not in stuck and readiness.chaos_orphaned(c, running, now)]
        blocked = readiness.blocked_recovery(left_chaos, obs.get("pod_chaos", {}), now)
        said = (f"; Chaos Mesh keeps {len(stuck)} it never injected (its finalizer {readiness.CHAOS_FINALIZER}): "
                "released") if stuck else ""
        if orphaned:
            said += (f"; Chaos Mesh keeps {len(orphaned)} whose pods left to recover no longer run (finished or "
                     "gone; nothing to recover there): released")
        if blocked:
            why = (blocked[0].get("status") or {}).get("failedMessage")
            said += (f"; Chaos Mesh cannot sync {len(blocked)} pod(s) their recovery waits on ({why}): "
                     "their PodNetworkChaos deleted")
        return (lc.Progress(waiting=f"removing chaos: {len(left_chaos)} object(s) not yet recovered{said}", wake_s=5),
                [*(Delete.of(c) for c in left_chaos if not c["metadata"].get("deletionTimestamp")),
                 *(DropFinalizer(c, readiness.CHAOS_FINALIZER) for c in [*stuck, *orphaned]),
                 *(Delete.of(p) for p in blocked)])
    outcome = status.get("outcome") or "Failed"
    policy = plan.spec.cleanup
    left = obs.get("namespaces", {}) if policy == "Always" or (policy == "OnSuccess" and outcome == "Succeeded") else {}
    # (observe.cleaning_up lists only the trial's own namespaces: one named like them, made by anyone else, stays)
    if left:
        why = obs.get("namespaces_why", {})
        names_ = sorted(left)
        waiting = (f"{len(left)} namespace(s) still there: "
                   + ", ".join(f"{ns} ({why[ns]})" if why.get(ns) else ns for ns in names_[:5])
                   + ("" if len(left) <= 5 else " …") + "; remove what holds them (see docs/operations.md)")
        return (lc.Progress(waiting=waiting, wake_s=5),
                [Delete("v1", "Namespace", ns) for ns, deleting in left.items() if not deleting])
    return lc.Progress(done=True), []


# ---- the step -------------------------------------------------------------------------------

def decide(plan: TrialPlan, status: dict[str, Any], obs: Obs, now: dt.datetime) -> Decision:
    """The lifecycle's step for the Trial's current phase, observed and carried out the Kubernetes way."""
    phase = status.get("phase") or "Pending"
    if phase not in lc.PHASE_STEPS:
        return Decision()
    r = rendered(plan, status, obs)
    seen: dict[str, Any] = {"chaos_missing": obs.get("chaos_installed") is False,
                            "store_error": obs.get("store"), "chaos_left": len(obs.get("chaos", []))}
    deploy = cleanup = wan_acts = None
    if phase == "Provisioning":
        deploy = deploying(plan, status, obs)
        seen["deployment"] = lc.Progress(done=deploy.phase == "Injecting", waiting=deploy.message,
                                         failed=(deploy.reason, deploy.message) if deploy.phase == "CleaningUp" else None,
                                         wake_s=deploy.wake_s)
    elif phase == "Injecting" and needs_chaos(plan) and obs.get("chaos_installed") is not False:
        seen["wan"], wan_acts = wan_progress(plan, status, obs, r)
    elif phase == "VerifyingNetwork":
        seen |= network_seen(plan, status, obs)
    elif phase == "Loading":
        seen["runners"] = obs.get("jobs", {})
        if plan.faults and status.get("loadStartAt") and "chaos" in obs:
            seen["faults_injected"], seen["fault_why"] = faults_in_force(plan, status, obs, r, now)
    elif phase == "Collecting":
        found, missing, uri, error = obs.get("bundles", ([], list(plan.load_regions), "", None))
        seen |= {"bundles": (found, missing, uri), "store_error": error}
    elif phase == "CleaningUp":
        seen["cleaned"], cleanup = cleanup_progress(plan, status, obs, now)
    if (u := readiness.unschedulable(obs.get("pending_pods") or [], now)) is not None:
        seen["unschedulable"] = lc.Unschedulable(*u)
    step = lc.decide(plan, status, lc.Seen(**seen), now)
    out = Decision(step.phase, step.reason, step.message, dict(step.status), wake_s=step.wake_s)
    late = late_pods_seen(plan, phase, obs)
    shaped = False
    for a in step.actions:
        if isinstance(a, lc.Deploy) and deploy is not None:
            out.actions += deploy.actions
            out.status |= deploy.status
        elif isinstance(a, lc.ShapeWan):
            if phase == "Injecting":
                out.actions += wan_acts or []
            else:
                shaped = True
                want = r.chaos_at(a.elapsed_s, obs.get("pod_addresses"))
                if late is not None:
                    want += r.late(a.elapsed_s, late)
                else:  # not observed: what is there stays
                    want += [c for c in obs.get("chaos", []) if chaos.A_FOR_POD in (c["metadata"].get("annotations") or {})]
                acts, going = reconcile_chaos(want, obs.get("chaos", []))
                out.actions += acts + late_said(acts)
                if going:  # the same name still being removed: apply once it is gone
                    out.wake_s = min(out.wake_s or 1.0, 1.0)
        elif isinstance(a, lc.Measure):
            out.actions += [Apply(o, o["metadata"]["namespace"]) for o in r.probes(a.check, obs["results"])]
        elif isinstance(a, lc.StartRunners):
            if not status.get("loadStartAt"):  # the start first, recorded; the runners with it on the next step
                start = now + dt.timedelta(seconds=seconds(plan.spec.workload.start_delay))
                out.status |= {"loadStartAt": ts.iso(start), "attempt": a.attempt}
                out.message, out.wake_s = "start time chosen", 0.0
            else:
                out.actions += [*(Apply(o) for o in r.load),
                                Emit("Loading", f"attempt {a.attempt}: Rally in {len(plan.load_regions)} region(s), "
                                                f"start at {status['loadStartAt']}")]
        elif isinstance(a, lc.StopRunners):
            out.actions += [Delete("batch/v1", "Job", JOB, plan.namespace(x)) for x in plan.load_regions]
        elif isinstance(a, lc.CleanUp):
            out.actions += cleanup or []
        elif isinstance(a, lc.Event):
            out.actions.append(Emit(a.reason, a.message, a.type))
    if late is not None and not shaped and out.phase != "CleaningUp":
        acts = late_shaping(obs, r, late)
        if acts:  # look again soon: the probes wait for their shaping
            out.actions += acts
            out.wake_s = min(out.wake_s or 3.0, 3.0)
    return out


def late_pods_seen(plan: TrialPlan, phase: str, obs: Obs) -> dict[str, list[str]] | None:
    """VerifyingNetwork and Loading: region → its running pods the WAN's objects did not select (they started
    after them: the network probes, the runners, a pod made again); None when not observed."""
    if phase not in ("VerifyingNetwork", "Loading") or not needs_chaos(plan) or "running" not in obs:
        return None
    return chaos.late_pods(plan, obs["running"], obs.get("chaos", []))


def late_shaping(obs: Obs, r: Rendered, late: dict[str, list[str]]) -> list[Any]:
    """The objects shaping the late pods made what they should be, for the plan's WAN (a plan with faults has
    them made with the WAN in force, with ShapeWan): missing ones applied, those of pods gone deleted, the WAN's
    own left alone; an event when pods get theirs."""
    mine = [c for c in obs.get("chaos", []) if chaos.A_FOR_POD in (c["metadata"].get("annotations") or {})]
    acts, _ = reconcile_chaos(r.late(None, late), mine)
    return acts + late_said(acts)


def late_said(acts: list[Any]) -> list[Emit]:
    """An event naming the pods that get objects of their own by ``acts``."""
    new = sorted({a.obj["metadata"]["annotations"][chaos.A_FOR_POD] for a in acts
                  if isinstance(a, Apply) and chaos.A_FOR_POD in (a.obj["metadata"].get("annotations") or {})})
    if not new:
        return []
    return [Emit("ShapingLatePods", f"{len(new)} pod(s) started after the WAN's chaos objects, which Chaos Mesh never "
                                    f"makes select them: shaping them with objects of their own "
                                    f"({', '.join(new[:4])}{' …' if len(new) > 4 else ''})")]


__all__ = ["CHART_TRIES", "DB_KINDS", "Obs", "attempt", "decide", "done", "fail_trial", "marked", "needs_chaos",
           "rendered"]
