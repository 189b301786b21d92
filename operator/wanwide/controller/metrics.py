"""The operator's own Prometheus metrics."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, start_http_server

TRIALS = Gauge("wanwide_trials", "Trials by phase", ["phase"])
RECONCILE = Histogram("wanwide_reconcile_seconds", "Handler durations", ["handler"])
APPLY_ERRORS = Counter("wanwide_apply_errors_total", "Failed applies/deletes", ["kind"])
STEP_ERRORS = Counter("wanwide_trial_step_errors_total", "Trial steps that raised and are retried", ["phase"])
HELM_ERRORS = Counter("wanwide_helm_errors_total", "Failed helm upgrade --install")
PHASE_CHANGES = Counter("wanwide_trial_phase_changes_total", "Trial phase transitions", ["phase"])


def serve(port: int) -> None:
    start_http_server(port)


_BY_BENCHMARK: dict[str, dict[str, int]] = {}


def record_trials(benchmark: str, counts: dict[str, int]) -> None:
    """Keep ``wanwide_trials{phase}`` the sum over every Benchmark this operator saw."""
    _BY_BENCHMARK[benchmark] = {k: v for k, v in counts.items() if k != "total"}
    for phase in ("pending", "running", "succeeded", "failed"):
        TRIALS.labels(phase).set(sum(c.get(phase, 0) for c in _BY_BENCHMARK.values()))


def forget(benchmark: str) -> None:
    _BY_BENCHMARK.pop(benchmark, None)
