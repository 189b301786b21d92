"""Pure pieces of the Trial phase machine: timeouts, conditions, aggregation."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..api.benchmark import Timeouts
from ..api.trial import PHASES, TERMINAL
from ..api.units import seconds

PHASE_TIMEOUT = {
    "Provisioning": "provisioning",
    "VerifyingNetwork": "verifying_network",
    "Injecting": "injecting",
    "Loading": "loading",
    "Collecting": "collecting",
    "CleaningUp": "cleaning_up",
}


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse(t: str) -> dt.datetime:
    return dt.datetime.strptime(t, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)


def timed_out(phase: str, phase_start: str | None, timeouts: Timeouts, at: dt.datetime) -> bool:
    field = PHASE_TIMEOUT.get(phase)
    if not field or not phase_start:
        return False
    return (at - parse(phase_start)).total_seconds() > seconds(getattr(timeouts, field))


def forward(current: str | None, nxt: str) -> bool:
    """Phases only move forward; a terminal phase never changes."""
    if current in TERMINAL:
        return False
    cur = PHASES.index(current or "Pending")
    return PHASES.index(nxt) > cur


def set_condition(conds: list[dict[str, Any]], ctype: str, status: str, reason: str, message: str,
                  generation: int | None, at: dt.datetime) -> list[dict[str, Any]]:
    out = [c for c in conds if c.get("type") != ctype]
    old = next((c for c in conds if c.get("type") == ctype), None)
    when = old["lastTransitionTime"] if old and old.get("status") == status else iso(at)
    out.append({"type": ctype, "status": status, "reason": reason, "message": message[:1000],
                "observedGeneration": generation, "lastTransitionTime": when})
    return out


def counts(trials: list[dict[str, Any]]) -> dict[str, int]:
    c = {"total": len(trials), "pending": 0, "running": 0, "succeeded": 0, "failed": 0}
    for t in trials:
        phase = (t.get("status") or {}).get("phase") or "Pending"
        if phase == "Pending":
            c["pending"] += 1
        elif phase == "Succeeded":
            c["succeeded"] += 1
        elif phase == "Failed":
            c["failed"] += 1
        else:
            c["running"] += 1
    return c


def benchmark_phase(c: dict[str, int]) -> str:
    if c["total"] == 0:
        return "Pending"
    if c["succeeded"] + c["failed"] == c["total"]:
        return "Succeeded" if c["failed"] == 0 else "Failed"
    if c["running"] or c["succeeded"] or c["failed"]:
        return "Running"
    return "Pending"


def to_start(trials: list[dict[str, Any]], parallelism: int) -> list[dict[str, Any]]:
    """Pending trials to start now (lowest index first) so at most ``parallelism`` run."""
    c = counts(trials)
    free = max(0, parallelism - c["running"])
    pending = [t for t in trials if ((t.get("status") or {}).get("phase") or "Pending") == "Pending"]
    pending.sort(key=lambda t: t["spec"]["index"])
    return pending[:free]


__all__ = ["PHASES", "TERMINAL", "timed_out", "forward", "set_condition", "counts", "benchmark_phase", "to_start"]
