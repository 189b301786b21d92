"""What every figure of bench/ needs beside the number: the machine's load and the memory of a process tree.

- :func:`load`: ``/proc/loadavg`` and ``/proc/pressure/cpu`` (``some`` avg10/avg60), taken
  before and after each measurement.
- :func:`wait_quiet`: sleep until CPU pressure ``some avg10`` is below a bound (or give up).
- :func:`run`: a command as a child process, its wall time, and the peak memory of the
  child and all its descendants, sampled from outside every 20 ms (RSS summed, which counts
  pages shared after fork once per process, and PSS summed, which does not). The child's
  last stdout line, if JSON, is returned too.
- :func:`spread`: ``median (min–max)`` of repetitions.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import threading
import time
from pathlib import Path


def load() -> dict:
    """Load average (1, 5, 15 min) and CPU pressure ``some`` avg10/avg60 (%), now."""
    out = {"loadavg": " ".join(Path("/proc/loadavg").read_text().split()[:3])}
    try:
        some = Path("/proc/pressure/cpu").read_text().splitlines()[0].split()
        fields = dict(f.split("=") for f in some[1:])
        out["cpu_some_avg10"], out["cpu_some_avg60"] = float(fields["avg10"]), float(fields["avg60"])
    except (OSError, IndexError, KeyError, ValueError):
        pass
    return out


def load_text(before: dict, after: dict) -> str:
    def one(d: dict) -> str:
        return f"load {d['loadavg']}, cpu some {d.get('cpu_some_avg10', '?')}/{d.get('cpu_some_avg60', '?')} %"

    return f"{one(before)} → {one(after)}"


def wait_quiet(max_avg10: float, timeout_s: float, log=print) -> bool:
    """Sleep until CPU pressure some avg10 < ``max_avg10`` (True) or ``timeout_s`` passed (False)."""
    deadline = time.monotonic() + timeout_s
    while True:
        now = load()
        if now.get("cpu_some_avg10", 0.0) < max_avg10:
            return True
        if time.monotonic() > deadline:
            log(f"not quiet after {timeout_s:.0f} s ({load_text(now, now)}); measuring anyway")
            return False
        log(f"waiting for a quiet machine: {load_text(now, now)}")
        time.sleep(30)


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (parent ids from /proc/*/stat)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def _memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in kB; (0, 0) once it is gone."""
    try:
        rss = pss = 0
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
        return rss, pss
    except (OSError, ValueError):
        return 0, 0


def run(cmd: list[str], *, env: dict | None = None, interval_s: float = 0.02) -> dict:
    """Run ``cmd``; wall time, peak tree RSS/PSS (MB), return code, and its last JSON line."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = {"rss": 0, "pss": 0}

    def sample() -> None:
        while proc.poll() is None:
            tree = [_memory_kb(p) for p in _descendants(proc.pid)]
            peak["rss"] = max(peak["rss"], sum(r for r, _ in tree))
            peak["pss"] = max(peak["pss"], sum(p for _, p in tree))
            time.sleep(interval_s)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    sampler.join()
    result: dict = {}
    lines = out.strip().splitlines()
    if lines:
        with contextlib.suppress(json.JSONDecodeError):
            result = json.loads(lines[-1])
    return {"rc": proc.returncode, "wall_s": wall, "tree_rss_mb": peak["rss"] / 1024,
            "tree_pss_mb": peak["pss"] / 1024, "result": result, "stderr": err}


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    """``median (min–max)`` of ``values``."""
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"
