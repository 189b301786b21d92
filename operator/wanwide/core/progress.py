"""What a running Benchmark says about itself: the values its matrix sweeps, and the time left. Pure.

The time left comes from the trials done and their times: each trial still to run (or running)
is expected to take the mean time of the done trials of its own parameter point, else of all
done trials; the pending ones are laid on ``parallelism`` slots in run order, a running one
holds its slot for what its estimate has left. Before any trial is done nothing is known.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

REPETITION = "repetition"
SHOWN = ("backend", "load")  # the Benchmark's own printer columns; the rest go to `sweep`
MAX_SHOWN = 32  # characters of values a column shows before it says "matrix (N)": mariadb,galera,cockroachdb fits
UNKNOWN = "unknown"


def point_key(parameters: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """A trial's parameter point: its parameters without the repetition."""
    return tuple(sorted((k, str(v)) for k, v in parameters.items() if k != REPETITION))


def values_of(points: Iterable[dict[str, str]], name: str) -> list[str]:
    """The distinct values of parameter ``name`` over ``points``, in order of first appearance."""
    return list(dict.fromkeys(str(p[name]) for p in points if p.get(name) is not None))


def shown(values: Sequence[str]) -> str | None:
    """A printer column's text for a parameter: its value, the values swept (``mariadb,galera``), or
    ``matrix (N)`` when they do not fit; None without any."""
    if not values:
        return None
    text = ",".join(values)
    return text if len(text) <= MAX_SHOWN else f"matrix ({len(values)})"


def sweep(points: Sequence[dict[str, str]]) -> str | None:
    """The parameters that vary over ``points`` with their values (``rtt=0ms,100ms regions=3,9``); None when
    there is a single point."""
    names = list(dict.fromkeys(k for p in points for k in p if k != REPETITION))
    parts = []
    for n in names:
        vals = values_of(points, n)
        if len(vals) > 1:
            parts.append(f"{n}={','.join(vals)}")
    return " ".join(parts) or None


def time_left(done: Sequence[tuple[tuple, float]], running: Sequence[tuple[tuple, float]],
              pending: Sequence[tuple], parallelism: int) -> float | None:
    """Seconds until every trial is done: ``done`` (point, seconds it took), ``running`` (point, seconds
    so far), ``pending`` (points, in run order); None before any trial is done."""
    if not done:
        return None if (running or pending) else 0.0
    by_point: dict[tuple, list[float]] = {}
    for key, s in done:
        by_point.setdefault(key, []).append(s)
    overall = sum(s for _, s in done) / len(done)

    def expect(key: tuple) -> float:
        own = by_point.get(key)
        return sum(own) / len(own) if own else overall

    slots = [max(expect(k) - elapsed, 0.0) for k, elapsed in running]
    slots += [0.0] * max(parallelism - len(slots), 1 if not slots else 0)
    for key in pending:
        i = min(range(len(slots)), key=slots.__getitem__)
        slots[i] += expect(key)
    left = max(slots) if slots else 0.0
    return max(left, 1.0) if (running or pending) else left  # a trial running past its estimate: not "0m"


def duration_text(seconds: float | None) -> str:
    """``2d3h``, ``1h12m``, ``7m`` (whole minutes, rounded up); :data:`UNKNOWN` for None."""
    if seconds is None:
        return UNKNOWN
    if seconds <= 0:
        return "0m"
    minutes = math.ceil(seconds / 60)
    h, m = divmod(minutes, 60)
    d, h = divmod(h, 24)
    return (f"{d}d{h}h" if d else f"{h}h{m:02d}m" if h else f"{m}m")
