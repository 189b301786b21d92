"""A trial's service level objectives as its bundles recorded them (spec.workload.slo, the runners'
``pipeline/runner/slo.py`` rows in each manifest), said once for the Trial's status. Pure.

A run that misses an objective still measured: the trial Succeeds with its data kept; its status says
how many objectives were met and names the misses (at most ``SHOWN``), and a warning event says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

SHOWN = 5  # misses named in the status and the event (the bundles hold them all)
OBJECTIVES_MISSED = "ObjectivesMissed"

Rows = list[dict[str, Any]]


def recorded(manifest: Any) -> Rows | None:
    """A bundle manifest's objectives (its ``slo`` rows); None: none recorded, or not a manifest."""
    rows = manifest.get("slo") if isinstance(manifest, dict) else None
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else None


def failure_said(manifest: Any) -> str | None:
    """A bundle manifest's word on why its run failed, one line "<reason>: <message>" (None: no reason in it)."""
    st = manifest.get("status") if isinstance(manifest, dict) else None
    if not isinstance(st, dict) or not st.get("reason") or st.get("result") == "succeeded":
        return None
    return f"{st['reason']}: {st.get('message') or ''}".rstrip(": ")


def late_by(manifest: Any) -> float | None:
    """Seconds past the common start a runner was when it refused to start late (its bundle's ``start.late_s`` on
    a ``StartTooLate``); None: not that failure, or not recorded."""
    if not isinstance(manifest, dict) or (manifest.get("status") or {}).get("reason") != "StartTooLate":
        return None
    late = (manifest.get("start") or {}).get("late_s")
    ok = isinstance(late, int | float) and not isinstance(late, bool) and math.isfinite(late) and late >= 0
    return float(late) if ok else None


def objectives(rows: Mapping[str, Rows | None] | None) -> dict[str, Any] | None:
    """``{"met", "missed", "unmeasured", "summary", "misses"}`` over every load region's rows (region → its
    manifest's ``slo`` rows; None or absent: none recorded); None when no region recorded any objective."""
    if not rows:
        return None
    met = missed = unmeasured = 0
    misses: list[str] = []
    for region in sorted(rows):
        for r in rows[region] or []:
            passed = r.get("passed")
            if passed is True:
                met += 1
            elif passed is False:
                missed += 1
                if len(misses) < SHOWN:
                    scenario = str(r.get("scenario", "?")).split(".")[-1]
                    misses.append(f"{region} {scenario}: {r.get('detail', r.get('criterion', '?'))}")
            else:
                unmeasured += 1
    total = met + missed + unmeasured
    if not total:
        return None
    summary = f"{met}/{total} met" + (f", {unmeasured} not measured" if unmeasured else "")
    return {"met": met, "missed": missed, "unmeasured": unmeasured, "summary": summary, "misses": misses}


def said(summary: dict[str, Any]) -> str:
    """One line for the Collected step and the event: how many were missed, and the first ones."""
    more = summary["missed"] - len(summary["misses"])
    return (f"{summary['missed']} of {summary['met'] + summary['missed'] + summary['unmeasured']} objective(s) "
            f"missed (data kept): {'; '.join(summary['misses'])}" + (f"; {more} more in the bundles" if more > 0 else ""))


__all__ = ["OBJECTIVES_MISSED", "SHOWN", "failure_said", "late_by", "objectives", "recorded", "said"]
