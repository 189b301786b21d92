"""One trial of many regions on the local test cluster: how long Keystone takes, what the operator costs.

    .venv/bin/python bench/scale.py --regions 45                  # the 45-region trial of the cluster tier
    .venv/bin/python bench/scale.py --regions 500 --until loading # stop timing at Loading (then clean up)
    .venv/bin/python bench/scale.py --regions 45 --keep           # leave the Benchmark (and the cluster)

Runs the real operator as a process under the chart's ServiceAccount against ``hack/testcluster.sh``
(``--regions`` kwok nodes, one per region; fixture Keystone chart; Rally stood in by ``RallyStandIn``),
as bench/load.py does. One Galera trial, LAN (no chaos objects), one scenario, load ``--load`` (high:
Rally in every region). Prints, from the apply: when the trial's place was deployed (``status.done``
``namespaces``), when Keystone was installed in every region (``keystone``), when the trial reached Loading and
when it was final; the operator's API requests from apply to Loading (API server audit log: total, per
region, by client and verb), its peak RSS (VmHWM) and CPU seconds (its own; its children's: helm), the
API server's and etcd's RSS, the load before and after, a timeline of the hook Jobs (created → complete)
and one JSON line. Exit 1 when the trial is not Succeeded (or not at ``--until``) within ``--timeout``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "operator"), str(ROOT / "bench")]

from load import CLK, Sampler, audit_requests, parse, pressure  # noqa: E402

from tests.cluster.conftest import connect  # noqa: E402
from tests.cluster.operator_env import (  # noqa: E402
    BUCKET,
    Operator,
    RallyStandIn,
    example,
    install_crds,
    install_rbac,
    results_store,
)
from wanwide.providers.kubernetes.kube.client import Kube, load_config  # noqa: E402

API = "wanwide.io/v1alpha1"
NAME = "scale"
FINAL = ("Succeeded", "Failed")


def documents(tc, regions: int, load: str) -> str:
    """The 45-region cluster test's Benchmark (regions-sweep, Galera, one scenario), ``regions`` regions."""
    docs = list(yaml.safe_load_all(example(tc, "regions-sweep.yaml", extra={
        "matrix": {"backend": ["galera"], "regions": [regions], "load": [load]}})))
    for d in docs:
        d["metadata"]["name"] = NAME
    docs[0]["spec"]["generate"]["count"] = regions
    spec = docs[1]["spec"]
    spec["topologyRef"] = NAME
    spec["workload"]["scenarios"] = spec["workload"]["scenarios"][:1]
    spec["timeouts"] |= {"provisioning": "90m", "verifyingNetwork": "30m", "loading": "30m",
                         "collecting": "15m", "cleaningUp": "60m"}
    return yaml.safe_dump_all(docs)


def rss_mb(pidfile: Path) -> float | None:
    with contextlib.suppress(OSError, ValueError):
        pid = int(pidfile.read_text().split()[0])
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


COMPONENTS = ("kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok")


def cpu_s(pidfile: Path) -> float:
    """CPU seconds (user + system) of the process in ``pidfile`` so far (0 when it is not running)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        pid = int(pidfile.read_text().split()[0])
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / CLK
    return 0.0


def hook_timeline(kube: Kube, trial: str) -> dict[str, Any]:
    """The keystone hook Jobs of the trial (still there: before the clean-up): created → complete, per name."""
    jobs = [j for j in kube.list("batch/v1", "Job", {"wanwide.io/trial": trial}) if j["metadata"]["name"] != "rally"]
    out: dict[str, Any] = {}
    for name in sorted({j["metadata"]["name"] for j in jobs}):
        spans, created = [], []
        for j in jobs:
            if j["metadata"]["name"] != name:
                continue
            c = parse(j["metadata"]["creationTimestamp"])
            created.append(c)
            done = parse((j.get("status") or {}).get("completionTime"))
            if done:
                spans.append(done - c)
        out[name] = {"jobs": len(created), "complete": len(spans),
                     "created_first_last": [min(created), max(created)] if created else None,
                     "created_to_complete_s": {"min": round(min(spans), 1), "median": round(statistics.median(spans), 1),
                                               "max": round(max(spans), 1)} if spans else None}
    return out


def profile_summary(path: Path, top: int = 12) -> str:
    """Where the operator's sampled time went: frames by samples on the stack, and by samples at the top."""
    incl: Counter = Counter()
    own: Counter = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        frames = [f for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        total += int(n)
        if frames:
            own[frames[-1]] += int(n)
        for f in set(frames):
            incl[f] += int(n)
    mine = [(f, n) for f, n in incl.most_common() if "wanwide/" in f][:top]
    return (f"operator profile ({total} samples of busy threads, 20 a second):\n  at the top: "
            + "; ".join(f"{100 * n / max(total, 1):.0f}% {f}" for f, n in own.most_common(top))
            + "\n  wanwide frames on the stack: " + "; ".join(f"{100 * n / max(total, 1):.0f}% {f}" for f, n in mine))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--regions", type=int, default=45)
    ap.add_argument("--load", choices=("high", "light"), default="high", help="high: Rally in every region")
    ap.add_argument("--until", choices=("loading", "done"), default="done",
                    help="loading: stop at Loading (then delete the Benchmark); done: wait for Succeeded")
    ap.add_argument("--timeout", type=float, default=5400, help="seconds from the apply")
    ap.add_argument("--keep", action="store_true", help="leave the Benchmark in place")
    ap.add_argument("--profile", metavar="FILE", help="sample the operator with py-spy (pip install py-spy) from the "
                    "apply to Loading into FILE (raw stacks) and print where its time went")
    a = ap.parse_args()

    # kwok's own pod timings (1-6 s per simulated step), which every figure in bench/README.md was measured
    # with; the test tier runs faster ones (hack/testcluster.sh, WANWIDE_KWOK_POD_DELAY_MS)
    os.environ.setdefault("WANWIDE_KWOK_POD_DELAY_MS", "1000/5000")
    tc = connect()
    subprocess.run([str(ROOT / "hack" / "testcluster.sh"), "nodes", str(a.regions)], check=True,
                   capture_output=True, timeout=900)
    ns = tc.namespace("scale")
    install_crds(tc)
    kubeconfig = install_rbac(tc, [ns])
    results_store(tc, ns)
    log = Path(f"/tmp/wanwide-scale-{ns}.log")
    op = Operator(tc, kubeconfig, [ns], log)
    op.start()
    try:
        return run(a, tc, ns, op, log)
    finally:
        op.stop()


def run(a: argparse.Namespace, tc, ns: str, op: Operator, log: Path) -> int:
    kube = Kube(load_config(str(tc.kubeconfig)))
    standin = RallyStandIn(tc, BUCKET)
    standin.start()
    sampler = Sampler(op.proc.pid)
    sampler.start()
    before = pressure()
    print(f"namespace {ns}; operator log {log}; regions {a.regions}; before: {before}", flush=True)
    text = documents(tc, a.regions, a.load)
    time.sleep(3)  # the operator's watches are up
    spy = None
    if a.profile:
        spy = subprocess.Popen([str(ROOT / ".venv" / "bin" / "py-spy"), "record", "-p", str(op.proc.pid), "-r", "20",
                                "-f", "raw", "-o", a.profile, "--nonblocking"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cpu0, children0 = sampler.cpu_s, sampler.children_cpu_s
    run_dir = tc.state / "run"
    comp0 = {c: cpu_s(run_dir / f"{c}.pid") for c in COMPONENTS}
    comp: dict[str, float] = {}
    t0 = time.time()
    tc.kubectl("apply", "-n", ns, "-f", "-", input=text, timeout=300)
    trial = f"{NAME}-t000"
    marks: dict[str, float] = {}
    hooks: dict[str, Any] = {}
    status: dict[str, Any] = {}
    last_print = 0.0
    while time.time() - t0 < a.timeout:
        time.sleep(1)
        with contextlib.suppress(Exception):  # the API server may be busy: next second
            status = (kube.get(API, "Trial", trial, ns) or {}).get("status") or {}
        now = time.time() - t0
        done, phase = set(status.get("done") or []), status.get("phase") or "Pending"
        for key, hit in (("provisioning", phase != "Pending"), ("base", "namespaces" in done),
                         ("wave0", "keystone-schema" in done), ("releases", "keystone" in done),
                         ("ready", phase not in ("Pending", "Provisioning")),
                         ("loading", phase in ("Loading", "Collecting", "CleaningUp", *FINAL)),
                         ("final", phase in FINAL)):
            if hit and key not in marks:
                marks[key] = now
                print(f"[{now:6.1f}s] {key}", flush=True)
                if key == "releases":
                    with contextlib.suppress(Exception):
                        hooks = hook_timeline(kube, trial)
                if key == "loading":
                    if spy:
                        spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
                        spy.wait(60)
                    comp = {c: round(cpu_s(run_dir / f"{c}.pid") - comp0[c], 1) for c in COMPONENTS}
                    sampler.sample()
                    marks["cpu_at_loading"] = sampler.cpu_s - cpu0
                    marks["helm_cpu_at_loading"] = sampler.children_cpu_s - children0
        if now - last_print >= 30:
            last_print = now
            print(f"[{now:6.1f}s] {phase}: {status.get('message', '')[:140]}", flush=True)
        if "final" in marks or (a.until == "loading" and "loading" in marks):
            break
    t_end = time.time()
    sampler.sample()
    after = pressure()
    until = t0 + marks.get("loading", t_end - t0)
    requests = audit_requests(tc, t0 - 1, until + 1)
    standin.stop_flag.set()
    state = tc.state / "run"
    total = sum(requests.values())
    by_agent, by_verb = Counter(), Counter()
    for (agent, verb), n in requests.items():
        by_agent[agent] += n
        by_verb[verb] += n
    figures = {
        "regions": a.regions, "load": a.load, "phase": status.get("phase"), "reason": status.get("reason"),
        **{f"t_{k}_s": round(v, 1) for k, v in marks.items() if not k.endswith("_loading")},
        "operator_peak_rss_mb": round(max(sampler.hwm_kb, sampler.peak_rss_kb) / 1024, 1),
        "operator_cpu_s_to_loading": round(marks.get("cpu_at_loading", sampler.cpu_s - cpu0), 1),
        "helm_cpu_s_to_loading": round(marks.get("helm_cpu_at_loading", sampler.children_cpu_s - children0), 1),
        "operator_cpu_s": round(sampler.cpu_s - cpu0, 1), "helm_cpu_s": round(sampler.children_cpu_s - children0, 1),
        "operator_cpu_ms_per_region_to_loading": round(
            1000 * marks.get("cpu_at_loading", sampler.cpu_s - cpu0) / a.regions, 1),
        "api_requests_to_loading": total, "api_requests_per_region": round(total / a.regions, 1),
        "api_requests_by_agent": dict(by_agent.most_common()), "api_requests_by_verb": dict(by_verb.most_common()),
        "cluster_cpu_s_to_loading": comp,
        "apiserver_rss_mb": rss_mb(state / "kube-apiserver.pid"), "etcd_rss_mb": rss_mb(state / "etcd.pid"),
        "hooks": hooks, "before": before, "after": after,
    }
    print(f"\nregions {a.regions}: base {marks.get('base', -1):.1f}s, Keystone in every region "
          f"{marks.get('releases', -1):.1f}s, Loading {marks.get('loading', -1):.1f}s, final {marks.get('final', -1):.1f}s "
          f"({status.get('phase')} {status.get('reason') or ''})")
    print(f"operator: peak RSS {figures['operator_peak_rss_mb']} MB, CPU to Loading {figures['operator_cpu_s_to_loading']} s "
          f"({figures['operator_cpu_ms_per_region_to_loading']} ms per region) "
          f"(+ children {figures['helm_cpu_s_to_loading']} s); kube-apiserver RSS {figures['apiserver_rss_mb']} MB, "
          f"etcd {figures['etcd_rss_mb']} MB")
    print("CPU seconds apply → Loading: " + ", ".join(f"{c} {v}" for c, v in comp.items()))
    print(f"API requests apply → Loading: {total} ({total / a.regions:.1f} per region); by client "
          + ", ".join(f"{k} {v}" for k, v in by_agent.most_common()) + "; by verb "
          + ", ".join(f"{k} {v}" for k, v in by_verb.most_common()))
    for name, h in hooks.items():
        print(f"hook {name}: {h['complete']}/{h['jobs']} complete; created {h['created_first_last'][0] - t0:.0f}"
              f"–{h['created_first_last'][1] - t0:.0f}s; created→complete {h['created_to_complete_s']}"
              if h["created_first_last"] else f"hook {name}: none")
    if a.profile and Path(a.profile).exists():
        print(profile_summary(Path(a.profile)))
    print(f"before: {before}\nafter: {after}")
    print(json.dumps({k: v for k, v in figures.items() if k != "hooks"}))
    ok = status.get("phase") == "Succeeded" or (a.until == "loading" and "loading" in marks)
    if not a.keep:
        tc.kubectl("delete", "benchmarks,topologies", "--all", "-n", ns, "--timeout=3600s", check=False, timeout=3700)
        tc.kubectl("delete", "namespace", ns, "--wait=false", check=False)
    sampler.stop_flag.set()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
