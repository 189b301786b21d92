"""The operator's per-trial and per-Benchmark series: one per running trial, gone when it ends."""

from __future__ import annotations

import datetime as dt

from prometheus_client import REGISTRY

from wanwide.core.api.benchmark import Timeouts
from wanwide.providers.kubernetes.controller import metrics

T0 = "2026-11-23T10:00:00Z"
START = dt.datetime(2026, 11, 23, 10, tzinfo=dt.UTC)


def _deadline(ns: str, trial: str, phase: str) -> float | None:
    return REGISTRY.get_sample_value("wanwide_trial_phase_deadline_timestamp_seconds",
                                     {"namespace": ns, "trial": trial, "phase": phase})


def test_a_phase_deadline_is_its_start_plus_its_timeout():
    assert metrics.deadline("Loading", T0, Timeouts(loading="2h")) == START + dt.timedelta(hours=2)
    assert metrics.deadline("Provisioning", T0, Timeouts()) == START + dt.timedelta(minutes=30)
    assert metrics.deadline("Pending", T0, Timeouts()) is None  # waiting for parallelism has no timeout
    assert metrics.deadline("Loading", None, Timeouts()) is None


def test_one_deadline_series_per_running_trial():
    d1, d2 = START + dt.timedelta(minutes=30), START + dt.timedelta(hours=3)
    metrics.record_phase("ns", "b-t000", "Provisioning", d1)
    assert _deadline("ns", "b-t000", "Provisioning") == d1.timestamp()
    metrics.record_phase("ns", "b-t000", "Loading", d2)
    assert _deadline("ns", "b-t000", "Provisioning") is None and _deadline("ns", "b-t000", "Loading") == d2.timestamp()
    metrics.record_phase("ns", "b-t000", "Failed", None)  # a final phase has no deadline
    assert _deadline("ns", "b-t000", "Loading") is None
    metrics.record_phase("ns", "b-t001", "Loading", d2)
    metrics.forget_trial("ns", "b-t001")  # the trial was deleted
    assert _deadline("ns", "b-t001", "Loading") is None


def test_trials_by_phase_per_benchmark_and_forgotten_with_it():
    metrics.record_trials("ns/b", {"total": 3, "pending": 1, "running": 1, "failed": 1})
    metrics.record_trials("other/b", {"total": 1, "succeeded": 1})

    def v(ns: str, phase: str) -> float | None:
        return REGISTRY.get_sample_value("wanwide_trials", {"namespace": ns, "benchmark": "b", "phase": phase})

    assert (v("ns", "pending"), v("ns", "running"), v("ns", "succeeded"), v("ns", "failed")) == (1, 1, 0, 1)
    assert v("other", "succeeded") == 1
    metrics.forget("ns/b")
    assert v("ns", "failed") is None and v("other", "succeeded") == 1
