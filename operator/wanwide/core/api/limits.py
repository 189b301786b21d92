"""How much one Benchmark may ask for: its trials, their regions and shaped links, its fault schedule.

One operator replica plans every Benchmark of the cluster in 1 GiB, and ``wanwide plan --all``
renders every trial: what a trial costs grows with its regions (objects, chart values) and with the
square of them (every directed link is shaped, once for the WAN and again under each fault window).
Measured on this project's 2-core machine (bench/plan_bounds.py): about 4 ms of CPU per region and
8 µs per directed link and window, so the caps below keep the largest Benchmark within ~15 s and
~300 MB. The study's largest Benchmark (study-45) plans 540 region-trials and 23,760 directed links.

The same counts are written twice: in Python (``budget``, ``fault_problems``: the planner, with
each problem's path) and as CEL (``*_RULE``: the API server, wherever the Benchmark itself holds
the numbers: an inline topology or ``spec.matrix.regions``; a ``topologyRef`` is read by the
planner alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from wanwide.core.api.units import cel_duration_ok, nanos

if TYPE_CHECKING:
    from wanwide.core.api.benchmark import BenchmarkSpec, Faults, Matrix

MAX_TRIALS = 1000
"""Trials per Benchmark (the study runs 108 in five Benchmarks)."""
MAX_REGION_TRIALS = 1500
"""Regions summed over a Benchmark's trials (study-45: 540; a 1000-region trial and 500 more)."""
MAX_LINK_WINDOWS = 1_000_000
"""Directed links n×(n−1) summed over a Benchmark's trials, counted once for the trial's WAN and once per
fault window (a 1000-region trial without faults; a 45-region trial with 100 windows, 4 times)."""
MAX_ROUNDS = 100
"""firstRepetition + repetitions: the rounds of a campaign, those run before included."""
MAX_DROPOUT_CUTS = 2000
"""Cuts of all dropouts within timeouts.loading (each begins and ends with events and chaos objects and
is recorded in the Trial's status)."""
DEFAULT_LOADING = "3h"

# Axes other than regions, as the API writes them (core/plan/matrix.py: AXES).
OTHER_AXES = (("backend", "backend"), ("rtt", "rtt"), ("intra_group_rtt", "intraGroupRtt"),
              ("inter_group_rtt", "interGroupRtt"), ("loss", "loss"), ("load", "load"),
              ("load_region", "loadRegion"), ("scenario", "scenario"))

SPLIT = "split the sweep into several Benchmarks"


@dataclass(frozen=True)
class Budget:
    """What a Benchmark plans: its trials, their regions summed, their directed links × (1 + fault windows)."""

    trials: int
    region_trials: int | None  # None: the region count is not known (a Topology not given)
    link_windows: int | None


def trials(m: Matrix) -> int:
    """How many trials the matrix expands to."""
    n = m.repetitions * len(m.regions or [None])
    for attr, _ in OTHER_AXES:
        n *= len(getattr(m, attr) or [None])
    return n


def windows(f: Faults) -> int:
    return len(f.partitions) + len(f.dropouts) + len(f.loss_windows)


def budget(spec: BenchmarkSpec, topology_regions: int | None) -> Budget:
    """The Benchmark's counts; ``topology_regions``: the region count of its topology (None: unknown)."""
    m = spec.matrix
    counts = list(m.regions) if m.regions else ([topology_regions] if topology_regions is not None else None)
    t = trials(m)
    if counts is None:
        return Budget(t, None, None)
    per_count = t // len(counts)
    return Budget(t, per_count * sum(counts),
                  per_count * sum(n * (n - 1) for n in counts) * (1 + windows(spec.faults)))


def budget_problems(b: Budget) -> list[tuple[str, str]]:
    """(path, problem) for each cap ``b`` passes."""
    out = []
    if b.trials > MAX_TRIALS:
        out.append(("spec.matrix", f"{b.trials:,} trials, more than {MAX_TRIALS:,} per Benchmark: sweep fewer "
                    f"values or repetitions, or {SPLIT}"))
        return out
    if b.region_trials is not None and b.region_trials > MAX_REGION_TRIALS:
        out.append(("spec.matrix", f"the trials have {b.region_trials:,} regions in all, more than "
                    f"{MAX_REGION_TRIALS:,} per Benchmark: sweep fewer region counts or repetitions, or {SPLIT}"))
    if b.link_windows is not None and b.link_windows > MAX_LINK_WINDOWS:
        out.append(("spec.matrix", f"the trials shape {b.link_windows:,} directed links in all (regions × "
                    "(regions − 1) per trial, counted once for its WAN and once per fault window), more than "
                    f"{MAX_LINK_WINDOWS:,} per Benchmark: fewer regions, repetitions or fault windows, or {SPLIT}"))
    return out


def fault_problems(spec: BenchmarkSpec) -> list[tuple[str, str]]:
    """(path, problem) for fault windows that would begin after the load ends, or dropouts that cut too often."""
    loading = spec.timeouts.loading
    end = nanos(loading)
    out = []
    for kind, attr in (("partitions", "partitions"), ("lossWindows", "loss_windows")):
        for i, w in enumerate(getattr(spec.faults, attr)):
            if nanos(w.start) >= end:
                out.append((f"spec.faults.{kind}[{i}].start", f"{w.start!r} is not before timeouts.loading "
                            f"({loading}), which ends the load: lower start or raise spec.timeouts.loading"))
    cuts = 0
    for i, d in enumerate(spec.faults.dropouts):
        if nanos(d.every) >= end:
            out.append((f"spec.faults.dropouts[{i}].every", f"{d.every!r}: the first cut comes after every, not "
                        f"before timeouts.loading ({loading}) ends the load: lower every or raise spec.timeouts.loading"))
        if nanos(d.every) >= 10**9:  # as CEL counts (a shorter every is refused by its own bound)
            cuts += (end // 10**6) // (nanos(d.every) // 10**6)
    if cuts > MAX_DROPOUT_CUTS:
        out.append(("spec.faults.dropouts", f"{cuts:,} cuts within timeouts.loading ({loading}), more than "
                    f"{MAX_DROPOUT_CUTS:,}: raise every or lower spec.timeouts.loading"))
    return out


# ---- the same, as CEL ------------------------------------------------------------------------------

def _size(parent: str, field: str) -> str:
    return f"(has(self.{parent}) && has(self.{parent}.{field}) ? size(self.{parent}.{field}) : 0)"


def _axis(field: str, root: str = "self.matrix", guard: str = "has(self.matrix) && ") -> str:
    return f"({guard}has({root}.{field}) ? size({root}.{field}) : 1)"


def _points(root: str, guard: str) -> str:
    """CEL: matrix points × repetitions, regions axis left out."""
    reps = f"({guard}has({root}.repetitions) ? {root}.repetitions : 1)"
    return " * ".join([reps, *(_axis(f, root, guard) for _, f in OTHER_AXES)])


TRIALS_MSG = (f"the matrix expands to more than {MAX_TRIALS} trials (the product of every axis' values and "
              f"repetitions): sweep fewer values or repetitions, or {SPLIT}")
TRIALS_RULE = f"{_points('self', '')} * {_axis('regions', 'self', '')} <= {MAX_TRIALS}"

ROUNDS_MSG = (f"spec.matrix.firstRepetition + repetitions is more than {MAX_ROUNDS}: a campaign has at most "
              f"{MAX_ROUNDS} rounds; lower firstRepetition or repetitions")
ROUNDS_RULE = (f"(has(self.firstRepetition) ? self.firstRepetition : 0) + "
               f"(has(self.repetitions) ? self.repetitions : 1) <= {MAX_ROUNDS}")

_HAS_REGIONS = "(has(self.matrix) && has(self.matrix.regions))"
_N0 = ("(has(self.topology) ? (has(self.topology.generate) ? self.topology.generate.count : "
       "(has(self.topology.regions) ? size(self.topology.regions) : 0)) : 0)")
_KNOWN = f"({_HAS_REGIONS} || has(self.topology))"
_TRIALS = f"{_points('self.matrix', 'has(self.matrix) && ')} * {_axis('regions')}"
_SUM_N = f"({_HAS_REGIONS} ? self.matrix.regions.sum() : {_N0})"
_SUM_LINKS = f"({_HAS_REGIONS} ? self.matrix.regions.map(n, n * (n - 1)).sum() : {_N0} * ({_N0} - 1))"
_WINDOWS = f"(1 + {_size('faults', 'partitions')} + {_size('faults', 'dropouts')} + {_size('faults', 'lossWindows')})"
_POINTS = _points("self.matrix", "has(self.matrix) && ")

REGION_TRIALS_MSG = (f"the trials have more than {MAX_REGION_TRIALS} regions in all (regions summed over the "
                     f"trials): sweep fewer region counts or repetitions, or {SPLIT}")
REGION_TRIALS_RULE = f"!{_KNOWN} || {_TRIALS} > {MAX_TRIALS} || {_POINTS} * {_SUM_N} <= {MAX_REGION_TRIALS}"
LINK_WINDOWS_MSG = (f"the trials shape more than {MAX_LINK_WINDOWS} directed links in all (regions × (regions − 1) "
                    "per trial, once for its WAN and once per fault window): fewer regions, repetitions or fault "
                    f"windows, or {SPLIT}")
LINK_WINDOWS_RULE = (f"!{_KNOWN} || {_TRIALS} > {MAX_TRIALS} || "
                     f"{_POINTS} * {_SUM_LINKS} * {_WINDOWS} <= {MAX_LINK_WINDOWS}")

_LOADING = f"(has(self.timeouts) && has(self.timeouts.loading) ? self.timeouts.loading : '{DEFAULT_LOADING}')"
_LOADING_OK = cel_duration_ok(_LOADING)


def _starts_rule(field: str) -> str:
    return (f"!{_LOADING_OK} || !has(self.faults) || !has(self.faults.{field}) || self.faults.{field}.all(w, "
            f"!{cel_duration_ok('w.start')} || duration(w.start) < duration({_LOADING}))")


START_MSG = "a fault window must start before spec.timeouts.loading ends the load: lower its start or raise timeouts.loading"
PARTITION_START_RULE = _starts_rule("partitions")
LOSS_START_RULE = _starts_rule("lossWindows")
EVERY_MSG = ("a dropout's first cut comes after every: every must be shorter than spec.timeouts.loading, which ends "
             "the load: lower every or raise timeouts.loading")
EVERY_RULE = (f"!{_LOADING_OK} || !has(self.faults) || !has(self.faults.dropouts) || self.faults.dropouts.all(d, "
              f"!{cel_duration_ok('d.every')} || duration(d.every) < duration({_LOADING}))")
CUTS_MSG = (f"the dropouts cut more than {MAX_DROPOUT_CUTS} times within spec.timeouts.loading (timeouts.loading / "
            "every, summed): raise every or lower timeouts.loading")
CUTS_RULE = (f"!{_LOADING_OK} || !has(self.faults) || !has(self.faults.dropouts) || self.faults.dropouts.map(d, "
             f"{cel_duration_ok('d.every')} && duration(d.every) >= duration('1s') ? "
             f"duration({_LOADING}).getMilliseconds() / duration(d.every).getMilliseconds() : 0).sum() "
             f"<= {MAX_DROPOUT_CUTS}")

__all__ = ["MAX_DROPOUT_CUTS", "MAX_LINK_WINDOWS", "MAX_REGION_TRIALS", "MAX_TRIALS", "Budget",
           "budget", "budget_problems", "fault_problems", "trials"]
