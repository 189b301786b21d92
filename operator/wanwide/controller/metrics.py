"""The operator's own Prometheus metrics."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, start_http_server

TRIALS = Gauge("wanwide_trials", "Trials by phase", ["phase"])
RECONCILE = Histogram("wanwide_reconcile_seconds", "Handler durations", ["handler"])
APPLY_ERRORS = Counter("wanwide_apply_errors_total", "Failed applies/deletes", ["kind"])
HELM_ERRORS = Counter("wanwide_helm_errors_total", "Failed helm upgrade --install")
PHASE_CHANGES = Counter("wanwide_trial_phase_changes_total", "Trial phase transitions", ["phase"])


def serve(port: int) -> None:
    start_http_server(port)
