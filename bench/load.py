"""20 Benchmarks applied at once on the local test cluster: every trial final, none starved, the operator's cost.

    .venv/bin/python bench/load.py                       # 20 Benchmarks x 3 trials, parallelism 2, 2 regions
    .venv/bin/python bench/load.py --benchmarks 4 --trials 2 --starve-bound 120
    .venv/bin/python bench/load.py --keep                # leave the Benchmarks (and the cluster) for a look

Runs the real operator as a process against ``hack/testcluster.sh`` (kwok nodes,
fixture Keystone chart rendered by helm template, Rally stood in by ``RallyStandIn``, as
the cluster tests do). Prints every trial's final phase, time to final per
Benchmark, starvation (time from the apply to a Benchmark's first trial start;
no Benchmark may wait until another one is done), the operator's peak RSS and CPU
seconds (its own and its reaped children's: helm template), its API requests (from the
API server's audit log, by user agent) and a JSON line. Exit 1 when a trial is
not final or failed, or a Benchmark starved.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "operator")]

from tests.cluster.conftest import connect  # noqa: E402
from tests.cluster.operator_env import (  # noqa: E402
    BUCKET,
    SA,
    SYSTEM_NS,
    Operator,
    RallyStandIn,
    example,
    install_crds,
    install_rbac,
    results_store,
)

FINAL = ("Succeeded", "Failed")
CLK = os.sysconf("SC_CLK_TCK")


def documents(tc, n: int, trials: int, regions: int, prefix: str) -> str:
    """``n`` Topology+Benchmark pairs; ``trials`` matrix points (RTT), parallelism 2, ``regions`` regions."""
    base = list(yaml.safe_load_all(example(tc, "uniform-9.yaml")))
    out = []
    for i in range(n):
        topo, bench = json.loads(json.dumps(base[0])), json.loads(json.dumps(base[1]))
        name = f"{prefix}{i:02d}"
        topo["metadata"]["name"] = bench["metadata"]["name"] = name
        topo["spec"]["generate"]["count"] = regions
        bench["spec"]["topologyRef"] = name
        bench["spec"]["matrix"] = {"rtt": [f"{10 * (k + 1)}ms" for k in range(trials)], "parallelism": 2}
        bench["spec"]["workload"]["scenarios"] = bench["spec"]["workload"]["scenarios"][:1]
        bench["spec"]["timeouts"] |= {"provisioning": "15m", "cleaningUp": "10m", "loading": "10m"}
        out += [topo, bench]
    return yaml.safe_dump_all(out)


class Sampler(threading.Thread):
    """Samples a process's RSS and CPU every second; VmHWM is the kernel's own peak."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.stop_flag = pid, threading.Event()
        self.peak_rss_kb = self.hwm_kb = 0
        self.cpu_s = self.children_cpu_s = 0.0

    def sample(self) -> None:
        with contextlib.suppress(OSError):
            status = Path(f"/proc/{self.pid}/status").read_text()
            for line in status.splitlines():
                key, _, val = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    kb = int(val.split()[0])
                    if key == "VmRSS":
                        self.peak_rss_kb = max(self.peak_rss_kb, kb)
                    else:
                        self.hwm_kb = kb
            f = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
            self.cpu_s = (int(f[11]) + int(f[12])) / CLK
            self.children_cpu_s = (int(f[13]) + int(f[14])) / CLK

    def run(self) -> None:
        while not self.stop_flag.wait(1.0):
            self.sample()


def parse(t: str | None) -> float | None:
    return dt.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() if t else None


def audit_requests(tc, since: float, until: float) -> Counter:
    """The chart ServiceAccount's requests between ``since`` and ``until`` (audit log), by user agent and verb."""
    user = f"system:serviceaccount:{SYSTEM_NS}:{SA}"
    seen, out = set(), Counter()
    for f in sorted((tc.state / "audit").glob("audit*.log")):
        for line in f.open():
            e = json.loads(line)
            if e["user"]["username"] != user or e["auditID"] in seen:
                continue
            at = parse(e["requestReceivedTimestamp"])
            if at is None or not since <= at <= until:
                continue
            seen.add(e["auditID"])
            agent = e.get("userAgent", "").split("/")[0].split(" ")[0] or "?"
            out[(agent, e["verb"])] += 1
    return out


def pressure() -> str:
    load = Path("/proc/loadavg").read_text().split()[:3]
    cpu = ""
    with contextlib.suppress(OSError):
        cpu = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    return f"loadavg {' '.join(load)}; cpu pressure {cpu}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--benchmarks", type=int, default=20)
    ap.add_argument("--trials", type=int, default=3, help="trials per Benchmark (matrix points)")
    ap.add_argument("--regions", type=int, default=2, help="regions per trial")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds for every Benchmark to be final")
    ap.add_argument("--starve-bound", type=float, default=300,
                    help="seconds after the apply by which every Benchmark's first trial must have started")
    ap.add_argument("--keep", action="store_true", help="leave the Benchmarks in place")
    a = ap.parse_args()

    tc = connect()
    subprocess.run([str(ROOT / "hack" / "testcluster.sh"), "nodes", str(max(3, a.regions))], check=True,
                   capture_output=True)
    ns = tc.namespace("load")
    install_crds(tc)
    kubeconfig = install_rbac(tc, [ns])
    results_store(tc, ns)
    log = Path(f"/tmp/wanwide-load-{ns}.log")
    op = Operator(tc, kubeconfig, [ns], log)
    op.start()
    try:
        return run(a, tc, ns, op, log)
    finally:
        op.stop()


def run(a: argparse.Namespace, tc, ns: str, op: Operator, log: Path) -> int:
    prefix = f"ld{uuid.uuid4().hex[:4]}-"
    standin = RallyStandIn(tc, BUCKET)
    standin.start()
    sampler = Sampler(op.proc.pid)
    sampler.start()
    print(f"namespace {ns}; operator log {log}; before: {pressure()}", flush=True)
    text = documents(tc, a.benchmarks, a.trials, a.regions, prefix)
    time.sleep(3)  # the operator's watches are up
    cpu0 = sampler.cpu_s
    t0 = time.time()
    tc.kubectl("apply", "-n", ns, "-f", "-", input=text, timeout=300)
    benches: dict[str, dict[str, Any]] = {}
    trials: dict[str, dict[str, Any]] = {}
    loads: list[float] = []
    provisioned: dict[str, float] = {}  # trial -> first poll that saw it past Provisioning
    while time.time() - t0 < a.timeout:
        time.sleep(10)
        with contextlib.suppress(AssertionError, subprocess.TimeoutExpired, json.JSONDecodeError):
            benches = {b["metadata"]["name"]: b for b in tc.kubectl_json("get", "benchmarks", "-n", ns)["items"]}
            trials = {t["metadata"]["name"]: t for t in tc.kubectl_json("get", "trials", "-n", ns)["items"]}
        loads.append(float(Path("/proc/loadavg").read_text().split()[0]))
        for name, t in trials.items():
            if (t.get("status") or {}).get("phase") not in (None, "Pending", "Provisioning"):
                provisioned.setdefault(name, time.time() - t0)
        phases = Counter((t.get("status") or {}).get("phase") or "Pending" for t in trials.values())
        done = sum((b.get("status") or {}).get("phase") in FINAL for b in benches.values())
        print(f"[{time.time() - t0:5.0f}s] benchmarks final {done}/{a.benchmarks}; trials "
              + ", ".join(f"{p} {n}" for p, n in sorted(phases.items())), flush=True)
        if len(benches) == a.benchmarks and done == a.benchmarks:
            break
    t_end = time.time()
    sampler.sample()
    after = pressure()
    requests = audit_requests(tc, t0 - 1, t_end + 1)
    standin.stop_flag.set()

    # ---- figures
    bad: list[str] = []
    print(f"\n{'trial':<22} {'phase':<10} {'start s':>8} {'past prov. s':>12} {'final s':>8}  reason")
    per_bench: dict[str, list[dict[str, Any]]] = {}
    for name, t in sorted(trials.items()):
        st = t.get("status") or {}
        start, end = parse(st.get("startTime")), parse(st.get("completionTime"))
        row = {"trial": name, "phase": st.get("phase"), "start": start and start - t0, "end": end and end - t0,
               "provisioned": provisioned.get(name)}
        per_bench.setdefault(t["spec"]["benchmark"], []).append(row)
        print(f"{name:<22} {row['phase'] or '-':<10} {row['start'] or 0:8.0f} {row['provisioned'] or 0:12.0f} "
              f"{row['end'] or 0:8.0f}  "
              f"{st.get('reason') or ''}")
        if row["phase"] not in FINAL:
            bad.append(f"trial {name} not final: {row['phase']}")
        elif row["phase"] != "Succeeded":
            bad.append(f"trial {name} {row['phase']}: {st.get('message')}")
    missing = a.benchmarks * a.trials - len(trials)
    if missing:
        bad.append(f"{missing} trial(s) never created")
    print(f"\n{'benchmark':<12} {'phase':<10} {'first start s':>13} {'last start s':>12} {'final s':>8}")
    firsts, finals = {}, {}
    for name, b in sorted(benches.items()):
        rows = per_bench.get(name, [])
        starts = [r["start"] for r in rows if r["start"] is not None]
        firsts[name] = min(starts) if starts else None
        finals[name] = parse((b.get("status") or {}).get("completionTime"))
        finals[name] = finals[name] and finals[name] - t0
        print(f"{name:<12} {(b.get('status') or {}).get('phase') or '-':<10} {firsts[name] or -1:13.0f} "
              f"{max(starts) if starts else -1:12.0f} "
              f"{finals[name] or -1:8.0f}")
    known_firsts = [f for f in firsts.values() if f is not None]
    known_finals = [f for f in finals.values() if f is not None]
    worst = max(known_firsts) if known_firsts else None
    if len(known_firsts) < a.benchmarks or worst is None or worst > a.starve_bound:
        bad.append(f"starvation: a Benchmark's first trial started after {worst}s (bound {a.starve_bound}s)"
                   f" or never ({a.benchmarks - len(known_firsts)} never)")
    if known_finals and worst is not None and worst > min(known_finals):
        bad.append(f"starvation: a Benchmark started at {worst:.0f}s, after another one was done "
                   f"({min(known_finals):.0f}s)")
    wall = t_end - t0
    starts_all = [r["start"] for rs in per_bench.values() for r in rs if r["start"] is not None]
    prov = [r["provisioned"] - r["start"] for rs in per_bench.values() for r in rs
            if r["provisioned"] is not None and r["start"] is not None]
    cpu = sampler.cpu_s - cpu0
    total_req = sum(requests.values())
    by_agent = Counter()
    for (agent, _), n in requests.items():
        by_agent[agent] += n
    figures = {
        "benchmarks": a.benchmarks, "trials": len(trials), "regions_per_trial": a.regions,
        "succeeded": sum(r["phase"] == "Succeeded" for rs in per_bench.values() for r in rs),
        "wall_s": round(wall, 1),
        "first_start_s": {"min": round(min(known_firsts), 1) if known_firsts else None,
                          "median": round(statistics.median(known_firsts), 1) if known_firsts else None,
                          "max": round(worst, 1) if worst is not None else None},
        "trial_start_max_s": round(max(starts_all), 1) if starts_all else None,
        "provisioning_s": {"median": round(statistics.median(prov), 1) if prov else None,
                           "max": round(max(prov), 1) if prov else None},
        "bench_final_s": {"min": round(min(known_finals), 1) if known_finals else None,
                          "median": round(statistics.median(known_finals), 1) if known_finals else None,
                          "max": round(max(known_finals), 1) if known_finals else None},
        "operator_peak_rss_mb": round(max(sampler.hwm_kb, sampler.peak_rss_kb) / 1024, 1),
        "operator_cpu_s": round(cpu, 1), "helm_cpu_s": round(sampler.children_cpu_s, 1),
        "api_requests": total_req, "api_requests_per_s": round(total_req / wall, 2),
        "api_requests_by_agent": dict(by_agent),
        "loadavg_1m_median": round(statistics.median(loads), 2) if loads else None,
        "problems": len(bad),
    }
    verbs = Counter()
    for (_, v), n in requests.items():
        verbs[v] += n
    figures["api_requests_by_verb"] = dict(verbs)
    print(f"\nwall {wall:.0f}s; first trial start per Benchmark: {figures['first_start_s']}; "
          f"Benchmark final: {figures['bench_final_s']}")
    print(f"operator peak RSS {figures['operator_peak_rss_mb']} MB (VmHWM), CPU {cpu:.1f}s "
          f"(+ helm children {sampler.children_cpu_s:.1f}s)")
    print(f"API requests of the operator's ServiceAccount: {total_req} ({total_req / wall:.2f}/s); by agent "
          + ", ".join(f"{k} {v}" for k, v in by_agent.most_common()) + "; by verb "
          + ", ".join(f"{k} {v}" for k, v in verbs.most_common()))
    print(f"after: {after}")
    for p in bad:
        print(f"PROBLEM: {p}")
    print(json.dumps(figures))

    sampler.stop_flag.set()
    if not a.keep:
        tc.kubectl("delete", "benchmarks,topologies", "--all", "-n", ns, "--timeout=900s", check=False, timeout=960)
        tc.kubectl("delete", "namespace", ns, "--wait=false", check=False)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
