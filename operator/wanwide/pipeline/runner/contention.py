"""How busy the machine was while a load ran: pressure stall information, CPU steal, load
average, and (where the experiment's own processes are known) the CPU used by everything else.

Sources: ``/proc/pressure/{cpu,memory}`` (PSI: ``some``/``full`` lines with ``avg10`` and the
cumulative ``total`` in µs), ``/proc/stat`` (the ``cpu`` line, in clock ticks: steal and busy
time), ``/proc/loadavg`` and ``/proc/<pid>/stat`` (utime, stime, cutime, cstime). Over a window
the pressure is ``Δtotal / Δwall`` — the share of the window in which some task (``some``) or
every task (``full``) waited for the resource. Everything missing on a kernel reads as None.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROC = Path("/proc")
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Pressure:
    """One PSI line (``some`` or ``full``)."""

    avg10: float
    total_us: int


def read_pressure(resource: str, proc: Path = PROC) -> dict[str, Pressure] | None:
    """``{"some": Pressure, "full": Pressure}`` of ``cpu``/``memory``/``io``; None without PSI."""
    try:
        text = (proc / "pressure" / resource).read_text()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        kind, *fields = line.split()
        kv = dict(f.split("=", 1) for f in fields)
        out[kind] = Pressure(float(kv["avg10"]), int(kv["total"]))
    return out


@dataclass(frozen=True)
class CpuTimes:
    """The ``cpu`` line of /proc/stat, in clock ticks."""

    busy: int  # user + nice + system + irq + softirq (guest time is inside user)
    steal: int
    total: int  # every column but guest/guest_nice (counted in user/nice already)


def read_cpu_times(proc: Path = PROC) -> CpuTimes | None:
    try:
        with open(proc / "stat") as fh:
            first = fh.readline().split()
    except OSError:
        return None
    v = [int(x) for x in first[1:]] + [0] * 10
    user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
    return CpuTimes(user + nice + system + irq + softirq, steal,
                    user + nice + system + idle + iowait + irq + softirq + steal)


def read_loadavg(proc: Path = PROC) -> list[float] | None:
    try:
        return [float(x) for x in (proc / "loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return None


def _stat(pid: int, proc: Path) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after ``pid (comm)``; None if gone."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def process_ticks(pid: int, proc: Path = PROC) -> int:
    """CPU ticks of ``pid`` and its reaped children (utime + stime + cutime + cstime); 0 if gone."""
    rest = _stat(pid, proc)
    return sum(int(x) for x in rest[11:15]) if rest else 0


def start_time(pid: int, proc: Path = PROC) -> int | None:
    """When ``pid`` started (ticks after boot, field 22 of its stat): tells a pid from its reuse."""
    rest = _stat(pid, proc)
    return int(rest[19]) if rest and len(rest) > 19 else None


def netns_inode(path: str | Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def own_pids(netns: Iterable[int], pids: Iterable[int], proc: Path = PROC) -> set[int]:
    """Processes in one of the network namespaces (by inode) plus the listed ones."""
    want = set(netns)
    out = {p for p in pids if (proc / str(p)).exists()}
    if not want:
        return out
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            if os.stat(d / "ns" / "net").st_ino in want:
                out.add(int(d.name))
        except OSError:
            continue
    return out


@dataclass
class OwnProcesses:
    """What counts as the experiment: processes in these network namespaces, plus these pids.

    Their CPU time (with reaped children's) is subtracted from the machine's busy time to
    give the CPU the rest of the machine used. A process of the set that exits is counted
    through its parent's cutime once a parent of the set reaps it (runners reap Rally, the lab
    reaps runners). Until then it is a zombie: its ``ns`` links are gone, so it is no longer
    found by namespace, but its stat (with its own reaped children's time) stays; a process
    the set has seen before (``refresh``, same start time) is counted from that stat.
    """

    netns: list[int] = field(default_factory=list)  # inodes of /var/run/netns/<name>
    pids: list[int] = field(default_factory=list)
    seen: dict[int, int] = field(default_factory=dict)  # pid -> start time, of every member seen

    def refresh(self, proc: Path = PROC) -> set[int]:
        """The members now (found by namespace or listed), remembered for when they exit."""
        live = own_pids(self.netns, self.pids, proc)
        for p in live:
            if p not in self.seen and (st := start_time(p, proc)) is not None:
                self.seen[p] = st
        return live

    def members(self, proc: Path = PROC) -> set[int]:
        """The members now, and those seen before that exited but are not reaped yet."""
        live = self.refresh(proc)
        gone = {p for p, st in list(self.seen.items()) if p not in live and start_time(p, proc) == st}
        return live | gone

    def ticks(self, proc: Path = PROC) -> int:
        """Ticks of every member, each with its reaped children's (a child alive — or a zombie —
        at both samples counts itself; once reaped by a member, through that member)."""
        return sum(process_ticks(p, proc) for p in self.members(proc))


@dataclass(frozen=True)
class Snapshot:
    """Everything read at one instant."""

    wall: float  # time.monotonic()
    cpu: dict[str, Pressure] | None
    memory: dict[str, Pressure] | None
    times: CpuTimes | None
    loadavg: list[float] | None
    own_ticks: int | None = None


def snapshot(own: OwnProcesses | None = None, proc: Path = PROC) -> Snapshot:
    return Snapshot(time.monotonic(), read_pressure("cpu", proc), read_pressure("memory", proc),
                    read_cpu_times(proc), read_loadavg(proc), own.ticks(proc) if own else None)


def _pct(part: float, whole: float) -> float | None:
    return round(100.0 * part / whole, 2) if whole > 0 else None


def _stall_pct(a: dict[str, Pressure] | None, b: dict[str, Pressure] | None, kind: str, wall: float) -> float | None:
    if not a or not b or kind not in a or kind not in b:
        return None
    return _pct((b[kind].total_us - a[kind].total_us) / 1e6, wall)


def window(a: Snapshot, b: Snapshot, cpus: int | None = None) -> dict[str, Any]:
    """What happened between two snapshots (percentages of the window; None where unknown).

    ``foreign_cpu_pct``: CPU used by processes outside the experiment (and by interrupts), as a
    share of the machine's capacity (``cpus`` × window); only when both snapshots counted the
    experiment's own ticks.
    """
    wall = b.wall - a.wall
    out: dict[str, Any] = {
        "window_s": round(wall, 3),
        "psi": a.cpu is not None,
        "cpu_some_pct": _stall_pct(a.cpu, b.cpu, "some", wall),
        "memory_some_pct": _stall_pct(a.memory, b.memory, "some", wall),
        "memory_full_pct": _stall_pct(a.memory, b.memory, "full", wall),
        "steal_pct": None, "busy_pct": None, "foreign_cpu_pct": None, "busy_cpu_s": None, "own_cpu_s": None,
        "loadavg_before": a.loadavg, "loadavg_after": b.loadavg,
    }
    if a.times and b.times and b.times.total > a.times.total:
        dt = b.times.total - a.times.total
        out["steal_pct"] = _pct(b.times.steal - a.times.steal, dt)
        out["busy_pct"] = _pct(b.times.busy - a.times.busy, dt)
        out["busy_cpu_s"] = round((b.times.busy - a.times.busy) / TICKS, 2)
        if a.own_ticks is not None and b.own_ticks is not None:
            out["own_cpu_s"] = round((b.own_ticks - a.own_ticks) / TICKS, 2)
            capacity = (cpus or os.cpu_count() or 1) * wall * TICKS
            foreign = (b.times.busy - a.times.busy) - (b.own_ticks - a.own_ticks)
            out["foreign_cpu_pct"] = _pct(max(foreign, 0), capacity)
    return out


@dataclass(frozen=True)
class CpuSample:
    """Cumulative CPU-seconds at one instant: the machine's busy time and the experiment's (None: not known)."""

    t: float  # time.time()
    busy_s: float
    own_s: float | None


def _at(series: list[CpuSample], t: float, field_: str) -> float | None:
    """A cumulative counter of ``series`` at ``t``, linear between the samples around it (None outside them)."""
    pts = [(s.t, getattr(s, field_)) for s in series if getattr(s, field_) is not None]
    if not pts or t < pts[0][0] - 1e-6 or t > pts[-1][0] + 1e-6:
        return None
    for (t0, v0), (t1, v1) in zip(pts, pts[1:], strict=False):
        if t0 <= t <= t1:
            return v0 if t1 == t0 else v0 + (v1 - v0) * (t - t0) / (t1 - t0)
    return pts[-1][1] if t >= pts[-1][0] else pts[0][1]


def cpu_per_scenario(series: list[CpuSample], windows: dict[str, tuple[float, float, int]]) -> dict[str, dict[str, Any]]:
    """Per scenario (one Rally subtask, run after the other): its window (first iteration's start to last one's
    end, ``time.time()``), the machine's busy CPU-seconds and the experiment's own within it (from the sampled
    series, linear between samples a second apart), its iterations and the CPU-seconds per iteration (the
    experiment's, else the machine's). At high load every region's runner measures the same machine: the trial's
    CPU per iteration divides it by every region's iterations."""
    out: dict[str, dict[str, Any]] = {}
    for name, (t0, t1, n) in windows.items():
        busy = [_at(series, t, "busy_s") for t in (t0, t1)]
        own = [_at(series, t, "own_s") for t in (t0, t1)]
        b = round(busy[1] - busy[0], 2) if None not in busy else None
        o = round(own[1] - own[0], 2) if None not in own else None
        use = o if o is not None else b
        out[name] = {"window_s": round(t1 - t0, 3), "busy_cpu_s": b, "own_cpu_s": o, "iterations": n,
                     "cpu_s_per_iteration": round(use / n, 4) if use is not None and n else None}
    return out


class Sampler:
    """Samples CPU pressure every ``every_s`` in a thread: the highest avg10 seen and the highest
    pressure over one sampling interval, for a window whose mean hides a burst; and keeps ``own``'s
    members known (``OwnProcesses.refresh``)."""

    def __init__(self, every_s: float = 1.0, proc: Path = PROC, own: OwnProcesses | None = None):
        self.every_s, self.proc, self.own = every_s, proc, own
        self.max_avg10: float | None = None
        self.max_interval_pct: float | None = None
        self.series: list[CpuSample] = []  # every ``every_s``: when, machine busy and the experiment's CPU
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="contention")

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sample_cpu()

    def sample_cpu(self) -> None:
        """One point of the CPU series (also taken at the start and at the end of the window)."""
        times = read_cpu_times(self.proc)
        own = self.own.ticks(self.proc) if self.own is not None else None
        if times is not None:
            self.series.append(CpuSample(time.time(), times.busy / TICKS, own / TICKS if own is not None else None))

    def _run(self) -> None:
        self.sample_cpu()
        last = read_pressure("cpu", self.proc)
        t_last = time.monotonic()
        while not self._stop.wait(self.every_s):
            self.sample_cpu()  # refreshes ``own``'s members too: those that start and exit within the window
            cur = read_pressure("cpu", self.proc)
            t = time.monotonic()
            if cur is None or last is None:
                continue
            some = cur["some"]
            self.max_avg10 = max(self.max_avg10 or 0.0, some.avg10)
            pct = _pct((some.total_us - last["some"].total_us) / 1e6, t - t_last)
            if pct is not None:
                self.max_interval_pct = max(self.max_interval_pct or 0.0, pct)
            last, t_last = cur, t

    def figures(self) -> dict[str, float | None]:
        return {"cpu_some_avg10_max": self.max_avg10, "cpu_some_max_interval_pct": self.max_interval_pct}
