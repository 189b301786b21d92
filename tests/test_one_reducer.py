"""A trial's phase changes in one place: the lifecycle's reducer (core/lifecycle/state.py ``apply``).

Checked on the code itself: nothing outside core/ writes a ``phase`` (no status dict with one, no
assignment to one, no lifecycle ``Step`` made), but for a Benchmark's own phase (its summary of its trials;
``Invalid`` when its spec does not plan); the reducer refuses a provider's record that would move the phase,
and moves it forward only, with the event log's entry for each move.
"""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path

import pytest

from wanwide.core import lifecycle as lc

PKG = Path(lc.__file__).resolve().parents[2]
# a Benchmark's phase, not a trial's: (file, function) where it is written
BENCHMARK_PHASE = {("providers/kubernetes/controller/benchmark.py", "schedule"),  # failed by its preflight
                   ("providers/kubernetes/controller/benchmark.py", "summary"),  # from its trials' counts
                   ("providers/kubernetes/controller/handlers.py", "benchmark")}  # Invalid: its spec does not plan
T0 = dt.datetime(2026, 11, 26, tzinfo=dt.UTC)


def _phase_writes(path: Path) -> list[tuple[int, str, str]]:
    """(line, what, function) of every write of a ``phase`` in the module at ``path``."""
    tree = ast.parse(path.read_text())
    where: dict[int, str] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for n in ast.walk(fn):
                where[id(n)] = fn.name
    out = []
    for n in ast.walk(tree):
        what = None
        if isinstance(n, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "phase" for k in n.keys):
            what = "a dict with a phase"
        elif isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign):
            for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                if any(isinstance(s, ast.Subscript) and isinstance(s.slice, ast.Constant) and s.slice.value == "phase"
                       for s in ast.walk(t)):
                    what = "an assignment to a phase"
        elif isinstance(n, ast.Call) and "Step" in (getattr(n.func, "id", None), getattr(n.func, "attr", None)):
            what = "a lifecycle Step"
        elif isinstance(n, ast.keyword) and n.arg == "phase":
            what = "a phase= argument"
        if what:
            out.append((n.lineno, what, where.get(id(n), "")))
    return out


def test_nothing_outside_core_writes_a_trials_phase():
    found = []
    for f in sorted(PKG.rglob("*.py")):
        rel = str(f.relative_to(PKG))
        if rel.startswith("core/"):
            continue
        found += [f"{rel}:{line} {what} in {fn or 'the module'}" for line, what, fn in _phase_writes(f)
                  if (rel, fn) not in BENCHMARK_PHASE]
    assert found == []


def test_the_check_sees_a_phase_written_by_hand(tmp_path: Path):
    """The scan is not blind: each way a provider once moved a phase itself is found."""
    f = tmp_path / "m.py"
    f.write_text('def start(kube, t):\n    kube.patch_status("Trial", {"phase": "Provisioning"})\n'
                 '    t["status"]["phase"] = "Provisioning"\n'
                 'def crash(e):\n    return Step("CleaningUp", "InternalError", str(e))\n'
                 'def invalid():\n    return Decision(phase="Failed")\n')
    assert sorted(w for _, w, _ in _phase_writes(f)) == ["a dict with a phase", "a lifecycle Step",
                                                         "a phase= argument", "an assignment to a phase"]


def test_the_reducer_alone_moves_the_phase_forward_and_logs_each_move():
    st = {"phase": "Loading", "phaseStartTime": "2026-11-26T00:00:00Z", "attempt": 1}
    with pytest.raises(ValueError, match="only the lifecycle writes"):
        lc.apply(st, lc.Step(), T0, {"phase": "Succeeded"})
    new, events = lc.apply(st, lc.Step("Provisioning", "x", "back"), T0)
    assert new["phase"] == "Loading" and events == []  # forward only
    new, events = lc.apply(st, lc.Step("CleaningUp", "LoadFailed", "Rally failed", {"outcome": "Failed"}), T0,
                           {"loadStartAt": None})
    assert (new["phase"], new["reason"], new["outcomeMessage"], new["phaseStartTime"]) == (
        "CleaningUp", "LoadFailed", "Rally failed", "2026-11-26T00:00:00Z")
    assert events == [lc.Event("CleaningUp", "Loading → CleaningUp: Rally failed", "Warning")]
    end, events = lc.apply(new, lc.Step("Failed", "LoadFailed", "Rally failed"), T0)
    assert end["completionTime"] == "2026-11-26T00:00:00Z" and events[0].type == "Warning"
    assert lc.apply(end, lc.Step("Succeeded", "Completed", ""), T0) == ({**end}, [])  # a terminal phase stays


def test_starting_a_trial_not_to_run_and_a_crash_go_through_decide():
    pending: dict = {}
    assert lc.decide(None, pending, lc.Seen(), T0).phase is None  # waits for its turn
    start = lc.decide(None, pending, lc.Seen(start=True), T0)
    assert (start.phase, start.status["attempt"]) == ("Provisioning", 1)
    refused = lc.decide(None, {"phase": "Loading"}, lc.Seen(refused=(lc.NOT_OWNED, "not its Benchmark's")), T0)
    assert (refused.phase, refused.reason, refused.actions) == ("Failed", "NotOwned", [])  # no clean-up
    with pytest.raises(ValueError, match="refused with"):
        lc.decide(None, {"phase": "Loading"}, lc.Seen(refused=("Whatever", "x")), T0)
    crash = lc.decide(None, {"phase": "Loading"}, lc.Seen(crashed=TypeError("x")), T0)
    assert (crash.phase, crash.reason, crash.status) == ("CleaningUp", lc.INTERNAL, {"outcome": "Failed"})


def test_a_single_region_has_no_wan_to_verify_and_goes_on_to_load():
    """One region (issue 45's single controller in the lab): no pair to measure; VerifyingNetwork says so and loads,
    where it crashed on the largest deviation of no pair (an InternalError that failed the trial)."""
    from tests.plan.specs import small_plan

    p = small_plan("one", 1)
    st = {"phase": "VerifyingNetwork", "phaseStartTime": T0.strftime("%Y-%m-%dT%H:%M:%SZ"), "attempt": 1, "done": []}
    step = lc.decide(p, st, lc.Seen(), T0)
    assert (step.phase, step.reason) == ("Loading", "NetworkVerified") and "one region" in step.message, step
