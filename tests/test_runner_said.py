"""A failed runner's own word reaches the Trial's events and status (core/lifecycle ``failure_said``,
``runners_said``; each provider reads the bundle the runner stored for the attempt).

Stop 56's VM Benchmark failed ``LoadFailed`` with "see the runners' logs" while its runner had stored why in its
bundle: ``StartTooLate`` ("preparation and warm-up took longer than spec.workload.startDelay: raise it").
"""

from __future__ import annotations

import json

from wanwide.core.api.benchmark import Benchmark
from wanwide.core.lifecycle import RUNNER_SAID_MAX, failure_said, runners_said
from wanwide.core.plan.trial import plan
from wanwide.providers.kubernetes.controller.results import MANIFEST_MAX, status_said
from wanwide.providers.lab.results import bundles_root, failure_of

LATE = {"result": "failed", "reason": "StartTooLate", "message": "start_at is 324.4s in the past: raise it"}


def test_a_manifest_says_why_its_run_failed_and_nothing_otherwise():
    assert failure_said({"status": LATE}) == "StartTooLate: start_at is 324.4s in the past: raise it"
    assert failure_said({"status": {"result": "failed", "reason": "RallyFailed"}}) == "RallyFailed"
    assert failure_said({"status": {"result": "succeeded", "reason": "Completed"}}) is None
    assert failure_said({"status": {"result": "failed"}}) is None  # no reason: nothing to say
    assert failure_said(["not", "a", "manifest"]) is None and failure_said({"status": "x"}) is None


def test_the_words_are_per_region_and_bounded():
    long = "x" * 5000
    said = runners_said(["r1", "r2", "r3"], {"r1": "A: a", "r3": long})
    assert said.startswith("r1: A: a; r3: x") and len(said) < RUNNER_SAID_MAX + 40 and said.endswith("…")
    assert runners_said(["r2"], {"r1": "A: a"}) == ""


def test_the_operator_reads_a_stored_manifest_bounded():
    assert status_said(json.dumps({"status": LATE}).encode()).startswith("StartTooLate: ")
    assert status_said(b"{not json") is None
    assert status_said(b" " * (MANIFEST_MAX + 1)) is None  # never parsed beyond the bound


def test_the_lab_reads_the_attempts_own_bundle(tmp_path):
    bench = Benchmark.model_validate({"metadata": {"name": "said", "namespace": "t"}, "spec": {
        "topology": {"regions": [{"name": "r1"}, {"name": "r2"}]},
        "workload": {"scenarios": [{"name": "get_entities"}]}}})
    (p,) = plan(bench, bench.spec.topology)
    root = bundles_root(tmp_path, p) / p.benchmark / p.id / "r1"
    for attempt, status in ((1, {"result": "failed", "reason": "RallyFailed", "message": "sla"}), (2, LATE)):
        d = root / f"attempt-{attempt}-20261130t0000{attempt}z-abc"
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps({"status": status}))
    assert failure_of(tmp_path, p, "r1", 1) == "RallyFailed: sla"
    assert failure_of(tmp_path, p, "r1", 2).startswith("StartTooLate: ")
    assert failure_of(tmp_path, p, "r2", 2) is None  # no bundle
    (root / "attempt-2-20261130t00002z-abc" / "manifest.json").write_text("{broken")
    assert failure_of(tmp_path, p, "r1", 2) is None
