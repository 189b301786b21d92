#!/usr/bin/env python3
"""What the quiet-machine gate and the noisy-run rule see on this machine: CPU pressure (PSI
"some") and the CPU used outside a set of "own" processes, while 0, 1, 2 or 4 CPU-bound
processes that are not ours run beside, and while 1 or 2 of ours do.

    .venv/bin/python bench/contention.py [--window 20] [--reps 3] [--json FILE]

Each state: start the busy processes, wait 3 s, then ``--reps`` windows of ``--window`` seconds;
prints the median and the range of each figure per state, and the machine's load before. The
defaults of ``wanwide lab run --quiet-threshold/--quiet-settle`` and the noisy rule were chosen
from this table (bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))
from wanwide.pipeline.runner import contention as c  # noqa: E402

BUSY = "import time\nwhile True: pass"


def measure(window_s: float, own: c.OwnProcesses) -> dict:
    a = c.snapshot(own)
    time.sleep(window_s)
    return c.window(a, c.snapshot(own))


def state(foreign: int, ours: int, window_s: float, reps: int) -> dict:
    procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(foreign + ours)]
    own = c.OwnProcesses(pids=[os.getpid(), *(p.pid for p in procs[foreign:])])
    try:
        time.sleep(3)
        wins = [measure(window_s, own) for _ in range(reps)]
    finally:
        for p in procs:
            p.kill()
            p.wait()
    out = {"foreign_busy": foreign, "own_busy": ours}
    for k in ("cpu_some_pct", "foreign_cpu_pct", "busy_pct", "steal_pct"):
        vals = [w[k] for w in wins if w[k] is not None]
        out[k] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals)} if vals else None
    return out


def _cell(v: dict | None, w: int = 20) -> str:
    return f"{'n/a':>{w}}" if v is None else f"{v['median']:6.1f} [{v['min']:5.1f}, {v['max']:5.1f}]".rjust(w)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--window", type=float, default=20.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", help="write the results here too")
    a = ap.parse_args()
    if c.read_pressure("cpu") is None:
        print("this kernel has no /proc/pressure/cpu", file=sys.stderr)
        return 2
    load = os.getloadavg()
    print(f"cpus {os.cpu_count()}, load average before {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"{a.reps} windows of {a.window:g} s per state")
    rows = [state(f, o, a.window, a.reps) for f, o in ((0, 0), (0, 1), (0, 2), (1, 0), (2, 0), (4, 0), (1, 2))]
    head = f"{'not ours':>8} {'ours':>4}  {'CPU pressure %':>20}  {'foreign CPU %':>20}  {'busy %':>20}  {'steal %':>14}"
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['foreign_busy']:>8} {r['own_busy']:>4}  {_cell(r['cpu_some_pct'])}  {_cell(r['foreign_cpu_pct'])}  "
              f"{_cell(r['busy_pct'])}  {_cell(r['steal_pct'], 14)}")
    load = os.getloadavg()
    print(f"load average after {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
