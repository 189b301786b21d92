"""Which failures of a Trial step are tried again (providers/kubernetes/controller/failures.py), and where a bug takes the Trial."""

from __future__ import annotations

import datetime as dt
import socket

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import ForbiddenError, ResourceNotFoundError

from tests.chartdata import fixture_plan
from wanwide.providers.kubernetes.controller import phases, trialstate
from wanwide.providers.kubernetes.controller.failures import INTERNAL, internal_error, transient
from wanwide.providers.kubernetes.kube.client import MissingSource
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
    status |= trialstate.trial_status(status, d.phase, d.reason, d.message, d.status, 1, AT)
    assert status["phase"] == "CleaningUp" and status["reason"] == INTERNAL
    # the clean-up ends with the reason and message the bug left (no chaos, no namespaces left)
    end = phases.decide(fixture_plan(), status, {"chaos": [], "namespaces": {}}, AT)
    assert (end.phase, end.reason) == ("Failed", INTERNAL) and "TypeError" in end.message
    patch = trialstate.trial_status(status, end.phase, end.reason, end.message, end.status, 1, AT)
    failed = next(c for c in patch["conditions"] if c["type"] == "Failed")
    assert failed["status"] == "True" and failed["reason"] == INTERNAL


def test_a_bug_while_cleaning_up_fails_at_once_and_says_what_may_be_left():
    d = internal_error("CleaningUp", KeyError("metadata"))
    assert (d.phase, d.reason) == ("Failed", INTERNAL)
    assert "may be left" in d.message and "deleting its Benchmark" in d.message
