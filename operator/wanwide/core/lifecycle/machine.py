"""How a trial lives: :func:`decide`, the one state machine both providers run.

```
 Pending → Provisioning → Injecting → VerifyingNetwork → Loading → Collecting → CleaningUp → Succeeded
   start     stages         the WAN       measured        ↺ attempt n+1: the WAN back,         ↘ Failed
                            (ShapeWan)    (again once)      a new start, every fault replayed
   any failure or timeout, a crash: CleaningUp (the shaping removed first), then Failed
   a trial that must not run (its plan no longer plans, its Benchmark did not make it): Failed at once
```

Decided here and nowhere else: the phases, their order and timeouts (``spec.timeouts``); what each
failure means — a runner that fails (Rally, its set-up, a crash) fails the attempt and the load is tried
again up to ``spec.runner.maxAttempts`` (``LoadFailed`` after the last); results measured but not stored
within ``spec.timeouts.collecting`` fail the trial at once (``UploadFailed``: measuring again would not make
the store answer); a step that raised is never tried again (``InternalError``, or the reason a permanent
error names). The deployment's stages are :mod:`.deploy`'s, the fault schedule :mod:`.schedule`'s, the
network verdict :mod:`.network`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from wanwide.core.api.trial import TERMINAL
from wanwide.core.api.units import seconds
from wanwide.core.errors import PermanentError
from wanwide.core.lifecycle.deploy import DEPLOY_FAILED, PLACE, REFUSALS, RETRY_WAIT_S, stages
from wanwide.core.lifecycle.network import (
    NETWORK_CHECKS,
    NETWORK_OFF,
    check_of,
    probe_pairs,
    verdict,
)
from wanwide.core.lifecycle.objectives import OBJECTIVES_MISSED, objectives
from wanwide.core.lifecycle.objectives import said as objectives_said
from wanwide.core.lifecycle.schedule import fault_events, in_force, needs_shaping, next_change_s
from wanwide.core.lifecycle.state import attempt_of, done, elapsed_s, marked, phase_of
from wanwide.core.lifecycle.step import (
    CleanUp,
    Deploy,
    Event,
    LifecycleAction,
    Measure,
    Progress,
    Seen,
    ShapeWan,
    StartRunners,
    Status,
    Step,
    StopRunners,
    fail,
)
from wanwide.core.plan.trial import TrialPlan
from wanwide.core.timestamps import iso, parse

TIMEOUT_FIELD = {"Provisioning": "provisioning", "Injecting": "injecting", "VerifyingNetwork": "verifying_network",
                 "Loading": "loading", "Collecting": "collecting", "CleaningUp": "cleaning_up"}
LOAD_FAILED = "LoadFailed"
UPLOAD_FAILED = "UploadFailed"
INTERNAL = "InternalError"
INVALID_PLAN = "InvalidPlan"  # its frozen plan no longer plans: retrying cannot fix it
NOT_OWNED = "NotOwned"  # not made by its Benchmark: nothing is done for it, not even a clean-up
NOT_TO_RUN = (INVALID_PLAN, NOT_OWNED)
SHAPER_MISSING = "ShaperMissing"  # the provider cannot shape the WAN at all
CHAOS_FAILED = "ChaosFailed"  # the WAN could not be put in force
CHAOS_NOT_RECOVERED = "ChaosNotRecovered"
NETWORK_NOT_MEASURED = "NetworkNotMeasured"
UNSCHEDULABLE = "Unschedulable"
UNSCHEDULABLE_AFTER_S = 60.0  # a part of the trial nothing runs for this long fails the trial
FAULT_LATE_S = 10.0  # a fault not in force this long after it began: a warning (its lag is recorded either way)
FAULT_NOT_INJECTED = "FaultNotInjected"
STORE = "results store "
# the reasons of the events the lifecycle emits besides phase changes (each provider posts them its own way)
EVENT_REASONS = ("StageDeployed", "DeployRetry", "VerifyingNetwork", NETWORK_OFF, NETWORK_NOT_MEASURED, "Fault",
                 "FaultInjected", "FaultLate", FAULT_NOT_INJECTED, "LoadRetry", "ResultsStoreUnavailable",
                 "ResultsStoreAvailable", "NamespacesStuck", OBJECTIVES_MISSED)


def after_runner_failure(attempt: int, max_attempts: int) -> str | None:
    """A failed runner: None to try the load again, else the trial's failure reason."""
    return None if attempt < max_attempts else LOAD_FAILED


def crashed(phase: str, e: BaseException) -> Step:
    """A step that raised a bug (core/errors.py: neither transient nor a failure the lifecycle names), or a
    permanent error that names its reason (``e.reason``, e.g. the API server refusing an object): never
    tried again; clean up (the shaping first), then Failed; already cleaning up: Failed at once, saying what
    may be left."""
    reason = getattr(e, "reason", None) if isinstance(e, PermanentError) else None
    if isinstance(reason, str):  # a failure its layer names (e.g. ObjectRefused): its own message says why
        message = f"{phase} step failed: {str(e)[:1000]}"
    else:
        reason, what = INTERNAL, f"{type(e).__name__}: {e}".strip()
        message = (f"{phase} step failed with {what[:500]}: a bug in wanwide, not in the Benchmark; the traceback "
                   "is in the log — please report it")
    if phase == "CleaningUp":
        return Step("Failed", reason, message + "; some of what the trial deployed may be left")
    return fail(reason, message)


def phase_timed_out(phase: str | None, phase_start: str | None, timeouts: Any, at: datetime) -> bool:
    """Past the phase's timeout (``timeouts``: spec.timeouts)."""
    f = TIMEOUT_FIELD.get(phase or "")
    if not f or not phase_start:
        return False
    return (at - parse(phase_start)).total_seconds() > seconds(getattr(timeouts, f))


def timed_out(plan: TrialPlan, status: Status, now: datetime) -> bool:
    return phase_timed_out(status.get("phase"), status.get("phaseStartTime"), plan.spec.timeouts, now)


SAID_MAX = 400  # of the phase's last status message quoted in a timeout's


def timeout_said(plan: TrialPlan, phase: str, status: Status) -> str:
    """A phase's timeout: the field and its value, and what the phase last said it was doing (what held it)."""
    field, timeouts = TIMEOUT_FIELD[phase], plan.spec.timeouts
    name = type(timeouts).model_fields[field].alias or field  # as the spec spells it
    said = f"{phase} took longer than its timeout (spec.timeouts.{name}: {getattr(timeouts, field)})"
    last = " ".join((status.get("message") or "").split())
    if last:
        said += f"; its last status: {last if len(last) <= SAID_MAX else last[:SAID_MAX - 1] + '…'}"
    return said + "; cleaning up"


def pending(plan: TrialPlan | None, status: Status, seen: Seen, now: datetime) -> Step:
    """Pending until the provider says the trial's turn has come."""
    if not seen.start:
        return Step()
    return Step("Provisioning", "Started", "its turn in the run order", {"startTime": iso(now), "attempt": 1})


def provisioning(plan: TrialPlan, status: Status, seen: Seen, now: datetime) -> Step:
    """One step through the deployment's stages (deploy.py): each stage's turn, its retries, a refusal; Injecting
    once all are done."""
    plan_stages = stages(plan)
    of = {s.name: seen.stages.get(s.name, Progress()) for s in plan_stages}
    for s in plan_stages:
        refused = of[s.name].refused
        if refused is not None:
            if refused[0] not in REFUSALS:
                raise ValueError(f"stage {s.name} refused with {refused[0]!r}: not one of {REFUSALS}")
            return fail(*refused)
    finished = done(status)
    events: list[LifecycleAction] = []
    for s in plan_stages:
        if s.name not in finished and of[s.name].done and all(a in finished for a in s.after):
            finished.add(s.name)
            events.append(Event("StageDeployed", f"{s.name}: {s.service} in {len(s.regions)} region(s)"))
    tries = dict(status.get("deployTries") or {})
    retried: set[str] = set()
    for s in plan_stages:
        why = of[s.name].failed
        if s.name in finished or why is None:
            continue
        tries[s.name] = tries.get(s.name, 0) + 1
        if tries[s.name] >= s.tries:
            return fail(DEPLOY_FAILED, f"stage {s.name} ({s.service} in {', '.join(s.regions[:5])}"
                                       f"{' …' if len(s.regions) > 5 else ''}) failed {tries[s.name]} times; "
                                       f"last: {why}", {"deployTries": tries}, events)
        retried.add(s.name)
        events.append(Event("DeployRetry", f"stage {s.name} failed ({tries[s.name]} of {s.tries} tries), trying "
                                           f"again: {why}", "Warning"))
    record = {**marked(status, *finished), **({"deployTries": tries} if retried else {})}
    if all(s.name in finished for s in plan_stages):
        return Step("Injecting", "Deployed", f"{len(plan_stages)} stage(s) deployed: "
                                             + ", ".join(s.name for s in plan_stages), record, events)
    turn = [s for s in plan_stages if s.name not in finished and all(a in finished for a in s.after)]
    later = [s for s in plan_stages if s.name not in finished and s not in turn] if PLACE in finished else []
    waits = [f"{s.name}: {of[s.name].waiting}" for s in turn if of[s.name].waiting and s.name not in retried]
    wakes = [w for s in turn if (w := of[s.name].wake_s) is not None]
    wakes += [RETRY_WAIT_S * tries[n] for n in retried]
    return Step(message="; ".join(waits) or f"deploying {', '.join(s.name for s in turn)}", status=record,
                actions=[*events, *(Deploy(s, retry=s.name in retried) for s in turn),
                         *(Deploy(s, ahead=True) for s in later)],
                wake_s=min(wakes) if wakes else None)


def injecting(plan: TrialPlan, status: Status, seen: Seen, now: datetime) -> Step:
    """The plan's WAN in force (any other shaping of the trial's gone), or the trial fails saying why."""
    if not needs_shaping(plan):
        return Step("VerifyingNetwork", "Injected", "the plan shapes no link: nothing to put in force")
    if seen.cannot_shape:
        return fail(SHAPER_MISSING, seen.cannot_shape)
    w = seen.wan
    if w.failed:
        return fail(CHAOS_FAILED, w.failed)
    if not w.done:
        return Step(message=w.waiting, status=marked(status, "wan"), actions=[ShapeWan(None)], wake_s=w.wake_s)
    return Step("VerifyingNetwork", "Injected", w.waiting or "the WAN is in force", marked(status, "wan-injected"))


def verifying_network(plan: TrialPlan, status: Status, seen: Seen, now: datetime) -> Step:
    if seen.network_unmeasurable:
        why = seen.network_unmeasurable
        return Step("Loading", NETWORK_NOT_MEASURED, why, actions=[Event(NETWORK_NOT_MEASURED, why, "Warning")])
    check = check_of(status)
    pairs = probe_pairs(plan)
    if not pairs:  # one region: no link to measure (a single controller of issue 45 crashed on max() of nothing)
        return Step("Loading", "NetworkVerified", "one region: no pair of regions, no WAN link to measure")
    if f"probe-{check}" not in done(status):
        return Step(message=f"measuring {len(pairs)} pair(s) of regions (measurement {check} of {NETWORK_CHECKS})",
                    status={**marked(status, f"probe-{check}"), "networkCheck": check},
                    actions=[Measure(check), Event("VerifyingNetwork", f"measuring the RTT of {len(pairs)} pair(s) "
                                                                       "of regions")])
    if seen.network_failed:
        return fail(NETWORK_NOT_MEASURED, seen.network_failed)
    if seen.network is None:
        message, events = store_said(seen.network_waiting or "measuring the network", status, seen.store_error)
        return Step(message=message, actions=events, wake_s=3)
    rows, off = verdict(plan, seen.network)
    if off and check < NETWORK_CHECKS:
        why = f"the network is off beyond its tolerance: {'; '.join(off[:5])}; measuring again"
        return Step(message=why, status={"networkCheck": check + 1}, actions=[Event(NETWORK_OFF, why, "Warning")])
    if off:
        return fail(NETWORK_OFF, f"the network measured twice is off beyond its tolerance on {len(off)} of "
                                 f"{len(rows)} pair(s): " + "; ".join(off[:5]))
    worst = max(rows, key=lambda r: abs(r["wan_rtt_ms"] - r["requested_rtt_ms"]))
    dev = abs(worst["wan_rtt_ms"] - worst["requested_rtt_ms"])
    lost, sent = sum(r["lost"] for r in rows), sum(r["sent"] for r in rows)
    return Step("Loading", "NetworkVerified",
                f"{len(rows)} pair(s) within tolerance of the requested RTT, loss and jitter (largest RTT deviation "
                f"{dev:.2f} ms, {worst['src']}↔{worst['dst']}, tolerance {worst['tolerance_ms']:.2f} ms; {lost} of "
                f"{sent} probes lost; tolerance max(1 ms, 5 %, 2 × the own region's p90−p10), loss binomial 99.9 %)")


def faults_said(plan: TrialPlan, status: Status, elapsed: float | None) -> tuple[Status, list[LifecycleAction], float | None]:
    """The fault windows in force now against those recorded: (the record, an event as each begins and
    ends, seconds to the next change)."""
    if not plan.faults:
        return {}, [], None
    now_in = [a.name for a in in_force(plan.faults, elapsed)] if elapsed is not None else []
    was = list(status.get("faultsInForce") or [])
    events: list[LifecycleAction] = [Event("Fault", f"{n} ended") for n in was if n not in now_in]
    events += [Event("Fault", f"{n} began") for n in now_in if n not in was]
    nxt = next_change_s(plan.faults, elapsed) if elapsed is not None else None
    wake = max(0.5, nxt - elapsed) if nxt is not None and elapsed is not None else None
    return ({"faultsInForce": now_in} if now_in != was else {}), events, wake


def faults_checked(plan: TrialPlan, status: Status, seen: Seen, elapsed: float | None, since_start: float | None
                   ) -> tuple[Status, list[LifecycleAction], str | None, bool]:
    """Whether each fault window the schedule put in force really was: (the record — ``faultsInjected``, each
    occurrence's lag from its start to in force, ``faultsLate`` — events, why the trial fails: an occurrence
    that ended never in force, whether one in force is still awaited). ``elapsed``: the schedule's time (None:
    the load is over); ``since_start``: the time since the load start."""
    if seen.faults_injected is None or not plan.faults or since_start is None:
        return {}, [], None, False
    starts = {e.name: e.at_s for e in fault_events(plan.faults, since_start + 1.0) if e.begins}
    record = dict(status.get("faultsInjected") or {})
    events: list[LifecycleAction] = []
    for name, at_s in sorted(seen.faults_injected.items()):
        if name not in record and name in starts:
            record[name] = round(max(0.0, at_s - starts[name]), 1)
            events.append(Event("FaultInjected", f"{name} in force {record[name]:.1f} s after it began"))
    now_in = list(in_force(plan.faults, elapsed)) if elapsed is not None else []
    late = list(status.get("faultsLate") or [])
    why = f" ({seen.fault_why})" if seen.fault_why else ""
    for a in now_in:
        waited = since_start - a.start_s
        if a.name not in record and a.name not in late and waited >= FAULT_LATE_S:
            late.append(a.name)
            events.append(Event("FaultLate", f"{a.name} began {waited:.0f} s ago and is not in force yet{why}",
                                "Warning"))
    ended = [n for n in status.get("faultsInForce") or [] if n not in {a.name for a in now_in} and n not in record]
    # cut short by the load's end before it was due in force: said, not failed
    failing = [n for n in ended if elapsed is not None or n in late]
    events += [Event(FAULT_NOT_INJECTED, f"{n} ended without being in force{why}", "Warning")
               for n in ended if n not in failing]
    failure = (f"fault window {failing[0]} ended without ever being in force{why}: the results would not measure "
               "it") if failing else None
    patch: Status = {}
    if record != (status.get("faultsInjected") or {}):
        patch["faultsInjected"] = record
    if late != list(status.get("faultsLate") or []):
        patch["faultsLate"] = late
    return patch, events, failure, any(a.name not in record for a in now_in)


def loading(plan: TrialPlan, status: Status, seen: Seen, now: datetime) -> Step:
    if seen.cannot_shape:
        return fail(SHAPER_MISSING, seen.cannot_shape)
    n = attempt_of(status)
    key = f"load-{n}"
    if key not in done(status):  # started once the provider recorded the load start (it may take two steps)
        started = bool(status.get("loadStartAt"))
        return Step(message=f"attempt {n}: starting the runners",
                    status={**(marked(status, key) if started else {}), "attempt": n},
                    actions=[StartRunners(n, start_delay_s(plan, status))], wake_s=2 if started else 0)
    states = seen.runners
    failed = [r for r in plan.load_regions if states.get(r, "missing") in ("failed", "missing", "stopped")]
    running = [r for r in plan.load_regions if states.get(r) != "complete"]
    # the fault schedule while the load runs; once it is over (or for another attempt), the plan's WAN again
    elapsed = elapsed_s(status, now) if running and not failed else None
    fstatus, fevents, fwake = faults_said(plan, status, elapsed)
    istatus, ievents, unforced, awaited = faults_checked(plan, status, seen, elapsed, elapsed_s(status, now))
    fstatus, fevents = {**fstatus, **istatus}, [*ievents, *fevents]
    fwake = min(fwake or 2.0, 2.0) if awaited else fwake
    shape: list[LifecycleAction] = [ShapeWan(elapsed)] if plan.faults else []
    if unforced:
        return fail(FAULT_NOT_INJECTED, unforced, fstatus, [*shape, *fevents])
    unstored = [r for r in failed if states.get(r) == "stopped"]
    if unstored:
        why = f": {seen.store_error}" if seen.store_error else "; see the runner's log"
        return fail(UPLOAD_FAILED, f"Rally ran in {', '.join(unstored)} but its results could not be stored within "
                                   f"spec.timeouts.collecting ({plan.spec.timeouts.collecting}){why}",
                    fstatus, [*shape, *fevents])
    words = runners_said(failed, seen.runner_said)
    if failed and after_runner_failure(n, plan.spec.runner.max_attempts) is None:
        # a retry replays everything from the load on: the plan's WAN (ShapeWan(None)), a new start, and the
        # whole fault timeline again from that start; runners that were ready too late get a later start
        delay, late = start_delay_s(plan, status), [seen.runner_late[r] for r in failed if r in seen.runner_late]
        later = later_start(delay, late)
        when = (f", starting {span(later)} after its runners (was {span(delay)}: the runners were ready up to "
                f"{span(max(late))} late)") if later else ""
        retry = Event("LoadRetry", f"Rally failed in {', '.join(failed)}{f' ({words})' if words else ''}; attempt "
                                   f"{n + 1} of {plan.spec.runner.max_attempts}{when}", "Warning")
        return Step(message="retrying", actions=[*shape, *fevents, StopRunners(n), retry],
                    status={**fstatus, "attempt": n + 1, "loadStartAt": None, "faultsInjected": None,
                            "faultsLate": None, "done": sorted(done(status) - {key}),
                            **({"loadStartDelay": f"{later:.0f}s"} if later else {})})
    if failed:
        return fail(LOAD_FAILED, f"Rally failed in {', '.join(failed)} after {n} attempt(s): "
                                 + (words or "see the runners' logs"),
                    fstatus, [*shape, *fevents])
    if running:
        message, said = store_said(f"Rally running in {len(running)} region(s)", status, seen.store_error)
        return Step(message=message, status=fstatus, actions=[*shape, *fevents, *said], wake_s=fwake)
    return Step("Collecting", "LoadDone", f"Rally finished in {len(plan.load_regions)} region(s)", fstatus,
                [*shape, *fevents])


START_DELAY_MAX_S = 3600.0
"""spec.workload.startDelay's own bound, which a retry's later start keeps too."""


def start_delay_s(plan: TrialPlan, status: Status) -> float:
    """The current attempt's start delay: spec.workload.startDelay, or what a retry after a late start set."""
    later = status.get("loadStartDelay")
    return seconds(later) if later else seconds(plan.spec.workload.start_delay)


def later_start(delay_s: float, late_s: list[float]) -> float | None:
    """A retry's start delay after runners refused to start ``late_s`` seconds past the common start of a start
    ``delay_s`` after them: the delay they needed, a quarter more and 30 s, in whole 10 s, at most
    :data:`START_DELAY_MAX_S` (None: none said it was late, or the delay is at its bound already)."""
    late = [x for x in late_s if x > 0]
    if not late or delay_s >= START_DELAY_MAX_S:
        return None
    return min(START_DELAY_MAX_S, math.ceil(((delay_s + max(late)) * 1.25 + 30) / 10) * 10)


def span(s: float) -> str:
    """630 → ``10m30s``; 45 → ``45s``; 3600 → ``60m``."""
    m, sec = divmod(round(s), 60)
    return f"{m}m{sec:02d}s" if m and sec else f"{m}m" if m else f"{sec}s"


RUNNER_SAID_MAX = 400
"""Characters of one runner's word kept in a message (a status message stays short)."""


def runners_said(failed: list[str], said: dict[str, str]) -> str:
    """What the failed runners said of their failure, each cut to :data:`RUNNER_SAID_MAX` ("" when none did)."""
    words = [f"{r}: {w if len(w) <= RUNNER_SAID_MAX else w[:RUNNER_SAID_MAX - 1] + '…'}"
             for r in failed if (w := said.get(r))]
    return "; ".join(words)


def store_said(message: str, status: Status, error: str | None) -> tuple[str, list[LifecycleAction]]:
    """The message with why the results store does not answer; an event when that starts or ends."""
    was = STORE in (status.get("message") or "")
    if error:
        message = f"{message}; {error}: the runners keep retrying their uploads"
        return message, [] if was else [Event("ResultsStoreUnavailable", message, "Warning")]
    return message, [Event("ResultsStoreAvailable", "the results store answers again")] if was else []


def collecting(plan: TrialPlan, status: Status, seen: Seen, now: datetime) -> Step:
    found, missing, uri = seen.bundles or ([], list(plan.load_regions), "")
    if missing:
        message, said = store_said(f"waiting for result bundles of {', '.join(missing)} in {uri}", status,
                                   seen.store_error)
        return Step(message=message, actions=said, wake_s=5)
    _, back = store_said("", status, None)  # the store came back and the bundles arrived between two steps
    message, recorded = f"{len(found)} bundle(s) in {uri}", {"resultsURI": uri, "outcome": "Succeeded"}
    if (slo := objectives(seen.objectives)) is not None:
        recorded["objectives"] = slo
        message += f"; objectives {slo['summary']}"
        if slo["missed"]:
            back = [*back, Event(OBJECTIVES_MISSED, objectives_said(slo), "Warning")]
    return Step("CleaningUp", "Collected", message, recorded, actions=back)


def cleaning_up(plan: TrialPlan, status: Status, seen: Seen, now: datetime) -> Step:
    """The shaping first (always), then what spec.cleanup says, then the outcome."""
    c = seen.cleaned
    if not c.done:
        return Step(message=c.waiting, actions=[CleanUp()], wake_s=c.wake_s)
    outcome = status.get("outcome") or "Failed"
    reason = status.get("reason") if outcome == "Failed" else "Completed"
    message = status.get("outcomeMessage") if outcome == "Failed" else "the shaping removed; results stored"
    return Step(outcome, reason or outcome, message or "")


def timed_out_cleaning(status: Status, seen: Seen) -> Step:
    """The clean-up timeout passed with the deployment still going: end with the outcome, and say what is left."""
    stuck = f"{seen.cleaned.waiting} (the clean-up timeout, spec.timeouts.cleaningUp, has passed)"
    outcome = status.get("outcome") or "Failed"
    first = status.get("outcomeMessage") if outcome == "Failed" else "the shaping removed; results stored"
    reason = (status.get("reason") or "Failed") if outcome == "Failed" else "NamespacesStuck"
    return Step(outcome, reason, f"{first}; {stuck}" if first else stuck, actions=[Event("NamespacesStuck", stuck, "Warning")])


# each running phase: its step, and the parts of what a provider sees that it reads (``step.Seen``'s groups; a
# provider observes those and nothing else: the one per-phase switch)
PHASES: dict[str, tuple[Callable[[TrialPlan, Status, Seen, datetime], Step], tuple[str, ...]]] = {
    "Provisioning": (provisioning, ("deployment", "placement")),
    "Injecting": (injecting, ("wan", "placement")),
    "VerifyingNetwork": (verifying_network, ("network", "placement")),
    "Loading": (loading, ("load", "placement")),
    "Collecting": (collecting, ("bundles",)),
    "CleaningUp": (cleaning_up, ("cleanup",)),
}
RUNNING_PHASES = tuple(PHASES)


def parts(status: Status) -> tuple[str, ...]:
    """What the trial's current phase reads of what a provider sees (Pending: ``start``; an ended trial: nothing)."""
    phase = phase_of(status)
    return ("start",) if phase == "Pending" else PHASES[phase][1] if phase in PHASES else ()


def decide(plan: TrialPlan | None, status: Status, seen: Seen, now: datetime) -> Step:
    """The step for the trial's current phase: a trial that must not run fails at once, a crash cleans up,
    Pending waits for its start, a running phase's timeout comes first. ``plan`` None: the trial has none
    (only ``seen.refused`` or ``seen.crashed`` can be decided then)."""
    phase = phase_of(status)
    if phase in TERMINAL:
        return Step()
    if seen.refused is not None:
        reason, why = seen.refused
        if reason not in NOT_TO_RUN:
            raise ValueError(f"a trial refused with {reason!r}: not one of {NOT_TO_RUN}")
        return Step("Failed", reason, why)
    if seen.crashed is not None:
        return crashed(phase, seen.crashed)
    if phase == "Pending":
        return pending(plan, status, seen, now)
    if plan is None:
        raise ValueError(f"a {phase} trial without a plan")
    if timed_out(plan, status, now):
        if phase != "CleaningUp":
            return fail(f"{phase}Timeout", timeout_said(plan, phase, status))
        if seen.shaping_left:
            return Step("Failed", CHAOS_NOT_RECOVERED, f"{seen.shaping_left} after the clean-up timeout")
        if not seen.cleaned.done:
            return timed_out_cleaning(status, seen)
    u = seen.unplaced if phase != "CleaningUp" else None
    if u and u.waited_s >= UNSCHEDULABLE_AFTER_S:
        return fail(UNSCHEDULABLE, f"{u.what} could not be placed for {u.waited_s:.0f} s; {u.message}")
    step = PHASES[phase][0](plan, status, seen, now)
    if u:  # look again when it would have waited long enough
        left = max(1.0, UNSCHEDULABLE_AFTER_S - u.waited_s)
        step = replace(step, wake_s=left if step.wake_s is None else min(step.wake_s, left))
    return step


__all__ = ["CHAOS_FAILED", "CHAOS_NOT_RECOVERED", "EVENT_REASONS", "FAULT_LATE_S", "FAULT_NOT_INJECTED", "INTERNAL", "INVALID_PLAN",
           "LOAD_FAILED", "NETWORK_NOT_MEASURED", "NOT_OWNED", "NOT_TO_RUN", "PHASES", "RUNNER_SAID_MAX", "RUNNING_PHASES",
           "SHAPER_MISSING", "START_DELAY_MAX_S", "TIMEOUT_FIELD", "UNSCHEDULABLE", "UNSCHEDULABLE_AFTER_S",
           "UPLOAD_FAILED", "after_runner_failure", "crashed", "decide", "faults_checked", "faults_said",
           "later_start", "parts", "phase_timed_out", "runners_said", "span", "start_delay_s", "timed_out"]
