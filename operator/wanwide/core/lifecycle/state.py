"""A trial's state, and the one reducer that moves it: :func:`apply` is the only place a phase changes.

The state is a plain dict (each provider keeps it its own way: a resource's status, a record). Both
providers record every step with :func:`apply`, which merges the step's fields and the provider's own
record, moves the phase (forward only) and gives the phase change's entry of the event log; a provider
that tried to write a field the lifecycle owns (:data:`OWNED`) is refused.
"""

from __future__ import annotations

from datetime import datetime

from wanwide.core.api.trial import PHASES, TERMINAL
from wanwide.core.lifecycle.step import Event, Status, Step
from wanwide.core.timestamps import iso, parse

# what only the lifecycle writes (decide's steps, and apply's phase moves); a provider records the rest
OWNED = frozenset({
    "phase", "phaseStartTime", "reason", "message", "outcome", "outcomeMessage", "completionTime", "startTime",
    "done", "attempt", "networkCheck", "deployTries", "faultsInForce", "faultsInjected", "faultsLate", "resultsURI",
    "objectives",
})


def forward(current: str | None, nxt: str) -> bool:
    """Phases only move forward; a terminal phase never changes."""
    if current in TERMINAL:
        return False
    return PHASES.index(nxt) > PHASES.index(current or "Pending")


def apply(state: Status, step: Step, now: datetime, recorded: Status | None = None) -> tuple[Status, list[Event]]:
    """The state after ``step`` at ``now``: its fields, then the provider's own ``recorded`` ones (never one of
    :data:`OWNED`), its message, a forward phase move (when it started, why; the outcome's message on the way
    to a failed clean-up; the completion time at the end); and the event log's entry for that move."""
    mine = OWNED & set(recorded or {})
    if mine:
        raise ValueError(f"a provider recorded {sorted(mine)}: only the lifecycle writes those")
    new = {**state, **step.status, **(recorded or {})}
    if step.message:
        new["message"] = step.message
    old = state.get("phase") or "Pending"
    if not step.phase or not forward(old, step.phase):
        return new, []
    new |= {"phase": step.phase, "phaseStartTime": iso(now), "reason": step.reason}
    if step.phase == "CleaningUp" and step.status.get("outcome") == "Failed":
        new["outcomeMessage"] = step.message
    if step.phase in TERMINAL:
        new["completionTime"] = iso(now)
    failed = step.phase == "Failed" or (step.phase != "Succeeded" and new.get("outcome") == "Failed")
    return new, [Event(step.phase, f"{old} → {step.phase}: {step.message or step.reason}",
                       "Warning" if failed else "Normal")]


def phase_of(state: Status) -> str:
    return state.get("phase") or "Pending"


def done(state: Status) -> set[str]:
    return set(state.get("done") or [])


def marked(state: Status, *items: str) -> Status:
    return {"done": sorted(done(state) | set(items))}


def attempt_of(state: Status) -> int:
    return max(1, int(state.get("attempt") or 1))


def elapsed_s(state: Status, now: datetime) -> float | None:
    """Seconds since the current attempt's load start (None: not started)."""
    start = state.get("loadStartAt")
    return (now - parse(start)).total_seconds() if start else None


__all__ = ["OWNED", "apply", "attempt_of", "done", "elapsed_s", "forward", "marked", "phase_of"]
