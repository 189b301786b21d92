"""The one error policy: what every layer raises, which failures are worth another try, and the one way to try again.

Three kinds, each a base class every layer's own errors derive from:

- :class:`UserError`: a mistake in what the user gave (a spec, a flag, a file, a Secret's keys). The
  command line prints it as one line and exits 2; the operator marks the Benchmark ``InvalidSpec``.
- :class:`PermanentError`: trying again runs into it again (a chart that cannot be applied, a runner's
  failed attempt, an upload that failed through its deadline, a lab deployment that did not come up).
  The lifecycle says what it means for the trial (``core/lifecycle/machine.py``).
- :class:`TransientError`: another try may succeed (a tool or a Secret not there yet).

:func:`transient` decides for any exception, the one classifier, the third-party ones included (the API server's answers,
connection resets, timeouts, a kind not served yet); everything else that is none of these is a bug:
never retried, reported with its traceback (the Trial fails with ``InternalError``). :func:`retry` is
the one retry loop (tenacity): exponential back-off, a number of tries or a deadline, what to try again;
:func:`backoff_s` the same back-off for a loop that waits its own way (the operator's Trial loop, the lab's).
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WanwideError(Exception):
    """Every error wanwide raises on purpose."""


class UserError(WanwideError):
    """A mistake in what the user gave; ``str()`` is one line for stderr (exit code 2)."""


class UserErrors(UserError):
    """Several mistakes at once (every problem of a spec): the command line prints one line each."""

    def __init__(self, lines: list[str]):
        self.lines = [one_line(x) for x in lines if x.strip()]
        super().__init__("\n".join(self.lines))


class PermanentError(WanwideError):
    """Trying again would fail again."""


class TransientError(WanwideError):
    """Another try may succeed."""


EXIT_USER = 2
EXIT_FAILED = 1
# third-party exceptions that are programming errors even though their library is a network client
_BUGS = {"ApiValueError", "ApiTypeError", "ApiKeyError", "ParamValidationError"}
_TRANSIENT_MODULES = ("kubernetes.", "urllib3.", "botocore.", "requests.", "aiohttp.")
# what a store answers when the request itself is refused: asking again gets the same answer
REFUSALS = frozenset({"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "NoSuchBucket"})


def refusal(e: BaseException) -> str | None:
    """The code a service refused the request with (S3's ``AccessDenied``, ``NoSuchBucket`` …), else None."""
    code = ((getattr(e, "response", None) or {}).get("Error") or {}).get("Code")
    return code if code in REFUSALS else None


def transient(e: BaseException) -> bool:
    """Whether another try of the same step may succeed: a :class:`TransientError`; the API server's
    answers and the network's failures (the Kubernetes client, urllib3, botocore, connections, timeouts,
    name resolution, TLS); never a :class:`UserError` or :class:`PermanentError`, a refusal (:func:`refusal`)
    or a bug."""
    if isinstance(e, TransientError):
        return True
    if isinstance(e, UserError | PermanentError) or type(e).__name__ in _BUGS or refusal(e):
        return False
    if isinstance(e, ConnectionError | TimeoutError | socket.gaierror | ssl.SSLError):
        return True
    return type(e).__module__.startswith(_TRANSIENT_MODULES)


def exit_code(e: BaseException) -> int:
    """The command line's exit code for an error that ended a command."""
    return EXIT_USER if isinstance(e, UserError) else EXIT_FAILED


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines too) as one space."""
    return " ".join(text.split())


STEP_BACKOFF_S = (2.0, 60.0)  # a step that failed transiently is tried again after 2 s, 4 s, … at most 60 s


def backoff_s(failures: int, first_s: float = STEP_BACKOFF_S[0], most_s: float = STEP_BACKOFF_S[1]) -> float:
    """The wait before the next try after ``failures`` failures in a row: ``first_s``, then twice as long each
    time, at most ``most_s`` (tenacity's exponential wait, for the loops that wait their own way)."""
    import tenacity

    state = tenacity.RetryCallState(None, None, (), {})
    state.attempt_number = max(1, failures)
    return float(tenacity.wait_exponential(multiplier=first_s, min=first_s, max=most_s)(state))


def retry(fn: Callable[[], T], *, what: str, attempts: int | None = None, deadline_s: float | None = None,
          backoff_s: float = 1.0, max_backoff_s: float = 30.0, again: Callable[[BaseException], bool] = transient,
          log: Callable[[str], None] | None = None, sleep: Callable[[float], None] | None = None) -> T:
    """``fn()`` until it returns: tried again after an error ``again`` accepts, waiting ``backoff_s`` then
    twice as long each time (at most ``max_backoff_s``), for ``attempts`` tries in all or until
    ``deadline_s`` seconds have passed (whichever comes first); ``log`` says each wait. The last error is
    raised as it is."""
    import tenacity

    stops = []
    if attempts is not None:
        stops.append(tenacity.stop_after_attempt(attempts))
    if deadline_s is not None:
        stops.append(tenacity.stop_before_delay(deadline_s))

    def say(state: tenacity.RetryCallState) -> None:
        if log is not None and state.outcome is not None and state.next_action is not None:
            e = state.outcome.exception()
            tries = f"attempt {state.attempt_number}" + (f"/{attempts}" if attempts else "")
            if deadline_s is not None:
                tries += f", {max(0.0, deadline_s - (state.seconds_since_start or 0.0)):.0f}s left"
            log(f"{what}: {tries} failed ({one_line(f'{type(e).__name__}: {e}')[:300]}); "
                f"retrying in {state.next_action.sleep:.1f}s")

    kwargs = {"sleep": sleep} if sleep is not None else {}
    r = tenacity.Retrying(stop=tenacity.stop_any(*stops) if stops else tenacity.stop_never,
                          wait=tenacity.wait_exponential(multiplier=backoff_s, min=backoff_s, max=max_backoff_s),
                          retry=tenacity.retry_if_exception(again), before_sleep=say, reraise=True, **kwargs)
    return r(fn)


__all__ = ["EXIT_FAILED", "EXIT_USER", "STEP_BACKOFF_S", "PermanentError", "TransientError", "UserError", "WanwideError", "exit_code",
           "backoff_s", "one_line", "refusal", "retry", "transient"]
