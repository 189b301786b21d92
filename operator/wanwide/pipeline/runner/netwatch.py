"""The network through the load: every RTT target (Keystone and database endpoints of the regions the runner
gauges) and every watched Galera member probed with the one probe (probe.py) once per period while the measured
task runs, each answer or loss stamped with its offset from the load start: the manifest's ``network.during``.
Where the provider lets the runner enter the other regions' network namespaces (the lab), pairs of regions are
probed between themselves too (``gauges.pairs``: every pair, or the plan's stated sample), each from a thread of
its own inside the source region's namespace.

What it says is informational: the check before the load is the one that fails a trial (``NetworkOff``); a
fault window's cut or loss shows here as the probes it lost (docs/operations.md, NetworkOff).
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from wanwide.core.lifecycle.network import answered, median
from wanwide.pipeline.runner import probe
from wanwide.pipeline.runner.gauges import percentile

CLONE_NEWNET = 0x40000000


def enter_netns(path: str) -> None:
    """The calling thread (only it: Linux keeps a network namespace per thread) into the namespace at ``path``;
    threads it starts afterwards inherit it. OSError when not permitted."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if hasattr(os, "setns"):
            os.setns(fd, CLONE_NEWNET)
        elif ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns {path}: {os.strerror(err)}")
    finally:
        os.close(fd)


class Watch:
    """A thread probing ``targets`` (dicts: region, kind, host, port) every ``period_s`` from the start ``t0``
    (epoch seconds) until stopped; from inside the network namespace ``netns`` when given (its first probes
    ``offset_s`` late, so that several watches do not probe at one instant). A namespace it cannot enter probes
    nothing (``error``): never from the wrong place."""

    def __init__(self, src: str, targets: list[dict[str, Any]], period_s: float, t0: float, timeout: float = 1.0,
                 netns: str | None = None, offset_s: float = 0.0):
        self.src, self.targets, self.period_s, self.t0, self.timeout = src, targets, period_s, t0, timeout
        self.netns, self.offset_s, self.error = netns, offset_s, ""
        self.samples: list[list[list[float | None]]] = [[] for _ in targets]  # per target: [offset s, ms | None]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="network-watch", daemon=True)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.timeout + 5)

    def _loop(self) -> None:
        if self.netns:
            try:
                enter_netns(self.netns)
            except OSError as e:
                self.error = f"cannot enter {self.netns}: {e}"
                return
        if self._stop.wait(self.offset_s):
            return
        # the pool's threads start from this one, inside its namespace
        with ThreadPoolExecutor(max_workers=max(1, min(16, len(self.targets)))) as pool:
            while not self._stop.is_set():
                began = time.time()
                answers = list(pool.map(lambda t: (time.time(), probe.handshake_ms(t["host"], t["port"], self.timeout)),
                                        self.targets))
                for i, (at, ms) in enumerate(answers):
                    self.samples[i].append([round(at - self.t0, 2), ms])
                self._stop.wait(max(0.0, self.period_s - (time.time() - began)))

    def rows(self) -> list[dict[str, Any]]:
        """Per target: probes sent and lost, the median and p90 of the answered, every sample."""
        rows = []
        for t, s in zip(self.targets, self.samples, strict=True):
            vals = [x[1] for x in s]
            got = answered(vals)
            rows.append({"src": self.src, "dst": t["region"], "kind": t["kind"], "host": t["host"], "port": t["port"],
                         "sent": len(vals), "lost": len(vals) - len(got),
                         "loss_pct": round(100 * (len(vals) - len(got)) / len(vals), 2) if vals else None,
                         "median_ms": round(median(got), 3) if got else None,
                         "p90_ms": round(percentile(got, 90), 3) if got else None, "samples": s,
                         **{k: t[k] for k in ("requested_rtt_ms", "requested_loss_pct") if k in t},
                         **({"error": self.error} if self.error else {})})
        return rows

    def document(self) -> dict[str, Any]:
        return {"period_s": self.period_s, "timeout_s": self.timeout, "method": "tcp-connect",
                "verdict": "informational (the check before the load decides)", "targets": self.rows()}


class Watches:
    """The runner's own watch (its RTT targets and members, from its region) and one per source region of the
    pairs (``gauges.pairs``), started and stopped together; one document."""

    def __init__(self, own: Watch | None, pairs: list[Any], coverage: dict[str, Any] | None, period_s: float,
                 t0: float, timeout: float = 1.0):
        by_src: dict[str, list[Any]] = {}
        for p in pairs:
            by_src.setdefault(p.src, []).append(p)
        n = len(by_src) + 1
        self.own, self.coverage, self.period_s, self.timeout = own, coverage, period_s, timeout
        self.pairs = [Watch(src, [{"region": p.dst, "kind": p.kind, "host": p.host, "port": p.port,
                                   "requested_rtt_ms": p.rtt_ms, "requested_loss_pct": p.loss_pct} for p in ps],
                            period_s, t0, timeout, netns=ps[0].netns, offset_s=period_s * (i + 1) / n)
                      for i, (src, ps) in enumerate(by_src.items())]

    def __enter__(self) -> Watches:
        for w in ([self.own] if self.own else []) + self.pairs:
            w.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        for w in ([self.own] if self.own else []) + self.pairs:
            w.__exit__(*exc)

    def document(self) -> dict[str, Any]:
        """The own watch's targets, then ``pairs`` (one row per pair probed between the regions themselves, with
        ``coverage``: how many of how many, chosen how), or a note that only the load region's paths were."""
        doc = self.own.document() if self.own else {"period_s": self.period_s, "timeout_s": self.timeout,
                                                    "method": "tcp-connect", "targets": [],
                                                    "verdict": "informational (the check before the load decides)"}
        if self.pairs:
            doc["pairs"] = [r for w in self.pairs for r in w.rows()]
            doc["coverage"] = self.coverage
        else:
            doc["coverage"] = {"how": "from the load region only (its RTT targets and members): this provider does "
                                      "not let the runner probe between the other regions"}
        return doc


def targets_of(rtt_targets: list[Any], members: list[Any]) -> list[dict[str, Any]]:
    """The RTT targets, then each Galera member not already among them (by address), as the watch probes them."""
    out = [{"region": t.region, "kind": t.kind, "host": t.host, "port": t.port} for t in rtt_targets]
    have = {(t["host"], t["port"]) for t in out}
    out += [{"region": m.region, "kind": "member", "host": m.host, "port": m.port} for m in members
            if (m.host, m.port) not in have]
    return out


COUNTERS = ("frames", "lost", "overflow", "packets", "bytes", "drops", "overlimits", "requeues")
"""The shapers' counters that only grow (linkemu's; netem's from tc), as opposed to gauges (backlog, qlen)."""


def counters_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What each shaped direction's counters grew by between two readings (``"a→b"`` → counter → growth; only
    where both readings have the counter)."""
    out: dict[str, Any] = {}
    for key, a in after.items():
        b = before.get(key) if isinstance(before.get(key), dict) else {}
        grew = {k: v - b[k] for k, v in (a.items() if isinstance(a, dict) else ())
                if k in COUNTERS and isinstance(v, int) and isinstance(b.get(k), int)}
        if grew:
            out[key] = grew
    return out
