"""What `kubectl get benchmarks` says while a Benchmark runs: the values its trials run (a sweep's, not the
spec's one value the matrix overrides) and the time left from the trials done and their times."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.conftest import ROOT
from wanwide.core import progress
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan
from wanwide.providers.kubernetes.controller import benchmark as bm
from wanwide.providers.kubernetes.render import trial_object

T0 = dt.datetime(2026, 11, 29, 8, 0, tzinfo=dt.UTC)


def _trials(example: str, name: str) -> tuple[dict, list[dict]]:
    docs = load_documents([(ROOT / "manifests" / "examples" / example).read_text()])
    bench = next(b for b in docs.benchmarks if b.metadata.name == name)
    ts = [trial_object(p, 1) for p in plan(bench, docs.topology_for(bench))]
    return bench.model_dump(by_alias=True, exclude_none=True, mode="json"), ts


@pytest.mark.parametrize("example, name, backend, load, sweep", [
    ("study.yaml", "study-3", "mariadb,galera", "light", "backend=mariadb,galera rtt=0ms,100ms,300ms"),
    ("delay-sweep.yaml", "delay-sweep", "mariadb,galera,cockroachdb", "light,high",
     "backend=mariadb,galera,cockroachdb load=light,high rtt=0ms,100ms,300ms"),
])
def test_columns_say_what_the_trials_run(example, name, backend, load, sweep):
    bench, ts = _trials(example, name)
    s = bm.summary(bench, ts, T0)
    assert (s["backend"], s["load"], s["sweep"]) == (backend, load, sweep)
    assert s["timeLeft"] == "unknown" and s["estimatedCompletionTime"] is None  # no trial done yet


def test_a_column_too_narrow_for_the_values_says_matrix():
    assert progress.shown([f"{r}ms" for r in range(0, 500, 50)]) == "matrix (10)"
    assert progress.shown(["mariadb"]) == "mariadb" and progress.shown([]) is None


def _run(t: dict, phase: str, start: dt.datetime, end: dt.datetime | None = None) -> None:
    t["status"] = {"phase": phase, "startTime": bm.iso(start), **({"completionTime": bm.iso(end)} if end else {})}


def test_time_left_from_the_trials_done():
    bench, ts = _trials("study.yaml", "study-3")  # 6 points × 5 repetitions, one trial at a time
    order = sorted(ts, key=lambda t: t["spec"]["position"])
    galera = [t for t in order if t["spec"]["parameters"]["backend"] == "galera"]
    mariadb = [t for t in order if t["spec"]["parameters"]["backend"] == "mariadb"]
    _run(galera[0], "Succeeded", T0, T0 + dt.timedelta(minutes=20))
    _run(mariadb[0], "Succeeded", T0 + dt.timedelta(minutes=20), T0 + dt.timedelta(minutes=30))
    now = T0 + dt.timedelta(minutes=34)
    _run(mariadb[1], "Loading", T0 + dt.timedelta(minutes=30))
    s = bm.summary(bench, ts, now)
    # the running trial: its point has no done trial yet? then the mean of all (15 min) less its 4 min;
    # then each pending trial: 20 min for Galera's point done, 10 for MariaDB's, else the mean, 15
    done_points = {progress.point_key(t["spec"]["parameters"]): m for t, m in ((galera[0], 20), (mariadb[0], 10))}
    expect = lambda t: done_points.get(progress.point_key(t["spec"]["parameters"]), 15)  # noqa: E731
    left = expect(mariadb[1]) - 4 + sum(expect(t) for t in order if not t.get("status"))
    assert s["timeLeft"] == progress.duration_text(left * 60)
    assert s["estimatedCompletionTime"] == bm.iso(now + dt.timedelta(minutes=left))
    assert s["progress"] == "2/30"


def test_parallel_slots_and_the_end():
    key = (("backend", "mariadb"),)
    # two slots: the running trial's slot frees in 5 min, the other at once: 4 trials of 10 min → 25 min
    assert progress.time_left([(key, 600.0)], [(key, 300.0)], [key] * 4, 2) == pytest.approx(1500.0)
    assert progress.time_left([(key, 600.0)], [], [], 1) == 0.0
    assert progress.time_left([], [(key, 30.0)], [], 1) is None  # nothing done: nothing known
    assert progress.duration_text(0) == "0m" and progress.duration_text(61) == "2m"
    assert progress.duration_text(3 * 3600 + 1) == "3h01m" and progress.duration_text(50 * 3600) == "2d2h"
