"""``wanwide lab run``: carry out a Benchmark's trials on this machine, for real.

The same plan as the operator (matrix, links, runner configuration, bundles, report); regions are
network namespaces, the WAN is shaped with netem, linkemu or wirefilter, and MariaDB/Galera, memcached
and Keystone run as processes. This module runs the trials: in the lifecycle's run order, each group
on one deployment (core/lifecycle/order.py), each trial through the lifecycle (trial.py) on the lab's
operations (ops.py), skipping what earlier runs completed, then the summary and the report.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wanwide.core.lifecycle import deployments
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.lab import paths
from wanwide.providers.lab.deployment import Deployment
from wanwide.providers.lab.layout import trial_layouts
from wanwide.providers.lab.ops import LabRun
from wanwide.providers.lab.quiet import QuietGate
from wanwide.providers.lab.results import (
    bundles_complete,
    bundles_root,
    check_results,
    done_earlier,
    drop_interrupted,
    earlier_mismatches,
    earlier_runs,
)
from wanwide.providers.lab.trial import LabTrial

Say = Callable[..., None]


class Live:
    """One status line per change (also appended to ``log``); the long waits print a heartbeat."""

    def __init__(self, total: int, stream=sys.stdout, log: Path | None = None):
        self.total, self.stream, self.log = total, stream, log
        self.t0 = time.monotonic()

    def say(self, i: int, p: TrialPlan, phase: str, detail: str = "") -> None:
        params = ", ".join(f"{k}={v}" for k, v in p.parameters.items() if k != "repetition")
        if (rounds := p.spec.matrix.first_repetition + p.spec.matrix.repetitions) > 1:
            params += f", repetition {p.repetition + 1}/{rounds}"
        el = time.monotonic() - self.t0
        line = (f"[{el:6.0f}s] trial {i + 1}/{self.total} {p.id} ({params}) {phase}"
                + (f": {detail}" if detail else "") + "\n")
        self.stream.write(line)
        self.stream.flush()
        if self.log is not None:
            with open(self.log, "a") as fh:
                fh.write(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} {p.benchmark} {line}")


@dataclass
class TrialOutcome:
    benchmark: str
    trial: str
    result: str  # succeeded | failed | skipped (complete from an earlier run) | pending (--stop-after)
    reason: str = ""
    earlier_attempts: list[str] = field(default_factory=list)  # why each earlier attempt failed
    bundles: list[str] = field(default_factory=list)
    network: dict[str, Any] = field(default_factory=dict)


def _group(runner: LabRun, group: list[TrialPlan], position: dict[int, int], outcomes: list[TrialOutcome],
           stop: Callable[[], bool] | None = None) -> None:
    """The trials of one deployment group, skipping those whose bundles are already complete; each outcome
    goes to ``outcomes`` as it ends (an interrupted group's ended trials are recorded too). ``stop``: asked
    before each trial after the first; true leaves that trial and the rest pending and tears the deployment
    down (``--stop-between-trials``: the next run deploys anew for them)."""
    todo = []
    for p in group:
        complete = bundles_complete(runner.out, p)
        dropped = drop_interrupted(runner.out, p, keep=complete or [])
        if dropped:
            runner.live.say(position[id(p)], p, "Resuming", f"removed {len(dropped)} bundle(s) or work dir(s) "
                            "an interrupted run left")
        why = done_why(runner, p)
        if why:
            runner.live.say(position[id(p)], p, "Skipped", why)
            outcomes.append(TrialOutcome(p.benchmark, p.id, "skipped"))
        else:
            todo.append(p)
    dep: Deployment | None = None
    last: TrialPlan | None = None  # the trial that used ``dep`` last
    try:
        for k, p in enumerate(todo):
            if k and stop is not None and stop():
                outcomes += [_left(runner, q, position, between=True) for q in todo[k:]]
                break
            i = position[id(p)]
            lt = LabTrial(runner, p, lambda phase, detail="", i=i, p=p: runner.live.say(i, p, phase, detail),
                          events_dir=runner.out / "events" / p.benchmark, dep=dep, shared=len(todo) > 1,
                          keep=k + 1 < len(todo))
            try:  # a crash is the lifecycle's: the trial cleans up and fails, the others run
                final = lt.run()
            except KeyboardInterrupt:  # interrupted (SIGINT, SIGTERM): what this trial started goes too
                for r in lt.runners.values():
                    runner.stop(r)
                if lt.dep is not None:
                    lt.dep.close()
                dep = None
                raise
            dep, last = lt.dep, p
            o = outcome(p, final, lt, runner.out)
            if dep is not None and o.result == "succeeded":
                dep.trials.append(p.id)
            outcomes.append(o)
            runner.live.say(i, p, o.result.capitalize(), o.reason[:300])
    finally:
        if dep is not None:
            if last is not None:
                runner.live.say(position[id(last)], last, "CleaningUp", f"deployment {dep.id}")
            dep.close()


def done_why(runner: LabRun, p: TrialPlan) -> str:
    """Why trial ``p`` needs no run ("" if it does): its complete bundles in the output, or a ``--done``
    data set holding it."""
    if bundles_complete(runner.out, p):
        return "complete bundles already in the output"
    return "done in a --done data set" if done_earlier(runner.earlier, p) else ""


def outcome(p: TrialPlan, final: dict[str, Any], lt: LabTrial, out: Path) -> TrialOutcome:
    """What trials.json records of a trial that ended."""
    ok = final.get("phase") == "Succeeded"
    reason = "" if ok else f"{final.get('reason') or 'Failed'}: {final.get('outcomeMessage') or final.get('message') or ''}"
    earlier = [f"attempt {e['attempt']}: {e['message']}" for e in lt.log if e["reason"] == "LoadRetry"]
    return TrialOutcome(p.benchmark, p.id, "succeeded" if ok else "failed", reason, earlier_attempts=earlier,
                        bundles=[str(b) for b in bundles_complete(out, p) or []],
                        network={"pairs": getattr(lt, "rows", [])})


def _summary(out: Path, trials: list[TrialPlan], outcomes: list[TrialOutcome], report: bool) -> int:
    failed = [o for o in outcomes if o.result == "failed"]
    pending = [o for o in outcomes if o.result == "pending"]
    roots = sorted({bundles_root(out, p) for p in trials})
    if report and any(r.exists() for r in roots):
        from wanwide.pipeline.results.report import build_report

        res = build_report([r for r in roots if r.exists()], out / "report")
        from wanwide.pipeline.results.history import (
            remember,  # the campaign joins `wanwide history`
        )

        remember(res.table, res.manifests, out.name)
        index = getattr(res, "index", None) or out / "report" / "index.html"
        print(f"report: {index}")
        print(f"summary: {out / 'report' / 'summary.csv'}")
    print(f"{len(outcomes) - len(failed) - len(pending)}/{len(outcomes)} trials done, {len(failed)} failed"
          + (f", {len(pending)} left for the next run (the same command resumes)" if pending else "")
          + f"; bundles in {', '.join(map(str, roots))}")
    for o in failed:
        print(f"trial {o.trial}: {o.reason[:500]}", file=sys.stderr)
    return 1 if failed else 0


def run(trials: list[TrialPlan], out_dir: str, shaper: str = "auto", report: bool = True, fresh: bool = False,
        gate: QuietGate | None = None, layout: str = "auto", stop_after_s: float | None = None,
        done: list[str] | None = None, planned: list[TrialPlan] | None = None, between_trials: bool = False) -> int:
    """Run the planned trials for real on this machine, in their run order (``spec.matrix.order``),
    each load released once the machine is quiet (``gate``); bundles and the report under ``out_dir``.
    ``stop_after_s``: start no new deployment after that long; the trials left wait for the next run
    with the same ``out_dir``, which skips every trial whose bundles are complete (a campaign in sittings).
    ``between_trials``: nor a new trial of a shared deployment after that long (the deployment is torn down,
    the next run deploys anew for the trials left), so a sitting overruns by one trial, not one deployment.
    ``done``: data sets (``wanwide results export``) whose trials are skipped too (a campaign resumed where
    its earlier bundles are not); one holding a trial under other parameters is an error before anything runs.
    ``planned``: the whole plan ``trials`` were selected from (a sitting's share): checked against ``done`` whole,
    so a sitting of round 9 planned in another batch than the data set's rounds 6–8 is refused before it runs."""
    problems = check_results(trials)  # the input first, then this machine; nothing made before both pass
    try:
        earlier = earlier_runs([Path(d) for d in done or []])
    except ValueError as e:
        problems.append(str(e))
        earlier = {}
    clashes = earlier_mismatches(earlier, planned if planned is not None else trials)
    problems += clashes[:5] + ([f"… and {len(clashes) - 5} more trial run(s) like these"] if len(clashes) > 5 else [])
    if problems:
        print("error: " + "\n       ".join(problems), file=sys.stderr)
        return 2
    missing = [m for m in paths.missing() if "versitygw" not in m]  # S3 is optional here
    more = ""
    if any(p.control_plane and p.control_plane.services for p in trials):  # spec.openstack beyond Keystone
        openstack = paths.missing_openstack()
        missing += openstack
        more = " --openstack" if openstack else ""
    if missing:
        print("error: the lab needs: " + ", ".join(missing) + f" — run hack/install-lab.sh{more}", file=sys.stderr)
        return 2
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    groups = deployments(trials, fresh)  # the order they run in, and which share a deployment
    trials = [p for g in groups for p in g]
    runner = LabRun(out, Live(len(trials), log=out / "lab.log"), shaper, gate=gate, layout=layout)
    runner.layouts = trial_layouts(groups, layout)
    runner.earlier = earlier
    outcomes: list[TrialOutcome] = []

    def on_signal(signum, _frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_signal)
    # Also when started in the background, where the shell leaves SIGINT ignored.
    old_int = signal.signal(signal.SIGINT, on_signal)
    position = {id(p): i for i, p in enumerate(trials)}
    deadline = None if stop_after_s is None else time.monotonic() + stop_after_s

    def late() -> bool:
        return deadline is not None and time.monotonic() >= deadline

    try:
        for group in groups:
            if late():
                outcomes += [_left(runner, p, position) for p in group]
                continue
            _group(runner, group, position, outcomes, stop=late if between_trials else None)
    except KeyboardInterrupt:
        print("interrupted: cleaning up", file=sys.stderr)
        ended = {(o.benchmark, o.trial) for o in outcomes}
        outcomes += [TrialOutcome(p.benchmark, p.id, "skipped") if done_why(runner, p) else
                     TrialOutcome(p.benchmark, p.id, "pending", "the run was interrupted before it ended")
                     for p in trials if (p.benchmark, p.id) not in ended]
        return 130
    finally:
        signal.signal(signal.SIGTERM, old)
        signal.signal(signal.SIGINT, old_int)
        write_trials(out / "trials.json", outcomes)
    return _summary(out, trials, outcomes, report)


def _left(runner: LabRun, p: TrialPlan, position: dict[int, int], between: bool = False) -> TrialOutcome:
    """A trial the deadline left for the next run (unless it is done already); ``between``: its shared
    deployment had started (``--stop-between-trials``) and is torn down, the next run deploys anew."""
    if done_why(runner, p):
        return TrialOutcome(p.benchmark, p.id, "skipped")
    runner.live.say(position[id(p)], p, "Pending", "--stop-after reached: left for the next run"
                    + (" (its shared deployment torn down: a new one next time)" if between else ""))
    return TrialOutcome(p.benchmark, p.id, "pending",
                        "--stop-after reached between the trials of its shared deployment (--stop-between-trials)"
                        if between else "--stop-after reached before its deployment started")


def write_trials(path: Path, outcomes: list[TrialOutcome]) -> None:
    """``trials.json``: this run's outcomes; a trial skipped (complete from an earlier run) keeps what the
    earlier run recorded of it (its bundles, its network check)."""
    earlier: dict[tuple, dict] = {}
    if path.is_file():
        try:  # by Benchmark and trial: a campaign's Benchmarks have the same trial ids
            earlier = {(t.get("benchmark"), t["trial"]): t for t in json.loads(path.read_text())}
        except (ValueError, KeyError, TypeError, AttributeError):
            earlier = {}
    rows = [earlier.get((o.benchmark, o.trial), o.__dict__) if o.result == "skipped" else o.__dict__ for o in outcomes]
    path.write_text(json.dumps(rows, indent=1))


__all__ = ["Live", "TrialOutcome", "done_why", "outcome", "run", "write_trials"]
