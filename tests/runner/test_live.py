"""The runner's live metrics on a real Rally log (the lab quickstart's task-start log): what a Prometheus scrape
of ``wanwide runner run --metrics-port`` reads while Rally runs, against what Rally's own report says."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.ports import free_port
from wanwide.core.contracts import FaultSpan
from wanwide.pipeline.runner import live

REAL = Path(__file__).resolve().parents[1] / "data" / "bundles" / "runner-real"
LABELS = {"bench_namespace": "lab", "benchmark": "lab-quickstart", "trial": "t000", "region": "r3"}


def _scrape(port: int) -> dict[tuple[str, tuple], float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def _get(samples: dict, name: str, **labels: str) -> float:
    want = tuple(sorted({**LABELS, **labels}.items()))
    return samples[(name, want)]


@pytest.fixture(scope="module")
def scraped():
    task = json.loads((REAL / "task.json").read_text())
    lv = live.Live(LABELS, task)
    port = free_port()
    server = live.serve(lv.reg, port, addr="127.0.0.1")
    for line in (REAL / "logs" / "04-task-start.log").read_text().splitlines():
        lv(line)
    yield _scrape(port)
    server.shutdown()


def test_iterations_and_times_agree_with_rallys_report(scraped):
    rally = json.loads((REAL / "rally.json").read_text())
    for st in rally["tasks"][0]["subtasks"]:
        for w in st["workloads"]:
            scen = next(iter(w["scenario"])).split(".")[-1]
            ok = [it["duration"] for it in w["data"] if not it["error"]]
            assert _get(scraped, "wanwide_rally_iterations_total", scenario=scen, result="ok") == len(ok)
            assert _get(scraped, "wanwide_rally_iterations_total", scenario=scen, result="failed") == \
                len(w["data"]) - len(ok)
            assert _get(scraped, "wanwide_rally_iterations_planned", scenario=scen) == len(w["data"])
            assert _get(scraped, "wanwide_rally_iteration_seconds_count", scenario=scen) == len(ok)
            # END − START of the log lines against Rally's measured duration: a few ms of logging each
            got = _get(scraped, "wanwide_rally_iteration_seconds_sum", scenario=scen)
            assert got == pytest.approx(sum(ok), abs=0.02 * len(ok)), (scen, got, sum(ok))


def test_fault_windows_in_force_from_the_common_start():
    faults = [FaultSpan(name="dropout0", kind="dropout", regions=["r2"], start_s=0, duration_s=5, every_s=20),
              FaultSpan(name="loss0", kind="loss", regions=["r3"], start_s=30, duration_s=10)]
    lv = live.Live(LABELS, {"version": 2, "subtasks": []}, faults)
    assert lv.faults_at(10) == {("dropout0", "dropout"): False, ("loss0", "loss"): False}
    assert lv.faults_at(22) == {("dropout0", "dropout"): True, ("loss0", "loss"): False}
    assert lv.faults_at(35) == {("dropout0", "dropout"): False, ("loss0", "loss"): True}
    now = [1000.0 + 41.5]  # the second cut of the dropout: 40 s – 45 s
    lv.run(start_epoch=1000.0, clock=lambda: now[0], period_s=0.05).join(0.2)
    port = free_port()
    server = live.serve(lv.reg, port, addr="127.0.0.1")
    s = _scrape(port)
    assert _get(s, "wanwide_fault_window_active", fault="dropout0", kind="dropout") == 1
    assert _get(s, "wanwide_fault_window_active", fault="loss0", kind="loss") == 0
    assert _get(s, "wanwide_rally_running") == 1
    lv.stop()
    s = _scrape(port)
    assert _get(s, "wanwide_rally_running") == 0 and _get(s, "wanwide_fault_window_active", fault="dropout0",
                                                          kind="dropout") == 0
    server.shutdown()
