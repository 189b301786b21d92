"""``wanwide plan -f FILE --all`` as a user runs it, in a process of its own under the limits the operator's
replica has: 1 GiB of address space (RLIMIT_AS) and 30 s. Its exit code, output, time, CPU time and peak RSS."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MEMORY = 1 << 30  # bytes of address space: the operator's replica has 1 GiB
SECONDS = 30.0


@dataclass(frozen=True)
class Run:
    code: int | None  # None: killed at the time limit
    stdout: str
    stderr: str
    seconds: float
    cpu_s: float
    peak_mb: float


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def plan_file(path: Path, seconds: float = SECONDS) -> Run:
    """``wanwide plan -f PATH --all`` under the limits (killed after ``seconds``): its outcome, time, CPU time
    (os.wait4) and peak RSS (the process's own VmHWM, read every 20 ms while it runs: ``ru_maxrss`` would
    count the forking parent's pages)."""
    exe = Path(sys.executable).with_name("wanwide")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "wanwide.cli"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "operator")}
    t0 = time.monotonic()
    p = subprocess.Popen([*cmd, "plan", "-f", str(path), "--all"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=_limit, env=env)
    got: dict[str, bytes] = {}
    readers = [threading.Thread(target=lambda n=n, s=s: got.__setitem__(n, s.read()))
               for n, s in (("out", p.stdout), ("err", p.stderr))]
    for r in readers:
        r.start()
    killed = False
    peak_kb = 0
    while True:
        peak_kb = max(peak_kb, _hwm_kb(p.pid))
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - t0 > seconds:
            p.kill()
            _, status, ru = os.wait4(p.pid, 0)
            killed = True
            break
        time.sleep(0.02)
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    for r in readers:
        r.join()
    return Run(None if killed else p.returncode, got["out"].decode(errors="replace"),
               got["err"].decode(errors="replace"), time.monotonic() - t0, ru.ru_utime + ru.ru_stime, peak_kb / 1024)


def _hwm_kb(pid: int) -> int:
    """The process's peak resident memory so far (kB), 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next((int(line.split()[1]) for line in fh if line.startswith("VmHWM:")), 0)
    except OSError:
        return 0


