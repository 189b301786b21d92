"""A Keystone user for Rally's default ``users`` context, made once instead of per subtask.

Every Rally OpenStack scenario gets a ``users`` context by default. Without
users in the environment, Rally creates a project and a user for the task's
validation and again for every subtask, then deletes them: over a WAN each
of these costs seconds (about 15 s each way per subtask at 50 ms RTT to a
central database), outside the measured iterations but inside the trial's
time. With a user in the environment spec Rally uses it instead (its
``existing_users`` mode); a subtask that asks for ``users`` explicitly
(tenants, users per tenant) still gets Rally-made users.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from wanwide.core.contracts import KeystoneSettings
from wanwide.core.errors import PermanentError, TransientError, WanwideError, retry


class KeystoneError(WanwideError, RuntimeError):
    """Keystone did not do what was asked (``status``: its HTTP answer, None when it did not answer)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class KeystoneRefused(KeystoneError, PermanentError):
    """Keystone refused the request (a 4xx): asked again, it refuses again."""


class KeystoneUnavailable(KeystoneError, TransientError):
    """Keystone failed to answer (a 5xx, no connection): another try may succeed."""


def _call(method: str, url: str, token: str | None = None, body: dict[str, Any] | None = None,
          timeout: float = 60, raw: bytes | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """One OpenStack API call: a JSON ``body``, or ``raw`` bytes (an image's data); its JSON answer and headers."""
    data = raw if raw is not None else json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/octet-stream" if raw is not None else "application/json")
    if token:
        req.add_header("X-Auth-Token", token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310 - the trial's own Keystone
            text = r.read().decode() or "{}"
            return json.loads(text), dict(r.headers)
    except urllib.error.HTTPError as e:
        error = KeystoneUnavailable if e.code >= 500 else KeystoneRefused
        raise error(f"{method} {url}: HTTP {e.code} {e.read().decode(errors='replace')[:300]}", status=e.code) from None
    except (urllib.error.URLError, OSError) as e:
        raise KeystoneUnavailable(f"{method} {url}: {e}") from None


TOKEN_TRIES = 4  # a token issue Keystone fails to answer (a 5xx, no connection) is tried again, this many times in all
TOKEN_BACKOFF_S = 1.0  # before the 2nd try; doubled each time


def admin_token(ks: KeystoneSettings, password: str, sleep=time.sleep) -> str:
    """An admin token. A 5xx is tried again (at most ``TOKEN_TRIES``, backing off, saying so): a
    password login writes the user's ``last_active_at`` on its first success of the day, and the
    same admin logging in from every region at once on a new Galera deployment makes all but one
    of those writes fail certification (MySQL 1213, Keystone answers 500); tried again, the date
    is set and nothing is written."""
    body = {"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": ks.username, "password": password, "domain": {"name": ks.user_domain_name}}}},
        "scope": {"project": {"name": ks.project_name, "domain": {"name": ks.project_domain_name}}},
    }}
    _, headers = retry(lambda: _call("POST", f"{ks.url.rstrip('/')}/auth/tokens", body=body), what="admin token",
                       attempts=TOKEN_TRIES, backoff_s=TOKEN_BACKOFF_S,
                       log=lambda m: print(f"[runner] {m}", file=sys.stderr, flush=True), sleep=sleep)
    token = {k.lower(): v for k, v in headers.items()}.get("x-subject-token")
    if not token:
        raise KeystoneRefused(f"no token from {ks.url}")
    return token


def ensure_user(ks: KeystoneSettings, admin_password: str, name: str, role: str = "member") -> dict[str, str]:
    """Project and user ``name`` (domain Default) with ``role`` on it and a fresh password.

    Idempotent: an existing user (a lab deployment shared by trials) gets a
    new password. Returns the user entry of a Rally environment spec.
    """
    base = ks.url.rstrip("/")
    token = admin_token(ks, admin_password)
    domain = _find(base, token, "domains", ks.user_domain_name)
    project = _find(base, token, "projects", name, domain_id=domain) or _call(
        "POST", f"{base}/projects", token, {"project": {"name": name, "domain_id": domain,
                                                        "description": "wanwide: Rally's users context"}})[0][
        "project"]["id"]
    password = secrets.token_urlsafe(24)
    user = _find(base, token, "users", name, domain_id=domain)
    if user:
        _call("PATCH", f"{base}/users/{user}", token, {"user": {"password": password,
                                                                "default_project_id": project}})
    else:
        user = _call("POST", f"{base}/users", token, {"user": {
            "name": name, "password": password, "domain_id": domain, "default_project_id": project}})[0]["user"]["id"]
    role_id = _find(base, token, "roles", role)
    if not role_id:
        raise KeystoneRefused(f"role {role!r} not found in {base} (keystone-manage bootstrap creates it)")
    _call("PUT", f"{base}/projects/{project}/users/{user}/roles/{role_id}", token)
    return {"username": name, "password": password, "user_domain_name": ks.user_domain_name,
            "project_name": name, "project_domain_name": ks.user_domain_name}


def _find(base: str, token: str, kind: str, name: str, **filters: str) -> str | None:
    query = "&".join(f"{k}={urllib.request.quote(v)}" for k, v in {"name": name, **filters}.items())
    items = _call("GET", f"{base}/{kind}?{query}", token)[0].get(kind, [])
    return items[0]["id"] if items else None
