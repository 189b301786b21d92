"""An idle Galera cluster's own traffic through the lab's links, per member and keepalive period.

    .venv/bin/python bench/galera_gossip.py -n 10 -n 20                      # wanwide's options for each size
    .venv/bin/python bench/galera_gossip.py -n 20 --set evs.keepalive_period=PT3.3S

Builds n regions wired as a star with the linkemu shaper (no delay), starts one Galera member per region
with ``galera_wan_options(0, n)`` (and any ``--set`` overrides), waits until all are Synced, then counts
the frames every region sends towards the hub over ``--samples`` windows of ``--window`` s (the emulator's
own counters). Prints frames/s in all and per member, each window, with the load average and the CPU
pressure ("some" avg10) at the time. Root; the lab's packages (hack/install-lab.sh).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from wanwide.core.plan.links import OneWay
from wanwide.core.plan.services import galera_wan_options
from wanwide.providers.lab import linkemu, netns
from wanwide.providers.lab.services import Services


def pressure() -> str:
    try:
        some = Path("/proc/pressure/cpu").read_text().split()[1]
        return f"cpu some {some.split('=')[1]} %"
    except (OSError, IndexError):
        return "cpu pressure n/a"


def measure(n: int, overrides: dict[str, str], samples: int, window: float) -> None:
    regions = [f"r{i + 1}" for i in range(n)]
    links = {(a, b): OneWay() for a in regions for b in regions if a != b}
    opts = galera_wan_options(0, n) | overrides
    t0 = time.monotonic()
    with netns.build(regions, links, shaper="linkemu", shapeable=True, layout="star") as net:
        em = linkemu.emulator_for(net.sock_dir)
        run_dir = tempfile.mkdtemp(prefix="ww-gossip-", dir="/var/tmp")
        os.chmod(run_dir, 0o755)
        sv = Services(net, run_dir)
        try:
            sv.start_galera(regions, provider_options=opts)
            print(f"n={n} keepalive {opts['evs.keepalive_period']} suspect {opts['evs.suspect_timeout']}: "
                  f"{n} members Synced in {time.monotonic() - t0:.0f} s", flush=True)
            rates = []
            for k in range(samples):
                a = em.stats()
                time.sleep(window)
                b = em.stats()
                up = sum(b[i]["frames_ab"] - a[i]["frames_ab"] for i in b) / window
                rates.append(up / n)
                print(f"  window {k + 1}: {up:,.0f} frames/s towards the hub, {up / n:,.0f} per member "
                      f"(load {os.getloadavg()[0]:.1f}, {pressure()})", flush=True)
            sd = statistics.stdev(rates) if len(rates) > 1 else 0.0
            print(f"n={n} keepalive {opts['evs.keepalive_period']}: {statistics.mean(rates):,.0f} ± {sd:,.0f} "
                  f"frames/s per member ({samples} windows of {window:g} s)", flush=True)
        finally:
            sv.stop_all()
            shutil.rmtree(run_dir, ignore_errors=True)  # ~240 MB a member


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--members", type=int, action="append", required=True)
    ap.add_argument("--set", action="append", default=[], help="a provider option KEY=VALUE over wanwide's")
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--window", type=float, default=20.0)
    a = ap.parse_args()
    overrides = dict(kv.split("=", 1) for kv in a.set)
    for n in a.members:
        measure(n, overrides, a.samples, a.window)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
