"""Reading result bundles from S3: boto3's credential chain, the endpoint, retries, resumable fetch.

Credentials come from boto3's default chain (environment, ``AWS_PROFILE``/``--profile``,
the shared ``~/.aws/credentials`` and ``~/.aws/config`` files, SSO, instance roles).
The endpoint is ``--endpoint``, else ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL``, else
``S3_ENDPOINT`` (deprecated), else the profile's ``endpoint_url``, else a fallback (the
Benchmark's own endpoint) or AWS. Requests are retried by botocore (mode ``standard``,
5 attempts unless ``--retries``/``--retry-mode`` or ``AWS_MAX_ATTEMPTS``/``AWS_RETRY_MODE``).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wanwide.core.errors import UserError

DEFAULT_ATTEMPTS = 5
DEPRECATED_ENDPOINT_VAR = "S3_ENDPOINT"


class S3Error(UserError, ValueError):
    """Reading from S3 failed; the message is one line naming endpoint, bucket and what to do."""


@dataclass(frozen=True)
class S3Options:
    """What the command line says about S3 (None: the environment or boto3 decides)."""

    endpoint: str | None = None
    profile: str | None = None
    region: str | None = None
    max_attempts: int | None = None
    retry_mode: str | None = None


@dataclass(frozen=True)
class StaticKeys:
    """Keys found elsewhere (a Benchmark's Secret) when the credential chain has none."""

    access_key: str
    secret_key: str
    origin: str


@dataclass
class FetchResult:
    """What fetch() did."""

    dest: Path
    downloaded: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)
    bytes: int = 0


@dataclass
class Connection:
    """A client and the endpoint it talks to (for messages)."""

    client: Any
    endpoint: str
    attempts: int


def parse_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/prefix`` → (bucket, prefix without slashes at the ends)."""
    m = re.match(r"^s3://([^/]+)/?(.*)$", uri)
    if not m:
        raise S3Error(f"{uri}: expected s3://bucket/prefix")
    return m.group(1), m.group(2).strip("/")


def resolve_endpoint(opts: S3Options, env: Mapping[str, str], fallback: str | None = None,
                     warn: Callable[[str], None] | None = None) -> str | None:
    """The endpoint URL to use; None lets boto3 take the profile's or AWS's."""
    if opts.endpoint:
        return opts.endpoint
    for var in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        if env.get(var):
            return env[var]
    if env.get(DEPRECATED_ENDPOINT_VAR):
        (warn or _stderr)(f"warning: {DEPRECATED_ENDPOINT_VAR} is deprecated: set AWS_ENDPOINT_URL "
                          "(or AWS_ENDPOINT_URL_S3) or pass --endpoint")
        return env[DEPRECATED_ENDPOINT_VAR]
    return fallback


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def connect(opts: S3Options, env: Mapping[str, str] | None = None, *, fallback_endpoint: str | None = None,
            fallback_region: str | None = None, keys: Callable[[], StaticKeys | None] | None = None,
            log: Callable[[str], None] | None = None) -> Connection:
    """An S3 client with the default credential chain (``keys`` only when the chain finds none)."""
    import boto3
    from botocore.exceptions import BotoCoreError

    from wanwide.pipeline.runner.upload import s3_config

    env = os.environ if env is None else env
    endpoint = resolve_endpoint(opts, env, fallback_endpoint)
    attempts = opts.max_attempts or int(env.get("AWS_MAX_ATTEMPTS") or DEFAULT_ATTEMPTS)
    mode = opts.retry_mode or env.get("AWS_RETRY_MODE") or "standard"
    explicit = {}
    if env is not os.environ and env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        explicit = {"aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
                    "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
                    "aws_session_token": env.get("AWS_SESSION_TOKEN")}
    try:
        session = boto3.Session(profile_name=opts.profile or (env.get("AWS_PROFILE") if env is not os.environ else None),
                                **explicit)
        if not explicit and session.get_credentials() is None and keys is not None:
            found = keys()
            if found is not None:
                (log or _stderr)(f"using the S3 keys of {found.origin} (no credentials in the environment, "
                                 "AWS_PROFILE or ~/.aws)")
                session = boto3.Session(aws_access_key_id=found.access_key, aws_secret_access_key=found.secret_key)
        region = (opts.region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
                  or session.region_name or fallback_region or "us-east-1")
        config = s3_config(attempts, mode, path_style=bool(endpoint))
        client = session.client("s3", endpoint_url=endpoint, region_name=region, config=config)
    except (BotoCoreError, ValueError) as e:
        raise S3Error(f"S3 client: {_short(e)}") from e
    return Connection(client, client.meta.endpoint_url, attempts)


def list_objects(conn: Connection, bucket: str, prefix: str) -> list[dict[str, Any]]:
    """Every object under ``prefix/`` (Key, Size, ETag)."""
    out: list[dict[str, Any]] = []
    try:
        for page in conn.client.get_paginator("list_objects_v2").paginate(
                Bucket=bucket, Prefix=f"{prefix}/" if prefix else ""):
            out += page.get("Contents", [])
    except Exception as e:  # botocore's errors have no common base with the connection errors
        raise S3Error(_explain(e, conn, bucket)) from e
    return out


def is_current(path: Path, size: int, etag: str) -> bool:
    """``path`` exists with this size and, when the ETag is a plain MD5, this content."""
    if not path.is_file() or path.stat().st_size != size:
        return False
    etag = etag.strip('"')
    if not re.fullmatch(r"[0-9a-f]{32}", etag):
        return True  # multipart ETag: the size has to do
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest() == etag


FETCH_THREADS = 16  # objects downloaded at once: bundles are many small files
SMALL_OBJECT = 8 << 20  # below this an object is one GET in the fetching thread (no transfer threads)


def fetch(conn: Connection, uri: str, dest: Path, *, keep: Callable[[str], bool] = lambda _: True,
          log: Callable[[str], None] | None = None, threads: int = FETCH_THREADS) -> FetchResult:
    """Download every object under ``uri`` (that ``keep`` accepts) to ``dest/<key below the prefix>``.

    Files already present with the same size and ETag are skipped; each file is written
    to ``<name>.part`` and renamed, so an interrupted fetch leaves no half file behind.
    ``threads`` objects at once; the first failure stops the fetch (S3Error).
    """
    from boto3.s3.transfer import TransferConfig

    bucket, prefix = parse_uri(uri)
    objs = [o for o in list_objects(conn, bucket, prefix)
            if keep(o["Key"].rsplit("/", 1)[-1]) and not o["Key"].endswith("/")]
    if not objs:
        raise S3Error(f"{uri}: no result files found at endpoint {conn.endpoint}")
    configs = {small: TransferConfig(num_download_attempts=conn.attempts, use_threads=not small)
               for small in (True, False)}

    def one(o: dict[str, Any]) -> tuple[str, Path, int | None]:
        """(key below the prefix, local path, bytes downloaded or None when already present)."""
        rel = o["Key"][len(prefix):].lstrip("/") if prefix else o["Key"]
        out, size = dest / rel, int(o["Size"])
        if is_current(out, size, str(o.get("ETag", ""))):
            return rel, out, None
        out.parent.mkdir(parents=True, exist_ok=True)
        part = out.with_name(out.name + ".part")
        try:
            conn.client.download_file(bucket, o["Key"], str(part), Config=configs[size < SMALL_OBJECT])
        except Exception as e:
            part.unlink(missing_ok=True)
            raise S3Error(_explain(e, conn, bucket, o["Key"])) from e
        part.replace(out)
        return rel, out, size

    res = FetchResult(dest)
    width = len(str(len(objs)))
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(objs)))) as pool:
        futures = [pool.submit(one, o) for o in objs]
        try:
            for i, f in enumerate(as_completed(futures), 1):
                rel, _, size = f.result()
                if log:
                    step = f"[{i:>{width}}/{len(objs)}]"
                    log(f"{step} present  {rel}" if size is None else f"{step} fetched  {rel} ({_size(size)})")
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    for f in futures:  # in the listing's order
        _, out, size = f.result()
        if size is None:
            res.skipped.append(out)
        else:
            res.downloaded.append(out)
            res.bytes += size
    return res


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"  # unreachable


def _short(e: BaseException) -> str:
    s = " ".join(f"{type(e).__name__}: {e}".split())
    return s if len(s) < 300 else s[:300] + "…"


def _explain(e: BaseException, conn: Connection, bucket: str, key: str | None = None) -> str:
    """One line: what failed where, and the likely fix."""
    where = f"S3 endpoint {conn.endpoint} bucket {bucket}" + (f" key {key}" if key else "")
    name = type(e).__name__
    response = getattr(e, "response", None) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    if name == "NoCredentialsError":
        hint = ("no S3 credentials found: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or AWS_PROFILE/--profile "
                "with ~/.aws/credentials")
    elif code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "403"):
        hint = f"access refused ({code}): check the keys or profile"
    elif code in ("NoSuchBucket", "404"):
        hint = f"no such bucket or key ({code})"
    elif name in ("EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError", "ConnectionClosedError"):
        tries = f"{conn.attempts} attempt" + ("s" if conn.attempts != 1 else "")
        hint = (f"unreachable after {tries} ({_short(e)}): check --endpoint / AWS_ENDPOINT_URL, "
                "or raise --retries")
    else:
        hint = _short(e)
    return f"{where}: {hint}"
