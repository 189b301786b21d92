"""Galera members watched through the load: each member's wsrep state and uptime, sampled from the
load region, and what they did in every fault window (``members.json`` in the bundle).

A member the load region cannot reach (a partition between them, a member restarting) reads as
``unreachable``; a restart shows as an uptime that went back. The summary per window: what each
member was during it, its restarts, and how long after the window the cluster was whole again
(every member ``Primary``, ``Synced``, in a cluster of all of them).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from wanwide.core.contracts import FaultSpan, MemberTarget
from wanwide.core.plan.faults import spans

STATUS = ("wsrep_cluster_status", "wsrep_local_state_comment", "wsrep_cluster_size", "Uptime")
UNREACHABLE = "unreachable"
RESTART_SLACK_S = 3.0  # uptime is whole seconds and samples are not instantaneous


@dataclass(frozen=True)
class Sample:
    """One look at one member, ``t_s`` seconds after the load start."""

    t_s: float
    status: str | None = None  # wsrep_cluster_status: Primary | non-Primary | Disconnected
    state: str | None = None  # wsrep_local_state_comment: Synced | Joining | Donor/Desynced | Initialized ...
    size: int | None = None  # wsrep_cluster_size as this member sees it
    uptime_s: int | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def label(self) -> str:
        return UNREACHABLE if not self.ok else f"{self.status}/{self.state}/{self.size}"

    def whole(self, members: int) -> bool:
        """Primary, Synced, in a cluster of every member."""
        return self.ok and self.status == "Primary" and self.state == "Synced" and self.size == members


def read(member: MemberTarget, password: str, clock: Any, timeout: float = 1.5) -> Sample:
    """The member's wsrep status and uptime, timed by ``clock()`` (seconds from the load start) when the
    answer came; an error (refused, timed out) is a sample too, timed when the attempt began (the member
    did not answer from then on; a connection retried into a healed link answers late, not early)."""
    import pymysql

    began = clock()
    try:
        conn = pymysql.connect(host=member.host, port=member.port, user="root", password=password,
                               connect_timeout=timeout, read_timeout=timeout, autocommit=True)
    except pymysql.MySQLError as e:
        return Sample(began, error=str(e)[:200])
    try:
        with conn.cursor() as cur:
            names = ",".join(f"'{v}'" for v in STATUS)
            cur.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})")
            got = {str(k): str(v) for k, v in cur.fetchall()}
    except pymysql.MySQLError as e:
        return Sample(began, error=str(e)[:200])
    finally:
        conn.close()
    size = got.get("wsrep_cluster_size")
    uptime = got.get("Uptime")
    return Sample(clock(), got.get("wsrep_cluster_status"), got.get("wsrep_local_state_comment"),
                  int(size) if size and size.isdigit() else None, int(uptime) if uptime and uptime.isdigit() else None)


def runs(samples: list[Sample]) -> list[list[Any]]:
    """The member's states as [from_s, to_s, label] runs (to_s: the last sample of the run)."""
    out: list[list[Any]] = []
    for s in samples:
        if out and out[-1][2] == s.label():
            out[-1][1] = round(s.t_s, 1)
        else:
            out.append([round(s.t_s, 1), round(s.t_s, 1), s.label()])
    return out


def restarts(samples: list[Sample]) -> list[float]:
    """When the member restarted (estimated from its uptime), for every restart between two answers."""
    out = []
    ok = [s for s in samples if s.ok and s.uptime_s is not None]
    for a, b in zip(ok, ok[1:], strict=False):
        assert a.uptime_s is not None and b.uptime_s is not None
        if b.uptime_s + RESTART_SLACK_S < a.uptime_s + (b.t_s - a.t_s):
            out.append(round(b.t_s - b.uptime_s, 1))
    return out


def _seconds(samples: list[Sample], start: float, end: float) -> dict[str, float]:
    """Seconds spent in each state within [start, end), each sample standing until the next one."""
    out: dict[str, float] = {}
    for a, b in zip(samples, [*samples[1:], None], strict=False):
        lo, hi = max(a.t_s, start), min(b.t_s if b else a.t_s, end)
        if hi > lo:
            out[a.label()] = out.get(a.label(), 0.0) + hi - lo
    return {k: round(v, 1) for k, v in out.items() if v >= 0.05}


def healed_at(by_member: dict[str, list[Sample]], after_s: float, size: int | None = None) -> float | None:
    """The first time after ``after_s`` when every member had answered whole (in a cluster of ``size``,
    default: the members watched) and stayed whole since; None when some member was not whole by the
    end of the watch."""
    n = size or len(by_member)
    latest = 0.0
    for samples in by_member.values():
        later = [s for s in samples if s.t_s >= after_s]
        if not later or not later[-1].whole(n):
            return None
        k = len(later)  # the start of the member's last whole run
        while k > 0 and later[k - 1].whole(n):
            k -= 1
        latest = max(latest, later[k].t_s)
    return latest


def answered_at(by_member: dict[str, list[Sample]], after_s: float) -> float | None:
    """The first time after ``after_s`` by which every member had answered again (any state): the load
    region's links to them were back; None when some member did not answer by the end of the watch."""
    firsts = [next((s.t_s for s in v if s.t_s >= after_s and s.ok), None) for v in by_member.values()]
    return None if any(f is None for f in firsts) else max(f for f in firsts if f is not None)


def summary(by_member: dict[str, list[Sample]], faults: list[FaultSpan], size: int | None = None) -> dict[str, Any]:
    """Per member: state runs and restarts; per fault window occurrence: states, restarts, healing."""
    until = max((s.t_s for v in by_member.values() for s in v), default=0.0)
    starts = {r: restarts(v) for r, v in by_member.items()}
    windows = []
    for f in faults:
        for k, (start, end) in enumerate(spans(f.start_s, f.duration_s, f.every_s, until)):
            healed = healed_at(by_member, end, size) if end <= until else None
            answered = answered_at(by_member, end) if end <= until else None
            upto = healed if healed is not None else until
            windows.append({
                "name": f.name, "occurrence": k, "kind": f.kind, "regions": f.regions,
                "start_s": start, "end_s": end,
                "answered_after_s": None if answered is None else round(max(0.0, answered - end), 1),
                "healed_after_s": None if healed is None else round(max(0.0, healed - end), 1),
                "members": {r: {"states_s": _seconds(v, start, end),
                                "restarts": [t for t in starts[r] if start - RESTART_SLACK_S <= t <= upto]}
                            for r, v in by_member.items()},
            })
    return {"observed_s": [min((s.t_s for v in by_member.values() for s in v), default=0.0), until],
            "restarts": starts, "runs": {r: runs(v) for r, v in by_member.items()}, "windows": windows}


def brief(doc: dict[str, Any]) -> dict[str, Any]:
    """What the manifest keeps of ``members.json``: restarts per member and each window's outcome."""
    out = []
    for w in doc["windows"]:
        states = w["members"]
        out.append({"name": w["name"], "occurrence": w["occurrence"], "start_s": w["start_s"], "end_s": w["end_s"],
                    "answered_after_s": w["answered_after_s"], "healed_after_s": w["healed_after_s"],
                    "not_primary": sorted(r for r, m in states.items()
                                          if any(k != UNREACHABLE and not k.startswith("Primary/") for k in m["states_s"])),
                    "unreachable": sorted(r for r, m in states.items() if UNREACHABLE in m["states_s"]),
                    "restarted": sorted(r for r, m in states.items() if m["restarts"])})
    return {"members": len(doc["runs"]), "restarts": {r: len(v) for r, v in doc["restarts"].items()},
            "windows": out}


class Watch:
    """Sample every member every ``period_s`` (one thread each) from ``t0`` (epoch seconds) on."""

    def __init__(self, members: list[MemberTarget], period_s: float, t0: float, password: str | None = None,
                 size: int | None = None):
        self.members, self.period_s, self.t0, self.size = members, period_s, t0, size
        self.password = password if password is not None else os.environ.get("DB_ROOT_PASSWORD", "")
        self.samples: dict[str, list[Sample]] = {m.region: [] for m in members}
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._loop, args=(m,), daemon=True, name=f"member-{m.region}")
                         for m in members]

    def _loop(self, m: MemberTarget) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self.samples[m.region].append(read(m, self.password, lambda: time.time() - self.t0))
            self._stop.wait(max(0.0, self.period_s - (time.monotonic() - began)))

    def __enter__(self) -> Watch:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=10)

    def linger(self, faults: list[FaultSpan], wait_s: float, say: Any = print) -> None:
        """After the load: keep watching while a window that ended is not yet healed, at most ``wait_s``
        past the last window's end (a window still open at the end of the load is watched to its end)."""
        now = time.time() - self.t0
        ends = [e for f in faults for _, e in spans(f.start_s, f.duration_s, f.every_s, now)]
        if not ends or not self.members:
            return
        deadline = max(ends) + wait_s
        if now < deadline:
            say(f"members: watching until the cluster is whole again (at most {deadline - now:.0f}s more)")
        while (now := time.time() - self.t0) < deadline:
            if max(ends) <= now and all(healed_at(self.samples, e, self.size) is not None for e in ends):
                return
            time.sleep(self.period_s)

    def document(self, faults: list[FaultSpan]) -> dict[str, Any]:
        by_member = {r: sorted(v, key=lambda s: s.t_s) for r, v in self.samples.items()}
        doc = summary(by_member, faults, self.size)
        return {"period_s": self.period_s, "cluster_size": self.size or len(self.members),
                "members": [m.model_dump() for m in self.members],
                "faults": [f.model_dump() for f in faults], **doc,
                "samples": {r: [[round(s.t_s, 2), s.status, s.state, s.size, s.uptime_s, s.error] for s in v]
                            for r, v in by_member.items()}}
