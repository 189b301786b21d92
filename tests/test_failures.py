"""The one error policy (core/errors.py): which failures are tried again, the one retry, and where a bug takes a Trial."""

from __future__ import annotations

import datetime as dt
import socket

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import ForbiddenError, ResourceNotFoundError

from tests.chartdata import fixture_plan
from wanwide.core import lifecycle as lc
from wanwide.core.errors import (
    PermanentError,
    TransientError,
    UserError,
    exit_code,
    retry,
    transient,
)
from wanwide.core.lifecycle import INTERNAL
from wanwide.core.lifecycle import crashed as internal_error
from wanwide.providers.kubernetes.controller import phases, trialstate
from wanwide.providers.kubernetes.kube.client import MissingSource, ObjectRefused
from wanwide.providers.kubernetes.kube.helm import HelmError

AT = dt.datetime(2026, 11, 26, tzinfo=dt.UTC)


class _Resp:
    status, reason, data, headers = 403, "Forbidden", b"{}", {}


@pytest.mark.parametrize("e", [
    ApiException(status=500, reason="Internal Server Error"),
    ForbiddenError(ApiException(http_resp=_Resp())),
    urllib3.exceptions.MaxRetryError(None, "/api", "refused"),
    urllib3.exceptions.ProtocolError("reset"),
    ConnectionRefusedError(111, "refused"), TimeoutError("read"), socket.gaierror(-2, "unknown host"),
    ResourceNotFoundError("No matches found for {'kind': 'MariaDB'}"),
    HelmError("helm template failed"), MissingSource("Secret ns/s3-keys not found: create it"),
], ids=type)
def test_api_network_timeout_and_waiting_for_a_dependency_are_tried_again(e):
    assert transient(e)


@pytest.mark.parametrize("e", [
    TypeError("argument of type 'NoneType' is not iterable"), KeyError("metadata"), AttributeError("x"),
    ValueError("bad"), IndexError("list index out of range"), ZeroDivisionError(), FileNotFoundError("helm"),
], ids=type)
def test_everything_else_is_a_bug_and_not_tried_again(e):
    assert not transient(e)


def test_a_bug_cleans_up_first_then_the_trial_fails_with_internal_error_and_the_exception():
    e = TypeError("argument of type 'NoneType' is not iterable")
    d = internal_error("Provisioning", e)
    assert (d.phase, d.reason, d.status) == ("CleaningUp", INTERNAL, {"outcome": "Failed"})
    assert "TypeError: argument of type 'NoneType' is not iterable" in d.message and "traceback" in d.message
    status = {"phase": "Provisioning", "phaseStartTime": "2026-11-26T00:00:00Z"}
    status, _ = lc.apply(status, d, AT)
    assert status["phase"] == "CleaningUp" and status["reason"] == INTERNAL
    # the clean-up ends with the reason and message the bug left (no chaos, no namespaces left)
    end = phases.decide(fixture_plan(), status, {"chaos": [], "namespaces": {}}, AT).step
    assert (end.phase, end.reason) == ("Failed", INTERNAL) and "TypeError" in end.message
    new, _ = lc.apply(status, end, AT)
    patch = trialstate.status_patch(status, new, 1, AT)
    failed = next(c for c in patch["conditions"] if c["type"] == "Failed")
    assert failed["status"] == "True" and failed["reason"] == INTERNAL


def test_an_object_the_api_server_refuses_fails_the_trial_saying_so_not_as_a_bug():
    e = ObjectRefused("the API server refused Job b-t000-r1/rally: Job.batch \"rally\" is invalid: "
                      "spec.template.spec.affinity.nodeAffinity...nodeSelectorTerms: Required value")
    assert not transient(e), "refused again on every try: not retried until the phase times out"
    d = internal_error("Loading", e)
    assert (d.phase, d.reason, d.status) == ("CleaningUp", "ObjectRefused", {"outcome": "Failed"})
    assert "nodeSelectorTerms: Required value" in d.message and "bug" not in d.message


def test_a_bug_while_cleaning_up_fails_at_once_and_says_what_may_be_left():
    d = internal_error("CleaningUp", KeyError("metadata"))
    assert (d.phase, d.reason) == ("Failed", INTERNAL)
    assert "may be left" in d.message and "KeyError" in d.message


def test_every_layer_raises_one_of_three_kinds():
    from wanwide.core.plan.errors import PlanError
    from wanwide.pipeline.runner.rally import RallyError
    from wanwide.pipeline.runner.upload import CredentialsMissing, UploadError
    from wanwide.providers.kubernetes.render.chart import ChartError
    from wanwide.providers.lab.procs import LabError

    assert issubclass(PlanError, UserError) and exit_code(PlanError([])) == 2
    assert issubclass(CredentialsMissing, UserError) and not transient(CredentialsMissing("x"))
    for cls in (RallyError, UploadError, ChartError, LabError):
        assert issubclass(cls, PermanentError) and not transient(cls("x")) and exit_code(cls("x")) == 1
    assert issubclass(HelmError, TransientError) and issubclass(MissingSource, TransientError)


def test_the_one_retry_tries_what_is_worth_it_backing_off_and_says_so():
    calls, waits, said = [], [], []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionResetError(104, "reset")
        return "ok"

    assert retry(flaky, what="upload k", attempts=5, backoff_s=1, log=said.append, sleep=waits.append) == "ok"
    assert waits == [1, 2] and len(said) == 2 and "attempt 1/5 failed (ConnectionResetError" in said[0]
    calls.clear()

    def broken():
        calls.append(1)
        raise KeyError("bug")

    with pytest.raises(KeyError):
        retry(broken, what="x", attempts=5, sleep=waits.append)
    assert len(calls) == 1  # a bug is not tried again
    calls.clear()

    def down():
        calls.append(1)
        raise TimeoutError("read")

    with pytest.raises(TimeoutError):
        retry(down, what="x", attempts=3, backoff_s=0.5, sleep=lambda s: None)
    assert len(calls) == 3


def test_one_classifier_a_stores_refusal_is_final_its_trouble_is_not():
    """The upload, the operator's reading of the results store and the step loop ask the one classifier: S3
    refusing the request (its keys, its bucket) gets the same answer again; S3 failing (a 500, slow down) may
    not; a bug is neither."""
    from botocore.exceptions import ClientError

    from wanwide.core.errors import refusal

    denied = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "PutObject")
    busy = ClientError({"Error": {"Code": "SlowDown", "Message": "later"}}, "PutObject")
    assert refusal(denied) == "AccessDenied" and not transient(denied)
    assert refusal(busy) is None and transient(busy)
    assert refusal(TypeError("x")) is None and not transient(TypeError("x"))


def test_keystone_failing_to_answer_is_tried_again_keystone_refusing_is_not():
    from wanwide.pipeline.runner.users import KeystoneError, KeystoneRefused, KeystoneUnavailable

    assert transient(KeystoneUnavailable("HTTP 500", 500)) and not transient(KeystoneRefused("HTTP 401", 401))
    assert issubclass(KeystoneRefused, PermanentError) and issubclass(KeystoneUnavailable, TransientError)
    assert issubclass(KeystoneRefused, KeystoneError) and issubclass(KeystoneUnavailable, KeystoneError)


def test_the_one_backoff_doubles_from_two_seconds_to_a_minute():
    from wanwide.core.errors import backoff_s

    assert [backoff_s(n) for n in range(1, 8)] == [2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]


def test_a_bug_in_a_readiness_check_is_raised_not_waited_out():
    from wanwide.providers.lab.procs import wait_for

    calls = []

    def check():
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionRefusedError(111, "refused")  # not ready yet
        raise TypeError("a bug")

    with pytest.raises(TypeError, match="a bug"):
        wait_for(check, 5, "the service", interval=0.01)
    assert len(calls) == 2
