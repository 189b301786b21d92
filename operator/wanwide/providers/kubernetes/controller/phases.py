"""The Kubernetes provider's side of the lifecycle: observations in the lifecycle's words, its actions as objects. Pure.

:func:`decide` turns the observation of the Trial's children (:mod:`.observe`) into the lifecycle's ``Seen``,
asks the lifecycle (core/lifecycle: the one state machine, shared with the lab) for its step, and translates
the step's abstract actions: ``Deploy`` into each deployment stage's objects (:mod:`.deploy`), ``ShapeWan`` into
Chaos Mesh objects made what is in force, ``Measure`` into probe Jobs, ``StartRunners``/``StopRunners`` into
Rally Jobs, ``CleanUp`` into deletions, ``Event`` into Kubernetes events. It decides nothing the lab would decide
otherwise and moves no phase: the handler records the step with the lifecycle's reducer (``lifecycle.apply``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from wanwide.core import lifecycle as lc
from wanwide.core import timestamps as ts
from wanwide.core.plan import monitoring, names
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.controller import deploy
from wanwide.providers.kubernetes.controller.actions import (
    Action,
    Apply,
    Decision,
    Delete,
    DropFinalizer,
    Emit,
)
from wanwide.providers.kubernetes.kube import readiness
from wanwide.providers.kubernetes.render import Rendered, chaos, render_trial
from wanwide.providers.kubernetes.render.rally import JOB, PROBE, WATCH

Obs = dict[str, Any]
done = lc.done
CHAOS_MISSING = "Chaos Mesh CRDs are not installed: install Chaos Mesh first"
CHAOS_GONE = ("Chaos Mesh's CRDs went away mid-run: the emulated WAN and any fault are gone, the trial's "
              "results would not measure what it asks; reinstall Chaos Mesh and run the trial again")


def rendered(plan: TrialPlan, status: dict[str, Any], obs: Obs) -> Rendered:
    """The desired state for this status (start time, attempt) and what was observed (passwords, results,
    monitoring CRDs missing: no exporters and no monitors)."""
    if obs.get("monitoring_crds") is False:
        plan = dataclasses.replace(plan, monitoring=monitoring.OFF)
    return render_trial(plan, start_at=status.get("loadStartAt"), attempt=lc.attempt_of(status),
                        passwords=obs.get("passwords"), results=obs.get("results"),
                        plan_generation=int(obs.get("plan_generation", 0)), owner=obs.get("owner"),
                        network_policy=obs.get("network_policy"), services=obs.get("service_addresses"))


def unplaced(pod: str, waited_s: float, scheduler: str, node_selector: dict[str, str]) -> lc.Unplaced:
    """A pod the scheduler has not placed, in the lifecycle's words: which pod, what stops it (as the scheduler
    said), how to fix that."""
    said = scheduler.strip()
    needs = ", ".join(f"{k}={v}" for k, v in sorted(node_selector.items()))
    fixes = []
    if needs and ("affinity/selector" in said or "untolerated taint" not in said):
        fixes.append(f"it needs a node labelled {needs}: label nodes (kubectl label node NODE {needs.split(', ')[0]}) "
                     "or change the Topology's spec.placement (mode: none runs anywhere; mode: nodes names the nodes)")
    if "untolerated taint" in said:
        fixes.append("a node carries a taint it does not tolerate: kubectl describe node shows which (the kubelet's "
                     "own, node.kubernetes.io/disk-pressure or memory-pressure, goes when disk or memory is freed)")
    fix = "; ".join(fixes) or "check its requests, tolerations and affinity against the nodes"
    return lc.Unplaced(f"pod {pod}", waited_s, f"{fix}; the scheduler said: {said or 'nothing'}")


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


FAULT_CHECK = "check Chaos Mesh: kubectl get networkchaos -A, chaos-daemon's log"
NETEM_HINT = ("chaos-daemon could not set the tc rules on that pod's node: its kernel may lack netem "
              "(modprobe sch_netem), or the pod's container restarted while it was injected (its RESTARTS); "
              "chaos-daemon's log has tc's own words")


def wan_progress(plan: TrialPlan, status: dict[str, Any], obs: Obs, r: Rendered,
                 now: dt.datetime) -> tuple[lc.Progress, list[Any]]:
    """Injecting: how far the plan's WAN is (Chaos Mesh's word on each object), and the objects to change. An
    object whose injection keeps failing past ``readiness.CHAOS_RETRY_S`` fails the trial; before that Chaos
    Mesh is retrying it and the trial waits, saying so (the Injecting timeout still bounds it)."""
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
              if (why := readiness.chaos_failed(live.get(o["metadata"]["name"]), now))]
    if failed:
        name, why = failed[0]
        return lc.Progress(failed=f"Chaos Mesh could not inject {len(failed)} of {len(wan)} WAN objects; {name}: {why}"
                                  + (f" ({NETEM_HINT})" if "tc" in why else "")), []
    pending = [o["metadata"]["name"] for o in wan if not readiness.chaos_injected(live.get(o["metadata"]["name"]))]
    retrying = [(n, got) for n in pending if (got := readiness.chaos_failing(live.get(n)))]
    if retrying:
        name, (why, _) = retrying[0]
        left = f" (a failure after {readiness.CHAOS_RETRY_S:.0f} s fails the trial)"
        return lc.Progress(waiting=f"Chaos Mesh retries {len(retrying)} WAN object(s) it could not inject yet; "
                                   f"{name}: {why}{left}", wake_s=5), []
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
            why = next((f"Chaos Mesh: {w}" for g in got if g is not None and (w := readiness.chaos_failed(g, now))), None)
    return out, (f"{why}; " if why else "") + FAULT_CHECK


def network_seen(plan: TrialPlan, status: dict[str, Any], obs: Obs) -> dict[str, Any]:
    """VerifyingNetwork: the probes' measurement as the lifecycle reads it."""
    if obs.get("results") is None:
        return {"network_unmeasurable": "no results store to collect the network probes in: the network is not "
                                        "verified"}
    check = lc.check_of(status)
    sources = lc.probe_sources(plan)
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

Prepared = dict[str, list[Action]]


def _deployment(plan: TrialPlan, status: dict[str, Any], obs: Obs, r: Rendered, now: dt.datetime,
                prepared: Prepared) -> dict[str, Any]:
    finished = done(status)
    return {"stages": {s.name: deploy.progress(plan, status, obs, r, s) for s in lc.stages(plan)
                       if s.name not in finished}}


def _shaper(status: dict[str, Any], obs: Obs) -> dict[str, Any]:
    """Chaos Mesh's CRDs not served: the lifecycle's word for it, never there or gone mid-run."""
    if obs.get("chaos_installed") is not False:
        return {}
    first = lc.phase_of(status) == "Injecting" and "wan" not in done(status)
    return {"cannot_shape": CHAOS_MISSING if first else CHAOS_GONE}


def _wan(plan: TrialPlan, status: dict[str, Any], obs: Obs, r: Rendered, now: dt.datetime,
         prepared: Prepared) -> dict[str, Any]:
    out = _shaper(status, obs)
    if lc.needs_shaping(plan) and not out:
        out["wan"], prepared["wan"] = wan_progress(plan, status, obs, r, now)
    return out


def _network(plan: TrialPlan, status: dict[str, Any], obs: Obs, r: Rendered, now: dt.datetime,
             prepared: Prepared) -> dict[str, Any]:
    return network_seen(plan, status, obs)


def _load(plan: TrialPlan, status: dict[str, Any], obs: Obs, r: Rendered, now: dt.datetime,
          prepared: Prepared) -> dict[str, Any]:
    out = {**_shaper(status, obs), "runners": obs.get("jobs", {}), "runner_said": obs.get("runner_said", {}),
           "runner_late": obs.get("runner_late", {}),
           "store_error": obs.get("store")}
    if plan.faults and status.get("loadStartAt") and "chaos" in obs:
        out["faults_injected"], out["fault_why"] = faults_in_force(plan, status, obs, r, now)
    return out


def _bundles(plan: TrialPlan, status: dict[str, Any], obs: Obs, r: Rendered, now: dt.datetime,
             prepared: Prepared) -> dict[str, Any]:
    found, missing, uri, error, slo = obs.get("bundles", ([], list(plan.load_regions), "", None, None))
    return {"bundles": (found, missing, uri), "store_error": error, "objectives": slo}


def _cleanup(plan: TrialPlan, status: dict[str, Any], obs: Obs, r: Rendered, now: dt.datetime,
             prepared: Prepared) -> dict[str, Any]:
    cleaned, prepared["cleanup"] = cleanup_progress(plan, status, obs, now)
    left = (f"{len(obs['chaos'])} chaos object(s) still present (check Chaos Mesh; namespaces kept for inspection)"
            if obs.get("chaos") else None)
    return {"cleaned": cleaned, "shaping_left": left}


def _placement(plan: TrialPlan, status: dict[str, Any], obs: Obs, r: Rendered, now: dt.datetime,
               prepared: Prepared) -> dict[str, Any]:
    u = readiness.unschedulable(obs.get("pending_pods") or [], now)
    return {} if u is None else {"unplaced": unplaced(*u)}


SEEN = {"deployment": _deployment, "wan": _wan, "network": _network, "load": _load, "bundles": _bundles,
        "cleanup": _cleanup, "placement": _placement}  # each part the lifecycle reads, said in its words


def seen(plan: TrialPlan, status: dict[str, Any], obs: Obs, r: Rendered, now: dt.datetime) -> tuple[lc.Seen, Prepared]:
    """What was observed in the lifecycle's words, and the objects the observation already says to change
    (``wan``: Injecting's chaos; ``cleanup``: CleaningUp's deletions)."""
    out: dict[str, Any] = {}
    prepared: Prepared = {}
    for part in lc.parts(status):
        out |= SEEN[part](plan, status, obs, r, now, prepared)
    return lc.Seen(**out), prepared


def decide(plan: TrialPlan, status: dict[str, Any], obs: Obs, now: dt.datetime) -> Decision:
    """The lifecycle's step for the Trial's current phase, observed and carried out the Kubernetes way."""
    if lc.phase_of(status) not in lc.RUNNING_PHASES:
        return Decision(lc.decide(plan, status, lc.Seen(), now))
    r = rendered(plan, status, obs)
    said, prepared = seen(plan, status, obs, r, now)
    step = lc.decide(plan, status, said, now)
    out = Decision(step, wake_s=step.wake_s)
    late = late_pods_seen(plan, lc.phase_of(status), obs)
    shaped = False
    for a in step.actions:
        if isinstance(a, lc.Deploy):
            acts, recorded = deploy.act(plan, {**status, **out.recorded}, obs, r, a)
            out.actions += acts
            out.recorded |= recorded
        elif isinstance(a, lc.ShapeWan):
            if lc.phase_of(status) == "Injecting":
                out.actions += prepared.get("wan", [])
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
                start = now + dt.timedelta(seconds=a.start_delay_s)
                out.recorded["loadStartAt"] = ts.iso(start)
            else:
                out.actions += [*(Apply(o) for o in r.load),
                                Emit("Loading", f"attempt {a.attempt}: Rally in {len(plan.load_regions)} region(s), "
                                                f"start at {status['loadStartAt']}")]
        elif isinstance(a, lc.StopRunners):
            out.actions += [Delete("batch/v1", "Job", JOB, plan.namespace(x)) for x in plan.load_regions]
            # the pairs' watches too (SIGTERM: each stores its document first)
            out.actions += [Delete.of(o) for o in r.load if o["kind"] == "Job" and o["metadata"]["name"] == WATCH]
        elif isinstance(a, lc.CleanUp):
            out.actions += prepared.get("cleanup", [])
        elif isinstance(a, lc.Event):
            out.actions.append(Emit(a.reason, a.message, a.type))
    if late is not None and not shaped and (step.phase or lc.phase_of(status)) != "CleaningUp":
        acts = late_shaping(obs, r, late)
        if acts:  # look again soon: the probes wait for their shaping
            out.actions += acts
            out.wake_s = min(out.wake_s or 3.0, 3.0)
    return out


def late_pods_seen(plan: TrialPlan, phase: str, obs: Obs) -> dict[str, list[str]] | None:
    """VerifyingNetwork and Loading: region → its running pods the WAN's objects did not select (they started
    after them: the network probes, the runners, a pod made again); None when not observed."""
    if phase not in ("VerifyingNetwork", "Loading") or not lc.needs_shaping(plan) or "running" not in obs:
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


__all__ = ["CHAOS_GONE", "CHAOS_MISSING", "Obs", "decide", "late_pods_seen", "late_said", "late_shaping",
           "reconcile_chaos", "rendered", "seen", "unplaced"]
