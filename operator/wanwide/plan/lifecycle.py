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
  load is tried again up to ``spec.runner.maxAttempts`` (``LoadFailed`` after the last). Results that
  were measured but could not be stored (the runner retried through ``spec.timeouts.collecting``) fail
  the trial at once with ``UploadFailed``: measuring again would not make the store answer; the
  message says where the bundles are kept.
- **The run order, and which trials share a deployment.** Trials run in the plan's order
  (``spec.matrix.order``: interleaved rounds, each shuffled from the recorded seed). A provider that
  can re-shape a running deployment (the lab) serves one *round* (a repetition of every point) per
  deployment key: the round's trials of one key run together on one new deployment, keys in the order
  they first come in the round; so every repetition runs on fresh deployments and no parameter keeps
  one time of day. ``fresh``: a deployment per trial (the Kubernetes provider: namespaces per trial).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .faults import FaultWindow, occurrences
from .links import LinkMap, OneWay, Pair
from .trial import TrialPlan

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
    """The windows' occurrences in force ``t_s`` seconds after the load start (in ``faults`` order)."""
    out = []
    for w in faults:
        for k, (start, end) in enumerate(occurrences(w, t_s + 1e-9)):
            if start <= t_s < end:
                out.append(Active(w, k, start, end))
    return tuple(out)


def next_change_s(faults: list[FaultWindow], t_s: float) -> float | None:
    """When (from the load start) the next window begins or ends after ``t_s``; None: never."""
    upcoming = [x for w in faults
                for occ in occurrences(w, t_s + 2 * w.every_s if w.every_s else float("inf"))
                for x in occ if x > t_s]
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
    from .latency import classes

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


def rtt_requested(plan: TrialPlan, pair: Pair) -> float:
    """The round trip a pair should measure: both one-way delays (ms)."""
    a, b = pair
    return plan.links[(a, b)].delay_ms + plan.links[(b, a)].delay_ms


def tolerance_ms(requested: float) -> float:
    return max(RTT_TOLERANCE[0], RTT_TOLERANCE[1] * requested)


def median(samples: list[float]) -> float | None:
    s = sorted(samples)
    return s[len(s) // 2] if s else None


def verdict(plan: TrialPlan, measured: dict[Pair, list[float]]) -> tuple[list[dict], list[str]]:
    """Each probed pair against its request: (rows as recorded, why each pair off is off)."""
    rows, off = [], []
    for pair in probe_pairs(plan):
        want = rtt_requested(plan, pair)
        tol = tolerance_ms(want)
        got = measured.get(pair, [])
        med = median(got)
        ok = med is not None and abs(med - want) <= tol
        rows.append({"src": pair[0], "dst": pair[1], "requested_rtt_ms": want, "tolerance_ms": tol,
                     "measured_rtt_ms": med, "samples_ms": got, "ok": ok})
        if not ok:
            seen = "no answer" if med is None else f"{med:.2f} ms"
            off.append(f"{pair[0]}↔{pair[1]}: requested {want:g} ms, measured {seen} (tolerance {tol:.2f} ms)")
    return rows, off


# ---- failures -----------------------------------------------------------------------------------

LOAD_FAILED = "LoadFailed"
UPLOAD_FAILED = "UploadFailed"


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
    the round's trials of one deployment key together; ``fresh``: one trial per deployment."""
    ordered = in_run_order(trials)
    if fresh:
        return [[p] for p in ordered]
    out: list[list[TrialPlan]] = []
    rounds: dict[tuple[str, str, int], dict[str, list[TrialPlan]]] = {}
    for p in ordered:
        rnd = p.repetition if p.spec.matrix.order == "Interleaved" else 0
        groups = rounds.setdefault((p.bench_namespace, p.benchmark, rnd), {})
        key = deployment_key(p)
        if key not in groups:
            groups[key] = []
            out.append(groups[key])
        groups[key].append(p)
    return out


__all__ = ["CUT", "LOAD_FAILED", "NETWORK_CHECKS", "NETWORK_OFF", "RTT_TOLERANCE", "UPLOAD_FAILED", "Active", "FaultEvent", "Wan", "after_runner_failure", "deployment_key", "deployments", "fault_events", "in_force",
           "in_run_order", "median", "next_change_s", "probe_pairs", "rtt_requested", "run_key", "tolerance_ms",
           "verdict", "wan_at"]
