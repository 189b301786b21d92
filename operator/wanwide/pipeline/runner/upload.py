"""Upload a bundle to S3-compatible storage (boto3, path-style), never overwriting."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from wanwide.core import errors
from wanwide.core.contracts import S3Target
from wanwide.core.errors import PermanentError, UserError
from wanwide.pipeline.runner.bundle import MANIFEST, list_files


class UploadError(PermanentError, RuntimeError):
    pass


class CredentialsMissing(UserError, UploadError):
    pass


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str


def credentials(target: S3Target) -> Credentials | None:
    """Read the keys from the env vars the config names (None: the target uses the SDK's own chain); a clear
    error when absent."""
    if target.ambient:
        return None
    missing = [n for n in (target.access_key_env, target.secret_key_env) if not os.environ.get(n)]
    if missing:
        raise CredentialsMissing(
            f"S3 credentials missing: set environment variable(s) {', '.join(missing)} "
            f"(access key from {target.access_key_env}, secret key from {target.secret_key_env}) "
            f"for endpoint {target.endpoint} bucket {target.bucket}"
        )
    return Credentials(os.environ[target.access_key_env], os.environ[target.secret_key_env])


def s3_config(attempts: int, mode: str = "standard", connect_timeout: float = 5, read_timeout: float = 60,
              path_style: bool = True):
    """The one botocore configuration. botocore's own tries per request (``attempts``): 1 where wanwide retries
    with back-off itself (the runner's upload, core/errors.py), 2 in the operator (its next step asks again),
    the user's choice when fetching results (``wanwide results fetch --retries``)."""
    from botocore.config import Config

    return Config(s3={"addressing_style": "path"} if path_style else None,
                  retries={"mode": mode, "total_max_attempts": attempts},
                  connect_timeout=connect_timeout, read_timeout=read_timeout, signature_version="s3v4")


def s3_client(endpoint: str, region: str, creds: Credentials | None, connect_timeout: float = 5,
              read_timeout: float = 60, attempts: int = 1):
    """A path-style S3 client; ``creds`` None: botocore's own credential chain (a pod's ambient credentials)."""
    import boto3

    keys = {"aws_access_key_id": creds.access_key, "aws_secret_access_key": creds.secret_key} if creds else {}
    return boto3.client("s3", endpoint_url=endpoint, region_name=region or "us-east-1", **keys,
                        config=s3_config(attempts, connect_timeout=connect_timeout, read_timeout=read_timeout))


def join_key(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


MAX_DELAY_S = 30.0


@dataclass(frozen=True)
class Retry:
    """How long to keep trying: ``attempts`` tries, or until ``deadline`` (monotonic) when set.

    With a deadline every error is retried (storage down, or refusing until its keys or
    bucket policy are fixed); without one a refusal (access denied, no such bucket) is final.
    """

    attempts: int = 5
    backoff_s: float = 1.0
    deadline: float | None = None


def _with_retries(what: str, fn, retry: Retry, log=None):
    """``fn()`` through the one retry (core/errors.py): a key that exists is never tried again; a refusal only
    until a deadline (its keys or bucket policy may be fixed meanwhile); a bug never."""
    def again(e: BaseException) -> bool:
        return not isinstance(e, KeyExists) and (errors.transient(e) or (retry.deadline is not None
                                                                          and errors.refusal(e) is not None))

    left = None if retry.deadline is None else max(0.0, retry.deadline - time.monotonic())
    try:
        return errors.retry(fn, what=what, attempts=retry.attempts if left is None else None, deadline_s=left,
                            backoff_s=retry.backoff_s, max_backoff_s=MAX_DELAY_S, again=again, log=log)
    except KeyExists:
        raise
    except Exception as e:
        if not (errors.transient(e) or errors.refusal(e)):
            raise  # a bug: said as one, not as the store's answer
        raise UploadError(f"{what}: {_short(e)}") from e


class KeyExists(UploadError):
    pass


def _short(e: Exception | None) -> str:
    if e is None:
        return "unknown error"
    s = f"{type(e).__name__}: {e}"
    return s if len(s) < 400 else s[:400] + "…"


def not_found(e: Exception) -> bool:
    """Whether the store's error says the key is not there."""
    from botocore.exceptions import ClientError

    if not isinstance(e, ClientError):
        return False
    code = str(e.response.get("Error", {}).get("Code", ""))
    return code in {"404", "NoSuchKey", "NotFound"} or e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404


def key_exists(client, bucket: str, key: str) -> bool:
    try:
        client.head_object(Bucket=bucket, Key=key)
        return True
    except Exception as e:
        if not_found(e):
            return False
        raise


def upload_json(doc: object, target: S3Target, key: str, *, deadline_s: float = 120.0, log=None) -> None:
    """Put one JSON document at ``key`` (a probe's result: written again when its Job runs again), retrying
    with back-off for ``deadline_s``; ``UploadError`` naming endpoint and bucket."""
    import json

    client = s3_client(target.endpoint, target.region, credentials(target))
    body = json.dumps(doc, indent=1).encode()
    retry = Retry(deadline=time.monotonic() + deadline_s)
    _with_retries(f"upload {key} to S3 endpoint {target.endpoint} bucket {target.bucket}",
                  lambda: client.put_object(Bucket=target.bucket, Key=key, Body=body), retry, log)


def upload_bundle(
    bundle_dir: Path,
    target: S3Target,
    relpath: str,
    *,
    attempts: int | None = None,
    backoff_s: float | None = None,
    deadline_s: float | None = None,
    log=None,
) -> list[str]:
    """Upload every file of ``bundle_dir`` under ``<prefix>/<relpath>/``; manifest last.

    Refuses to overwrite: every key is checked absent first (HEAD), and the run id
    in ``relpath`` is unique per run. Returns the keys written.
    Retries with back-off (doubling, at most 30 s): ``attempts`` times, or for
    ``deadline_s`` seconds when given (``WANWIDE_UPLOAD_DEADLINE_S``, else the target's
    ``upload_deadline_s``), retrying refusals too.
    Raises ``UploadError`` naming endpoint and bucket; the local bundle is untouched.
    """
    attempts = attempts or int(os.environ.get("WANWIDE_UPLOAD_ATTEMPTS", "5"))
    backoff_s = backoff_s if backoff_s is not None else float(os.environ.get("WANWIDE_UPLOAD_BACKOFF_S", "1"))
    if deadline_s is None:
        env = os.environ.get("WANWIDE_UPLOAD_DEADLINE_S")
        deadline_s = float(env) if env else target.upload_deadline_s
    retry = Retry(attempts, backoff_s, time.monotonic() + deadline_s if deadline_s else None)
    log = log or (lambda m: print(f"[runner] {m}", file=sys.stderr, flush=True))
    creds = credentials(target)
    client = s3_client(target.endpoint, target.region, creds)
    where = f"S3 endpoint {target.endpoint} bucket {target.bucket}"
    files = [f for f in list_files(bundle_dir) if f != MANIFEST]
    if (bundle_dir / MANIFEST).exists():
        files.append(MANIFEST)
    written: list[str] = []
    try:
        first = join_key(target.prefix, relpath, files[0]) if files else None
        for rel in files:
            key = join_key(target.prefix, relpath, rel)

            def check(key=key):
                if key_exists(client, target.bucket, key):
                    raise KeyExists(f"key {key} already exists: refusing to overwrite")

            _with_retries(f"check {key}", check, retry, log)

            def put(key=key, rel=rel):
                with open(bundle_dir / rel, "rb") as fh:
                    client.put_object(Bucket=target.bucket, Key=key, Body=fh)

            _with_retries(f"upload {key}", put, retry, log)
            written.append(key)
    except UploadError as e:
        raise UploadError(
            f"upload to {where} failed: {e}; bundle kept locally in {bundle_dir}"
            + (f" ({len(written)} of {len(files)} files uploaded)" if first else "")
        ) from e
    return written
