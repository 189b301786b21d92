"""The operator's pure decisions: phase order, timeouts, scheduling within parallelism, summary."""

from __future__ import annotations

import datetime as dt

from wanwide.api.benchmark import Timeouts
from wanwide.controller import trialstate as ts
from wanwide.kube import helm
from wanwide.render.keystone import HelmRelease


def _t(index: int, phase: str | None) -> dict:
    return {"spec": {"index": index}, "status": {"phase": phase} if phase else {}}


def test_phases_only_move_forward():
    assert ts.forward("Provisioning", "Injecting")
    assert not ts.forward("Loading", "Provisioning")
    assert not ts.forward("Succeeded", "Failed")
    assert ts.forward(None, "Provisioning")


def test_timeout_per_phase():
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    t = Timeouts(injecting="5m")
    assert not ts.timed_out("Injecting", ts.iso(start), t, start + dt.timedelta(minutes=4))
    assert ts.timed_out("Injecting", ts.iso(start), t, start + dt.timedelta(minutes=6))
    assert not ts.timed_out("Succeeded", ts.iso(start), t, start + dt.timedelta(days=9))


def test_scheduling_respects_parallelism_lowest_index_first():
    trials = [_t(3, None), _t(0, "Succeeded"), _t(1, "Loading"), _t(2, None), _t(4, None)]
    assert [t["spec"]["index"] for t in ts.to_start(trials, 2)] == [2]
    assert ts.to_start(trials, 1) == []
    assert [t["spec"]["index"] for t in ts.to_start(trials, 5)] == [2, 3, 4]


def test_benchmark_phase_and_counts():
    assert ts.benchmark_phase(ts.counts([])) == "Pending"
    assert ts.benchmark_phase(ts.counts([_t(0, "Succeeded"), _t(1, None)])) == "Running"
    assert ts.benchmark_phase(ts.counts([_t(0, "Succeeded"), _t(1, "Failed")])) == "Failed"
    assert ts.benchmark_phase(ts.counts([_t(0, "Succeeded")])) == "Succeeded"


def test_condition_keeps_transition_time_when_status_unchanged():
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    c = ts.set_condition([], "Valid", "True", "Planned", "ok", 1, t0)
    c2 = ts.set_condition(c, "Valid", "True", "Planned", "ok", 2, t0 + dt.timedelta(hours=1))
    assert c2[0]["lastTransitionTime"] == ts.iso(t0) and c2[0]["observedGeneration"] == 2
    c3 = ts.set_condition(c2, "Valid", "False", "Invalid", "bad", 3, t0 + dt.timedelta(hours=2))
    assert c3[0]["lastTransitionTime"] != ts.iso(t0)


def test_helm_command_never_waits(monkeypatch):
    monkeypatch.setenv("WANWIDE_HELM", "/usr/bin/helm")
    rel = HelmRelease("keystone", "ns1", "r1", "https://charts.example", "keystone", "2026.1.0", {}, 0)
    cmd = helm.command(rel, "/tmp/v.yaml")
    assert "--wait" not in cmd and "--atomic" not in cmd
    assert cmd[1:5] == ["upgrade", "--install", "keystone", "keystone"]
    assert cmd[-4:] == ["--repo", "https://charts.example", "--version", "2026.1.0"]


def test_helm_release_left_stuck_by_a_killed_helm_is_reset_not_upgraded():
    assert helm.next_action("deployed") == "done"
    for stuck in ("pending-install", "pending-upgrade", "pending-rollback", "uninstalling"):
        assert helm.next_action(stuck) == "reset", stuck
    for fresh in (None, "failed", "uninstalled", "superseded"):
        assert helm.next_action(fresh) == "install", fresh


def test_a_poke_from_any_thread_wakes_the_trial_loop_and_children_find_it_by_namespace():
    import asyncio
    import threading
    import time

    from wanwide.controller.wakeups import Wakeups, sleep

    async def main() -> tuple[bool, float, bool, bool]:
        w = Wakeups()
        ev = w.event("lab/b-t000")
        w.watch_namespaces("lab/b-t000", ["b-abcde-t000-r1"])
        t0 = time.monotonic()
        threading.Timer(0.2, lambda: w.poke_namespace("b-abcde-t000-r1")).start()
        poked = await sleep(ev, 10)
        took = time.monotonic() - t0
        ev.clear()
        timed_out = not await sleep(ev, 0.1)
        w.forget("lab/b-t000")
        return poked, took, timed_out, w.poke_namespace("b-abcde-t000-r1")

    poked, took, timed_out, after_forget = asyncio.run(main())
    assert poked and took < 5 and timed_out and not after_forget
