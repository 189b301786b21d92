"""A trial's lifecycle, decided once for both providers. Pure: plan + state + now in, decisions out.

What lives here, and nowhere else:

- **The fault schedule.** Every begin and end of every fault window, as offsets from the load start
  (a dropout cuts every ``every``, for ``for``); which windows are in force at an instant; and the WAN
  in force then. Windows may overlap; they do not add up: on each directed link the lossiest loss
  window in force applies (its whole shaping: the link's own plus its extra loss), and a cut (a
  partition or a dropout) beats any loss. Both providers shape exactly :func:`wan_at` at every
  instant: the lab sets its links to it, the Kubernetes provider renders it as Chaos Mesh objects.
- **What a retried load replays.** Everything from the load on: the WAN back to the plan's, a new load
  start, and the whole fault timeline again from that start (:func:`wan_at` is a function of the
  time since the load start, so nothing of the failed attempt's faults survives it).
- **The network check.** After the WAN is applied and before the load, the pairs of regions the plan
  shapes are measured (:func:`probe_pairs`: every link class of every region, a different member of
  the class from each source so that uniform WANs are covered pair by pair) and each median RTT must
  be within max(1 ms, 5 %) of the requested one (:func:`verdict`); a network found off is measured
  once more, then the trial fails (``NetworkOff``) naming the pair, requested and measured RTT.
- **What each failure means.** A runner that fails (Rally, its set-up, a crash) fails the attempt: the
  load is tried again up to ``spec.runner.maxAttempts`` (``LoadFailed`` after the last). A runner is
  done once its bundle is stored; results that were measured but could not be stored (retried through
  ``spec.timeouts.collecting``) fail the trial at once with ``UploadFailed``: measuring again would not
  make the store answer; the message says where the bundles are kept.
- **The run order, and which trials share a deployment.** Trials run in the plan's order
  (``spec.matrix.order``: interleaved rounds, each shuffled from the recorded seed). A provider that
  can re-shape a running deployment (the lab) serves one *round* (a repetition of every point) per
  deployment key: the round's trials of one key run together on one new deployment, keys in the order
  they first come in the round; so every repetition runs on fresh deployments and no parameter keeps
  one time of day. ``fresh``: a deployment per trial (the Kubernetes provider: namespaces per trial).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from wanwide.core.errors import PermanentError
from wanwide.core.plan.faults import FaultWindow, next_change, occurrence_at, occurrences
from wanwide.core.plan.links import LinkMap, OneWay, Pair
from wanwide.core.plan.trial import TrialPlan

CUT = "partition", "dropout"  # the kinds that cut links off (everything lost, both ways)


@dataclass(frozen=True)
class FaultEvent:
    """A fault window's ``occurrence`` (0 for a one-off window; the k-th cut of a dropout) begins or ends."""

    at_s: float  # from the load start
    begins: bool
    window: FaultWindow
    occurrence: int = 0

    @property
    def name(self) -> str:
        """The occurrence's name: ``loss0``, ``partition1``, ``dropout0-3``."""
        return self.window.name + (f"-{self.occurrence}" if self.window.every_s is not None else "")


@dataclass(frozen=True)
class Active:
    """A fault window's occurrence in force: ``[start_s, end_s)`` from the load start."""

    window: FaultWindow
    occurrence: int
    start_s: float
    end_s: float

    @property
    def name(self) -> str:
        return self.window.name + (f"-{self.occurrence}" if self.window.every_s is not None else "")


def fault_events(faults: list[FaultWindow], until_s: float) -> list[FaultEvent]:
    """Every begin and end before ``until_s`` of every window, in time order (an end before a begin at the
    same instant: a window that ends as another starts never overlaps it)."""
    out = []
    for w in faults:
        for k, (start, end) in enumerate(occurrences(w, until_s)):
            out += [FaultEvent(start, True, w, k), FaultEvent(end, False, w, k)]
    return sorted(out, key=lambda e: (e.at_s, e.begins))


def in_force(faults: list[FaultWindow], t_s: float) -> tuple[Active, ...]:
    """The windows' occurrences in force ``t_s`` seconds after the load start (in ``faults`` order); computed,
    not enumerated (core/plan/faults.py ``occurrence_at``)."""
    return tuple(Active(w, *occ) for w in faults if (occ := occurrence_at(w, t_s)) is not None)


def next_change_s(faults: list[FaultWindow], t_s: float) -> float | None:
    """When (from the load start) the next window begins or ends after ``t_s``; None: never."""
    upcoming = [x for w in faults if (x := next_change(w, t_s)) is not None]
    return min(upcoming) if upcoming else None


@dataclass(frozen=True)
class Wan:
    """The WAN in force at an instant: each directed link's shaping, and the links cut off."""

    links: LinkMap  # the plan's links with the loss windows in force (cuts not applied)
    cut: frozenset[Pair] = frozenset()
    cut_by: tuple[Active, ...] = ()  # the cutting windows in force (partitions, dropouts)

    def effective(self, pair: Pair) -> OneWay:
        """What traffic on ``pair`` meets: a cut link loses everything (its delay and rate kept)."""
        s = self.links[pair]
        return OneWay(s.delay_ms, s.jitter_ms, 100.0, s.rate_mbit) if pair in self.cut else s


def wan_at(plan: TrialPlan, active: tuple[Active, ...]) -> Wan:
    """The WAN with ``active`` windows in force (the overlap rule: see the module's docstring)."""
    links = dict(plan.links)
    lossiest: dict[Pair, OneWay] = {}
    cut: set[Pair] = set()
    for a in active:
        if a.window.kind in CUT:
            cut |= set(a.window.links)
            continue
        for pair, s in a.window.links.items():
            if pair not in lossiest or s.loss_pct > lossiest[pair].loss_pct:
                lossiest[pair] = s
    links.update(lossiest)
    return Wan(links, frozenset(cut), tuple(a for a in active if a.window.kind in CUT))


# ---- the network check ---------------------------------------------------------------------------

RTT_TOLERANCE = (1.0, 0.05)  # max(1 ms, 5 %)
NETWORK_CHECKS = 2  # a network found off is measured once more before the trial fails
NETWORK_OFF = "NetworkOff"


def probe_pairs(plan: TrialPlan) -> list[Pair]:
    """The (source, destination) pairs to measure, each unordered pair once: for every region, one
    destination of each of its link classes (rotating through the class by the source's place, so a
    uniform WAN of n regions is measured on every pair for n ≤ 3 and on n pairs beyond)."""
    from wanwide.core.plan.latency import classes

    names = plan.region_names
    out: list[Pair] = []
    seen: set[frozenset[str]] = set()
    for i, (src, cls) in enumerate(classes(plan.links, names, include_noop=True).items()):
        for c in cls:
            dsts = [d for d in c.dsts if frozenset((src, d)) not in seen] or list(c.dsts)
            dst = dsts[i % len(dsts)]
            if frozenset((src, dst)) not in seen:
                seen.add(frozenset((src, dst)))
                out.append((src, dst))
    return out


def measured_pairs(plan: TrialPlan) -> list[Pair]:
    """What a network check measures: the probe pairs, and each source to its own region (the same
    probe on the same path, no WAN link: the platform's own round trip at that moment — address
    translation, a busy CPU — which :func:`verdict` takes off the pairs' before comparing)."""
    pairs = probe_pairs(plan)
    return [*pairs, *((s, s) for s in dict.fromkeys(a for a, _ in pairs))]


def rtt_requested(plan: TrialPlan, pair: Pair) -> float:
    """The round trip a pair should measure: both one-way delays (ms); 0 within a region."""
    a, b = pair
    return 0.0 if a == b else plan.links[(a, b)].delay_ms + plan.links[(b, a)].delay_ms


def tolerance_ms(requested: float) -> float:
    return max(RTT_TOLERANCE[0], RTT_TOLERANCE[1] * requested)


def median(samples: list[float]) -> float | None:
    s = sorted(samples)
    return s[len(s) // 2] if s else None


def verdict(plan: TrialPlan, measured: dict[Pair, list[float]]) -> tuple[list[dict], list[str]]:
    """Each probed pair against its request: (rows as recorded, why each pair off is off). What the WAN
    adds is the pair's median less its source's own-region median (``measured_pairs``; 0 when not
    measured): a loaded node's 1 ms of address translation and scheduling is not the WAN's."""
    rows, off = [], []
    for pair in probe_pairs(plan):
        want = rtt_requested(plan, pair)
        tol = tolerance_ms(want)
        got = measured.get(pair, [])
        med = median(got)
        own = median(measured.get((pair[0], pair[0]), [])) or 0.0
        wan = None if med is None else max(0.0, med - own)
        ok = wan is not None and abs(wan - want) <= tol
        rows.append({"src": pair[0], "dst": pair[1], "requested_rtt_ms": want, "tolerance_ms": tol,
                     "measured_rtt_ms": med, "own_region_rtt_ms": own, "wan_rtt_ms": wan, "samples_ms": got,
                     "ok": ok})
        if not ok:
            seen = "no answer" if med is None else f"{med:.2f} ms" + (f" ({wan:.2f} above its own region's {own:.2f} ms)"
                                                                    if own else "")
            off.append(f"{pair[0]}↔{pair[1]}: requested {want:g} ms, measured {seen} (tolerance {tol:.2f} ms)")
    return rows, off


# ---- failures -----------------------------------------------------------------------------------

LOAD_FAILED = "LoadFailed"
UPLOAD_FAILED = "UploadFailed"
INTERNAL = "InternalError"


def after_runner_failure(attempt: int, max_attempts: int) -> str | None:
    """A failed runner: None to try the load again, else the trial's failure reason."""
    return None if attempt < max_attempts else LOAD_FAILED


# ---- run order and deployments ---------------------------------------------------------------

def run_key(position: int | None, index: int) -> tuple[int, int]:
    """Where a trial comes in its Benchmark's run order (its position; else its index)."""
    return (index if position is None else position, index)


def in_run_order(trials: list[TrialPlan]) -> list[TrialPlan]:
    """Each Benchmark's trials in its run order, Benchmarks as first listed."""
    first: dict[str, int] = {}
    for i, p in enumerate(trials):
        first.setdefault(p.benchmark, i)
    return sorted(trials, key=lambda p: (first[p.benchmark], run_key(p.position, p.index)))


def deployment_key(p: TrialPlan) -> str:
    """What a deployment is made of: trials with equal keys differ only in what the WAN does (RTT, jitter,
    loss, rate, faults, dynamic Galera options) or how it is loaded, and may share one, re-shaped."""
    return json.dumps({
        "benchmark": [p.bench_namespace, p.benchmark],
        "backend": p.backend,
        "regions": p.region_names,
        "primary": p.primary_region,
        "database": p.spec.database.model_dump(mode="json"),
        "openstack": p.spec.openstack.model_dump(mode="json"),
        "server": p.database.server,
        "galera": p.database.galera_static if p.backend == "galera" else None,
    }, sort_keys=True)


def deployments(trials: list[TrialPlan], fresh: bool = False) -> list[list[TrialPlan]]:
    """``trials`` in run order, cut into the groups that each run on one new deployment, in the order they
    run: per Benchmark and round (an interleaved order's repetition; a sequential order is one round),
    the round's trials of one deployment key together; ``fresh``: one trial per deployment. Several
    Benchmarks run round by round (every Benchmark's round 0, then round 1, ...), the Benchmarks of a
    round in an order drawn from their seeds and the round: so no Benchmark keeps one time of day."""
    ordered = in_run_order(trials)
    rounds: dict[tuple[str, str, int], dict[str, list[TrialPlan]]] = {}
    for p in ordered:
        rnd = p.repetition if p.spec.matrix.order == "Interleaved" else 0
        groups = rounds.setdefault((p.bench_namespace, p.benchmark, rnd), {})
        key = deployment_key(p) + (f"#{p.id}" if fresh else "")
        groups.setdefault(key, []).append(p)
    benches = list(dict.fromkeys((ns, b) for ns, b, _ in rounds))
    if len(benches) == 1:
        return [g for gs in rounds.values() for g in gs.values()]
    seeds = {(p.bench_namespace, p.benchmark): p.seed for p in ordered}
    out: list[list[TrialPlan]] = []
    for rnd in sorted({r for _, _, r in rounds}):
        here = [b for b in benches if (*b, rnd) in rounds]
        rng = random.Random(f"{rnd}:" + ",".join(f"{ns}/{b}={seeds[(ns, b)]}" for ns, b in here))
        rng.shuffle(here)
        out += [g for b in here for g in rounds[(*b, rnd)].values()]
    return out


__all__ = ["CUT", "LOAD_FAILED", "NETWORK_CHECKS", "NETWORK_OFF", "RTT_TOLERANCE", "UPLOAD_FAILED", "Active", "FaultEvent", "Wan", "after_runner_failure", "deployment_key", "deployments", "fault_events", "in_force", "measured_pairs",
           "in_run_order", "median", "next_change_s", "probe_pairs", "rtt_requested", "run_key", "tolerance_ms",
           "verdict", "wan_at"]


# ---- the state machine ---------------------------------------------------------------------------
#
#   Pending → Provisioning → Injecting → VerifyingNetwork → Loading → Collecting → CleaningUp → Succeeded
#                  │              │               │     ↺ (measured      │  ↺ (attempt n+1:  │            ↘ Failed
#                  └──────────────┴───────────────┴──── again once)      │  the WAN back, a  │
#                          any failure or timeout: CleaningUp            │  new start, every │
#                          (chaos removed first), then Failed            │  fault replayed)  │
#
# A provider observes what the current phase needs (``Seen``), the lifecycle decides (``decide``: the
# next phase, abstract actions, the state to record, when to look again), the provider carries the
# actions out. The state is a plain dict: the Trial's status in Kubernetes, the lab's record of a trial.

Status = dict[str, Any]
RUNNING_PHASES = ("Provisioning", "Injecting", "VerifyingNetwork", "Loading", "Collecting", "CleaningUp")
TIMEOUT_FIELD = {"Provisioning": "provisioning", "Injecting": "injecting", "VerifyingNetwork": "verifying_network",
                 "Loading": "loading", "Collecting": "collecting", "CleaningUp": "cleaning_up"}


@dataclass(frozen=True)
class Progress:
    """How far a provider got with what the lifecycle asked of it."""

    done: bool = False
    waiting: str = ""  # what it waits for
    failed: tuple[str, str] | None = None  # (reason, message): the trial fails
    wake_s: float | None = None  # look again after this long at the latest


UNSCHEDULABLE_AFTER_S = 60.0  # a pod the scheduler cannot place for this long fails the trial


@dataclass(frozen=True)
class Unschedulable:
    """A pod of the trial the scheduler has not placed (the one waiting longest)."""

    pod: str  # namespace/name
    waited_s: float
    scheduler: str  # the scheduler's message (e.g. "0/3 nodes are available: …")
    node_selector: dict[str, str] = field(default_factory=dict)  # what it asks of a node


@dataclass(frozen=True)
class Seen:
    """What a provider observed, in the lifecycle's words; each phase reads its own part."""

    deployment: Progress = Progress()  # Provisioning: the database and every region's Keystone
    chaos_missing: bool = False  # the provider cannot shape at all now (Chaos Mesh's CRDs not served)
    wan: Progress = Progress()  # Injecting: the plan's WAN in force
    network: dict[Pair, list[float]] | None = None  # VerifyingNetwork: the current measurement, once complete
    network_waiting: str = ""
    network_failed: str | None = None  # a probe failed
    network_unmeasurable: str | None = None  # this provider cannot measure here (why)
    runners: dict[str, str] = field(default_factory=dict)  # Loading: region → missing|running|complete|failed|stopped
    # Loading: each fault occurrence in force whose chaos is all injected → seconds after the load start when it
    # was (None: the provider puts faults in force as it applies them, nothing to verify)
    faults_injected: dict[str, float] | None = None
    fault_why: str | None = None  # the provider's word on a fault it could not inject
    store_error: str | None = None  # the results store does not answer (why)
    bundles: tuple[list[str], list[str], str] | None = None  # Collecting: (found, missing, URI)
    cleaned: Progress = Progress()  # CleaningUp: chaos and, as spec.cleanup says, the deployment gone
    chaos_left: int = 0  # chaos objects still there (CleaningUp)
    unschedulable: Unschedulable | None = None  # any phase before CleaningUp: a pod nobody can run


@dataclass(frozen=True)
class Deploy:
    """Deploy (or go on deploying) the trial's database and Keystones."""


@dataclass(frozen=True)
class ShapeWan:
    """Make the WAN what the fault schedule puts in force ``elapsed_s`` after the load start (None: the plan's)."""

    elapsed_s: float | None = None


@dataclass(frozen=True)
class Measure:
    """Measure the probe pairs' RTT (measurement ``check``)."""

    check: int


@dataclass(frozen=True)
class StartRunners:
    """Start the runners of attempt ``attempt`` in every load region; the provider records the load start."""

    attempt: int


@dataclass(frozen=True)
class StopRunners:
    """Remove attempt ``attempt``'s runners (a retry starts new ones)."""

    attempt: int


@dataclass(frozen=True)
class CleanUp:
    """Remove the trial's chaos first, then what spec.cleanup says."""


@dataclass(frozen=True)
class Event:
    """An entry of the lifecycle's event log (a Kubernetes event; a line of the lab's events.jsonl)."""

    reason: str
    message: str
    type: str = "Normal"


LifecycleAction = Deploy | ShapeWan | Measure | StartRunners | StopRunners | CleanUp | Event


@dataclass
class Step:
    """The lifecycle's decision: where the trial goes, what to do, what to record, when to look again."""

    phase: str | None = None  # the next phase (None: stay)
    reason: str = ""
    message: str = ""
    status: Status = field(default_factory=dict)  # fields to record
    actions: list[LifecycleAction] = field(default_factory=list)
    wake_s: float | None = None


def forward(current: str | None, nxt: str) -> bool:
    """Phases only move forward; a terminal phase never changes."""
    from wanwide.core.api.trial import PHASES, TERMINAL

    if current in TERMINAL:
        return False
    return PHASES.index(nxt) > PHASES.index(current or "Pending")


def done(status: Status) -> set[str]:
    return set(status.get("done") or [])


def marked(status: Status, *items: str) -> Status:
    return {"done": sorted(done(status) | set(items))}


def attempt_of(status: Status) -> int:
    return max(1, int(status.get("attempt") or 1))


def fail(reason: str, message: str, status: Status | None = None, actions: list[LifecycleAction] | None = None) -> Step:
    """Clean up (chaos first), then end Failed with this reason and message."""
    return Step("CleaningUp", reason, message, {**(status or {}), "outcome": "Failed"}, list(actions or []))


def crashed(phase: str, e: BaseException) -> Step:
    """A step that raised a bug (core/errors.py: neither transient nor a failure the lifecycle names), or a
    permanent error that names its reason (``e.reason``, e.g. the API server refusing an object): never
    tried again; clean up (chaos first), then Failed; already cleaning up: Failed at once, saying what may
    be left."""
    reason = getattr(e, "reason", None) if isinstance(e, PermanentError) else None
    if isinstance(reason, str):  # a failure its layer names (e.g. ObjectRefused): its own message says why
        message = f"{phase} step failed: {str(e)[:1000]}"
    else:
        reason, what = INTERNAL, f"{type(e).__name__}: {e}".strip()
        message = (f"{phase} step failed with {what[:500]}: a bug in wanwide, not in the Benchmark; the traceback "
                   "is in the operator's log (the lab's output) — please report it")
    if phase == "CleaningUp":
        return Step("Failed", reason, message + "; chaos or namespaces of this trial may be left: deleting its "
                                                "Benchmark removes them")
    return fail(reason, message)


def needs_chaos(plan: TrialPlan) -> bool:
    """Whether the plan shapes any link or injects any fault."""
    return any(plan.classes.values()) or bool(plan.faults)


def needs_netem(plan: TrialPlan) -> bool:
    """Whether the plan needs the kernel's netem: a link shaped (delay, jitter, loss, rate) or a loss window.
    Partitions and dropouts alone do not (Chaos Mesh cuts with iptables and ipset)."""
    return any(plan.classes.values()) or any(w.kind == "loss" for w in plan.faults)


def phase_timed_out(phase: str | None, phase_start: str | None, timeouts: Any, at: datetime) -> bool:
    """Past the phase's timeout (``timeouts``: spec.timeouts)."""
    from wanwide.core.api.units import seconds
    from wanwide.core.timestamps import parse

    f = TIMEOUT_FIELD.get(phase or "")
    if not f or not phase_start:
        return False
    return (at - parse(phase_start)).total_seconds() > seconds(getattr(timeouts, f))


def timed_out(plan: TrialPlan, status: Status, now: datetime) -> bool:
    return phase_timed_out(status.get("phase"), status.get("phaseStartTime"), plan.spec.timeouts, now)


def elapsed_s(status: Status, now: datetime) -> float | None:
    """Seconds since the current attempt's load start (None: not started)."""
    from wanwide.core.timestamps import parse

    start = status.get("loadStartAt")
    return (now - parse(start)).total_seconds() if start else None


CHAOS_GONE = ("Chaos Mesh's CRDs went away mid-run: the emulated WAN and any fault are gone, the trial's "
              "results would not measure what it asks; reinstall Chaos Mesh and run the trial again")


def provisioning(plan: TrialPlan, status: Status, seen: Seen, now: datetime) -> Step:
    d = seen.deployment
    if d.failed:
        return fail(*d.failed)
    if not d.done:
        return Step(message=d.waiting, actions=[Deploy()], wake_s=d.wake_s)
    return Step("Injecting", "Deployed", f"database and {len(plan.regions)} Keystones ready")


def injecting(plan: TrialPlan, status: Status, seen: Seen, now: datetime) -> Step:
    """The plan's WAN in force (anything else of the trial's chaos gone), or the trial fails saying why."""
    if not needs_chaos(plan):
        return Step("VerifyingNetwork", "Injected", "the plan shapes no link: no chaos to inject")
    if seen.chaos_missing:
        first = "wan" not in done(status)
        return fail("ChaosMeshMissing", "Chaos Mesh CRDs are not installed: install Chaos Mesh first" if first
                    else CHAOS_GONE)
    w = seen.wan
    if w.failed:
        return fail(*w.failed)
    if not w.done:
        return Step(message=w.waiting, status=marked(status, "wan"), actions=[ShapeWan(None)], wake_s=w.wake_s)
    return Step("VerifyingNetwork", "Injected", w.waiting or "the WAN is in force", marked(status, "wan-injected"))


def verifying_network(plan: TrialPlan, status: Status, seen: Seen, now: datetime) -> Step:
    if seen.network_unmeasurable:
        why = seen.network_unmeasurable
        return Step("Loading", "NetworkNotMeasured", why, actions=[Event("NetworkNotMeasured", why, "Warning")])
    check = max(1, int(status.get("networkCheck") or 0))
    pairs = probe_pairs(plan)
    if f"probe-{check}" not in done(status):
        return Step(message=f"measuring {len(pairs)} pair(s) of regions (measurement {check} of {NETWORK_CHECKS})",
                    status={**marked(status, f"probe-{check}"), "networkCheck": check},
                    actions=[Measure(check), Event("VerifyingNetwork", f"measuring the RTT of {len(pairs)} pair(s) "
                                                                       "of regions")])
    if seen.network_failed:
        return fail("NetworkNotMeasured", seen.network_failed)
    if seen.network is None:
        message, events = store_said(seen.network_waiting or "measuring the network", status, seen.store_error)
        return Step(message=message, actions=events, wake_s=3)
    rows, off = verdict(plan, seen.network)
    if off and check < NETWORK_CHECKS:
        why = f"the network is off by more than max(1 ms, 5 %): {'; '.join(off[:5])}; measuring again"
        return Step(message=why, status={"networkCheck": check + 1}, actions=[Event("NetworkOff", why, "Warning")])
    if off:
        return fail(NETWORK_OFF, f"the network measured twice is off by more than max(1 ms, 5 %) on {len(off)} of "
                                 f"{len(rows)} pair(s): " + "; ".join(off[:5]))
    worst = max(rows, key=lambda r: abs(r["measured_rtt_ms"] - r["requested_rtt_ms"]))
    dev = abs(worst["measured_rtt_ms"] - worst["requested_rtt_ms"])
    return Step("Loading", "NetworkVerified", f"{len(rows)} pair(s) within max(1 ms, 5 %) of the requested RTT "
                                              f"(largest deviation {dev:.2f} ms, {worst['src']}↔{worst['dst']})")


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


FAULT_LATE_S = 10.0  # a fault not in force this long after it began: a warning (its lag is recorded either way)
FAULT_NOT_INJECTED = "FaultNotInjected"


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
               "it; check Chaos Mesh (kubectl get networkchaos -A; chaos-daemon's log)") if failing else None
    patch: Status = {}
    if record != (status.get("faultsInjected") or {}):
        patch["faultsInjected"] = record
    if late != list(status.get("faultsLate") or []):
        patch["faultsLate"] = late
    return patch, events, failure, any(a.name not in record for a in now_in)


def loading(plan: TrialPlan, status: Status, seen: Seen, now: datetime) -> Step:
    if seen.chaos_missing:
        return fail("ChaosMeshMissing", CHAOS_GONE)
    n = attempt_of(status)
    key = f"load-{n}"
    if key not in done(status):  # started once the provider recorded the load start (it may take two steps)
        started = bool(status.get("loadStartAt"))
        return Step(message=f"attempt {n}: starting the runners",
                    status={**(marked(status, key) if started else {}), "attempt": n},
                    actions=[StartRunners(n)], wake_s=2 if started else 0)
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
    if failed and after_runner_failure(n, plan.spec.runner.max_attempts) is None:
        # a retry replays everything from the load on: the plan's WAN (ShapeWan(None)), a new start, and the
        # whole fault timeline again from that start
        retry = Event("LoadRetry", f"Rally failed in {', '.join(failed)}; attempt {n + 1} of "
                                   f"{plan.spec.runner.max_attempts}", "Warning")
        return Step(message="retrying", actions=[*shape, *fevents, StopRunners(n), retry],
                    status={**fstatus, "attempt": n + 1, "loadStartAt": None, "faultsInjected": None,
                            "faultsLate": None, "done": sorted(done(status) - {key})})
    if failed:
        return fail(LOAD_FAILED, f"Rally failed in {', '.join(failed)} after {n} attempt(s): see the runners' logs",
                    fstatus, [*shape, *fevents])
    if running:
        message, said = store_said(f"Rally running in {len(running)} region(s)", status, seen.store_error)
        return Step(message=message, status=fstatus, actions=[*shape, *fevents, *said], wake_s=fwake)
    return Step("Collecting", "LoadDone", f"Rally finished in {len(plan.load_regions)} region(s)", fstatus,
                [*shape, *fevents])


STORE = "results store "


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
    return Step("CleaningUp", "Collected", f"{len(found)} bundle(s) in {uri}", {"resultsURI": uri, "outcome": "Succeeded"},
                actions=back)


def cleaning_up(plan: TrialPlan, status: Status, seen: Seen, now: datetime) -> Step:
    """Chaos first (always), then what spec.cleanup says, then the outcome."""
    c = seen.cleaned
    if not c.done:
        return Step(message=c.waiting, actions=[CleanUp()], wake_s=c.wake_s)
    outcome = status.get("outcome") or "Failed"
    reason = status.get("reason") if outcome == "Failed" else "Completed"
    message = status.get("outcomeMessage") if outcome == "Failed" else "chaos removed; results stored"
    return Step(outcome, reason or outcome, message or "")


PHASE_STEPS = {
    "Provisioning": provisioning,
    "Injecting": injecting,
    "VerifyingNetwork": verifying_network,
    "Loading": loading,
    "Collecting": collecting,
    "CleaningUp": cleaning_up,
}


def decide(plan: TrialPlan, status: Status, seen: Seen, now: datetime) -> Step:
    """The step for the trial's current phase (Pending and terminal phases: none), its timeout first."""
    phase = status.get("phase") or "Pending"
    if phase not in PHASE_STEPS:
        return Step()
    if timed_out(plan, status, now):
        if phase != "CleaningUp":
            return fail(f"{phase}Timeout", f"{phase} took longer than its timeout (spec.timeouts); cleaning up")
        if seen.chaos_left:
            return Step("Failed", "ChaosNotRecovered", f"{seen.chaos_left} chaos object(s) still present after the "
                                                       "clean-up timeout: check Chaos Mesh; namespaces kept for inspection")
        if not seen.cleaned.done:
            return timed_out_cleaning(status, seen)
    u = seen.unschedulable if phase != "CleaningUp" else None
    if u and u.waited_s >= UNSCHEDULABLE_AFTER_S:
        return fail("Unschedulable", unschedulable_message(u))
    step = PHASE_STEPS[phase](plan, status, seen, now)
    if u:  # look again when it would have waited long enough
        left = max(1.0, UNSCHEDULABLE_AFTER_S - u.waited_s)
        step = replace(step, wake_s=left if step.wake_s is None else min(step.wake_s, left))
    return step


def unschedulable_message(u: Unschedulable) -> str:
    """What the user reads: which pod, what stops it (as the scheduler said), how to fix that."""
    said = u.scheduler.strip()
    needs = ", ".join(f"{k}={v}" for k, v in sorted(u.node_selector.items()))
    fixes = []
    if needs and ("affinity/selector" in said or "untolerated taint" not in said):
        fixes.append(f"it needs a node labelled {needs}: label nodes (kubectl label node NODE {needs.split(', ')[0]}) "
                     "or change the Topology's spec.placement (mode: none runs anywhere; mode: nodes names the nodes)")
    if "untolerated taint" in said:
        fixes.append("a node carries a taint it does not tolerate: kubectl describe node shows which (the kubelet's "
                     "own, node.kubernetes.io/disk-pressure or memory-pressure, goes when disk or memory is freed)")
    fix = "; ".join(fixes) or "check its requests, tolerations and affinity against the nodes"
    return f"pod {u.pod} could not be scheduled for {u.waited_s:.0f} s; {fix}; the scheduler said: {said or 'nothing'}"


def timed_out_cleaning(status: Status, seen: Seen) -> Step:
    """The clean-up timeout passed with the deployment still going: end with the outcome, and say what is left."""
    stuck = f"{seen.cleaned.waiting} (the clean-up timeout, spec.timeouts.cleaningUp, has passed)"
    outcome = status.get("outcome") or "Failed"
    first = status.get("outcomeMessage") if outcome == "Failed" else "chaos removed; results stored"
    reason = (status.get("reason") or "Failed") if outcome == "Failed" else "NamespacesStuck"
    return Step(outcome, reason, f"{first}; {stuck}" if first else stuck, actions=[Event("NamespacesStuck", stuck, "Warning")])
