"""The quiet-machine gate: before the lab releases a trial's load, wait until the CPU pressure
(PSI ``some``: the share of time some runnable task waited for a CPU) has stayed under a
threshold for a settle period, at most ``max_wait_s``.

Defaults from measurements on the 2-core machine this was built on (docs/results.md,
"Contention"): a deployed, idle 3-region lab shows 0–3 % over 20 s; a compiler or a test
suite beside it 30–90 %.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..runner.contention import read_pressure


@dataclass(frozen=True)
class QuietGate:
    threshold_pct: float = 10.0
    settle_s: float = 20.0
    max_wait_s: float = 600.0
    enabled: bool = True

    def describe(self) -> str:
        return (f"CPU pressure under {self.threshold_pct:g}% for {self.settle_s:g}s "
                f"(waiting at most {self.max_wait_s:g}s)")


def window_pressure(samples: deque[tuple[float, int]], settle_s: float) -> float | None:
    """CPU pressure (%) over the last ``settle_s`` of ``samples`` (time s, PSI total µs); None
    until the samples span that long. Older samples are dropped."""
    if not samples:
        return None
    t_end, total_end = samples[-1]
    while len(samples) > 1 and t_end - samples[1][0] >= settle_s:
        samples.popleft()
    t0, total0 = samples[0]
    if t_end - t0 < settle_s:
        return None
    return 100.0 * (total_end - total0) / 1e6 / (t_end - t0)


def wait_quiet(
    gate: QuietGate,
    say: Callable[[str], None],
    *,
    read: Callable[[], int | None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    every_s: float = 1.0,
    report_every_s: float = 15.0,
) -> dict[str, Any]:
    """Block until the machine is quiet or the wait runs out; what happened, for the bundles
    (fields of ``GateInfo``). Without PSI the gate cannot tell and says so."""
    info: dict[str, Any] = {"enabled": gate.enabled, "threshold_pct": gate.threshold_pct,
                            "settle_s": gate.settle_s, "max_wait_s": gate.max_wait_s}
    if not gate.enabled:
        return info | {"waited_s": 0.0, "passed": None}
    read = read or _read_cpu_total
    if read() is None:
        say("quiet-machine gate: this kernel has no /proc/pressure/cpu; starting without it")
        return info | {"waited_s": 0.0, "passed": None}
    t0 = clock()
    samples: deque[tuple[float, int]] = deque()
    last_report = t0
    pressure = None
    while True:
        now, total = clock(), read()
        if total is None:
            return info | {"waited_s": round(now - t0, 1), "passed": None}
        samples.append((now, total))
        pressure = window_pressure(samples, gate.settle_s)
        waited = now - t0
        if pressure is not None and pressure < gate.threshold_pct:
            if waited >= gate.settle_s + 2 * every_s:
                say(f"machine quiet after {waited:.0f}s: CPU pressure {pressure:.1f}% over the last "
                    f"{gate.settle_s:g}s")
            return info | {"waited_s": round(waited, 1), "passed": True, "pressure_pct": round(pressure, 2)}
        if waited >= gate.max_wait_s:
            say(f"machine still busy after {waited:.0f}s (CPU pressure {_fmt(pressure)} over the last "
                f"{gate.settle_s:g}s, threshold {gate.threshold_pct:g}%): starting anyway; the report marks "
                "trials whose measured window was busy as noisy")
            return info | {"waited_s": round(waited, 1), "passed": False,
                           "pressure_pct": None if pressure is None else round(pressure, 2)}
        if pressure is not None and now - last_report >= report_every_s:
            say(f"waiting for a quiet machine: CPU pressure {_fmt(pressure)} over the last {gate.settle_s:g}s "
                f"(threshold {gate.threshold_pct:g}%), {waited:.0f}s of at most {gate.max_wait_s:g}s")
            last_report = now
        sleep(every_s)


def _fmt(pressure: float | None) -> str:
    return "unknown" if pressure is None else f"{pressure:.1f}%"


def _read_cpu_total() -> int | None:
    p = read_pressure("cpu")
    return None if p is None else p["some"].total_us
