"""The Trial phase machine's decisions: (plan, status, observation, now) → Decision. Pure.

An observation is a plain dict gathered by :mod:`.observe` (what the phase
needs to know about the Trial's children); the decision names the next phase
and the actions, which :class:`.actions.Executor` carries out. ``status["done"]``
records which one-off steps are behind us, so a restarted operator resumes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Any

from .. import timestamps as ts
from ..api.units import seconds
from ..kube import readiness
from ..plan import monitoring
from ..plan.lifecycle import (
    LOAD_FAILED,
    NETWORK_CHECKS,
    NETWORK_OFF,
    UPLOAD_FAILED,
    after_runner_failure,
    in_force,
    next_change_s,
    probe_pairs,
    verdict,
)
from ..plan.trial import TrialPlan
from ..render import Rendered, chaos, render_trial
from ..render.chart import next_step
from ..render.rally import PROBE
from .actions import Apply, Decision, Delete, Emit
from .trialstate import timed_out

Obs = dict[str, Any]
DB_KINDS = {"MariaDB", "Database", "User", "Grant", "CrdbCluster"}


def done(status: dict[str, Any]) -> set[str]:
    return set(status.get("done") or [])


def marked(status: dict[str, Any], *items: str) -> dict[str, Any]:
    return {"done": sorted(done(status) | set(items))}


def attempt(status: dict[str, Any]) -> int:
    return max(1, int(status.get("attempt") or 1))


def rendered(plan: TrialPlan, status: dict[str, Any], obs: Obs) -> Rendered:
    """The desired state for this status (start time, attempt) and what was observed (passwords, results,
    monitoring CRDs missing: no exporters and no monitors)."""
    if obs.get("monitoring_crds") is False:
        plan = dataclasses.replace(plan, monitoring=monitoring.OFF)
    return render_trial(plan, start_at=status.get("loadStartAt"), attempt=attempt(status),
                        passwords=obs.get("passwords"), results=obs.get("results"),
                        plan_generation=int(obs.get("plan_generation", 0)))


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


# ---- phases -------------------------------------------------------------------------------

def provisioning(plan: TrialPlan, status: dict[str, Any], obs: Obs, now: dt.datetime) -> Decision:
    """Base objects, then Keystone wave 0 (schema owner), then wave 1, then wait until all is ready."""
    if obs.get("missing"):
        return fail_trial("MissingSecret", obs["missing"])
    if obs.get("render_failed"):
        return chart_failed(status, obs["render_failed"])
    r = rendered(plan, status, obs)
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
    if "wave0" not in done(status):
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
    """One wave of keystone releases, each stage by stage (render/chart.py); the wave is done when every
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


def needs_chaos(plan: TrialPlan) -> bool:
    """Whether the plan shapes any link or injects any fault (else Chaos Mesh is not needed)."""
    return any(plan.classes.values()) or bool(plan.faults)


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


def injecting(plan: TrialPlan, status: dict[str, Any], obs: Obs, now: dt.datetime) -> Decision:
    """The plan's WAN applied (any other chaos of this trial removed), then Chaos Mesh's word that every
    object is injected; an injection Chaos Mesh reports failed fails the trial, saying where and why."""
    if not needs_chaos(plan):
        return Decision("VerifyingNetwork", "Injected", "the plan shapes no link: no chaos to inject")
    first = "wan" not in done(status)
    if not obs.get("chaos_installed", False):
        return fail_trial("ChaosMeshMissing", "Chaos Mesh CRDs are not installed: install Chaos Mesh first"
                          if first else CHAOS_GONE)
    if first:
        empty = [r for r in plan.region_names if not obs.get("running_pods", {}).get(r)]
        if empty:
            return Decision(message=f"no running pod yet in regions {', '.join(empty)}", wake_s=5)
    wan = rendered(plan, status, obs).wan
    acts, going = reconcile_chaos(wan, obs.get("chaos", []))
    if first or acts or going:
        said = [Emit("Injecting", f"applying {len(wan)} NetworkChaos objects (the emulated WAN)")] if first else []
        return Decision(message=f"applying the WAN ({len(acts)} change(s))", status=marked(status, "wan"),
                        actions=[*acts, *said], wake_s=2)
    live = {c["metadata"]["name"]: c for c in obs.get("chaos", [])}
    failed = [(o["metadata"]["name"], why) for o in wan if (why := readiness.chaos_failed(live.get(o["metadata"]["name"])))]
    if failed:
        name, why = failed[0]
        return fail_trial("ChaosFailed", f"Chaos Mesh could not inject {len(failed)} of {len(wan)} WAN objects; "
                                         f"{name}: {why}" + (f" ({NETEM_HINT})" if "tc" in why else ""))
    pending = [o["metadata"]["name"] for o in wan if not readiness.chaos_injected(live.get(o["metadata"]["name"]))]
    if pending:
        return Decision(message=f"waiting for AllInjected on {len(pending)}: {', '.join(pending[:4])}", wake_s=2)
    return Decision("VerifyingNetwork", "Injected", f"Chaos Mesh reports AllInjected on {len(wan)} objects",
                    marked(status, "wan-injected"))


CHAOS_GONE = ("Chaos Mesh's CRDs went away mid-run: the emulated WAN and any fault are gone, the trial's "
              "results would not measure what it asks; reinstall Chaos Mesh and run the trial again")


def verifying_network(plan: TrialPlan, status: dict[str, Any], obs: Obs, now: dt.datetime) -> Decision:
    """The lifecycle's network check (plan/lifecycle.py): probe Jobs measure the pairs, their results come
    back through the results store, and the RTTs must be what the plan asks; off: measured once more,
    then the trial fails naming the pair, the requested and the measured RTT."""
    if obs.get("results") is None:
        why = "no results store to collect the network probes in: the network is not verified"
        return Decision("Loading", "NetworkNotMeasured", why, actions=[Emit("NetworkNotMeasured", why, "Warning")])
    check = max(1, int(status.get("networkCheck") or 0))
    key = f"probe-{check}"
    pairs = probe_pairs(plan)
    if key not in done(status):
        return Decision(message=f"measuring {len(pairs)} pair(s) of regions (measurement {check} of {NETWORK_CHECKS})",
                        status={**marked(status, key), "networkCheck": check},
                        actions=[*(Apply(o, o["metadata"]["namespace"]) for o in rendered(plan, status, obs).probes(
                            check, obs["results"])),
                                 Emit("VerifyingNetwork", f"measuring the RTT of {len(pairs)} pair(s) of regions")])
    sources = sorted({a for a, _ in pairs}, key=plan.region_names.index)
    measured, missing, error = obs.get("probes", ({}, sources, None))
    broken = [s for s in missing if obs.get("probe_jobs", {}).get(s) in ("failed", "stopped")]
    if broken:
        ns = plan.namespace(broken[0])
        return fail_trial("NetworkNotMeasured", f"the network probe failed in {', '.join(broken)}: "
                                                f"kubectl logs job/{PROBE}-{check} -n {ns}")
    if missing:
        message, events = store_said(f"measuring the network: waiting for the probes of {', '.join(missing[:5])}",
                                     status, error)
        return Decision(message=message, actions=list(events), wake_s=3)
    rows, off = verdict(plan, measured)
    if off and check < NETWORK_CHECKS:
        why = f"the network is off by more than max(1 ms, 5 %): {'; '.join(off[:5])}; measuring again"
        return Decision(message=why, status={"networkCheck": check + 1}, actions=[Emit("NetworkOff", why, "Warning")])
    if off:
        return fail_trial(NETWORK_OFF, f"the network measured twice is off by more than max(1 ms, 5 %) on "
                                       f"{len(off)} of {len(rows)} pair(s): " + "; ".join(off[:5]))
    worst = max(rows, key=lambda r: abs(r["measured_rtt_ms"] - r["requested_rtt_ms"]))
    dev = abs(worst["measured_rtt_ms"] - worst["requested_rtt_ms"])
    return Decision("Loading", "NetworkVerified", f"{len(rows)} pair(s) within max(1 ms, 5 %) of the requested "
                                                  f"RTT (largest deviation {dev:.2f} ms, {worst['src']}↔{worst['dst']})")


def elapsed_s(status: dict[str, Any], now: dt.datetime) -> float | None:
    """Seconds since the current attempt's load start (None: no start chosen yet)."""
    start = status.get("loadStartAt")
    return (now - ts.parse(start)).total_seconds() if start else None


def chaos_in_force(plan: TrialPlan, r: Rendered, status: dict[str, Any], obs: Obs,
                   elapsed: float | None) -> Decision:
    """The trial's chaos made what the fault schedule puts in force ``elapsed`` seconds after the load
    start (None: the plan's WAN alone): objects not wanted (or changed) deleted, those missing applied,
    an event as each window begins and ends, and a wake-up at the next change."""
    if not plan.faults:
        return Decision()
    acts, going = reconcile_chaos(r.chaos_at(elapsed), obs.get("chaos", []))
    now_in = [a.name for a in in_force(plan.faults, elapsed)] if elapsed is not None else []
    was = list(status.get("faultsInForce") or [])
    acts += [Emit("Fault", f"{n} ended") for n in was if n not in now_in]
    acts += [Emit("Fault", f"{n} began") for n in now_in if n not in was]
    nxt = next_change_s(plan.faults, elapsed) if elapsed is not None else None
    wake = max(0.5, nxt - elapsed) if nxt is not None and elapsed is not None else None
    if going:
        wake = min(wake or 1.0, 1.0)  # the same name still being removed: apply once it is gone
    return Decision(status={"faultsInForce": now_in} if now_in != was else {}, actions=acts, wake_s=wake)


def loading(plan: TrialPlan, status: dict[str, Any], obs: Obs, now: dt.datetime) -> Decision:
    if obs.get("chaos_installed") is False:
        return fail_trial("ChaosMeshMissing", CHAOS_GONE)
    n = attempt(status)
    if not status.get("loadStartAt"):
        start = now + dt.timedelta(seconds=seconds(plan.spec.workload.start_delay))
        return Decision(message="start time chosen", status={"loadStartAt": ts.iso(start), "attempt": n})
    key = f"load-{n}"
    r = rendered(plan, status, obs)
    if key not in done(status):
        return Decision(status=marked(status, key), actions=[
            *(Apply(o) for o in r.load),
            Emit("Loading", f"attempt {n}: Rally in {len(plan.load_regions)} region(s), start at {status['loadStartAt']}")])
    states = obs.get("jobs", {})
    failed = [r for r in plan.load_regions if states.get(r, "missing") in ("failed", "missing", "stopped")]
    running = [r for r in plan.load_regions if states.get(r) != "complete"]
    # the fault schedule while the load runs; once it is over (or for another attempt), the plan's WAN again
    faults = chaos_in_force(plan, r, status, obs, elapsed_s(status, now) if running and not failed else None)
    unstored = [r for r in failed if states.get(r) == "stopped"]
    if unstored:
        return Decision("CleaningUp", UPLOAD_FAILED,
                        f"Rally ran in {', '.join(unstored)} but its results could not be stored in "
                        f"spec.timeouts.collecting ({plan.spec.timeouts.collecting}); see the rally Job logs",
                        {**faults.status, "outcome": "Failed"}, faults.actions)
    if failed and after_runner_failure(n, plan.spec.runner.max_attempts) is None:
        from ..render.rally import JOB

        # a retry replays everything from the load on: the WAN as planned (above), a new start, and the
        # whole fault timeline again from that start
        acts = [Delete("batch/v1", "Job", JOB, plan.namespace(r)) for r in plan.load_regions]
        acts.append(Emit("LoadRetry", f"Rally failed in {', '.join(failed)}; attempt {n + 1} of "
                                      f"{plan.spec.runner.max_attempts}", "Warning"))
        return Decision(message="retrying", actions=faults.actions + acts,
                        status={**faults.status, "attempt": n + 1, "loadStartAt": None,
                                "done": sorted(done(status) - {key})})
    if failed:
        return Decision("CleaningUp", LOAD_FAILED,
                        f"Rally failed in {', '.join(failed)} after {n} attempt(s): see the rally Job logs",
                        {**faults.status, "outcome": "Failed"}, faults.actions)
    if running:
        message, events = store_said(f"Rally running in {len(running)} region(s)", status, obs.get("store"))
        return Decision(message=message, status=faults.status, actions=faults.actions + events, wake_s=faults.wake_s)
    return Decision("Collecting", "LoadDone", f"Rally finished in {len(plan.load_regions)} region(s)",
                    faults.status, faults.actions)


STORE = "results store "


def store_said(message: str, status: dict[str, Any], error: str | None) -> tuple[str, list[Emit]]:
    """The message with why the results store does not answer; an event when that starts or ends."""
    was = STORE in (status.get("message") or "")
    if error:
        message = f"{message}; {error}: the runners keep retrying their uploads"
        return message, [] if was else [Emit("ResultsStoreUnavailable", message, "Warning")]
    return message, [Emit("ResultsStoreAvailable", "the results store answers again")] if was else []


def collecting(plan: TrialPlan, status: dict[str, Any], obs: Obs, now: dt.datetime) -> Decision:
    found, missing, uri, error = obs.get("bundles", ([], list(plan.load_regions), "", None))
    if missing:
        message, events = store_said(f"waiting for result bundles of {', '.join(missing)} in {uri}", status, error)
        return Decision(message=message, actions=list(events), wake_s=5)
    return Decision("CleaningUp", "Collected", f"{len(found)} bundle(s) in {uri}",
                    {"resultsURI": uri, "outcome": "Succeeded"})


def cleaning_up(plan: TrialPlan, status: dict[str, Any], obs: Obs, now: dt.datetime) -> Decision:
    """Chaos first (always), then the namespaces as spec.cleanup says, then the outcome."""
    chaos = obs.get("chaos", [])
    if chaos:
        return Decision(message=f"removing chaos: {len(chaos)} object(s) not yet recovered", wake_s=5,
                        actions=[Delete.of(c) for c in chaos if not c["metadata"].get("deletionTimestamp")])
    outcome = status.get("outcome") or "Failed"
    policy = plan.spec.cleanup
    if policy == "Always" or (policy == "OnSuccess" and outcome == "Succeeded"):
        left = obs.get("namespaces", {})
        if left:
            why = obs.get("namespaces_why", {})
            return Decision(message=f"deleting {len(left)} namespace(s)" + "".join(
                                f"; {ns}: {why[ns]}" for ns in sorted(why)[:3]), wake_s=5,
                            actions=[Delete("v1", "Namespace", ns) for ns, deleting in left.items() if not deleting])
    reason = status.get("reason") if outcome == "Failed" else "Completed"
    message = status.get("outcomeMessage") if outcome == "Failed" else "chaos removed; results stored"
    return Decision(outcome, reason or outcome, message or "")


def namespaces_stuck(status: dict[str, Any], obs: Obs) -> Decision:
    """The clean-up timeout passed with namespaces still there: end with the outcome, and say which."""
    left, why = sorted(obs["namespaces"]), obs.get("namespaces_why", {})
    stuck = (f"{len(left)} namespace(s) still there after the clean-up timeout (spec.timeouts.cleaningUp): "
             + ", ".join(f"{ns} ({why[ns]})" if why.get(ns) else ns for ns in left[:5])
             + ("" if len(left) <= 5 else " …") + "; remove what holds them (see docs/operations.md)")
    outcome = status.get("outcome") or "Failed"
    first = status.get("outcomeMessage") if outcome == "Failed" else "chaos removed; results stored"
    reason = (status.get("reason") or "Failed") if outcome == "Failed" else "NamespacesStuck"
    return Decision(outcome, reason, f"{first}; {stuck}" if first else stuck,
                    actions=[Emit("NamespacesStuck", stuck, "Warning")])


Phase = Callable[[TrialPlan, dict[str, Any], Obs, dt.datetime], Decision]
PHASES: dict[str, Phase] = {
    "Provisioning": provisioning,
    "Injecting": injecting,
    "VerifyingNetwork": verifying_network,
    "Loading": loading,
    "Collecting": collecting,
    "CleaningUp": cleaning_up,
}


def decide(plan: TrialPlan, status: dict[str, Any], obs: Obs, now: dt.datetime) -> Decision:
    """The decision for the Trial's current phase (Pending and terminal phases: nothing), timeouts first."""
    phase = status.get("phase") or "Pending"
    if phase not in PHASES:
        return Decision()
    if timed_out(phase, status.get("phaseStartTime"), plan.spec.timeouts, now):
        if phase != "CleaningUp":
            return fail_trial(f"{phase}Timeout", f"{phase} took longer than its timeout (spec.timeouts); cleaning up")
        if obs.get("chaos"):
            return Decision("Failed", "ChaosNotRecovered",
                            f"{len(obs['chaos'])} chaos object(s) still present after the clean-up timeout: "
                            "check Chaos Mesh; namespaces kept for inspection")
        if obs.get("namespaces"):
            return namespaces_stuck(status, obs)
    return PHASES[phase](plan, status, obs, now)


__all__ = ["PHASES", "Obs", "decide", "fail_trial", "rendered"]
