"""A retry after runners were ready too late starts later (core/lifecycle ``later_start``, ``start_delay_s``).

Stop 56's VM Benchmark failed ``LoadFailed``: its runner needed 8 min to prepare under emulation, refused to start
3 min after its Job (``StartTooLate``), and the retry, with the same ``startDelay``, failed the same way. The runner
now records how late it was (``start.late_s``); the retry's runners start later by what they needed.
"""

from __future__ import annotations

import copy
import datetime as dt

import pytest

from wanwide.core import timestamps as ts
from wanwide.core.api.units import seconds
from wanwide.core.lifecycle import START_DELAY_MAX_S, late_by, later_start, span, start_delay_s
from wanwide.providers.kubernetes.controller.results import status_read

LATE = {"status": {"result": "failed", "reason": "StartTooLate", "message": "start_at … raise it"},
        "start": {"late_s": 300.0}}


def test_the_later_start_covers_what_the_runners_needed_and_stays_bounded():
    # 3 min asked, ready 5 min past it: (180 + 300) x 1.25 + 30 = 630 s
    assert later_start(180, [300.0]) == 630
    assert later_start(180, [12.0, 300.0, 45.0]) == 630  # the latest region decides
    assert later_start(120, [0.4]) == 190  # whole 10 s: (120.4 x 1.25 + 30 = 180.5) → 190
    assert later_start(180, []) is None and later_start(180, [0.0]) is None  # nobody late: no change
    assert later_start(3000, [2000.0]) == START_DELAY_MAX_S  # spec.workload.startDelay's own bound
    assert later_start(START_DELAY_MAX_S, [60.0]) is None  # at the bound already: nothing later to give
    assert (span(630), span(180), span(45), span(3600)) == ("10m30s", "3m", "45s", "60m")


@pytest.mark.parametrize("manifest, late", [
    (LATE, 300.0),
    ({**LATE, "start": {"late_s": 7}}, 7.0),
    ({**LATE, "status": {"result": "failed", "reason": "RallyFailed"}}, None),  # another failure: not late
    ({**LATE, "start": {}}, None),  # an older runner: not recorded
    ({**LATE, "start": {"late_s": True}}, None),
    ({**LATE, "start": {"late_s": "300"}}, None),
    ({**LATE, "start": {"late_s": float("inf")}}, None),  # a stored bundle is input: never unbounded
    ({**LATE, "start": {"late_s": float("nan")}}, None),
    ({**LATE, "start": {"late_s": -5}}, None),
    (["not a manifest"], None),
])
def test_how_late_a_runner_said_it_was(manifest, late):
    assert late_by(manifest) == late


def test_the_operator_reads_both_from_one_manifest():
    import json
    assert status_read(json.dumps(LATE).encode()) == ("StartTooLate: start_at … raise it", 300.0)
    assert status_read(b"{not json") == (None, None)


def test_the_delay_of_the_current_attempt():
    from tests.test_providers_agree import DOCUMENTS, _plans

    p = _plans(DOCUMENTS[0][1])[0]
    assert start_delay_s(p, {}) == seconds(p.spec.workload.start_delay)  # the spec's, unless a retry set one
    assert start_delay_s(p, {"loadStartDelay": "630s"}) == 630.0


def _run(monkeypatch, late_s: float) -> tuple[dict, list[dict], dict[int, float]]:
    """One trial through the operator's loop on the fake API server: attempt 1's runner in the first load region
    fails StartTooLate, ``late_s`` past its start (0: not recorded); attempt → its start's delay after the step
    that started it."""
    from tests.fakekube import FakeKube, FakeS3, drive
    from tests.fakelab import Clock
    from tests.test_providers_agree import DOCUMENTS, _plans

    docs = copy.deepcopy(DOCUMENTS[0][1])
    bench = next(d for d in docs if d["kind"] == "Benchmark")
    bench["spec"]["workload"] = {**bench["spec"]["workload"], "startDelay": "3m"}
    bench["spec"]["faults"] = None
    bench["spec"] = {k: v for k, v in bench["spec"].items() if v is not None}
    p = _plans(docs)[0]
    clock = Clock()
    kube = FakeKube(clock, p, FakeS3(), results={1: {p.load_regions[0]: "failed"}},
                    runner_said="StartTooLate: start_at is past: raise it", runner_late_s=late_s)
    for d in docs:
        if d["kind"] != "Benchmark":
            kube.apply(d)
    delays: dict[int, float] = {}

    def sample(status: dict) -> None:
        n, start = status.get("attempt"), status.get("loadStartAt")
        if status.get("phase") == "Loading" and start and n not in delays:
            delays[n] = (ts.parse(start) - clock.now()).total_seconds()

    final, log = drive(bench, p, kube, clock, monkeypatch, sample)
    return final, log, delays


def test_the_retry_starts_later_by_what_the_runner_needed(monkeypatch):
    final, log, delays = _run(monkeypatch, 300.0)
    assert (final["phase"], final["reason"]) == ("Succeeded", "Completed"), final.get("message")
    assert delays[1] == pytest.approx(180, abs=1.5)  # spec.workload.startDelay
    assert delays[2] == pytest.approx(630, abs=1.5)  # what attempt 1's runner needed, and a margin
    assert final.get("loadStartDelay") == "630s"
    [retry] = [e for e in log if e["reason"] == "LoadRetry"]
    assert "attempt 2 of" in retry["message"] and "starting 10m30s after its runners (was 3m" in retry["message"]
    assert "5m late" in retry["message"] and "StartTooLate" in retry["message"]


def test_a_runner_that_did_not_say_how_late_changes_nothing(monkeypatch):
    """The control: the same failure without ``start.late_s`` (an older runner) retries with the same delay."""
    final, log, delays = _run(monkeypatch, 0.0)
    assert (final["phase"], final["reason"]) == ("Succeeded", "Completed"), final.get("message")
    assert delays[1] == pytest.approx(180, abs=1.5) and delays[2] == pytest.approx(180, abs=1.5)
    assert not final.get("loadStartDelay")
    [retry] = [e for e in log if e["reason"] == "LoadRetry"]
    assert "starting" not in retry["message"]


def test_the_runner_records_how_late_when_it_refuses(tmp_path):
    """The runner's side, for real (no Rally needed: it refuses before preparing): a start an hour past."""
    from tests.runner.test_runner_errors import _bundles, _cfg
    from wanwide.pipeline.runner.cli import main as runner_main

    start = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=700)
    assert runner_main(["run", "--config", str(_cfg(tmp_path, start_at=start.isoformat()))]) == 1
    import json
    [b] = _bundles(tmp_path)
    m = json.loads((b / "manifest.json").read_text())
    assert late_by(m) == pytest.approx(700, abs=30)
    assert later_start(180, [late_by(m)]) >= 180 + 700
