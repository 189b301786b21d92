"""One trial on this machine: the lifecycle's steps (core/lifecycle), observed and carried out the lab's way.

The lab decides nothing the operator would decide otherwise: :class:`LabTrial` asks the lifecycle for
each step, translates its actions into the lab's own operations, which :class:`LabOps` names (the lowest
layer: bring a deployment stage up, read and shape the links, measure, start, release, poll and stop runners,
collect, close), and records each step with the lifecycle's reducer. ``Deploy`` brings a stage up (the
trial's namespaces and links, or a shared deployment re-shaped; the database; the Keystones), a stage that
failed again when the lifecycle retries it; ``ShapeWan`` makes every link :func:`wanted`; ``Measure`` runs
the one probe between the pairs the lifecycle names; ``StartRunners`` starts the runners and, once all are
ready and the machine is quiet, releases them together and records that instant as the load start (a
runner is complete once its bundle is stored: the lab stores it from the host, ``stopped`` when that fails);
``CleanUp`` stops what runs and closes the deployment unless it serves the next trial. A fault is in force
once the links read back what the schedule puts in force. A step that raises is the lifecycle's to decide
(a transient error is tried again after the one back-off). Every phase change and event goes to the trial's
event log (``events/<benchmark>/<trial>.jsonl``).
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from wanwide.core import lifecycle as lc
from wanwide.core import timestamps as ts
from wanwide.core.api.trial import TERMINAL
from wanwide.core.contracts import event_entry
from wanwide.core.errors import backoff_s, transient
from wanwide.core.plan.links import OneWay, Pair
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.lab.procs import LabError

MEASURE_AT_ONCE = 16  # pairs measured at the same time (each a few pings: no load to speak of)

Say = Callable[..., None]


class LabOps(Protocol):
    """The lab's lowest layer: what the lifecycle's actions come down to on this machine."""

    def deploy(self, p: TrialPlan, dep: Any, stage: lc.Stage, shared: bool, retry: bool,
               say: Say) -> Any: ...  # the deployment with ``stage`` up (LabError: it could not be)
    def links(self, dep: Any) -> dict[Pair, OneWay]: ...  # each link's shaping as in force now
    def shape(self, dep: Any, want: dict[Pair, OneWay]) -> None: ...  # every link as asked (LabError: refused)
    def measure(self, dep: Any, a: str, b: str, n: int) -> list[float | None]: ...
    def start_runners(self, dep: Any, p: TrialPlan, attempt: int) -> Any: ...  # a handle on them
    def ready(self, runners: Any) -> bool: ...  # all prepared (or ended): the load may start
    def release(self, dep: Any, p: TrialPlan, runners: Any, say: Say) -> datetime: ...  # the load start
    def poll(self, runners: Any) -> dict[str, str]: ...  # region → running | complete | failed | stopped
    def said(self, runners: Any, regions: list[str]) -> dict[str, str]: ...  # region → a failed runner's word
    def progress(self, runners: Any) -> str: ...
    def stop(self, runners: Any) -> None: ...
    def collect(self, p: TrialPlan) -> tuple[list[str], list[str], str]: ...  # (found, missing, where)
    def record_network(self, dep: Any, p: TrialPlan, rows: list[dict[str, Any]]) -> None: ...
    def close(self, dep: Any) -> None: ...


def wanted(p: TrialPlan, elapsed_s: float | None) -> dict[Pair, OneWay]:
    """What each link carries ``elapsed_s`` after the load start (None: the plan's WAN): the WAN the fault
    schedule puts in force, a cut link losing everything."""
    wan = lc.wan_in_force(p, elapsed_s)
    return {pair: wan.effective(pair) for pair in p.links}


@dataclass
class LabTrial:
    """One trial through the lifecycle; :meth:`run` until it ends."""

    ops: LabOps
    p: TrialPlan
    say: Say
    events_dir: Path | None = None
    dep: Any = None  # the deployment it runs on (given: shared with the trial before)
    shared: bool = False
    keep: bool = False  # the deployment serves the next trial: not closed at a successful end
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    sleep: Callable[[float], None] = time.sleep
    poll_s: float = 2.0  # look at least this often (runners, the load's progress)
    min_gap_s: float = 0.25  # and at most this often when nothing moved: a step asking "again at once" while
    # it waits on something outside (runners preparing, warming up) would otherwise spin a core of 2
    status: dict[str, Any] = field(default_factory=dict)
    log: list[dict[str, Any]] = field(default_factory=list)  # the lifecycle's event log
    stages: dict[str, lc.Progress] = field(default_factory=dict)  # each deployment stage as it went
    shape_error: str | None = None  # why a link could not be set
    runners: dict[int, Any] = field(default_factory=dict)  # attempt → its runners
    released: set[int] = field(default_factory=set)
    in_force: dict[int, dict[str, float]] = field(default_factory=dict)  # attempt → fault occurrence → first seen
    shaped_for: float | None = None  # the time from the load start the links were last shaped for
    measured: dict[int, dict[Pair, list[float]]] = field(default_factory=dict)  # check → samples per pair
    rows: list[dict[str, Any]] = field(default_factory=list)  # the last measurement against the plan
    cleaned: bool = False

    # ---- observe ------------------------------------------------------------------------------

    def seen(self, now: datetime) -> lc.Seen:
        """What the trial's current phase reads (``lifecycle.parts``), as seen here."""
        out: dict[str, Any] = {}
        for part in lc.parts(self.status):
            out |= getattr(self, f"_{part}")(now)
        return lc.Seen(**out)

    def _start(self, now: datetime) -> dict[str, Any]:
        return {"start": True}  # the lab's turn: run() is called in the run order

    def _deployment(self, now: datetime) -> dict[str, Any]:
        return {"stages": dict(self.stages)}

    def _wan(self, now: datetime) -> dict[str, Any]:
        ok = self.dep is not None and self._shaped(wanted(self.p, None), self.p.links)
        return {"wan": lc.Progress(done=ok and "wan" in lc.done(self.status), failed=self.shape_error,
                                   waiting="shaping the WAN")}

    def _network(self, now: datetime) -> dict[str, Any]:
        return {"network": self.measured.get(lc.check_of(self.status))}

    def _load(self, now: datetime) -> dict[str, Any]:
        n = lc.attempt_of(self.status)
        if n not in self.runners:
            return {}
        states = self.ops.poll(self.runners[n])
        failed = [r for r, s in states.items() if s == "failed"]
        return {"runners": states, "runner_said": self.ops.said(self.runners[n], failed) if failed else {},
                "faults_injected": self._faults(now), "fault_why": self.shape_error,
                "store_error": getattr(self.runners[n], "store_error", None)}

    def _bundles(self, now: datetime) -> dict[str, Any]:
        return {"bundles": self.ops.collect(self.p), "objectives": self.ops.objectives(self.p)}

    def _cleanup(self, now: datetime) -> dict[str, Any]:
        return {"cleaned": lc.Progress(done=self.cleaned)}

    def _placement(self, now: datetime) -> dict[str, Any]:
        return {}  # one machine: every process runs where it is started

    def _shaped(self, want: dict[Pair, OneWay], pairs: Any) -> bool:
        have = self.ops.links(self.dep)
        return all(have.get(pair) == want[pair] for pair in pairs)

    def _faults(self, now: datetime) -> dict[str, float] | None:
        """Each fault occurrence in force that the links were shaped for and read back what the schedule puts in
        force → seconds after the load start when they first did."""
        elapsed = lc.elapsed_s(self.status, now)
        if not self.p.faults or elapsed is None or self.dep is None:
            return None
        seen = self.in_force.setdefault(lc.attempt_of(self.status), {})
        want = wanted(self.p, elapsed)
        for a in lc.in_force(self.p.faults, elapsed):
            shaped = self.shaped_for is not None and self.shaped_for >= a.start_s
            if a.name not in seen and shaped and self._shaped(want, a.window.links):
                seen[a.name] = elapsed
        return {a.name: seen[a.name] for a in lc.in_force(self.p.faults, elapsed) if a.name in seen}

    # ---- act ------------------------------------------------------------------------------------

    def act(self, a: lc.LifecycleAction) -> dict[str, Any]:
        """Carry out one action; what the lab records (the load start)."""
        if isinstance(a, lc.Deploy):
            if not a.ahead:
                try:
                    self.dep = self.ops.deploy(self.p, self.dep, a.stage, self.shared, a.retry, self.say)
                    self.stages[a.stage.name] = lc.Progress(done=True)
                except LabError as e:
                    self.stages[a.stage.name] = lc.Progress(failed=str(e)[:2000])
            return {}
        if isinstance(a, lc.ShapeWan):
            self.shape(wanted(self.p, a.elapsed_s))
            self.shaped_for = a.elapsed_s
            return {}
        if isinstance(a, lc.Measure):
            self.measure(a.check)
            return {}
        if isinstance(a, lc.StartRunners):
            n = a.attempt
            if n not in self.runners:
                self.say("Loading", f"Rally in {', '.join(self.p.load_regions)} ({self.p.load} load), attempt {n}")
                self.runners[n] = self.ops.start_runners(self.dep, self.p, n)
            if n not in self.released and self.ops.ready(self.runners[n]):
                start = self.ops.release(self.dep, self.p, self.runners[n], self.say)
                self.released.add(n)
                return {"loadStartAt": ts.iso(start, precise=True)}
            return {}
        if isinstance(a, lc.StopRunners):
            if a.attempt in self.runners:
                self.ops.stop(self.runners[a.attempt])
            return {}
        if isinstance(a, lc.CleanUp):
            for r in self.runners.values():
                self.ops.stop(r)
            if self.dep is not None and not (self.keep and self.status.get("outcome") == "Succeeded"):
                self.say("CleaningUp", f"deployment {getattr(self.dep, 'id', '')}".strip())
                self.ops.close(self.dep)
                self.dep = None
            self.cleaned = True
            return {}
        if isinstance(a, lc.Event):
            self.record(a)
        return {}

    def shape(self, want: dict[Pair, OneWay]) -> None:
        """The links made what ``want`` says (what the shaper refuses: said, the trial's to decide)."""
        if self._shaped(want, want):
            return
        try:
            self.ops.shape(self.dep, want)
        except LabError as e:
            self.shape_error = str(e)[:1000]

    def measure(self, check: int) -> None:
        pairs = lc.measured_pairs(self.p)  # at once, as the operator's probe Jobs: 90 pings at 45 regions and
        with ThreadPoolExecutor(max_workers=MEASURE_AT_ONCE) as ex:  # 300 ms took ~6 min one by one
            n = lc.probe_samples(self.p)
            self.measured[check] = dict(zip(pairs, ex.map(lambda pr: self.ops.measure(self.dep, *pr, n), pairs),
                                            strict=True))
        rows, _ = lc.verdict(self.p, self.measured[check])
        if check > 1:  # both measurements recorded
            rows = lc.with_first(rows, lc.verdict(self.p, self.measured[check - 1])[0])
        self.rows = rows
        self.ops.record_network(self.dep, self.p, rows)
        self.say("VerifyingNetwork", f"{len(rows)} pairs measured (measurement {check})")

    # ---- the loop -------------------------------------------------------------------------------

    def record(self, e: lc.Event) -> None:
        start = self.status.get("loadStartAt")
        entry = event_entry(self.p.id, lc.attempt_of(self.status), self.status.get("phase"), e.reason, e.message,
                            e.type, self.clock(), ts.parse(start) if start else None)
        self.log.append(entry)
        if self.events_dir is not None:
            self.events_dir.mkdir(parents=True, exist_ok=True)
            with open(self.events_dir / f"{self.p.id}.jsonl", "a") as fh:
                fh.write(json.dumps(entry) + "\n")

    def step(self, now: datetime) -> tuple[lc.Step, dict[str, Any]]:
        """The lifecycle's step, carried out: (the step, what the lab records)."""
        step = lc.decide(self.p, self.status, self.seen(now), now)
        recorded: dict[str, Any] = {}
        for a in step.actions:  # in the state the step was decided in (its events too)
            recorded |= self.act(a)
        return step, recorded

    def run(self) -> dict[str, Any]:
        """Every step until the trial ends; its final state."""
        self.status = {}
        last_progress, failures = "", 0
        while lc.phase_of(self.status) not in TERMINAL:
            now = self.clock()
            try:
                step, recorded = self.step(now)
                failures = 0
            except Exception as e:  # the lifecycle decides what it means; transient: the step again, later
                if transient(e):
                    failures += 1
                    wait = backoff_s(failures)
                    self.say(lc.phase_of(self.status), f"step failed ({type(e).__name__}: {e}); again in {wait:.0f}s")
                    self.sleep(wait)
                    continue
                traceback.print_exc()
                step, recorded = lc.decide(self.p, self.status, lc.Seen(crashed=e), now), {}
            self.status, moved = lc.apply(self.status, step, self.clock(), recorded)
            for e in moved:
                self.say(self.status["phase"], step.message[:300])
                self.record(e)
            if moved:
                continue
            if lc.phase_of(self.status) == "Loading" and lc.attempt_of(self.status) in self.runners:
                line = self.ops.progress(self.runners[lc.attempt_of(self.status)])
                if line and line != last_progress:
                    self.say("Loading", line)
                    last_progress = line
            wake = step.wake_s if step.wake_s is not None else self.poll_s
            self.sleep(max(self.min_gap_s, min(wake, self.poll_s)))
        return self.status


__all__ = ["LabOps", "LabTrial", "wanted"]
