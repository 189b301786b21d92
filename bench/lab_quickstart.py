"""Time `wanwide lab run` per trial and phase (the quickstart's ≤ 10 min target; 45 regions ≤ 15 min,
≤ 18 GiB: manifests/examples/lab-45.yaml), with the machine's memory and CPU pressure through the run.

    .venv/bin/python bench/lab_quickstart.py                      # run the quickstart, print the table
    .venv/bin/python bench/lab_quickstart.py -f FILE [--fresh]     # another Benchmark / per-trial deployments
    .venv/bin/python bench/lab_quickstart.py --log LOG [--log LOG2] # tables from earlier runs' output

Memory: the machine's used memory (MemTotal − MemAvailable, page cache it can drop not counted) every
2 s, its peak and the peak above the figure before the run; CPU pressure: /proc/pressure/cpu "some"
avg10. After the run, each trial's iterations and failed iterations from its bundles.

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
import threading
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


def used_gib() -> float:
    """The machine's used memory: MemTotal − MemAvailable."""
    kb = {k: int(v.split()[0]) for k, _, v in (ln.partition(":") for ln in Path("/proc/meminfo").read_text().splitlines())}
    return (kb["MemTotal"] - kb["MemAvailable"]) / 2**20


def cpu_pressure() -> float:
    """/proc/pressure/cpu "some" avg10 (%), or NaN without PSI."""
    try:
        some = Path("/proc/pressure/cpu").read_text().splitlines()[0]
        return float(dict(kv.split("=") for kv in some.split()[1:])["avg10"])
    except (OSError, KeyError, IndexError, ValueError):
        return float("nan")


class Sampler(threading.Thread):
    """Used memory and CPU pressure every ``period_s`` until stopped."""

    def __init__(self, period_s: float = 2.0) -> None:
        super().__init__(daemon=True)
        self.period_s, self.t0, self.stopped = period_s, time.monotonic(), threading.Event()
        self.samples: list[tuple[float, float, float]] = []  # (s since start, GiB used, CPU pressure %)

    def run(self) -> None:
        while not self.stopped.is_set():
            self.samples.append((time.monotonic() - self.t0, used_gib(), cpu_pressure()))
            self.stopped.wait(self.period_s)

    def summary(self) -> str:
        if not self.samples:
            return "no samples"
        base = self.samples[0][1]
        t, peak, _ = max(self.samples, key=lambda x: x[1])
        ps = [p for _, _, p in self.samples if p == p]
        cpu = f"; CPU pressure some avg10 median {sorted(ps)[len(ps) // 2]:.0f} %, max {max(ps):.0f} %" if ps else ""
        return (f"memory used: {base:.2f} GiB before, peak {peak:.2f} GiB at {t:.0f} s (+{peak - base:.2f} GiB); "
                f"{len(self.samples)} samples every {self.period_s:g} s{cpu}")


def iterations(out: Path) -> str:
    """Per trial: iterations and failed iterations (the run's bundles, through `wanwide results export`)."""
    exe = str(Path(sys.executable).with_name("wanwide"))
    ds = out / "dataset"
    r = subprocess.run([exe, "results", "export", str(out / "bundles"), "-o", str(ds), "--no-progress"],
                       capture_output=True, text=True)
    if r.returncode:
        return f"no data set ({r.stderr.strip()[-300:]})"
    import pandas as pd

    it = pd.read_parquet(ds / "iterations.parquet")
    tot = it[it["action"] == "Total"]
    g = tot.groupby("trial_id", observed=True).agg(iterations=("action_failed", "size"), failed=("action_failed", "sum"))
    return "; ".join(f"{t}: {int(row.failed)} failed of {int(row.iterations)} iterations" for t, row in g.iterrows())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-f", "--file", default=str(ROOT / "manifests/examples/lab-quickstart.yaml"))
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--shaper", help="the lab's --shaper (default: its choice)")
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
    if a.shaper:
        argv += ["--shaper", a.shaper]
    print(f"$ {' '.join(argv)}   (load average {os.getloadavg()[0]:.1f})", flush=True)
    t0 = time.monotonic()
    sampler = Sampler()
    sampler.start()
    lines: list[str] = []
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
        assert p.stdout is not None
        for ln in p.stdout:
            sys.stdout.write(ln)
            lines.append(ln)
    wall = time.monotonic() - t0
    sampler.stopped.set()
    print(f"\n{table(phases(lines), wall)}\n{sampler.summary()}\niterations: {iterations(out)}\n"
          f"load average after: {os.getloadavg()[0]:.1f}; output in {out}")
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
