"""The lab's WAN at the study's scale: a full mesh against hubs (issue 26 item 1; docs/lab-layout.md).

    .venv/bin/python bench/lab_layout.py                          # 9 and 45 regions, mesh and auto
    .venv/bin/python bench/lab_layout.py --regions 45 --layouts star --rtt 300

For each region count and layout: the network alone (namespaces, shaped links, host links, as
`wanwide lab run` builds it for a shared deployment), built from nothing; then

- build and tear-down time, links, shaper processes, their memory (PSS summed) and the machine's
  MemAvailable drop;
- the RTT matrix: every directed pair up to 12 regions, else each region to ``--peers`` others
  (spread over the list, both directions), ``--samples`` TCP connects each; how many pairs are
  within the lab's tolerance (max(1 ms, 5 %)) and the worst error;

with the machine's load before and after each. Run as root; needs vde2 (hack/install-lab.sh).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import load, load_text, wait_quiet  # noqa: E402

from wanwide.core.plan.links import OneWay  # noqa: E402
from wanwide.providers.lab import netns  # noqa: E402


def _pss_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def _available_kb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])
    return 0


def _pairs(regions: list[str], peers: int) -> list[tuple[str, str]]:
    if len(regions) <= 12:
        return [(a, b) for a in regions for b in regions if a != b]
    n, out = len(regions), set()
    for i, a in enumerate(regions):
        for k in range(1, peers + 1):
            b = regions[(i + k * n // (peers + 1)) % n]
            if b != a:
                out |= {(a, b), (b, a)}
    return sorted(out)


def one(n: int, layout: str, rtt: float, samples: int, peers: int) -> dict:
    regions = [f"r{i}" for i in range(1, n + 1)]
    links = {(a, b): OneWay(rtt / 2) for a in regions for b in regions if a != b}
    before_load, avail0 = load(), _available_kb()
    t0 = time.monotonic()
    net = netns.build(regions, links, shaper="auto", layout=layout, shapeable=True, host_links=True)
    build_s = time.monotonic() - t0
    try:
        pids = [int(x) for x in subprocess.run(["pgrep", "-f", f"ww-{net.tag}"], capture_output=True,
                                               text=True).stdout.split()]
        pss, drop = _pss_kb(pids), avail0 - _available_kb()
        d = net.describe()
        pairs = _pairs(regions, peers)
        errors, lost = [], 0
        t1 = time.monotonic()
        for a, b in pairs:
            s = net.measure_rtt(a, b, samples=samples)
            if not s:
                lost += 1
                continue
            errors.append(abs(statistics.median(s) - rtt))
        measure_s = time.monotonic() - t1
    finally:
        t2 = time.monotonic()
        net.destroy()
        down_s = time.monotonic() - t2
    tol = max(1.0, 0.05 * rtt)
    return {"regions": n, "layout": d["layout"], "shaper": d["shaper"], "links": len(net.pairs) + len(net.edges),
            "hubs": len(d["hubs"]), "build_s": round(build_s, 1), "down_s": round(down_s, 1),
            "processes": len(pids), "pss_mb": round(pss / 1024), "mem_drop_mb": round(drop / 1024),
            "pairs": len(pairs), "within": sum(e <= tol for e in errors), "unanswered": lost,
            "worst_error_ms": round(max(errors), 2) if errors else None,
            "median_error_ms": round(statistics.median(errors), 2) if errors else None,
            "measure_s": round(measure_s, 1), "load": load_text(before_load, load())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--regions", type=int, nargs="+", default=[9, 45])
    ap.add_argument("--layouts", nargs="+", default=["mesh", "auto"])
    ap.add_argument("--rtt", type=float, default=100.0, help="RTT between any two regions, ms (default 100)")
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--peers", type=int, default=4)
    ap.add_argument("--wait-quiet", type=float, default=None, metavar="PCT")
    args = ap.parse_args()
    rows = []
    for n in args.regions:
        for layout in args.layouts:
            if args.wait_quiet is not None:
                wait_quiet(args.wait_quiet, 300)
            r = one(n, layout, args.rtt, args.samples, args.peers)
            print(json.dumps(r), flush=True)
            rows.append(r)
    print(f"\n| regions | layout | links | shaper processes | their PSS | MemAvailable drop | build | tear-down "
          f"| pairs within max(1 ms, 5 %) of {args.rtt:g} ms | worst error | load before → after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        lost = f" ({r['unanswered']} unanswered)" if r["unanswered"] else ""
        print(f"| {r['regions']} | {r['layout']} ({r['shaper']}) | {r['links']} | {r['processes']} | {r['pss_mb']} MB "
              f"| {r['mem_drop_mb']} MB | {r['build_s']} s | {r['down_s']} s | {r['within']}/{r['pairs']}{lost} "
              f"| {r['worst_error_ms']} ms | {r['load']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
