"""Pure pieces of the Trial phase machine: timeouts, conditions, aggregation."""

from __future__ import annotations

import datetime as dt
from typing import Any

from wanwide.core.api.trial import PHASES, TERMINAL
from wanwide.core.lifecycle import forward, run_key
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


def trial_status(current: dict[str, Any], decision_phase: str | None, reason: str, message: str,
                 fields: dict[str, Any], generation: int | None, at: dt.datetime) -> dict[str, Any]:
    """The status patch after a step: the decision's fields, a forward phase move, the conditions."""
    phase = current.get("phase") or "Pending"
    patch = dict(fields)
    if message:
        patch["message"] = message
    moved = bool(decision_phase) and forward(phase, decision_phase)
    if moved:
        phase = decision_phase  # type: ignore[assignment]
        patch |= {"phase": phase, "phaseStartTime": iso(at), "reason": reason}
        if phase == "CleaningUp" and fields.get("outcome") == "Failed":
            patch["outcomeMessage"] = message
        if phase in TERMINAL:
            patch["completionTime"] = iso(at)
    conds = list(current.get("conditions") or [])
    new = outcome_conditions(conds, phase, patch.get("reason", current.get("reason", "")),
                             patch.get("message", current.get("message", "")), generation, at)
    if moved or new != conds or current.get("observedGeneration") != generation:
        patch["conditions"] = new
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


__all__ = ["PHASES", "TERMINAL", "benchmark_phase", "counts", "forward", "iso", "now", "outcome_conditions", "parse",
           "set_condition", "to_start", "trial_status"]
