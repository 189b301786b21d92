"""The experiment while it runs, as Prometheus metrics of the runner (``wanwide runner run --metrics-port``):
iterations, failures and iteration times by region and scenario, read from Rally's own log lines as
they come, and the fault windows in force.

Rally logs every iteration twice, with the time of the line::

    2026-11-22 01:30:17.575 17710 INFO rally.task.runner [-] Task 5b9c… | ITER: 1 START
    2026-11-22 01:30:22.928 17710 INFO rally.task.runner [-] Task 5b9c… | ITER: 1 END: OK

numbered anew in each workload (``Running workload:``, then the workload's configuration naming its
scenario; the k-th workload is the task's k-th where a name is missing). An
iteration's time here is END − START of its lines (milliseconds; Rally's own ``duration`` in
rally.json, which the report reads, can differ by the logging's few milliseconds): a live view, not
the measurement. The fault windows come from the plan (``faults``, offsets from the common start),
as the member watch counts them.

Metrics (labels ``bench_namespace``, ``benchmark``, ``trial``, ``region``; the scenario's short name):
``wanwide_rally_iterations_total{scenario, result=ok|failed}``,
``wanwide_rally_iteration_seconds{scenario}`` (histogram), ``wanwide_rally_iterations_planned{scenario}``,
``wanwide_rally_running`` (1 while the measured task runs) and
``wanwide_fault_window_active{fault, kind}`` (1 while the window is in force).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from wanwide.core.contracts import FaultSpan
from wanwide.core.plan.faults import spans

BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 60.0, 120.0)
LABELS = ["bench_namespace", "benchmark", "trial", "region"]
_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\s.*\bITER:\s*(\d+)\s+(START|END)(?::\s*(\S+))?")
_WORKLOAD = re.compile(r"\bRunning workload:")
_SCENARIO_KEY = re.compile(r'^\s*"([A-Z][A-Za-z0-9]*\.[a-z][a-z0-9_]*)"\s*:\s*\{')


def registry() -> tuple[CollectorRegistry, dict[str, Any]]:
    """A registry of its own (never the operator's) and the runner's metrics in it."""
    reg = CollectorRegistry()
    m = {
        "iterations": Counter("wanwide_rally_iterations", "Rally iterations ended, by scenario and result (ok, failed)",
                              [*LABELS, "scenario", "result"], registry=reg),
        "seconds": Histogram("wanwide_rally_iteration_seconds", "Rally iteration times (END − START of Rally's log "
                             "lines), by scenario", [*LABELS, "scenario"], buckets=BUCKETS, registry=reg),
        "planned": Gauge("wanwide_rally_iterations_planned", "Iterations the measured task will run, by scenario",
                         [*LABELS, "scenario"], registry=reg),
        "running": Gauge("wanwide_rally_running", "1 while the measured Rally task runs", LABELS, registry=reg),
        "fault": Gauge("wanwide_fault_window_active", "1 while a fault window of the plan is in force (offsets from "
                       "the common start)", [*LABELS, "fault", "kind"], registry=reg),
    }
    return reg, m


def _short(name: str) -> str:
    return name.split(".")[-1]


def scenarios_of(task: dict[str, Any]) -> list[tuple[str, int | None]]:
    """(scenario, times) of each subtask of a Rally task (v2), in order: the workloads' positions."""
    out = []
    for st in task.get("subtasks") or []:
        for w in st.get("workloads") or [st]:
            name = next(iter(w.get("scenario") or {"?": None}))
            times = next((a.get("times") for a in (w.get("runner") or {}).values() if isinstance(a, dict)), None)
            out.append((name, times))
    return out


class Live:
    """Reads Rally's log lines (``__call__``) into the metrics; ``start``/``stop`` mark the measured task."""

    def __init__(self, labels: dict[str, str], task: dict[str, Any], faults: list[FaultSpan] | None = None,
                 reg: tuple[CollectorRegistry, dict[str, Any]] | None = None):
        self.reg, self.m = reg or registry()
        self.labels = labels
        self.scenarios = scenarios_of(task)
        self.faults = faults or []
        self.position = -1  # the workload running: an index into ``scenarios``
        self.current: str | None = None  # its scenario, as the workload's configuration names it
        self.awaiting = False  # between "Running workload:" and its scenario's name
        self.started: dict[tuple[int, int], float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        for name, times in self.scenarios:
            self.m["planned"].labels(**labels, scenario=_short(name)).set(times or 0)
            for result in ("ok", "failed"):
                self.m["iterations"].labels(**labels, scenario=_short(name), result=result)
        self.m["running"].labels(**labels).set(0)
        for f in self.faults:
            self.m["fault"].labels(**labels, fault=f.name, kind=f.kind).set(0)

    def scenario(self) -> str:
        if self.current:
            return _short(self.current)
        return _short(self.scenarios[self.position][0]) if 0 <= self.position < len(self.scenarios) else "?"

    def __call__(self, line: str) -> None:
        if _WORKLOAD.search(line):
            self.position, self.current, self.awaiting = self.position + 1, None, True
            self.started.clear()
            return
        if self.awaiting:
            k = _SCENARIO_KEY.match(line)
            if k:
                self.current, self.awaiting = k.group(1), False
                return
        m = _LINE.match(line)
        if not m:
            return
        at = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f" if "." in m.group(1) else "%Y-%m-%d %H:%M:%S")
        self.awaiting = False
        key = (self.position, int(m.group(2)))
        if m.group(3) == "START":
            self.started[key] = at.timestamp()
            return
        t0 = self.started.pop(key, None)
        scen = self.scenario()
        ok = (m.group(4) or "").upper() == "OK"
        self.m["iterations"].labels(**self.labels, scenario=scen, result="ok" if ok else "failed").inc()
        if t0 is not None and ok:
            self.m["seconds"].labels(**self.labels, scenario=scen).observe(max(at.timestamp() - t0, 0.0))

    def faults_at(self, elapsed_s: float) -> dict[tuple[str, str], bool]:
        """Which fault windows are in force ``elapsed_s`` after the common start."""
        return {(f.name, f.kind): any(a <= elapsed_s < b for a, b in spans(f.start_s, f.duration_s, f.every_s,
                                                                           elapsed_s + 1))
                for f in self.faults}

    def run(self, start_epoch: float, clock: Callable[[], float] = time.time, period_s: float = 1.0) -> threading.Thread:
        """Marks the task running and keeps the fault windows' gauges current until :meth:`stop`."""
        self.m["running"].labels(**self.labels).set(1)

        def loop() -> None:
            while True:
                for (name, kind), on in self.faults_at(clock() - start_epoch).items():
                    self.m["fault"].labels(**self.labels, fault=name, kind=kind).set(1 if on else 0)
                if self._stop.wait(period_s):
                    return

        t = threading.Thread(target=loop, name="live-faults", daemon=True)
        t.start()
        self._thread = t
        return t

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.m["running"].labels(**self.labels).set(0)
        for f in self.faults:
            self.m["fault"].labels(**self.labels, fault=f.name, kind=f.kind).set(0)


def serve(reg: CollectorRegistry, port: int, addr: str = "0.0.0.0") -> Any:
    """The registry on http://ADDR:PORT/metrics (a daemon thread); returns the server (``shutdown()``)."""
    server, _thread = start_http_server(port, addr=addr, registry=reg)
    return server
