"""One trial on this machine: the lifecycle's steps (core/lifecycle.py), observed and carried out the lab's way.

The lab decides nothing the operator would decide otherwise: :class:`LabTrial` asks the lifecycle for
each step and translates its actions into the lab's own operations, which :class:`LabOps` names (the
lowest layer: deploy, shape a link, measure, start, release, poll and stop runners, collect, close). ``Deploy`` builds (or re-shapes, for a deployment shared with the trial before) namespaces,
links, the database and the Keystones; ``ShapeWan`` sets every link to the WAN in force;
``Measure`` runs the one probe between the pairs the lifecycle names; ``StartRunners`` starts the
runners and, once all are ready and the machine is quiet, releases them together and records that
instant as the load start (a runner is complete once its bundle is stored: the lab stores it from the
host, ``stopped`` when that fails); ``CleanUp`` stops what runs and closes the deployment unless it serves the
next trial. Every phase change and event goes to the trial's event log (``events/<benchmark>/<trial>.jsonl``).
"""

from __future__ import annotations

import json
import time
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
from wanwide.core.plan.links import OneWay, Pair
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.lab.procs import LabError

MEASURE_AT_ONCE = 16  # pairs measured at the same time (each a few pings: no load to speak of)

Say = Callable[..., None]


class LabOps(Protocol):
    """The lab's lowest layer: what the lifecycle's actions come down to on this machine."""

    def deploy(self, p: TrialPlan, dep: Any, shared: bool, say: Say) -> Any: ...  # a running deployment
    def links(self, dep: Any) -> dict[Pair, OneWay]: ...
    def set_link(self, dep: Any, a: str, b: str, shaping: OneWay) -> None: ...
    def measure(self, dep: Any, a: str, b: str) -> list[float]: ...
    def start_runners(self, dep: Any, p: TrialPlan, attempt: int) -> Any: ...  # a handle on them
    def ready(self, runners: Any) -> bool: ...  # all prepared (or ended): the load may start
    def release(self, dep: Any, p: TrialPlan, runners: Any, say: Say) -> datetime: ...  # the load start
    def poll(self, runners: Any) -> dict[str, str]: ...  # region → running | complete | failed | stopped
    def progress(self, runners: Any) -> str: ...
    def stop(self, runners: Any) -> None: ...
    def collect(self, p: TrialPlan) -> tuple[list[str], list[str], str]: ...  # (found, missing, where)
    def record_network(self, dep: Any, p: TrialPlan, rows: list[dict[str, Any]]) -> None: ...
    def close(self, dep: Any) -> None: ...


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
    status: dict[str, Any] = field(default_factory=dict)
    log: list[dict[str, Any]] = field(default_factory=list)  # the lifecycle's event log
    runners: dict[int, Any] = field(default_factory=dict)  # attempt → its runners
    measured: dict[int, dict[Pair, list[float]]] = field(default_factory=dict)  # check → samples per pair
    rows: list[dict[str, Any]] = field(default_factory=list)  # the last measurement against the plan
    deploy_error: str | None = None
    released: set[int] = field(default_factory=set)

    # ---- observe ------------------------------------------------------------------------------

    def seen(self) -> lc.Seen:
        phase, st = self.status.get("phase"), self.status
        if phase == "Provisioning":
            dep = (lc.Progress(failed=("DeployFailed", self.deploy_error)) if self.deploy_error else
                   lc.Progress(done=self.dep is not None and "deployed" in lc.done(st)))
            return lc.Seen(deployment=dep)
        if phase == "Injecting":
            want = lc.wan_at(self.p, ())
            ok = self.dep is not None and all(self.ops.links(self.dep).get(pair) == want.effective(pair)
                                              for pair in self.p.links)
            return lc.Seen(wan=lc.Progress(done=ok and "wan" in lc.done(st), waiting="shaping the WAN"))
        if phase == "VerifyingNetwork":
            check = max(1, int(st.get("networkCheck") or 0))
            return lc.Seen(network=self.measured.get(check))
        if phase == "Loading":
            n = lc.attempt_of(st)
            if n not in self.runners:
                return lc.Seen()
            return lc.Seen(runners=self.ops.poll(self.runners[n]), store_error=getattr(self.runners[n], "store_error", None))
        if phase == "Collecting":
            return lc.Seen(bundles=self.ops.collect(self.p))
        if phase == "CleaningUp":
            return lc.Seen(cleaned=lc.Progress(done="cleaned" in lc.done(st)))
        return lc.Seen()

    # ---- act ------------------------------------------------------------------------------------

    def act(self, a: lc.LifecycleAction) -> dict[str, Any]:
        """Carry out one action; the state it records."""
        st = self.status
        if isinstance(a, lc.Deploy):
            try:
                self.dep = self.ops.deploy(self.p, self.dep, self.shared, self.say)
            except LabError as e:
                self.deploy_error = str(e)[:2000]
                return {}
            return lc.marked(st, "deployed")
        if isinstance(a, lc.ShapeWan):
            active = lc.in_force(self.p.faults, a.elapsed_s) if a.elapsed_s is not None else ()
            wan = lc.wan_at(self.p, active)
            have = self.ops.links(self.dep)
            for pair in self.p.links:
                if have.get(pair) != wan.effective(pair):
                    self.ops.set_link(self.dep, *pair, wan.effective(pair))
            return {}
        if isinstance(a, lc.Measure):
            pairs = lc.measured_pairs(self.p)  # at once, as the operator's probe Jobs: 90 pings at 45 regions and
            with ThreadPoolExecutor(max_workers=MEASURE_AT_ONCE) as ex:  # 300 ms took ~6 min one by one
                self.measured[a.check] = dict(zip(pairs, ex.map(lambda pr: self.ops.measure(self.dep, *pr), pairs),
                                                  strict=True))
            rows, _ = lc.verdict(self.p, self.measured[a.check])
            if a.check > 1:  # both measurements recorded
                first, _ = lc.verdict(self.p, self.measured[a.check - 1])
                rows = [{**r, "first_measurement": {"measured_rtt_ms": f["measured_rtt_ms"],
                                                    "samples_ms": f["samples_ms"]}} if not f["ok"] else r
                        for r, f in zip(rows, first, strict=True)]
            self.rows = rows
            self.ops.record_network(self.dep, self.p, rows)
            self.say("VerifyingNetwork", f"{len(rows)} pairs measured (measurement {a.check})")
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
            if self.dep is not None and not (self.keep and st.get("outcome") == "Succeeded"):
                self.say("CleaningUp", f"deployment {getattr(self.dep, 'id', '')}".strip())
                self.ops.close(self.dep)
                self.dep = None
            return lc.marked(st, "cleaned")
        if isinstance(a, lc.Event):
            self.record(a.reason, a.message, a.type)
        return {}

    # ---- the loop -------------------------------------------------------------------------------

    def record(self, reason: str, message: str, typ: str = "Normal") -> None:
        start = self.status.get("loadStartAt")
        entry = event_entry(self.p.id, lc.attempt_of(self.status), self.status.get("phase"), reason, message, typ,
                            self.clock(), ts.parse(start) if start else None)
        self.log.append(entry)
        if self.events_dir is not None:
            self.events_dir.mkdir(parents=True, exist_ok=True)
            with open(self.events_dir / f"{self.p.id}.jsonl", "a") as fh:
                fh.write(json.dumps(entry) + "\n")

    def run(self) -> dict[str, Any]:
        """Every step until the trial ends; its final state."""
        now = self.clock()
        self.status = {"phase": "Provisioning", "phaseStartTime": ts.iso(now), "attempt": 1}
        self.record("Provisioning", "Pending → Provisioning")
        last_progress = ""
        while self.status["phase"] not in TERMINAL:
            now = self.clock()
            step = lc.decide(self.p, self.status, self.seen(), now)
            patches = [self.act(a) for a in step.actions]  # in the state the step was decided in (its events too)
            self.status |= step.status
            for patch in patches:
                self.status |= patch
            if step.message:
                self.status["message"] = step.message
            if step.phase and lc.forward(self.status["phase"], step.phase):
                old = self.status["phase"]
                self.status |= {"phase": step.phase, "phaseStartTime": ts.iso(self.clock()), "reason": step.reason}
                if step.phase == "CleaningUp" and step.status.get("outcome") == "Failed":
                    self.status["outcomeMessage"] = step.message
                self.say(step.phase, step.message[:300])
                self.record(step.phase, f"{old} → {step.phase}: {step.message or step.reason}",
                            "Warning" if self.status.get("outcome") == "Failed" else "Normal")
                continue
            if self.status["phase"] == "Loading" and lc.attempt_of(self.status) in self.runners:
                line = self.ops.progress(self.runners[lc.attempt_of(self.status)])
                if line and line != last_progress:
                    self.say("Loading", line)
                    last_progress = line
            wake = step.wake_s if step.wake_s is not None else self.poll_s
            self.sleep(max(0.0, min(wake, self.poll_s)))
        return self.status
