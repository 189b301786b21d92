"""The lab's side of the lifecycle (providers/lab/trial.py) on a fake of its lowest layer (tests/fakelab.py); no root.

What each failure means is the lifecycle's decision (core/lifecycle/): a failed runner is tried again
on the same deployment, with the WAN as planned and a new start, up to ``spec.runner.maxAttempts``;
results measured but not stored fail the trial at once; a network off is measured once more, then
fails the trial; a deployment that cannot be made fails it; a bug fails it at once.
"""

from __future__ import annotations

import yaml

from tests.fakelab import Clock, FakeLab
from wanwide.core import lifecycle as lc
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan
from wanwide.providers.lab.procs import LabError
from wanwide.providers.lab.run import _group
from wanwide.providers.lab.trial import LabTrial

TOPOLOGY = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Topology", "metadata": {"name": "t"},
            "spec": {"generate": {"count": 3}, "network": {"default": {"rtt": "40ms"}}}}


def _p(**spec):
    bench = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": "b"},
             "spec": {"topologyRef": "t", "runner": {"maxAttempts": 3},
                      "workload": {"scenarios": [{"name": "authenticate_user_and_validate_token"}]}, **spec}}
    docs = load_documents([yaml.safe_dump_all([TOPOLOGY, bench])])
    (b,) = docs.benchmarks
    return plan(b, docs.topology_for(b))[0]


def _run(lab: FakeLab, clock: Clock, p=None) -> tuple[dict, LabTrial]:
    p = p or _p()
    lt = LabTrial(lab, p, lambda *a, **k: None, clock=clock.now, sleep=clock.sleep)
    return lt.run(), lt


def _reasons(lt: LabTrial) -> list[str]:
    return [e["reason"] for e in lt.log]


def test_a_trial_runs_every_phase_once():
    clock = Clock()
    lab = FakeLab(clock)
    final, lt = _run(lab, clock)
    assert final["phase"] == "Succeeded" and final["reason"] == "Completed"
    assert _reasons(lt) == ["Provisioning", *["StageDeployed"] * 4, "Injecting", "VerifyingNetwork",
                            "VerifyingNetwork", "Loading", "Collecting", "CleaningUp", "Succeeded"]
    assert [c[2] for c in lab.calls if c[0] == "deploy"] == [s.name for s in lc.stages(lt.p)] and lab.deployments == 1
    assert lt.rows and all(r["ok"] for r in lt.rows)


def test_a_failed_runner_is_tried_again_on_the_same_deployment_until_max_attempts():
    clock = Clock()
    lab = FakeLab(clock, results={1: {"r1": "failed"}, 2: {"r1": "failed"}})
    final, lt = _run(lab, clock)
    assert final["phase"] == "Succeeded" and final["attempt"] == 3
    assert lab.deployments == 1 and [c[2] for c in lab.calls if c[0] == "start_runners"] == [1, 2, 3]
    assert _reasons(lt).count("LoadRetry") == 2
    lab = FakeLab(clock, results={n: {"r1": "failed"} for n in (1, 2, 3)})
    final, lt = _run(lab, clock)
    assert (final["phase"], final["reason"]) == ("Failed", "LoadFailed") and "after 3 attempt(s)" in final["outcomeMessage"]


def test_results_measured_but_not_stored_fail_the_trial_at_once():
    clock = Clock()
    lab = FakeLab(clock, upload_fails=True)
    final, lt = _run(lab, clock)
    assert (final["phase"], final["reason"]) == ("Failed", "UploadFailed")
    assert "kept in /out/bundles" in final["outcomeMessage"]
    assert [c[0] for c in lab.calls].count("start_runners") == 1  # not measured again


def test_a_network_off_is_measured_again_then_fails_the_trial_without_a_load():
    clock = Clock()
    lab = FakeLab(clock, rtt_factor=0.5)
    final, lt = _run(lab, clock)
    assert (final["phase"], final["reason"]) == ("Failed", "NetworkOff")
    assert "requested 40 ms, measured 20.20 ms" in final["outcomeMessage"]
    assert final["networkCheck"] == 2 and not [c for c in lab.calls if c[0] == "start_runners"]
    assert "first_measurement" in lt.rows[0]


def test_a_deployment_stage_that_keeps_failing_is_tried_three_times_then_fails_the_trial_and_is_cleaned_up():
    clock = Clock()
    lab = FakeLab(clock, deploy_fails=LabError("keystone r2 did not answer within 300 s"))
    final, lt = _run(lab, clock)
    assert (final["phase"], final["reason"]) == ("Failed", "DeployFailed") and "keystone r2" in final["outcomeMessage"]
    assert [c[2] for c in lab.calls if c[0] == "deploy"].count("keystone-schema") == lc.STAGE_TRIES
    assert _reasons(lt).count("DeployRetry") == lc.STAGE_TRIES - 1 and ("close", "d1") in lab.calls


def test_a_bug_fails_the_trial_at_once_and_the_group_goes_on(tmp_path):
    clock = Clock()
    lab = FakeLab(clock, deploy_fails=KeyError("metadata"), out=tmp_path)
    p = _p()
    outs: list = []
    _group(lab, [p], {id(p): 0}, outs)  # type: ignore[arg-type]
    (o,) = outs
    assert o.result == "failed" and o.reason.startswith("InternalError: Provisioning step failed with KeyError")
    assert ("close", "d1") in lab.calls  # a crash cleans up as in the operator: CleaningUp, then Failed


def test_the_loop_does_not_spin_while_the_runners_warm_up():
    """The lifecycle asks to look again at once while the runners prepare and warm up (it started them, the lab
    releases them when ready); the lab's loop still waits min_gap_s between steps that move nothing. A warm-up of
    60 s costs at most 60 / 0.25 looks, where a loop sleeping 0 s looked thousands of times and spun a core
    (found 2026-12-01: the lab process at 49 % CPU through a 30-compute Nova warm-up)."""
    clock = Clock()

    class Slow(FakeLab):
        looks = 0

        def ready(self, runners):
            Slow.looks += 1
            return runners.attempt > 0 and (clock.now() - lab_started).total_seconds() >= 60

    lab_started = clock.now()
    lab = Slow(clock, run_s=10)
    final, lt = _run(lab, clock)
    assert final["phase"] == "Succeeded"
    assert 0 < Slow.looks <= 60 / 0.25 + 5, Slow.looks
