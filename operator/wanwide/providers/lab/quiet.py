"""The quiet-machine gate: before the lab releases a trial's load, wait until the machine has
stayed quiet for a settle period, at most ``max_wait_s``. Quiet means both figures under the
threshold over the settle window: the CPU pressure (PSI ``some``: the share of time some
runnable task waited for a CPU) and the CPU used by processes outside the experiment (the
machine's busy time minus the experiment's processes', as a share of all its CPUs).

Why both (bench/contention.py on this 2-core machine, bench/README.md "Contention"): idle,
pressure 0.1 % and foreign CPU 0.1 %; one CPU-bound process of someone else's beside, pressure
stays at 0.0 % (it has a core to itself) while foreign CPU reads 50 %; two such processes,
0.5 % and 100 %; four, 100 % and 100 %; two of ours and one foreign, 50 % and 33 %. Pressure
alone misses a neighbour that takes a whole core.

The experiment's own floor: with nothing foreign running, pressure that does not settle over
``FLOOR_WINDOWS`` settle windows is the experiment's own (at 45 regions a 45-member Galera's
gossip holds it at 25–35 % on 2 cores, idle): waiting cannot lower it, so the gate passes and says
so (``own_floor``), the figure going into the bundles like any other.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wanwide.pipeline.runner.contention import TICKS, OwnProcesses, read_cpu_times, read_pressure

FLOOR_WINDOWS = 6  # settle windows over which the pressure fell less than FLOOR_BAND points, nothing foreign
FLOOR_BAND = 5.0

Sample = tuple[int, float | None]  # PSI cpu some total (µs), foreign CPU-seconds so far (None: unknown)


@dataclass(frozen=True)
class QuietGate:
    threshold_pct: float = 10.0
    settle_s: float = 20.0
    max_wait_s: float = 600.0
    enabled: bool = True

    def describe(self) -> str:
        return (f"CPU pressure under {self.threshold_pct:g}% for {self.settle_s:g}s "
                f"(waiting at most {self.max_wait_s:g}s)")


def window_figures(samples: deque[tuple[float, int, float | None]], settle_s: float,
                   cpus: int | None = None) -> tuple[float, float | None] | None:
    """CPU pressure and foreign CPU (%) over the last ``settle_s`` of ``samples`` (time s, PSI total
    µs, foreign CPU-seconds); None until the samples span that long. Older samples are dropped."""
    if not samples:
        return None
    t_end, total_end, foreign_end = samples[-1]
    while len(samples) > 1 and t_end - samples[1][0] >= settle_s:
        samples.popleft()
    t0, total0, foreign0 = samples[0]
    if t_end - t0 < settle_s:
        return None
    pressure = 100.0 * (total_end - total0) / 1e6 / (t_end - t0)
    foreign = None
    if foreign0 is not None and foreign_end is not None:
        foreign = max(0.0, 100.0 * (foreign_end - foreign0) / ((cpus or os.cpu_count() or 1) * (t_end - t0)))
    return pressure, foreign


def wait_quiet(
    gate: QuietGate,
    say: Callable[[str], None],
    *,
    own: OwnProcesses | None = None,
    read: Callable[[], Sample | None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    every_s: float = 1.0,
    report_every_s: float = 15.0,
    cpus: int | None = None,
) -> dict[str, Any]:
    """Block until the machine is quiet or the wait runs out; what happened, for the bundles
    (fields of ``GateInfo``). ``own``: the experiment's processes (else every busy CPU counts as
    foreign). Without PSI the gate cannot tell and says so."""
    info: dict[str, Any] = {"enabled": gate.enabled, "threshold_pct": gate.threshold_pct,
                            "settle_s": gate.settle_s, "max_wait_s": gate.max_wait_s}
    if not gate.enabled:
        return info | {"waited_s": 0.0, "passed": None}
    read = read or _reader(own)
    if read() is None:
        say("quiet-machine gate: this kernel has no /proc/pressure/cpu; starting without it")
        return info | {"waited_s": 0.0, "passed": None}
    t0 = clock()
    samples: deque[tuple[float, int, float | None]] = deque()
    last_report = t0
    figures: tuple[float, float | None] | None = None
    seen: deque[tuple[float, tuple[float, float | None]]] = deque()
    while True:
        now, sample = clock(), read()
        if sample is None:
            return info | {"waited_s": round(now - t0, 1), "passed": None}
        samples.append((now, *sample))
        figures = window_figures(samples, gate.settle_s, cpus)
        waited = now - t0
        if figures is not None:
            seen.append((now, figures))
        if figures is not None and _quiet(figures, gate.threshold_pct):
            if waited >= gate.settle_s + 2 * every_s:
                say(f"machine quiet after {waited:.0f}s: {_fmt(figures)} over the last {gate.settle_s:g}s")
            return info | {"waited_s": round(waited, 1), "passed": True, **_fields(figures)}
        if figures is not None and own_floor(seen, now, FLOOR_WINDOWS * gate.settle_s, gate.threshold_pct):
            say(f"machine quiet but for the experiment itself after {waited:.0f}s: {_fmt(figures)}, not settling "
                f"over {FLOOR_WINDOWS * gate.settle_s:g}s with nothing else running (its own processes' load; "
                "recorded with the results)")
            return info | {"waited_s": round(waited, 1), "passed": True, "own_floor": True, **_fields(figures)}
        if waited >= gate.max_wait_s:
            say(f"machine still busy after {waited:.0f}s ({_fmt(figures)} over the last {gate.settle_s:g}s, "
                f"threshold {gate.threshold_pct:g}%): starting anyway; the report marks trials whose measured "
                "window was busy as noisy")
            return info | {"waited_s": round(waited, 1), "passed": False, **_fields(figures)}
        if figures is not None and now - last_report >= report_every_s:
            say(f"waiting for a quiet machine: {_fmt(figures)} over the last {gate.settle_s:g}s "
                f"(threshold {gate.threshold_pct:g}% each), {waited:.0f}s of at most {gate.max_wait_s:g}s")
            last_report = now
        sleep(every_s)


def own_floor(seen: deque[tuple[float, tuple[float, float | None]]], now: float, span_s: float,
              threshold: float) -> bool:
    """True when, over the last ``span_s`` of ``seen`` (time, (pressure, foreign)) figures, foreign CPU was
    known and under ``threshold`` throughout and pressure was not settling: its second half's mean no more
    than ``FLOOR_BAND`` points below its first half's (a 45-member Galera's keepalive bursts swing it
    23–37 % from one window to the next). Older figures are dropped."""
    while seen and now - seen[0][0] > span_s:
        seen.popleft()
    if not seen or now - seen[0][0] < span_s - 1.0:
        return False
    if not all(f is not None and f < threshold for _t, (_p, f) in seen):
        return False
    mid = seen[0][0] + span_s / 2
    first = [p for t, (p, _f) in seen if t < mid]
    second = [p for t, (p, _f) in seen if t >= mid]
    return bool(first and second) and sum(first) / len(first) - sum(second) / len(second) <= FLOOR_BAND


def _quiet(figures: tuple[float, float | None], threshold: float) -> bool:
    pressure, foreign = figures
    return pressure < threshold and (foreign is None or foreign < threshold)


def _fields(figures: tuple[float, float | None] | None) -> dict[str, float | None]:
    pressure, foreign = figures if figures is not None else (None, None)
    return {"pressure_pct": None if pressure is None else round(pressure, 2),
            "foreign_cpu_pct": None if foreign is None else round(foreign, 2)}


def _fmt(figures: tuple[float, float | None] | None) -> str:
    if figures is None:
        return "CPU pressure unknown"
    pressure, foreign = figures
    other = "" if foreign is None else f", CPU used by other processes {foreign:.1f}%"
    return f"CPU pressure {pressure:.1f}%{other}"


def _reader(own: OwnProcesses | None) -> Callable[[], Sample | None]:
    """PSI's cumulative stall and the CPU-seconds used outside ``own`` so far, from /proc."""
    def read() -> Sample | None:
        p = read_pressure("cpu")
        if p is None:
            return None
        times = read_cpu_times()
        foreign = None
        if times is not None:
            foreign = (times.busy - (own.ticks() if own else 0)) / TICKS
        return p["some"].total_us, foreign
    return read
