"""A run's service level objectives checked against its iterations (``rally.json``). Pure.

Each scenario of the task has its objectives (``core.contracts.SloSpec``: from the Benchmark's
``workload.slo`` or the scenario's own). Every one is measured here from the iterations, not read
from Rally's SLA results, so that a percentile (which Rally has no plugin for) and the others are
measured the same way: durations of the successful iterations (Rally's ``duration``); the
failure rate over all of them. Rally's own SLA holds the objectives it knows too, so its
``pass_sla`` agrees.

Plain Python, no numpy: the runner runs in the image, which installs the ``operator`` extra only
(numpy is the ``report`` extra's).
"""

from __future__ import annotations

from typing import Any

from wanwide.core.contracts import SloSpec


def _workloads(rally: dict[str, Any]) -> list[dict[str, Any]]:
    return [w for t in rally.get("tasks") or [] for st in t.get("subtasks") or [] for w in st.get("workloads") or []]


def _scenario(w: dict[str, Any]) -> str:
    return next(iter(w.get("scenario") or {"?": None}))


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile (0–100) of ``values`` (not empty), interpolated linearly between the two
    nearest ranks: numpy's default (``np.percentile(values, p)``, method ``linear``)."""
    xs = sorted(values)
    h = (len(xs) - 1) * p / 100.0
    lo = int(h)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


def check(rally: dict[str, Any], specs: list[SloSpec]) -> list[dict[str, Any]]:
    """One row per scenario and objective: ``{scenario, criterion, bound, measured, passed, detail}``
    (bound and measured in seconds, the failure rate in percent); ``passed`` None when there was nothing to
    measure (no successful iteration)."""
    by_name = {s.scenario: s for s in specs}
    rows: list[dict[str, Any]] = []
    for w in _workloads(rally):
        name = _scenario(w)
        spec = by_name.get(name)
        if spec is None:
            continue
        data = w.get("data") or []
        ok = [float(it.get("duration") or 0.0) for it in data if not it.get("error")]
        failed = sum(1 for it in data if it.get("error"))
        rate = 100.0 * failed / len(data) if data else 0.0
        rows.append(_row(name, "failure_rate", spec.failure_rate_pct, rate, "%",
                         f"{failed} of {len(data)} iterations failed"))
        for criterion, bound, value, what in (
            ("max_duration", spec.max_s, max(ok) if ok else None, "slowest iteration"),
            ("mean_duration", spec.mean_s, sum(ok) / len(ok) if ok else None, "mean iteration"),
            (f"p{spec.percentile:g}" if spec.percentile else "percentile", spec.percentile_max_s,
             percentile(ok, spec.percentile) if ok and spec.percentile else None,
             f"{spec.percentile:g}th percentile" if spec.percentile else ""),
        ):
            if bound is None:
                continue
            rows.append(_row(name, criterion, bound, None if value is None else float(value), "s", what))
    return rows


def _row(scenario: str, criterion: str, bound: float, measured: float | None, unit: str, what: str) -> dict[str, Any]:
    passed = None if measured is None else bool(measured <= bound + 1e-12)
    if measured is None:
        detail = f"{what}: nothing to measure (no successful iteration)"
    elif unit == "%":
        detail = f"{what}: {measured:.2f}% {'<=' if passed else '>'} {bound:g}%"
    else:
        detail = f"{what} {measured:.3f} s {'<=' if passed else '>'} {bound:g} s"
    return {"scenario": scenario, "criterion": criterion, "bound": bound, "measured": measured, "unit": unit,
            "passed": passed, "detail": detail}


def missed(rows: list[dict[str, Any]]) -> list[str]:
    """``scenario: detail`` of every objective missed (short scenario names)."""
    return [f"{r['scenario'].split('.')[-1]}: {r['detail']}" for r in rows if r["passed"] is False]
