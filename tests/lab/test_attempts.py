"""What the lab does after a failed attempt (plan/lifecycle.py, "what each failure means"); no root needed.

The lab's ``_attempts`` loop is driven with a stand-in for its trial runner (the part that deploys,
shapes and loads): a failed runner is tried again up to ``spec.runner.maxAttempts``; results that were
measured but not stored fail the trial at once; so does a bug.
"""

from __future__ import annotations

import io

import yaml

from wanwide.lab.procs import LabError
from wanwide.lab.run import Live, TrialOutcome, _attempts
from wanwide.plan.load import load_documents
from wanwide.plan.trial import plan

TOPOLOGY = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Topology", "metadata": {"name": "t"},
            "spec": {"generate": {"count": 2}}}
BENCH = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": "b"},
         "spec": {"topologyRef": "t", "runner": {"maxAttempts": 3},
                  "workload": {"scenarios": [{"name": "authenticate_user_and_validate_token"}]}}}


class Runner:
    """Answers each attempt with the next of ``answers`` (an outcome, or an exception to raise)."""

    def __init__(self, *answers):
        self.answers, self.calls = list(answers), 0
        self.live = Live(1, stream=io.StringIO())

    def trial(self, i, p, attempt, dep, shared=False):
        self.calls += 1
        a = self.answers.pop(0)
        if isinstance(a, BaseException):
            raise a
        return a, "deployment"


def _p():
    docs = load_documents([yaml.safe_dump_all([TOPOLOGY, BENCH])])
    (b,) = docs.benchmarks
    return plan(b, docs.topology_for(b))[0]


def test_a_failed_runner_is_tried_again_until_max_attempts():
    r = Runner(LabError("runner failed in r2"), LabError("runner failed in r2"), TrialOutcome("t000", "succeeded"))
    o, _ = _attempts(r, 0, _p(), None, shared=False)  # type: ignore[arg-type]
    assert r.calls == 3 and o.result == "succeeded" and len(o.earlier_attempts) == 2
    r = Runner(*(LabError("runner failed in r2") for _ in range(3)))
    o, _ = _attempts(r, 0, _p(), None, shared=False)  # type: ignore[arg-type]
    assert r.calls == 3 and o.result == "failed" and len(o.earlier_attempts) == 2
    assert "Failed" in r.live.stream.getvalue()


def test_results_measured_but_not_stored_fail_the_trial_at_once():
    unstored = TrialOutcome("t000", "failed", "UploadFailed: results store down; the bundles are kept in /x",
                            bundles=["/x/b"], final=True)
    r = Runner(unstored, TrialOutcome("t000", "succeeded"))
    o, dep = _attempts(r, 0, _p(), None, shared=False)  # type: ignore[arg-type]
    assert r.calls == 1 and o.result == "failed" and o.reason.startswith("UploadFailed")
    assert o.bundles == ["/x/b"] and dep == "deployment"  # the deployment serves the next trial


def test_a_bug_fails_the_trial_at_once_and_says_so():
    r = Runner(KeyError("metadata"), TrialOutcome("t000", "succeeded"))
    o, dep = _attempts(r, 0, _p(), None, shared=False)  # type: ignore[arg-type]
    assert r.calls == 1 and o.result == "failed" and o.reason.startswith("InternalError: KeyError")
    assert dep is None


def test_a_network_measured_off_twice_fails_the_trial_without_another_deployment():
    from wanwide.lab.run import NetworkOff

    r = Runner(NetworkOff("NetworkOff: r1↔r2: requested 100 ms, measured 51.00 ms"), TrialOutcome("t000", "succeeded"))
    o, _ = _attempts(r, 0, _p(), None, shared=False)  # type: ignore[arg-type]
    assert r.calls == 1 and o.result == "failed" and o.reason.startswith("NetworkOff")
