"""The network through the load: every RTT target (Keystone and database endpoints of the regions the runner
gauges) and every watched Galera member probed with the one probe (probe.py) once per period while the measured
task runs, each answer or loss stamped with its offset from the load start: the manifest's ``network.during``.

What it says is informational: the check before the load is the one that fails a trial (``NetworkOff``); a
fault window's cut or loss shows here as the probes it lost (docs/operations.md, NetworkOff).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from wanwide.core.lifecycle.network import answered, median
from wanwide.pipeline.runner import probe
from wanwide.pipeline.runner.gauges import percentile


class Watch:
    """A thread probing ``targets`` (dicts: region, kind, host, port) every ``period_s`` from the start ``t0``
    (epoch seconds) until stopped."""

    def __init__(self, src: str, targets: list[dict[str, Any]], period_s: float, t0: float, timeout: float = 1.0):
        self.src, self.targets, self.period_s, self.t0, self.timeout = src, targets, period_s, t0, timeout
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
        with ThreadPoolExecutor(max_workers=max(1, min(16, len(self.targets)))) as pool:
            while not self._stop.is_set():
                began = time.time()
                answers = list(pool.map(lambda t: (time.time(), probe.handshake_ms(t["host"], t["port"], self.timeout)),
                                        self.targets))
                for i, (at, ms) in enumerate(answers):
                    self.samples[i].append([round(at - self.t0, 2), ms])
                self._stop.wait(max(0.0, self.period_s - (time.time() - began)))

    def document(self) -> dict[str, Any]:
        """Per target: probes sent and lost, the median and p90 of the answered, every sample."""
        rows = []
        for t, s in zip(self.targets, self.samples, strict=True):
            vals = [x[1] for x in s]
            got = answered(vals)
            rows.append({"src": self.src, "dst": t["region"], "kind": t["kind"], "host": t["host"], "port": t["port"],
                         "sent": len(vals), "lost": len(vals) - len(got),
                         "loss_pct": round(100 * (len(vals) - len(got)) / len(vals), 2) if vals else None,
                         "median_ms": round(median(got), 3) if got else None,
                         "p90_ms": round(percentile(got, 90), 3) if got else None, "samples": s})
        return {"period_s": self.period_s, "timeout_s": self.timeout, "method": "tcp-connect",
                "verdict": "informational (the check before the load decides)", "targets": rows}


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
