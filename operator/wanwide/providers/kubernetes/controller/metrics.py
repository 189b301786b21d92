"""The operator's Prometheus metrics: the one catalogue (docs/operations.md describes each)."""

from __future__ import annotations

import datetime as dt

from prometheus_client import Counter, Gauge, Histogram, start_http_server

from wanwide.core.api.benchmark import Timeouts
from wanwide.core.api.units import seconds
from wanwide.core.lifecycle import TIMEOUT_FIELD as PHASE_TIMEOUT
from wanwide.core.timestamps import parse
from wanwide.providers.kubernetes.kube.client import API_REQUESTS
from wanwide.providers.kubernetes.kube.helm import CHART_ERRORS

TRIALS = Gauge("wanwide_trials", "Trials of a Benchmark by phase (pending, running, succeeded, failed)",
               ["namespace", "benchmark", "phase"])
RECONCILE = Histogram("wanwide_reconcile_seconds", "Handler durations", ["handler"])
APPLY_ERRORS = Counter("wanwide_apply_errors_total", "Server-side applies and deletes that failed", ["verb", "kind"])
STEP_ERRORS = Counter("wanwide_trial_step_errors_total",
                      "Trial steps that raised (tried again; a bug ends the Trial: reason InternalError)", ["phase"])
PHASE_CHANGES = Counter("wanwide_trial_phase_changes_total", "Trial phase transitions, by the phase entered",
                        ["phase"])
PHASE_SECONDS = Histogram("wanwide_trial_phase_duration_seconds", "Time trials spent in a phase, by the phase left",
                          ["phase"], buckets=(10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 10800, 21600))
PHASE_DEADLINE = Gauge("wanwide_trial_phase_deadline_timestamp_seconds",
                       "When a running trial's current phase times out (spec.timeouts), Unix time",
                       ["namespace", "trial", "phase"])

PHASE_GROUPS = ("pending", "running", "succeeded", "failed")
__all__ = ["API_REQUESTS", "APPLY_ERRORS", "CHART_ERRORS", "PHASE_CHANGES", "PHASE_DEADLINE", "PHASE_SECONDS",
           "RECONCILE", "STEP_ERRORS", "TRIALS", "deadline", "forget", "forget_trial", "record_phase", "record_trials", "serve"]


def serve(port: int) -> None:
    start_http_server(port)


def record_trials(benchmark: str, counts: dict[str, int]) -> None:
    """``wanwide_trials`` of one Benchmark (``namespace/name``)."""
    ns, name = benchmark.split("/", 1)
    for phase in PHASE_GROUPS:
        TRIALS.labels(ns, name, phase).set(counts.get(phase, 0))


def forget(benchmark: str) -> None:
    ns, name = benchmark.split("/", 1)
    for phase in PHASE_GROUPS:
        TRIALS.remove(ns, name, phase)


_PHASE_OF: dict[tuple[str, str], str] = {}


def record_phase(namespace: str, trial: str, phase: str, deadline: dt.datetime | None) -> None:
    """One deadline series per running trial, for its current phase (None: no timeout, no series)."""
    old = _PHASE_OF.pop((namespace, trial), None)
    if old is not None and (old != phase or deadline is None):
        PHASE_DEADLINE.remove(namespace, trial, old)
    if deadline is not None:
        PHASE_DEADLINE.labels(namespace, trial, phase).set(deadline.timestamp())
        _PHASE_OF[(namespace, trial)] = phase


def deadline(phase: str, started: str | None, timeouts: Timeouts | None) -> dt.datetime | None:
    """When ``phase``, started at ``started``, times out (None: a phase without a timeout)."""
    field = PHASE_TIMEOUT.get(phase)
    if not field or not started or timeouts is None:
        return None
    return parse(started) + dt.timedelta(seconds=seconds(getattr(timeouts, field)))


def forget_trial(namespace: str, trial: str) -> None:
    record_phase(namespace, trial, "", None)
