"""How many regions with a whole OpenStack control plane fit this machine, how long 3 take to deploy, and where one
controller breaks as its fake computes and parallel tenants grow (issue 45 item 5; docs/results-nova.md "Scale").

    .venv/bin/python bench/nova_scale.py --regions 3                       # one deployment, shape regions
    .venv/bin/python bench/nova_scale.py --regions 3 --regions 5 --out docs/data/nova-scale.jsonl
    .venv/bin/python bench/nova_scale.py --computes 25 --computes 100 --tenants 10 --broker-fds 1024 \
        --out docs/data/nova-controller.jsonl                             # one controller, computes grown
    .venv/bin/python bench/nova_scale.py --computes 10 --computes 30 --computes 40 --tenants 2 --broker-fds 256 \
        --repeat 3 --out docs/data/nova-controller.jsonl                  # the broker's bracket, 3 repetitions
    .venv/bin/python bench/nova_scale.py --computes 10 --tenants 100 --users-per-tenant 10 \
        --out docs/data/nova-controller.jsonl                             # the study's 100 tenants of 10 users

Per region count: ``wanwide lab run`` of a Benchmark in shape ``regions`` (every region its own RabbitMQ,
Placement, Glance, Neutron's server, Nova API/conductor/scheduler, one fake compute, MariaDB and Keystone, identity
shared through the trial's database), loaded lightly (``NovaServers.boot_and_delete_server`` twice from r1, so the
deployment is proven to work), from a machine with no lab running. Printed and appended to ``--out`` as one JSON
line each:

- the deploy time: from the run's start to its "N stage(s) deployed" line, and each stage's time (the lab's
  progress lines);
- memory: every region's processes (PSS and RSS, the bundle's ``deployment.openstack.memory``: the lab reads each
  region namespace's processes), and the machine's MemAvailable before the run and at its lowest (sampled every
  2 s from outside);
- how many regions fit: ``(MemAvailable before − headroom) / the median region's PSS`` — a bound by memory alone,
  stated as such (the CPU is the other bound: the load's CPU pressure is printed beside it);
- the machine's load before and after, and the run's CPU pressure (the bundle's ``contention``).

``--computes N`` (repeatable): one region, one controller (shape stretched: Nova's API, conductor and scheduler,
Placement, Glance, Neutron's server, RabbitMQ with ``--broker-fds`` open files, as the single-controller study's
broker had by default) and N fake computes beside it, loaded by ``--tenants`` parallel tenants (Rally's users context,
one user each, concurrency = tenants) booting and deleting servers. Sampled from outside every 2 s besides the
above: the broker's open files, its sockets and its limit (``/proc/PID/fd``, ``/proc/PID/limits`` of beam.smp).
Printed: the computes Nova reported up, whether the deployment came up at all (and the lab's reason when not), the
iterations and failures, the mean iteration, the broker's peak files against its limit.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import load, load_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WANWIDE = str(Path(sys.executable).with_name("wanwide"))
HEADROOM_MIB = 2048  # left to the kernel, the page cache and the operator's own tools
STAGE_LINE = re.compile(r"^\[\s*(\d+)s\] .*? (?:Provisioning|Injecting): (.*)$")


def benchmark(regions: int, name: str) -> dict:
    """The Benchmark measured: shape regions, ``regions`` regions, a light boot-and-delete from r1."""
    return {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": name},
            "spec": {"topology": {"generate": {"count": regions}},
                     "openstack": {"shape": "regions", "nova": {"enabled": True, "computes": 1},
                                   "neutron": {"enabled": True}},
                     "workload": {"load": "light", "loadRegion": "r1", "warmup": {"times": 1},
                                  "scenarios": [{"name": "NovaServers.boot_and_delete_server", "times": 2,
                                                 "concurrency": 1}]},
                     "timeouts": {"provisioning": "60m", "loading": "30m"}}}


def controller(computes: int, tenants: int, broker_fds: int | None, name: str, users: int = 1) -> dict:
    """The Benchmark of one controller: one region, ``computes`` fake computes beside it, ``tenants`` parallel (with
    ``users`` users each: Rally picks one of a tenant's users per iteration)."""
    messaging = {"fileDescriptors": broker_fds} if broker_fds else {}
    return {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": name},
            "spec": {"topology": {"generate": {"count": 1}},
                     "openstack": {"shape": "stretched", "controlRegion": "r1",
                                   "nova": {"enabled": True, "computes": computes},
                                   "neutron": {"enabled": True}, "messaging": messaging},
                     "workload": {"load": "light", "loadRegion": "r1", "warmup": {"times": 1},
                                  "scenarios": [{"name": "NovaServers.boot_and_delete_server", "times": 2 * tenants,
                                                 "concurrency": tenants,
                                                 "users": {"tenants": tenants, "usersPerTenant": users}}]},
                     # 100 tenants of 10 users: Rally makes and deletes its 1,000 users in the warm-up and again in
                     # the task (~15 min each here), and a 30-minute load stopped the first such run
                     "timeouts": {"provisioning": "60m", "loading": "120m"}}}


def broker() -> dict:
    """The lab's RabbitMQ right now (every beam.smp): open files, of them sockets, and the open-file limit."""
    files = sockets = 0
    limit = None
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() != "beam.smp":
                continue
            fds = os.listdir(f"/proc/{pid}/fd")
            files += len(fds)
            sockets += sum(os.readlink(f"/proc/{pid}/fd/{f}").startswith("socket:") for f in fds)
            for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
                if line.startswith("Max open files"):
                    limit = int(line.split()[3])
        except (OSError, ValueError):
            continue
    return {"files": files, "sockets": sockets, "limit": limit}


def broker_log(lab: Path) -> dict:
    """What the lab's RabbitMQ said about its descriptors: the limit it announced at boot ("Limiting to approx N file
    handles (M sockets)"), when its file-descriptor alarm was set, and how often its acceptors were out of them."""
    out: dict = {"announced": None, "alarm_at": None, "accept_refusals": 0}
    for log in lab.glob("*/*-rabbitmq/log/*.log"):
        try:
            text = log.read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            if "Limiting to approx" in line:
                out["announced"] = line.split("Limiting to ", 1)[1].strip()
            elif "file descriptor limit alarm set" in line and out["alarm_at"] is None:
                out["alarm_at"] = line[:26]
            elif "out of file descriptors" in line:
                out["accept_refusals"] += 1
    return out


def totals(rally_json: Path) -> list[float]:
    """The durations of a Rally JSON's (format 1.x) successful iterations."""
    doc = json.loads(rally_json.read_text())
    return [float(it["duration"]) for task in doc.get("tasks", []) for sub in task.get("subtasks", [])
            for w in sub.get("workloads", []) for it in w.get("data", []) if not it.get("error")]


def errors(rally_json: Path) -> dict[str, int]:
    """The failed iterations of a Rally JSON by error (its type and the first 120 characters of its message)."""
    doc = json.loads(rally_json.read_text())
    out: dict[str, int] = {}
    for task in doc.get("tasks", []):
        for sub in task.get("subtasks", []):
            for w in sub.get("workloads", []):
                for it in w.get("data", []):
                    if it.get("error"):
                        key = f"{it['error'][0]}: {it['error'][1][:120]}"
                        out[key] = out.get(key, 0) + 1
    return out


def available_mib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return math.nan


def stages(log: str) -> tuple[float | None, list[tuple[float, str]]]:
    """(seconds to "N stage(s) deployed", [(seconds, what came up)]) from ``wanwide lab run``'s progress lines."""
    ups, deployed = [], None
    for line in log.splitlines():
        m = STAGE_LINE.match(line)
        if not m:
            continue
        t, what = float(m[1]), m[2]
        if re.match(r"\d+ stage\(s\) deployed", what):
            deployed = deployed if deployed is not None else t
        elif " up" in what:
            ups.append((t, what))
    return deployed, ups


def fit(available_before_mib: float, region_pss_mib: float, headroom_mib: float = HEADROOM_MIB) -> int:
    """Regions that fit by memory alone: what was available, less the headroom, over one region's PSS."""
    if not (region_pss_mib > 0) or not math.isfinite(available_before_mib):
        return 0
    return max(0, int((available_before_mib - headroom_mib) // region_pss_mib))


def measure(regions: int, work: Path, doc: dict | None = None) -> dict:
    doc = doc or benchmark(regions, f"nova-scale-{regions}")
    name = doc["metadata"]["name"]
    spec = work / f"{name}.yaml"
    spec.write_text(yaml.safe_dump(doc))
    out = work / "out"
    before, avail0 = load(), available_mib()
    low = [avail0]
    peak = {"files": 0, "sockets": 0, "limit": None}
    said: dict = {}
    done = threading.Event()

    def sample() -> None:
        n = 0
        while not done.wait(2.0):
            low.append(available_mib())
            b = broker()
            peak["files"], peak["sockets"] = max(peak["files"], b["files"]), max(peak["sockets"], b["sockets"])
            peak["limit"] = b["limit"] or peak["limit"]
            n += 1
            if n % 5 == 0:  # the lab deletes its logs with the deployment: read them while they exist
                said.update({k: v for k, v in broker_log(work / "lab").items() if v})

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.monotonic()
    p = subprocess.run([WANWIDE, "lab", "run", "-f", str(spec), "-o", str(out), "--quiet-settle", "5",
                        "--quiet-max-wait", "60", "--no-report"], capture_output=True, text=True, timeout=7200,
                       env=dict(os.environ, WANWIDE_LAB_WORK=str(work / "lab")))
    wall = time.monotonic() - t0
    done.set()
    sampler.join()
    after = load()
    deployed, ups = stages(p.stdout)
    manifests = [json.loads(f.read_text()) for f in sorted(out.glob("bundles/*/*/*/attempt-*/manifest.json"))]
    m = manifests[0] if manifests else {}
    mem = ((m.get("deployment") or {}).get("openstack") or {}).get("memory") or {}
    pss = [v["pss_mib"] for v in mem.values()]
    region_pss = statistics.median(pss) if pss else math.nan
    contention = m.get("contention") or {}
    computes = ((m.get("deployment") or {}).get("openstack") or {}).get("computes") or {}
    trials = json.loads((out / "trials.json").read_text()) if (out / "trials.json").is_file() else []
    rallies = sorted(out.glob("bundles/*/*/*/attempt-*/rally.json"))
    durations = [d for f in rallies for d in totals(f)]
    failures: dict[str, int] = {}
    for f in rallies:
        for k, n in errors(f).items():
            failures[k] = failures.get(k, 0) + n
    return {"regions": regions, "benchmark": name, "broker_peak": peak, "broker_said": said,
            "computes_up": sum(len(v) for v in computes.values()),
            "trial": trials[0] if trials else None, "mean_iteration_s": statistics.mean(durations) if durations else None, "rc": p.returncode, "result": (m.get("status") or {}).get("result"),
            "wall_s": round(wall, 1), "deploy_s": deployed, "stages": ups,
            "memory": mem, "region_pss_mib": region_pss, "total_pss_mib": round(sum(pss), 1) if pss else None,
            "available_before_mib": round(avail0, 0), "available_min_mib": round(min(low), 0),
            "fit_by_memory": fit(avail0, region_pss), "headroom_mib": HEADROOM_MIB,
            "iterations": (m.get("rally") or {}).get("iterations"),
            "failed_iterations": (m.get("rally") or {}).get("failed_iterations"), "errors": failures,
            "rally_errors": (m.get("rally") or {}).get("errors"), "status": m.get("status"),
            "cpu_pressure_pct": contention.get("cpu_some_pct"), "load": load_text(before, after),
            "host": {k: (m.get("host") or {}).get(k) for k in ("cpu_model", "cpu_count", "boot_id")},
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **({"tail": p.stdout[-3000:] + p.stderr[-2000:]} if p.returncode else {})}


def harness() -> dict:
    """The wanwide that measured (its commit, and whether the tree differed from it): the lab's own behaviour is part
    of every run (until 2e31b72 its loop spun a core through each warm-up)."""
    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True, timeout=20).stdout.strip()
    try:
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--", "operator"))}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regions", type=int, action="append", help="region counts, shape regions (repeatable)")
    ap.add_argument("--computes", type=int, action="append", help="one controller with this many fake computes "
                    "(repeatable)")
    ap.add_argument("--tenants", type=int, action="append", help="--computes: parallel tenants booting (repeatable: "
                    "every count of computes with every count of tenants; default 4)")
    ap.add_argument("--broker-fds", type=int, help="--computes: the broker's open-file limit (default: the lab's)")
    ap.add_argument("--users-per-tenant", type=int, default=1, help="--computes: users in each tenant (the 2014 study's "
                    "100 tenants had 10 each; default 1)")
    ap.add_argument("--repeat", type=int, default=1, help="run every point this many times: repetition after "
                    "repetition, each in an order drawn from --seed (default 1)")
    ap.add_argument("--seed", type=int, help="the order's seed (default: drawn, printed and recorded)")
    ap.add_argument("--out", type=Path, help="append each result as a JSON line here")
    a = ap.parse_args()
    if not 1 <= a.repeat <= 10:
        ap.error(f"--repeat {a.repeat}: 1 to 10")
    if not 1 <= a.users_per_tenant <= 10:
        ap.error(f"--users-per-tenant {a.users_per_tenant}: 1 to 10")
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(2**31)
    runs: list[tuple[int, dict | None]] = []
    for n in a.regions or ([] if a.computes else [3]):
        if not 1 <= n <= 20:
            ap.error(f"--regions {n}: 1 to 20 (each region a whole control plane of ~1 GiB)")
        runs.append((n, None))
    for c in a.computes or []:
        if not 1 <= c <= 500:
            ap.error(f"--computes {c}: 1 to 500 (spec.openstack.nova.computes' bound; ~100 MiB each)")
        for t in a.tenants or [4]:
            if not 1 <= t <= 100:
                ap.error(f"--tenants {t}: 1 to 100")
            u = a.users_per_tenant
            runs.append((1, controller(c, t, a.broker_fds, f"nova-ctl-{c}-{t}" + (f"-u{u}" if u > 1 else ""), u)))
    order = [(i, n, doc) for i in range(a.repeat) for n, doc in random.Random(seed + i).sample(runs, len(runs))]
    print(f"{len(order)} run(s): {a.repeat} repetition(s) of {len(runs)} point(s), each repetition's order drawn "
          f"from seed {seed} (--seed {seed} repeats it)", flush=True)
    for k, (i, n, doc) in enumerate(order, 1):
        print(f"run {k}/{len(order)} (repetition {i + 1}): {doc['metadata']['name'] if doc else f'{n} region(s)'}",
              flush=True)
        measuring = harness()  # the code that runs is the code at the start (the tree may change meanwhile)
        with tempfile.TemporaryDirectory(prefix="nova-scale-", dir="/var/tmp") as tmp:
            Path(tmp).chmod(0o755)  # the lab's MariaDB and memcached run as their own users
            r = measure(n, Path(tmp), doc)
        if (now := harness()) != measuring:
            measuring["changed_during_run_to"] = now
        r["tenants"] = doc["spec"]["workload"]["scenarios"][0]["users"]["tenants"] if doc else None
        r["broker_fds"] = a.broker_fds if doc else None
        r["users_per_tenant"] = doc["spec"]["workload"]["scenarios"][0]["users"]["usersPerTenant"] if doc else None
        r["repetition"], r["seed"], r["harness"] = i + 1, seed, measuring
        b = r["broker_peak"]
        print(f"{r['benchmark']}: {r['result'] or 'failed'} (rc {r['rc']}); deployed in {r['deploy_s']} s "
              f"(whole run {r['wall_s']:.0f} s); computes up {r['computes_up']}; a region's PSS "
              f"{r['region_pss_mib']:.0f} MiB, all {r['total_pss_mib']} MiB; MemAvailable {r['available_before_mib']:.0f} "
              f"→ lowest {r['available_min_mib']:.0f} MiB; fit by memory: {r['fit_by_memory']} regions (headroom "
              f"{HEADROOM_MIB} MiB); iterations {r['iterations']} ({r['failed_iterations']} failed), mean "
              f"{r['mean_iteration_s']} s; broker peak {b['files']} files ({b['sockets']} sockets) of {b['limit']}, "
              f"said {r['broker_said'] or 'nothing about its descriptors'}; "
              f"CPU pressure during the load {r['cpu_pressure_pct']} %; {r['load']}")
        for t, what in r["stages"]:
            print(f"  [{t:5.0f} s] {what}")
        if a.out:
            with a.out.open("a") as f:
                f.write(json.dumps(r, sort_keys=True) + "\n")
        print(json.dumps(r, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
