"""The lab's lowest layer (providers/lab/trial.py ``LabOps``) as plain data, on a clock of its own.

Links live in a dict: a new deployment's are lifted (unshaped) until the trial shapes them, as the lab's
are; a probe between two regions measures what the links in force give (both one-way delays, times
``rtt_factor``; nothing through a cut); a cut is in force ``late_s`` after it is asked for; a shaper that
refuses (``shaping_refused``) raises as the lab's does. Deployment stages come up at once, or fail as
``deploy_fails`` says (every try of stage ``fail_stage``); runners are released at once and finish
``run_s`` after their start, each as ``results`` says (attempt → region → complete | failed); bundles
appear for the runners that completed; their upload fails when asked to (``stopped``); ``bug``: starting
the runners raises a TypeError, as a bug in a step would. Every call is recorded. Nothing here decides:
the lifecycle does, through the real :class:`wanwide.providers.lab.trial.LabTrial`.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from wanwide.core import lifecycle as lc
from wanwide.core.plan.links import OneWay, Pair
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.lab.procs import LabError
from wanwide.providers.lab.run import Live

T0 = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
BUG = "injected bug"


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
    pending: list[tuple[datetime, Pair, OneWay]] = field(default_factory=list)  # (in force at, pair, shaping)


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
                 deploy_fails: BaseException | None = None, fail_stage: str = "keystone-schema",
                 shaping_refused: bool = False, late_s: float = 0.0, bug: bool = False, out: Path | None = None,
                 slo: list[dict[str, Any]] | None = None, runner_said: str = ""):
        self.clock, self.rtt_factor, self.run_s = clock, rtt_factor, run_s
        self.results = results or {}
        self.upload_fails, self.deploy_fails, self.fail_stage = upload_fails, deploy_fails, fail_stage
        self.shaping_refused, self.late_s, self.bug = shaping_refused, late_s, bug
        self.out = out or Path("/nonexistent")
        self.slo = slo  # the objectives each runner records in its manifest (the slo rows)
        self.runner_said = runner_said  # what a failed runner says of its failure in its bundle
        self.live = Live(1, stream=io.StringIO())
        self.earlier: dict = {}
        self.calls: list[tuple[Any, ...]] = []
        self.deployments = 0
        self.bundles: set[str] = set()
        self.runner_sets: list[FakeRunners] = []

    def _at(self) -> float:
        return (self.clock.now() - T0).total_seconds()

    def deploy(self, p: TrialPlan, dep: Any, stage: lc.Stage, shared: bool, retry: bool, say: Any) -> FakeDep:
        self.calls.append(("deploy", self._at(), stage.name))
        if self.deploy_fails is not None and stage.name == self.fail_stage:
            raise self.deploy_fails
        if stage.service != lc.PLACE:
            return dep
        if dep is None:
            self.deployments += 1
            return FakeDep(f"d{self.deployments}", {pair: OneWay() for pair in p.links})  # lifted until shaped
        dep.links = dict(p.links)
        return dep

    def links(self, dep: FakeDep) -> dict[Pair, OneWay]:
        now = self.clock.now()
        for at, pair, shaping in [x for x in dep.pending if x[0] <= now]:
            dep.links[pair] = shaping
            dep.pending.remove((at, pair, shaping))
        return dict(dep.links)

    def shape(self, dep: FakeDep, want: dict[Pair, OneWay]) -> None:
        if self.shaping_refused:
            raise LabError("the shaper refused the link: Specified qdisc kind is unknown")
        now = self.clock.now()
        have = self.links(dep)
        dep.pending = [x for x in dep.pending if want.get(x[1]) == x[2]]
        for pair, shaping in want.items():
            if have.get(pair) == shaping or any(x[1] == pair for x in dep.pending):
                continue
            self.calls.append(("set_link", self._at(), *pair, shaping))
            late = self.late_s if shaping.loss_pct >= 100 else 0.0
            dep.pending.append((now + timedelta(seconds=late), pair, shaping))
        self.links(dep)

    def measure(self, dep: FakeDep, a: str, b: str, n: int) -> list[float | None]:
        if a == b:  # its own region: the platform's round trip alone
            return [0.2] * n
        links = self.links(dep)
        there, back = links[(a, b)], links[(b, a)]
        if there.loss_pct >= 100 or back.loss_pct >= 100:
            return [None] * n
        return [(there.delay_ms + back.delay_ms) * self.rtt_factor + 0.2] * n

    def record_network(self, dep: FakeDep, p: TrialPlan, rows: list[dict[str, Any]]) -> None:
        self.calls.append(("record_network", len(rows)))

    def start_runners(self, dep: FakeDep, p: TrialPlan, attempt: int) -> FakeRunners:
        if self.bug:
            raise TypeError(BUG)
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

    def said(self, runners: FakeRunners, regions: list[str]) -> dict[str, str]:
        return {r: self.runner_said for r in regions if self.runner_said}

    def progress(self, runners: FakeRunners) -> str:
        return ""

    def stop(self, runners: FakeRunners) -> None:
        runners.stopped = True

    def collect(self, p: TrialPlan) -> tuple[list[str], list[str], str]:
        return ([r for r in p.load_regions if r in self.bundles], [r for r in p.load_regions if r not in self.bundles],
                "/out/bundles")

    def objectives(self, p: TrialPlan) -> dict[str, list[dict[str, Any]] | None] | None:
        if any(r not in self.bundles for r in p.load_regions):
            return None
        return {r: self.slo for r in p.load_regions}

    def close(self, dep: FakeDep) -> None:
        dep.closed = True
        self.calls.append(("close", dep.id))


__all__ = ["BUG", "T0", "Clock", "FakeDep", "FakeLab", "FakeRunners", "LabError"]
