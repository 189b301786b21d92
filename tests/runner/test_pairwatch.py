"""The pairs watched from Jobs of their own (Kubernetes, issue 46 item 5): a watch probes real TCP listeners from
the load's start, stores its document while it runs and a final one once the load's runner marks the load done;
the runner collects every source's, and says which stored nothing or only a partial document — never filled in.
The store here is an in-memory S3 (the bucket's four calls); tests/lab/test_pair_watch.py runs it against versitygw."""

from __future__ import annotations

import io
import json
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from wanwide.core import timestamps as ts
from wanwide.core.contracts import PairWatches, S3Target, WatchConfig, watch_key
from wanwide.pipeline.runner import pairwatch

S3 = S3Target(endpoint="http://s3.invalid:9000", bucket="results", prefix="runs")


class Store:
    """put_object / get_object / head_object on a dict, with a switch that makes it refuse everything."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.down = False
        self.failing_puts = 0  # the next this many puts refused (a blink)
        self.puts: list[str] = []

    def _check(self, op: str) -> None:
        if op == "PutObject" and self.failing_puts:
            self.failing_puts -= 1
            raise ClientError({"Error": {"Code": "SlowDown", "Message": "blink"},
                               "ResponseMetadata": {"HTTPStatusCode": 503}}, op)
        if self.down:
            raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "down"},
                               "ResponseMetadata": {"HTTPStatusCode": 503}}, op)

    def put_object(self, Bucket: str, Key: str, Body: bytes) -> dict[str, Any]:  # noqa: N803
        self._check("PutObject")
        self.objects[f"{Bucket}/{Key}"] = Body
        self.puts.append(Key)
        return {}

    def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:  # noqa: N803
        self._check("GetObject")
        if f"{Bucket}/{Key}" not in self.objects:
            raise ClientError({"Error": {"Code": "NoSuchKey", "Message": "no"},
                               "ResponseMetadata": {"HTTPStatusCode": 404}}, "GetObject")
        return {"Body": io.BytesIO(self.objects[f"{Bucket}/{Key}"])}

    def head_object(self, Bucket: str, Key: str) -> dict[str, Any]:  # noqa: N803
        self._check("HeadObject")
        if f"{Bucket}/{Key}" not in self.objects:
            raise ClientError({"Error": {"Code": "404", "Message": "Not Found"},
                               "ResponseMetadata": {"HTTPStatusCode": 404}}, "HeadObject")
        return {}

    def doc(self, key: str) -> dict[str, Any]:
        return json.loads(self.objects[f"{S3.bucket}/{key}"])


def _cfg(src: str, targets: list[tuple[str, int]], start: datetime, **kw) -> WatchConfig:
    return WatchConfig(benchmark="b", trial="t000", region=src, attempt=2, start_at=ts.iso(start, precise=True),
                       targets=[{"region": dst, "kind": "keystone", "host": "127.0.0.1", "port": port,
                                 "requested_rtt_ms": 50.0} for dst, port in targets],
                       **{"period_s": 0.2, "flush_s": 0.4, "max_s": 60, "results": S3,
                          "coverage": {"pairs": 3, "of": 3, "how": "every pair"}, **kw})


def _watch(cfg: WatchConfig, store: Store, stop: threading.Event | None = None) -> tuple[threading.Thread, list]:
    ended: list[str] = []
    t = threading.Thread(target=lambda: ended.append(pairwatch.run_watch(cfg, client=store, stop=stop,
                                                                        say=lambda m: None)), daemon=True)
    t.start()
    return t, ended


def test_the_watches_probe_through_the_load_and_the_runner_collects_them(ports):
    listener, _, blackhole = ports
    store, start = Store(), datetime.now(UTC) + timedelta(seconds=0.3)
    r1 = _cfg("r1", [("r2", listener), ("r3", blackhole)], start, timeout_s=0.3)
    r2 = _cfg("r2", [("r3", listener)], start, offset_s=0.1)
    threads = [_watch(r1, store), _watch(r2, store)]
    time.sleep(1.5)
    # while the load runs each watch has stored a partial document (a watch killed now loses one flush at most)
    assert store.doc(r1.key)["final"] is False and store.doc(r1.key)["pairs"][0]["sent"] >= 2
    got = pairwatch.collect(S3, "b", "t000", 2, PairWatches(sources=["r1", "r2"], coverage=r1.coverage, wait_s=20),
                            client=store, poll_s=0.1, say=lambda m: None)
    for t, ended in threads:
        t.join(10)
        assert ended == ["the load is done"]
    assert store.objects[f"results/{watch_key('runs', 'b', 't000', 2, None)}"]  # the mark, beside the documents
    rows = {(p["src"], p["dst"]): p for p in got["pairs"]}
    assert list(rows) == [("r1", "r2"), ("r1", "r3"), ("r2", "r3")]
    answered = rows[("r1", "r2")]
    assert answered["sent"] >= 3 and answered["lost"] == 0 and 0 < answered["median_ms"] < 50
    assert answered["requested_rtt_ms"] == 50.0 and answered["kind"] == "keystone"
    # every probe stamped from the load's start, none before it
    offsets = [s[0] for s in answered["samples"]]
    assert offsets == sorted(offsets) and offsets[0] >= 0
    lost = rows[("r1", "r3")]
    assert lost["lost"] == lost["sent"] > 0 and lost["median_ms"] is None
    assert got["coverage"] == {"pairs": 3, "of": 3, "how": "every pair", "sources": 2, "stored": 2,
                               "probed_from": "a watch Job in each source region (wanwide runner watch)"}


def test_a_watch_that_stored_nothing_is_missing_and_one_cut_short_is_partial(ports):
    listener = ports[0]
    store, start = Store(), datetime.now(UTC)
    stale = pairwatch.document(_cfg("r2", [("r3", listener)], start), pairwatch.netwatch.Watch("r2", [], 1, 0),
                               final=False, ended=None)
    store.put_object(Bucket="results", Key=_cfg("r2", [("r3", listener)], start).key, Body=json.dumps(stale).encode())
    said: list[str] = []
    store.failing_puts = 2  # the store blinks as the runner marks the load done: the mark is stored all the same
    t0 = time.monotonic()
    got = pairwatch.collect(S3, "b", "t000", 2, PairWatches(sources=["r1", "r2"], coverage={"pairs": 3}, wait_s=1),
                            client=store, poll_s=0.1, say=said.append)
    assert 1 <= time.monotonic() - t0 < 5, "waits its bound, no longer"
    assert got["coverage"]["stored"] == 0 and got["coverage"]["missing"] == ["r1"] and got["coverage"]["partial"] == ["r2"]
    assert got["pairs"] == [] and said == ["network: no watch document from r1 within 1 s"]
    assert store.objects[f"results/{watch_key('runs', 'b', 't000', 2, None)}"]


def test_sigterm_ends_a_watch_with_its_document_stored_and_the_store_down_does_not_stop_the_probes(ports):
    store, stop = Store(), threading.Event()
    cfg = _cfg("r1", [("r2", ports[0])], datetime.now(UTC))
    store.down = True  # the store refuses from the start: the probes go on
    t, ended = _watch(cfg, store, stop)
    time.sleep(1.2)
    assert store.puts == []
    store.down = False
    stop.set()  # what the Job's SIGTERM does (pairwatch.main)
    t.join(40)
    assert ended == ["terminated"]
    doc = store.doc(cfg.key)
    assert doc["final"] is True and doc["ended"] == "terminated" and doc["pairs"][0]["sent"] >= 4
    assert doc["pairs"][0]["lost"] == 0 and doc["start_at"] == cfg.start_at and doc["attempt"] == 2


def test_a_watch_stops_at_its_deadline_without_a_mark(ports):
    store = Store()
    cfg = _cfg("r1", [("r2", ports[0])], datetime.now(UTC), max_s=0.8)
    t, ended = _watch(cfg, store)
    t.join(20)
    assert ended == ["its deadline (0.8 s after the start)"] and store.doc(cfg.key)["final"] is True
