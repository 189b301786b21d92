"""Which failures of a Trial's step are worth another try, and what every other one becomes. Pure.

Transient: the API server, the network, a timeout, a tool or a Secret the step waits for (helm, the
S3 Secret a user creates later), a kind not served yet (a CRD being installed). The loop tries
those again with back-off until the phase's timeout. Anything else is a bug in wanwide: retrying
runs the same code on the same input, so the step fails at once, the operator logs the traceback
and the Trial ends Failed with reason ``InternalError`` (through CleaningUp, which removes its chaos).
"""

from __future__ import annotations

import socket
import ssl

from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError
from urllib3.exceptions import HTTPError

from wanwide.providers.kubernetes.controller.actions import Decision
from wanwide.providers.kubernetes.controller.phases import fail_trial
from wanwide.providers.kubernetes.kube.client import MissingSource
from wanwide.providers.kubernetes.kube.helm import HelmError

TRANSIENT: tuple[type[BaseException], ...] = (
    ApiException,  # every answer of the API server that is not a success (403 while RBAC syncs, 409, 5xx…)
    HTTPError,  # urllib3: connection refused or reset, read timeouts
    ConnectionError, TimeoutError, socket.gaierror, ssl.SSLError,
    ResourceNotFoundError,  # discovery: a kind not served (yet)
    HelmError, MissingSource,
)
INTERNAL = "InternalError"


def transient(e: BaseException) -> bool:
    """Whether another try of the same step may succeed."""
    return isinstance(e, TRANSIENT)


def internal_error(phase: str, e: BaseException) -> Decision:
    """The decision for a step that raised a bug: clean up (chaos first), then Failed; already cleaning
    up: Failed at once, saying what may be left."""
    what = f"{type(e).__name__}: {e}".strip()
    message = (f"{phase} step failed with {what[:500]}: a bug in wanwide, not in the Benchmark; the operator's "
               "log has the traceback (please report it)")
    if phase == "CleaningUp":
        return Decision("Failed", INTERNAL, message + "; chaos or namespaces of this trial may be left: "
                        "deleting its Benchmark removes them")
    return fail_trial(INTERNAL, message)


__all__ = ["INTERNAL", "TRANSIENT", "internal_error", "transient"]
