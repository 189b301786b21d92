"""The planner's peak memory and time on the largest inputs it accepts and on the worst it refuses.

    .venv/bin/python bench/plan_bounds.py                 # every input, 3 runs each
    .venv/bin/python bench/plan_bounds.py --runs 1 --only accepted

Each input goes to ``wanwide plan -f FILE --all`` (stdout to a pipe, read whole) in a process of its
own with 1 GiB of address space (RLIMIT_AS), as tests/plan/test_hostile.py runs the hostile corpus
(killed after ``--limit`` seconds, 300 by default: on a busy machine wall time says little, the CPU
time is the figure; ``--wait-quiet 10`` waits for CPU pressure "some avg10" < 10 % before each input). Accepted: a Benchmark at each cap of core/api/limits.py (a 1000-region trial; 1500
region-trials; links × fault windows at 1,000,000; 1000 trials; 2000 dropout cuts) and a file near the
YAML bounds of core/plan/yamldocs.py. Refused: the corpus' cases that cost most. Prints per input the
wall time, the process's own CPU time and peak RSS (os.wait4), median (min–max) over the runs, and
the machine's load before and after (``/proc/loadavg``, CPU pressure).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "operator"), str(ROOT / "bench")]

from benchlib import load, load_text, wait_quiet  # noqa: E402

from tests.plan.hostile import API, by_id  # noqa: E402
from tests.plan.limited import plan_file  # noqa: E402

Doc = dict


def bench(name: str, count: int, *, repetitions: int = 1, regions: list[int] | None = None,
          faults: Doc | None = None, rtts: list[str] | None = None, timeouts: Doc | None = None) -> Doc:
    spec: Doc = {"topology": {"generate": {"count": count}, "network": {"default": {"rtt": "10ms"}}},
                 "workload": {"scenarios": [{"name": "get_entities"}]},
                 "matrix": {"repetitions": repetitions, **({"regions": regions} if regions else {}),
                            **({"rtt": rtts} if rtts else {})}}
    if faults:
        spec["faults"] = faults
    if timeouts:
        spec["timeouts"] = timeouts
    return {"apiVersion": API, "kind": "Benchmark", "metadata": {"name": name, "namespace": "lab"}, "spec": spec}


def windows(n: int, regions: int) -> Doc:
    """``n`` fault windows, half partitions and half loss windows, each on one region."""
    half = n // 2
    return {"partitions": [{"regions": [f"r{i % regions + 1}"], "start": f"{i}s", "duration": "5s"} for i in range(half)],
            "lossWindows": [{"regions": [f"r{i % regions + 1}"], "start": f"{i}s", "duration": "5s", "loss": "1%"}
                            for i in range(n - half)]}


def big_topology() -> list[Doc]:
    """A file near the YAML bounds: a 200-region Topology, 2000 overrides, and a Benchmark using it."""
    regions = [{"name": f"r{i}", "group": f"g{i % 10}", "nodeSelector": {"wanwide.io/site": f"s{i}"}} for i in range(200)]
    overrides = [{"from": f"r{i}", "to": f"r{(i * 7 + j) % 200}", "rtt": "20ms"} for i in range(200) for j in range(1, 11)
                 if (i * 7 + j) % 200 != i][:2000]
    seen, unique = set(), []
    for o in overrides:
        key = frozenset((o["from"], o["to"]))
        if key not in seen:
            seen.add(key)
            unique.append(o)
    topo = {"apiVersion": API, "kind": "Topology", "metadata": {"name": "big", "namespace": "lab"},
            "spec": {"regions": regions, "network": {"default": {"rtt": "100ms"}, "intraGroup": {"rtt": "10ms"},
                                                     "overrides": unique}}}
    b = bench("big", 1)
    b["spec"].pop("topology")
    b["spec"]["topologyRef"] = "big"
    return [topo, b]


ACCEPTED: dict[str, Callable[[], list[Doc]]] = {
    "1000-regions-one-trial": lambda: [bench("r1000", 1000)],
    "1485-region-trials-45x33": lambda: [bench("r45x33", 45, repetitions=33)],
    "998k-link-windows-500x4": lambda: [bench("r500w3", 500, faults=windows(3, 500))],
    "889k-link-windows-90x111": lambda: [bench("r90w110", 90, faults={
        **windows(100, 90), "dropouts": [{"every": f"{60 + i}s", "for": "5s", "regions": [f"r{i + 1}"]}
                                         for i in range(10)]})],
    "1000-trials-one-region": lambda: [bench("t1000", 1, repetitions=100, rtts=[f"{i}ms" for i in range(10)])],
    "2000-dropout-cuts": lambda: [bench("cuts", 3, timeouts={"loading": "200m"}, faults={
        "dropouts": [{"every": "60s", "for": "5s"} for _ in range(10)]})],
    "200-regions-2000-overrides": big_topology,
}
REFUSED = ("yaml-billion-laughs", "yaml-one-big-anchor-many-aliases", "yaml-deep-flow-lists", "yaml-too-many-values",
           "yaml-many-documents", "yaml-object-over-1.5-mib", "yaml-file-over-3-mib", "dropout-2us-every-1us",
           "matrix-every-axis-full", "links-with-fault-windows", "many-benchmarks-in-one-file")


def spread(values: list[float], fmt: str = "{:.1f}") -> str:
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", choices=("accepted", "refused"))
    ap.add_argument("--limit", type=float, default=300.0, help="seconds before a run is killed")
    ap.add_argument("--wait-quiet", type=float, help="wait for CPU pressure some avg10 below this (%%)")
    ap.add_argument("--quiet-timeout", type=float, default=600.0)
    args = ap.parse_args()
    inputs: list[tuple[str, str, bytes | None, str | None]] = []
    if args.only != "refused":
        inputs += [("accepted", k, yaml.safe_dump_all(make(), sort_keys=False).encode(), None)
                   for k, make in ACCEPTED.items()]
    if args.only != "accepted":
        inputs += [("refused", k, by_id(k).data(), by_id(k).path) for k in REFUSED]
    print(f"{'input':36} {'verdict':8} {'size':>12} {'wall s':>16} {'CPU s':>16} {'peak RSS MB':>16}  load")
    worst_ok = True
    with tempfile.TemporaryDirectory() as d:
        for kind, name, data, device in inputs:
            path = Path(device) if device else Path(d) / f"{name}.yaml"
            if not device:
                path.write_bytes(data or b"")
            if args.wait_quiet is not None:
                wait_quiet(args.wait_quiet, args.quiet_timeout)
            before = load()
            runs = [plan_file(path, args.limit) for _ in range(args.runs)]
            after = load()
            verdicts = {("killed" if r.code is None else "plans" if r.code == 0 else
                         "refused" if r.code == 2 and len(r.stderr.splitlines()) == 1 else f"exit {r.code}")
                        for r in runs}
            verdict = ",".join(sorted(verdicts))
            worst_ok &= verdict == ("plans" if kind == "accepted" else "refused")
            size = device or f"{len(data or b''):,} B"
            print(f"{name:36} {verdict:8} {size:>12} {spread([r.seconds for r in runs]):>16} "
                  f"{spread([r.cpu_s for r in runs]):>16} {spread([r.peak_mb for r in runs], '{:.0f}'):>16}  "
                  f"{load_text(before, after)}", flush=True)
            if verdict not in ("plans", "refused"):
                print("   ", runs[-1].stderr.strip().splitlines()[-1:] if runs[-1].stderr.strip() else "(no stderr)")
    return 0 if worst_ok else 1


if __name__ == "__main__":
    sys.exit(main())
