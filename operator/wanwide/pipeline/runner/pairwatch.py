"""Pairs of regions watched through the load from Jobs of their own, where the load's runner cannot enter the other
regions' network namespaces (Kubernetes): the watch Job's loop (``wanwide runner watch``) and the runner's collection
of what the watches stored.

The two meet in the results store only (core/contracts.py ``watch_key``): each watch stores its document every
``flush_s`` and a final one when the load's runner marks the load done (or at its deadline, or on SIGTERM); the
runner, its measured task over, stores the mark and waits for every source's final document, at most ``wait_s``.
A watch that stored nothing is said as missing, one that stored only a partial document as partial: never filled in.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from wanwide.core import timestamps as ts
from wanwide.core.contracts import PairWatches, S3Target, WatchConfig, parse_time, watch_key
from wanwide.pipeline.runner import netwatch
from wanwide.pipeline.runner.upload import credentials, key_exists, not_found, s3_client

CHECK_S = 5.0
"""A watch looks for the load's mark at least this often (one HEAD request)."""


def _client(target: S3Target):
    return s3_client(target.endpoint, target.region, credentials(target), connect_timeout=5, read_timeout=20,
                     attempts=2)


def _put(client, target: S3Target, key: str, doc: dict[str, Any]) -> None:
    client.put_object(Bucket=target.bucket, Key=key, Body=json.dumps(doc, indent=1).encode())


def _get(client, target: S3Target, key: str) -> dict[str, Any] | None:
    """The JSON document at ``key``; None when there is none (yet)."""
    try:
        return json.loads(client.get_object(Bucket=target.bucket, Key=key)["Body"].read())
    except Exception as e:
        if not_found(e):
            return None
        raise


def document(cfg: WatchConfig, watch: netwatch.Watch, *, final: bool, ended: str | None) -> dict[str, Any]:
    return {"benchmark": cfg.benchmark, "trial": cfg.trial, "source": cfg.region, "attempt": cfg.attempt,
            "method": "tcp-connect", "period_s": cfg.period_s, "timeout_s": cfg.timeout_s, "start_at": cfg.start_at,
            "final": final, "ended": ended, "stored_at": ts.iso(datetime.now(UTC), precise=True),
            "coverage": cfg.coverage, "pairs": watch.rows()}


def run_watch(cfg: WatchConfig, *, client=None, stop: threading.Event | None = None,
              say: Callable[[str], None] = lambda m: print(f"[watch] {m}", flush=True)) -> str:
    """Probe ``cfg.targets`` from here, from ``start_at`` until the load's mark, ``max_s`` or ``stop`` (SIGTERM),
    storing the document every ``flush_s`` and once more, final; returns why it ended. The results store down
    does not stop the probes: a flush that fails is tried again at the next, the final one until it is stored or
    30 s have passed."""
    client = client or _client(cfg.results)
    stop = stop or threading.Event()
    t0 = parse_time(cfg.start_at).timestamp()
    targets = [{"region": t.region, "kind": t.kind, "host": t.host, "port": t.port,
                "requested_rtt_ms": t.requested_rtt_ms, "requested_loss_pct": t.requested_loss_pct}
               for t in cfg.targets]
    say(f"{cfg.region}: {len(targets)} pair(s) every {cfg.period_s:g} s from {cfg.start_at} "
        f"({', '.join(t['region'] for t in targets[:6])}{' …' if len(targets) > 6 else ''})")
    ended = "terminated before the load started" if stop.wait(max(0.0, t0 - time.time())) else ""
    watch = netwatch.Watch(cfg.region, targets, cfg.period_s, t0, cfg.timeout_s, offset_s=cfg.offset_s)
    if not ended:
        with watch:
            flushed, warned = time.time(), False
            while not ended:
                if stop.wait(min(CHECK_S, cfg.period_s)):
                    ended = "terminated"
                elif time.time() - t0 >= cfg.max_s:
                    ended = f"its deadline ({cfg.max_s:g} s after the start)"
                else:
                    try:
                        if key_exists(client, cfg.results.bucket, cfg.done_key):
                            ended = "the load is done"
                        elif time.time() - flushed >= cfg.flush_s:
                            _put(client, cfg.results, cfg.key, document(cfg, watch, final=False, ended=None))
                            flushed = time.time()
                    except Exception as e:  # the store down: probing goes on, said once
                        if not warned:
                            say(f"the results store did not answer ({type(e).__name__}: {str(e)[:200]}); "
                                "probing on, storing again later")
                            warned = True
    deadline = time.monotonic() + 30.0
    while True:
        try:
            _put(client, cfg.results, cfg.key, document(cfg, watch, final=True, ended=ended))
            break
        except Exception as e:
            if time.monotonic() >= deadline:
                say(f"could not store {cfg.key}: {type(e).__name__}: {str(e)[:200]}")
                raise
            time.sleep(2.0)
    lost = sum(r["lost"] for r in watch.rows())
    sent = sum(r["sent"] for r in watch.rows())
    say(f"stored {cfg.key} ({ended}): {sent} probes, {lost} lost")
    return ended


def main(cfg: WatchConfig) -> int:
    """The watch Job's command: :func:`run_watch`, SIGTERM ending it with its document stored."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    run_watch(cfg, stop=stop)
    return 0


def collect(target: S3Target, benchmark: str, trial: str, attempt: int, want: PairWatches, *, client=None,
            poll_s: float = 2.0, say: Callable[[str], None] = print) -> dict[str, Any]:
    """The load's runner, its measured task over: the mark stored, then every source's final document awaited
    (at most ``want.wait_s``); the pairs they probed and a coverage saying which sources stored what."""
    client = client or _client(target)
    for tries_left in range(4, -1, -1):  # the mark is what ends the watches: a blink of the store is tried again
        try:
            _put(client, target, watch_key(target.prefix, benchmark, trial, attempt, None),
                 {"done_at": ts.iso(datetime.now(UTC), precise=True)})
            break
        except Exception:
            if not tries_left:
                raise
            time.sleep(poll_s)
    deadline = time.monotonic() + want.wait_s
    docs: dict[str, dict[str, Any]] = {}
    pending = list(want.sources)
    while True:
        for src in list(pending):
            try:
                doc = _get(client, target, watch_key(target.prefix, benchmark, trial, attempt, src))
            except Exception:  # the store blinking: asked again at the next poll
                doc = None
            if doc is not None:
                docs[src] = doc
                if doc.get("final"):
                    pending.remove(src)
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(poll_s)
    partial = [s for s in pending if s in docs]
    missing = [s for s in pending if s not in docs]
    pairs = [row for src in want.sources if src in docs for row in docs[src].get("pairs", [])]
    coverage = {**want.coverage, "probed_from": "a watch Job in each source region (wanwide runner watch)",
                "sources": len(want.sources), "stored": len(want.sources) - len(pending)}
    if partial:
        coverage["partial"] = partial
    if missing:
        coverage["missing"] = missing
        say(f"network: no watch document from {', '.join(missing)} within {want.wait_s:g} s")
    return {"pairs": pairs, "coverage": coverage}


__all__ = ["collect", "document", "main", "run_watch"]
