"""Pure pieces of a Trial's status in Kubernetes: its patch and Job-style conditions, the Benchmark's counts."""

from __future__ import annotations

import datetime as dt
from typing import Any

from wanwide.core.api.trial import PHASES, TERMINAL
from wanwide.core.lifecycle import run_key
from wanwide.core.timestamps import iso, now, parse


def set_condition(conds: list[dict[str, Any]], ctype: str, status: str, reason: str, message: str,
                  generation: int | None, at: dt.datetime) -> list[dict[str, Any]]:
    out = [c for c in conds if c.get("type") != ctype]
    old = next((c for c in conds if c.get("type") == ctype), None)
    when = old["lastTransitionTime"] if old and old.get("status") == status else iso(at)
    out.append({"type": ctype, "status": status, "reason": reason, "message": message[:1000],
                "observedGeneration": generation, "lastTransitionTime": when})
    return out


def outcome_conditions(conds: list[dict[str, Any]], phase: str, reason: str, message: str,
                       generation: int | None, at: dt.datetime) -> list[dict[str, Any]]:
    """Job-style conditions: ``Progressing`` while running, ``Complete`` and ``Failed`` once the phase is final.

    Succeeded gives Complete=True/Failed=False, Failed the reverse; a Benchmark whose spec is ``Invalid``
    is Failed=True until it is fixed. Before the end neither is present, so
    ``kubectl wait --for=condition=Complete`` (or ``Failed``) returns exactly when the run is over.
    """
    final = phase in TERMINAL or phase == "Invalid"
    out = set_condition(conds, "Progressing", "False" if final or phase == "Pending" else "True",
                        phase, message or phase, generation, at)
    out = [c for c in out if c["type"] != "Succeeded"]  # the condition's name before Complete
    if not final:
        return [c for c in out if c["type"] not in ("Complete", "Failed")]
    out = set_condition(out, "Complete", "True" if phase == "Succeeded" else "False", reason or phase, message,
                        generation, at)
    return set_condition(out, "Failed", "False" if phase == "Succeeded" else "True", reason or phase, message,
                         generation, at)


def status_patch(current: dict[str, Any], new: dict[str, Any], generation: int | None, at: dt.datetime) -> dict[str, Any]:
    """The Trial's status patch from ``current`` to ``new`` (the lifecycle's reducer's result): the fields that
    changed (None removes one), and the conditions that follow from the phase."""
    patch = {k: v for k, v in new.items() if current.get(k) != v}
    conds = list(current.get("conditions") or [])
    phase = new.get("phase") or "Pending"
    fresh = outcome_conditions(conds, phase, new.get("reason", ""), new.get("message", ""), generation, at)
    if "phase" in patch or fresh != conds or current.get("observedGeneration") != generation:
        patch["conditions"] = fresh
        patch["observedGeneration"] = generation
    return patch


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
    """Pending trials to start now (lowest position in the run order first, then index) so at
    most ``parallelism`` run."""
    c = counts(trials)
    free = max(0, parallelism - c["running"])
    pending = [t for t in trials if ((t.get("status") or {}).get("phase") or "Pending") == "Pending"]
    pending.sort(key=lambda t: run_key(t["spec"].get("position"), t["spec"]["index"]))
    return pending[:free]


__all__ = ["PHASES", "TERMINAL", "benchmark_phase", "counts", "iso", "now", "outcome_conditions", "parse",
           "set_condition", "status_patch", "to_start"]
