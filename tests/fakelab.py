"""The lab's lowest layer (providers/lab/trial.py ``LabOps``) as plain data, on a clock of its own.

Links live in a dict; a probe between two regions measures what the links in force give (both
one-way delays, times ``rtt_factor``; nothing through a cut); runners are released at once and
finish ``run_s`` after their start, each as ``results`` says (attempt → region → complete | failed);
bundles appear for the runners that completed; their upload fails when asked to (``stopped``). Every call is
recorded. Nothing here decides: the lifecycle does, through the real :class:`wanwide.providers.lab.trial.LabTrial`.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from wanwide.core.plan.links import OneWay, Pair
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.lab.procs import LabError
from wanwide.providers.lab.run import Live

T0 = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)


class Clock:
    def __init__(self, start: datetime = T0):
        self.t = start

    def now(self) -> datetime:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += timedelta(seconds=max(s, 0.001))


@dataclass
class FakeDep:
    id: str
    links: dict[Pair, OneWay]
    trials: list[str] = field(default_factory=list)
    closed: bool = False


@dataclass
class FakeRunners:
    attempt: int
    regions: list[str]
    started: datetime | None = None
    stopped: bool = False
    store_error: str | None = None


class FakeLab:
    """A stand-in for LabRun's operations (the lab's lowest layer); ``out``, ``live`` and ``earlier`` (no
    ``--done`` data set) as LabRun has them."""

    def __init__(self, clock: Clock, *, rtt_factor: float = 1.0, run_s: float = 60.0,
                 results: dict[int, dict[str, str]] | None = None, upload_fails: bool = False,
                 deploy_fails: BaseException | None = None, out: Path | None = None):
        self.clock, self.rtt_factor, self.run_s = clock, rtt_factor, run_s
        self.results = results or {}
        self.upload_fails, self.deploy_fails = upload_fails, deploy_fails
        self.out = out or Path("/nonexistent")
        self.live = Live(1, stream=io.StringIO())
        self.earlier: dict = {}
        self.calls: list[tuple[Any, ...]] = []
        self.deployments = 0
        self.bundles: set[str] = set()
        self.runner_sets: list[FakeRunners] = []

    def _at(self) -> float:
        return (self.clock.now() - T0).total_seconds()

    def deploy(self, p: TrialPlan, dep: Any, shared: bool, say: Any) -> FakeDep:
        self.calls.append(("deploy", self._at()))
        if self.deploy_fails is not None:
            raise self.deploy_fails
        if dep is None:
            self.deployments += 1
            return FakeDep(f"d{self.deployments}", dict(p.links))
        dep.links = dict(p.links)
        return dep

    def links(self, dep: FakeDep) -> dict[Pair, OneWay]:
        return dep.links

    def set_link(self, dep: FakeDep, a: str, b: str, shaping: OneWay) -> None:
        self.calls.append(("set_link", self._at(), a, b, shaping))
        dep.links[(a, b)] = shaping

    def wan_trace(self, p: TrialPlan) -> list[tuple]:
        """The WAN's changes as (seconds from the attempt's load start, attempt, links unlike the plan's)."""
        state, out, last = dict(p.links), [], ()
        for t in sorted({c[1] for c in self.calls if c[0] == "set_link"}):
            for c in self.calls:
                if c[0] == "set_link" and c[1] == t:
                    state[(c[2], c[3])] = c[4]
            diff = tuple(sorted((pair, s) for pair, s in state.items() if s != p.links[pair]))
            if diff != last:
                started = [r for r in self.runner_sets if r.started and (r.started - T0).total_seconds() <= t]
                rel = round(t - (started[-1].started - T0).total_seconds(), 3) if started else None
                out.append((rel, started[-1].attempt if started else None, diff))
                last = diff
        return out

    def measure(self, dep: FakeDep, a: str, b: str) -> list[float]:
        if a == b:  # its own region: the platform's round trip alone
            return [0.2] * 5
        there, back = dep.links[(a, b)], dep.links[(b, a)]
        if there.loss_pct >= 100 or back.loss_pct >= 100:
            return []
        return [(there.delay_ms + back.delay_ms) * self.rtt_factor + 0.2] * 5

    def record_network(self, dep: FakeDep, p: TrialPlan, rows: list[dict[str, Any]]) -> None:
        self.calls.append(("record_network", len(rows)))

    def start_runners(self, dep: FakeDep, p: TrialPlan, attempt: int) -> FakeRunners:
        self.calls.append(("start_runners", self._at(), attempt))
        r = FakeRunners(attempt, list(p.load_regions))
        self.runner_sets.append(r)
        return r

    def ready(self, runners: FakeRunners) -> bool:
        return True

    def release(self, dep: FakeDep, p: TrialPlan, runners: FakeRunners, say: Any) -> datetime:
        runners.started = self.clock.now()
        return runners.started

    def poll(self, runners: FakeRunners) -> dict[str, str]:
        if runners.started is None or runners.stopped:
            return {r: "failed" if runners.stopped else "running" for r in runners.regions}
        if (self.clock.now() - runners.started).total_seconds() < self.run_s:
            return dict.fromkeys(runners.regions, "running")
        out = {r: self.results.get(runners.attempt, {}).get(r, "complete") for r in runners.regions}
        if self.upload_fails:  # measured; the store does not answer: kept locally
            out = {r: "stopped" if s == "complete" else s for r, s in out.items()}
            runners.store_error = "upload failed: results store unreachable; the bundle is kept in /out/bundles"
        self.bundles |= {r for r, s in out.items() if s == "complete"}
        return out

    def progress(self, runners: FakeRunners) -> str:
        return ""

    def stop(self, runners: FakeRunners) -> None:
        runners.stopped = True

    def collect(self, p: TrialPlan) -> tuple[list[str], list[str], str]:
        return ([r for r in p.load_regions if r in self.bundles], [r for r in p.load_regions if r not in self.bundles],
                "/out/bundles")

    def close(self, dep: FakeDep) -> None:
        dep.closed = True
        self.calls.append(("close", dep.id))


__all__ = ["T0", "Clock", "FakeDep", "FakeLab", "FakeRunners", "LabError"]
