"""Time `wanwide lab run` per trial and phase (the quickstart's ≤ 10 min target).

    .venv/bin/python bench/lab_quickstart.py                      # run the quickstart, print the table
    .venv/bin/python bench/lab_quickstart.py -f FILE [--fresh]     # another Benchmark / per-trial deployments
    .venv/bin/python bench/lab_quickstart.py --log LOG [--log LOG2] # tables from earlier runs' output

Phases from the live status lines: deploy = namespaces, links, RTT check and
(first trial on a deployment) database + Keystones; prep = Rally database,
environment, user, RTT gauges until the release; task = `rally task start`
to bundles written (iterations + Rally's contexts and clean-up); the rest =
clean-up and the next trial's start.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"^\[\s*(\d+)s\] trial (\d+)/(\d+) (t\d+) \(([^)]*)\) (\w+)(?:: (.*))?$")


def phases(lines: list[str]) -> list[dict]:
    """Per trial: parameters and the seconds at which each phase began."""
    trials: dict[tuple[str, str], dict] = {}
    for ln in lines:
        m = LINE.match(ln.strip())
        if not m:
            continue
        t, _, _, tid, params, phase, detail = int(m[1]), m[2], m[3], m[4], m[5], m[6], m[7] or ""
        tr = trials.setdefault((tid, params), {"trial": tid, "params": params, "start": t})
        if phase == "Loading" and detail.startswith("Rally in"):
            tr.setdefault("prep", t)
        elif phase == "Loading" and detail.startswith("starting rally task"):
            tr.setdefault("task", t)
        elif phase == "Collecting":
            tr.setdefault("collected", t)
        elif phase in ("Succeeded", "Failed", "Skipped"):
            tr["end"], tr["result"] = t, phase
        if "re-shaping" in detail:
            tr["shared_reuse"] = True
    out = sorted(trials.values(), key=lambda r: r["start"])
    for a, b in zip(out, out[1:], strict=False):
        a["next"] = b["start"]
    return out


def table(rows: list[dict], wall: float | None) -> str:
    def d(r: dict, a: str, b: str) -> str:
        return f"{r[b] - r[a]}" if a in r and b in r else "–"

    head = "| trial | parameters | deployment | deploy | prep | task | total |\n|---|---|---|---|---|---|---|"
    body = [f"| {r['trial']} | {r['params']} | {'re-shaped' if r.get('shared_reuse') else 'new'} | "
            f"{d(r, 'start', 'prep')} | {d(r, 'prep', 'task')} | {d(r, 'task', 'collected')} | "
            f"{d(r, 'start', 'next') if 'next' in r else d(r, 'start', 'end')} |" for r in rows]
    end = max((r.get("end", 0) for r in rows), default=0)
    tail = f"\nlast trial ended at {end} s" + (f"; wall time {wall:.0f} s ({wall / 60:.1f} min)" if wall else "")
    return "\n".join([head, *body]) + tail


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-f", "--file", default=str(ROOT / "manifests/examples/lab-quickstart.yaml"))
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--log", action="append", help="parse this earlier output instead of running")
    a = ap.parse_args()
    if a.log:
        for p in a.log:
            print(f"## {p}\n{table(phases(Path(p).read_text().splitlines()), None)}\n")
        return 0
    out = Path(tempfile.mkdtemp(prefix="ww-bench-lab-", dir="/var/tmp"))
    argv = [str(Path(sys.executable).with_name("wanwide")), "lab", "run", "-f", a.file, "-o", str(out)]
    if a.fresh:
        argv.append("--fresh")
    print(f"$ {' '.join(argv)}   (load average {os.getloadavg()[0]:.1f})", flush=True)
    t0 = time.monotonic()
    lines: list[str] = []
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
        assert p.stdout is not None
        for ln in p.stdout:
            sys.stdout.write(ln)
            lines.append(ln)
    wall = time.monotonic() - t0
    print(f"\n{table(phases(lines), wall)}\nload average after: {os.getloadavg()[0]:.1f}; output in {out}")
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
