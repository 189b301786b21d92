"""Contention figures from /proc: a fake /proc with known counters gives known percentages; the
real one on this kernel gives sane ones; the quiet-machine gate waits, passes and gives up."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wanwide.pipeline.runner import contention as c
from wanwide.providers.lab.quiet import QuietGate, wait_quiet, window_figures


def _proc(root: Path, *, cpu_some: int, cpu_full: int = 0, mem_some: int = 0, mem_full: int = 0,
          stat: tuple[int, ...] = (0,) * 8, load: str = "0.50 0.40 0.30 1/100 1",
          pids: dict[int, tuple[int, int]] | None = None) -> Path:
    """/proc with PSI totals (µs), the cpu line of /proc/stat, loadavg, and processes (ticks, netns inode)."""
    (root / "pressure").mkdir(parents=True, exist_ok=True)
    (root / "pressure" / "cpu").write_text(f"some avg10=1.00 avg60=0.50 avg300=0.10 total={cpu_some}\n"
                                           f"full avg10=0.00 avg60=0.00 avg300=0.00 total={cpu_full}\n")
    (root / "pressure" / "memory").write_text(f"some avg10=0.00 avg60=0.00 avg300=0.00 total={mem_some}\n"
                                              f"full avg10=0.00 avg60=0.00 avg300=0.00 total={mem_full}\n")
    (root / "stat").write_text("cpu  " + " ".join(map(str, stat)) + " 0 0\ncpu0 1 2 3\n")
    (root / "loadavg").write_text(load + "\n")
    for pid, (ticks, _ns) in (pids or {}).items():
        d = root / str(pid)
        d.mkdir(exist_ok=True)
        # pid (comm) state ppid … utime stime cutime cstime at fields 14-17
        rest = ["S", "1"] + ["0"] * 9 + [str(ticks), "0", "0", "0"] + ["0"] * 30
        (d / "stat").write_text(f"{pid} (my proc) " + " ".join(rest) + "\n")
    return root


def test_window_from_known_counters(tmp_path):
    # user nice system idle iowait irq softirq steal
    a = c.snapshot(proc=_proc(tmp_path / "a", cpu_some=1_000_000, mem_some=0, stat=(100, 0, 50, 800, 0, 0, 0, 50)))
    b = c.snapshot(proc=_proc(tmp_path / "b", cpu_some=4_000_000, mem_some=500_000, mem_full=100_000,
                              stat=(300, 0, 150, 1300, 0, 0, 0, 250)))
    b = c.Snapshot(a.wall + 10.0, b.cpu, b.memory, b.times, b.loadavg)
    w = c.window(a, b)
    assert w["window_s"] == 10.0
    assert w["cpu_some_pct"] == 30.0  # 3 s of 10 s some task waited
    assert w["memory_some_pct"] == 5.0 and w["memory_full_pct"] == 1.0
    # Δ: busy 300, steal 200, idle 500 of 1000 ticks
    assert w["steal_pct"] == 20.0 and w["busy_pct"] == 30.0
    assert w["loadavg_before"] == [0.5, 0.4, 0.3]
    assert w["foreign_cpu_pct"] is None  # the experiment's processes were not named


def test_foreign_cpu_is_busy_time_minus_the_experiments_processes(tmp_path, monkeypatch):
    monkeypatch.setattr(c, "TICKS", 100)
    own = c.OwnProcesses(pids=[11, 12])
    a = c.snapshot(own, _proc(tmp_path / "a", cpu_some=0, stat=(0, 0, 0, 0, 0, 0, 0, 0),
                              pids={11: (100, 0), 12: (50, 0), 13: (10, 0)}))
    b = c.snapshot(own, _proc(tmp_path / "b", cpu_some=0, stat=(700, 0, 100, 1200, 0, 0, 0, 0),
                              pids={11: (500, 0), 12: (250, 0), 13: (210, 0)}))
    b = c.Snapshot(a.wall + 10.0, b.cpu, b.memory, b.times, b.loadavg, b.own_ticks)
    w = c.window(a, b, cpus=2)
    # busy 800 ticks; ours 400 + 200 = 600; the rest 200 ticks of 2 cpus × 10 s × 100 = 2000
    assert w["foreign_cpu_pct"] == 10.0
    assert w["busy_cpu_s"] == 8.0 and w["own_cpu_s"] == 6.0  # CPU-seconds over the window, every core


def test_cpu_per_scenario_integrates_the_sampled_series_over_each_subtask():
    """Issue 46: a run records CPU per iteration of each scenario. A series a second apart (the experiment 1.5
    CPU-s/s, the machine 1.8): a subtask from 0.5 s to 4.5 s with 8 iterations used 6 CPU-s of the experiment's
    (0.75 per iteration) and 7.2 of the machine's; one outside the series has no figure; without the experiment's
    processes known the machine's CPU is used."""
    series = [c.CpuSample(100.0 + i, 1.8 * i, 1.5 * i) for i in range(6)]
    got = c.cpu_per_scenario(series, {"a": (100.5, 104.5, 8), "late": (110.0, 120.0, 3)})
    assert got["a"] == {"window_s": 4.0, "busy_cpu_s": 7.2, "own_cpu_s": 6.0, "iterations": 8, "cpu_s_per_iteration": 0.75}
    assert got["late"]["own_cpu_s"] is None and got["late"]["cpu_s_per_iteration"] is None
    pod = [c.CpuSample(100.0 + i, 1.8 * i, None) for i in range(6)]
    assert c.cpu_per_scenario(pod, {"a": (100.0, 105.0, 9)})["a"]["cpu_s_per_iteration"] == 1.0


def test_scenario_windows_from_a_real_rally_report():
    """The windows come from Rally's iterations: the first one's start to the last one's end, per subtask."""
    import json

    from wanwide.pipeline.runner.run import scenario_windows

    report = json.loads((Path(__file__).parents[1] / "data" / "bundles" / "runner-real" / "rally.json").read_text())
    w = scenario_windows(report)
    assert list(w) == ["KeystoneBasic.authenticate_user_and_validate_token", "KeystoneBasic.create_user_update_password"]
    t0, t1, n = w["KeystoneBasic.authenticate_user_and_validate_token"]
    assert n == 10 and t0 == 1795311017.5773146 and 20 < t1 - t0 < 40
    assert w["KeystoneBasic.create_user_update_password"][2] == 6


def test_own_processes_by_network_namespace(tmp_path):
    root = _proc(tmp_path, cpu_some=0, pids={21: (5, 0), 22: (7, 0)})
    for pid, ns in ((21, "a"), (22, "b")):
        (root / str(pid) / "ns").mkdir()
        (root / str(pid) / "ns" / "net").write_text(ns)
    inode = os.stat(root / "21" / "ns" / "net").st_ino
    assert c.own_pids([inode], [], root) == {21}
    assert c.OwnProcesses(netns=[inode], pids=[22]).ticks(root) == 12


def test_no_psi_reads_as_unknown(tmp_path):
    (tmp_path / "stat").write_text("cpu  1 0 1 10 0 0 0 0\n")
    s = c.snapshot(proc=tmp_path)
    assert s.cpu is None and s.loadavg is None
    w = c.window(s, s)
    assert w["psi"] is False and w["cpu_some_pct"] is None


@pytest.mark.skipif(not Path("/proc/pressure/cpu").exists(), reason="kernel without PSI")
def test_real_proc_and_a_busy_child_counts_as_ours():
    """On this kernel: a CPU-bound child of ours is the experiment, not foreign."""
    burn = subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()\nwhile time.time()-t<2: pass"])
    own = c.OwnProcesses(pids=[os.getpid(), burn.pid])
    a = c.snapshot(own)
    with c.Sampler(every_s=0.2) as s:
        burn.wait()
        time.sleep(0.3)
    b = c.snapshot(own)
    w = c.window(a, b)
    assert w["psi"] is True and 0 <= w["cpu_some_pct"] <= 100
    assert w["busy_pct"] is not None and w["busy_pct"] > 10  # the child kept a core busy
    assert w["foreign_cpu_pct"] is not None and w["foreign_cpu_pct"] < w["busy_pct"]
    assert s.figures()["cpu_some_avg10_max"] is not None


def test_the_sampler_records_the_experiments_cpu_every_second_on_this_kernel():
    """A child that burns 1 CPU-second (however busy the machine): the series, sampled while it runs, holds about
    that much of ours (the child's own while it lives, then through its parent, a member too, once reaped)."""
    burn = subprocess.Popen([sys.executable, "-c", "import time\nwhile time.process_time() < 1.0: pass"])
    own = c.OwnProcesses(pids=[os.getpid(), burn.pid])
    with c.Sampler(every_s=0.2, own=own) as s:
        time.sleep(0.1)
        burn.wait()
    assert len(s.series) >= 5 and all(b.t >= a.t for a, b in zip(s.series, s.series[1:], strict=False))
    used = s.series[-1].own_s - s.series[0].own_s
    assert 0.9 <= used <= 1.6, used
    got = c.cpu_per_scenario(s.series, {"x": (s.series[0].t, s.series[-1].t, 3)})["x"]
    assert got["own_cpu_s"] == round(used, 2) and got["busy_cpu_s"] >= got["own_cpu_s"] - 0.05


def test_window_figures_over_the_settle_period():
    from collections import deque

    # stalled 5 s, then quiet 5 s; foreign CPU: one core of two busy for 5 s, then none
    samples = [(float(t), min(t, 5) * 1_000_000, float(min(t, 5))) for t in range(0, 11)]
    assert window_figures(deque(samples[:3]), 5.0, cpus=2) is None  # not 5 s of samples yet
    assert window_figures(deque(samples), 5.0, cpus=2) == pytest.approx((0.0, 0.0))  # the last 5 s were quiet
    assert window_figures(deque(samples[:6]), 5.0, cpus=2) == pytest.approx((100.0, 50.0))
    assert window_figures(deque(samples[:8]), 5.0, cpus=2) == pytest.approx((60.0, 30.0))  # t 2..7: 3 s of 5
    unknown = [(t, p, None) for t, p, _f in samples]
    assert window_figures(deque(unknown), 5.0, cpus=2) == (pytest.approx(0.0), None)


def _clock():
    t = [0.0]
    return (lambda: t[0]), (lambda d: t.__setitem__(0, t[0] + d))


def _gate(said, read, clock, sleep, **kw):
    return wait_quiet(QuietGate(**({"threshold_pct": 10, "settle_s": 10, "max_wait_s": 600} | kw)), said.append,
                      read=read, clock=clock, sleep=sleep, cpus=2)


def test_gate_waits_for_pressure_to_drop_then_passes():
    clock, sleep = _clock()
    total = [0]

    def read():  # 80 % pressure until t=30, then 2 %; nothing foreign
        total[0] += int((0.8 if clock() <= 30.0 else 0.02) * 1_000_000)
        return total[0], 0.0

    said: list[str] = []
    g = _gate(said, read, clock, sleep)
    assert g["passed"] is True and 38 <= g["waited_s"] <= 45 and g["pressure_pct"] < 10
    assert g["foreign_cpu_pct"] == pytest.approx(0.0)
    assert any("waiting for a quiet machine" in m for m in said) and "machine quiet after" in said[-1]


def test_gate_waits_for_a_neighbour_that_takes_a_core_without_pressure():
    """One foreign CPU hog on 2 cores: no pressure at all, but half the machine is not ours."""
    clock, sleep = _clock()
    foreign = [0.0]

    def read():  # a neighbour busy on one core (1 CPU-second a second) until t=50
        foreign[0] += 1.0 if clock() <= 50.0 else 0.01
        return 0, foreign[0]

    said: list[str] = []
    g = _gate(said, read, clock, sleep)
    assert g["passed"] is True and 58 <= g["waited_s"] <= 65
    assert g["pressure_pct"] == pytest.approx(0.0) and g["foreign_cpu_pct"] < 10
    assert any("CPU used by other processes 50.0%" in m for m in said)


def test_gate_passes_on_the_experiments_own_level_pressure_and_says_so():
    """A 45-member Galera's idle gossip held the pressure at 25–35 % on 2 cores with nothing else running: the
    wait cannot lower it (10 min lost per trial); level for 6 settle windows, nothing foreign, the gate passes."""
    clock, sleep = _clock()
    total = [0]

    def read():  # 30 % pressure swinging ± 8 every 10 s (keepalive bursts), all of it ours
        total[0] += int((0.30 + 0.08 * (-1) ** int(clock() // 10)) * 1_000_000)
        return total[0], 0.0

    said: list[str] = []
    g = _gate(said, read, clock, sleep)
    assert g["passed"] is True and g["own_floor"] is True and 60 <= g["waited_s"] <= 80
    assert 20 <= g["pressure_pct"] <= 40 and "but for the experiment itself" in said[-1]

    foreign = [0.0]

    def busy():  # the same, and a neighbour on one core: wait it out, no floor
        total[0] += 300_000
        foreign[0] += 1.0
        return total[0], foreign[0]

    g = _gate(said, busy, clock, sleep, max_wait_s=200)
    assert g["passed"] is False and "own_floor" not in g

    start = clock()

    def settling():  # ours, falling 0.5 points a second from 90 %: worth the wait
        total[0] += int(max(0.02, 0.9 - 0.005 * (clock() - start)) * 1_000_000)
        return total[0], 0.0

    g = _gate(said, settling, clock, sleep)
    assert g["passed"] is True and "own_floor" not in g and clock() - start > 150


def test_gate_gives_up_and_says_so():
    clock, sleep = _clock()
    total = [0]

    def read():
        total[0] += 500_000
        return total[0], None

    said: list[str] = []
    g = _gate(said, read, clock, sleep, max_wait_s=60)
    assert g["passed"] is False and g["waited_s"] >= 60 and g["pressure_pct"] == pytest.approx(50.0)
    assert g["foreign_cpu_pct"] is None
    assert "starting anyway" in said[-1] and "noisy" in said[-1]
    off = wait_quiet(QuietGate(enabled=False), said.append, read=read, clock=clock, sleep=sleep)
    assert off["enabled"] is False and off["waited_s"] == 0.0


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / c.TICKS  # utime + stime


def test_gate_on_this_kernel_sees_a_foreign_process_and_not_ours():
    """Real /proc: a CPU-bound process outside the experiment keeps the gate waiting; the same
    process counted as ours does not. Both gates watch the same seconds (side by side), so what
    differs between them is the hog's own CPU, whatever else the machine runs (a 45-region lab
    run beside the suite once made a one-after-the-other version of this test fail)."""
    import threading

    burn = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        said: list[str] = []
        gate = QuietGate(threshold_pct=10, settle_s=2.5, max_wait_s=3)
        out: dict[str, dict] = {}
        owners = {"foreign": [os.getpid()], "ours": [os.getpid(), burn.pid]}
        threads = [threading.Thread(target=lambda k=k, pids=pids: out.__setitem__(
            k, wait_quiet(gate, said.append, own=c.OwnProcesses(pids=pids), every_s=0.25))) for k, pids in owners.items()]
        t0, cpu0 = time.monotonic(), _cpu_s(burn.pid)
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        hog = 100.0 * (_cpu_s(burn.pid) - cpu0) / ((os.cpu_count() or 1) * (time.monotonic() - t0))
        g, ours = out["foreign"], out["ours"]
        assert g["passed"] is False and g["foreign_cpu_pct"] is not None and ours["foreign_cpu_pct"] is not None
        assert hog > 5, hog  # it ran
        # counted as ours, the hog's share leaves the foreign figure (what remains is the rest of the machine)
        assert abs((g["foreign_cpu_pct"] - ours["foreign_cpu_pct"]) - hog) < 12, (g, ours, hog)
    finally:
        burn.kill()
        burn.wait()



def _member(root: Path, pid: int, utime: int, cutime: int = 0, start: int = 1000, netns: Path | None = None) -> None:
    """A process in a fake /proc: its stat (utime, cutime, start time) and, unless it is a zombie,
    its network namespace link (a hard link to ``netns``: the same inode)."""
    d = root / str(pid)
    d.mkdir(parents=True, exist_ok=True)
    rest = ["S", "1"] + ["0"] * 9 + [str(utime), "0", str(cutime), "0"] + ["0"] * 4 + [str(start)] + ["0"] * 20
    (d / "stat").write_text(f"{pid} (rally) " + " ".join(rest) + "\n")
    if netns is not None and not (d / "ns" / "net").exists():
        (d / "ns").mkdir(exist_ok=True)
        os.link(netns, d / "ns" / "net")


def test_a_member_that_exited_is_counted_until_and_after_it_is_reaped(tmp_path):
    """The delay study: a region's runner ended a second before another region's window did, and
    its 13 % of the CPU read as foreign there — an exited, not yet reaped process (a zombie) has
    no ``ns`` link any more. Counted from its stat until reaped, then through its parent, once."""
    import shutil

    root = tmp_path / "proc"
    root.mkdir()
    netns = tmp_path / "r1"
    netns.write_text("")
    own = c.OwnProcesses(netns=[os.stat(netns).st_ino], pids=[40])  # 40: the lab; 41: a runner in r1
    _member(root, 40, utime=100)
    _member(root, 41, utime=500, netns=netns)
    assert own.ticks(root) == 600
    shutil.rmtree(root / "41" / "ns")  # the runner exits: a zombie, its stat holds its 900 ticks
    _member(root, 41, utime=900)
    assert c.own_pids(own.netns, own.pids, root) == {40}  # by namespace alone it is lost…
    assert own.ticks(root) == 1000  # …but the set saw it before
    shutil.rmtree(root / "41")  # the lab reaps it: its ticks move to the lab's cutime
    _member(root, 40, utime=100, cutime=900)
    assert own.ticks(root) == 1000  # counted once
    _member(root, 41, utime=7, start=5000)  # the pid reused by a stranger
    assert own.ticks(root) == 1000
    assert c.OwnProcesses(netns=own.netns, pids=[40]).ticks(root) == 1000


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace needs root")
def test_real_zombie_in_a_namespace_is_the_experiments_cpu():
    """This kernel: a CPU-bound process in a network namespace exits and stays unreaped for a
    while (as a runner does until the lab polls it): its CPU stays the experiment's."""
    ns = f"wwz{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    burn = None
    try:
        burn = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c",
                                 "import time\nt=time.time()\nwhile time.time()-t<1.5: pass"])
        own = c.OwnProcesses(netns=[c.netns_inode(f"/var/run/netns/{ns}")], pids=[os.getpid()])
        time.sleep(0.3)
        a = c.snapshot(own)
        child_at_a = c.process_ticks(burn.pid)  # ≥ what a counted for it
        while (Path("/proc") / str(burn.pid) / "ns" / "net").exists():
            time.sleep(0.05)  # until it exits, unreaped
        assert (Path("/proc") / str(burn.pid) / "stat").read_text().split(") ")[1][0] == "Z"
        zombie = c.process_ticks(burn.pid)
        b = c.snapshot(own)
        assert zombie - child_at_a > 0
        assert b.own_ticks - a.own_ticks >= zombie - child_at_a  # its CPU in the window is ours
        burn.wait()
        assert c.snapshot(own).own_ticks >= b.own_ticks  # reaped: through our cutime, not lost
    finally:
        if burn is not None and burn.poll() is None:
            burn.kill()
            burn.wait()
        subprocess.run(["ip", "netns", "del", ns], check=False)
