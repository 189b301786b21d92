#!/usr/bin/env python3
"""Operator kill soak: SIGKILL ``wanwide operator`` at random points in every Trial phase and in the
Benchmark's own planning, start it again each time, then count what was lost, duplicated, stuck or leaked.

    .venv/bin/python bench/kill_soak.py [--kills 24] [--trials 6] [--seed N] [--bound 600] [--json] [--keep]

Runs against the local test cluster (``hack/testcluster.sh up``: real kube-apiserver, kwok nodes, S3),
with the operator as a child process under the chart's ServiceAccount and a stand-in for Rally that
uploads a real bundle for each Rally Job after a random delay (tests/cluster/operator_env.py). One
Benchmark: 3 regions, load "high" (Rally in every region), ``--trials`` RTT values, parallelism 2, a loss
window and a partition during the load (so Injecting and the fault steps both run).

Kills: first while the Benchmark is planned (right after it is applied, before its Trials exist, while
they are created), then whenever a trial is in a phase with fewer kills than its share, after a random
delay (seeded), until ``--kills`` is reached and every phase was hit. A kill counts for every phase a
trial was in at that moment. Then it waits (``--bound`` s) for the Benchmark to finish and checks:

- trials duplicated (a Trial object per matrix index, one Rally Job per region, attempt 1), lost (no
  Trial, or not Succeeded), stuck (not final within the bound); keystone hook Jobs made again (a
  second uid for a namespace/name, polled while the soak runs);
- NetworkChaos/Schedule objects and trial namespaces left once the trials are done;
- bundles in S3 per trial x region x attempt: exactly one for the final attempt, none for others.

Prints a table and one JSON line (``--json``: the JSON line only); exits 1 when any count is not 0
or a phase was never hit.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "operator")]

from tests.cluster.conftest import SCRIPT, TestCluster, cluster_running, connect  # noqa: E402
from tests.cluster.operator_env import (  # noqa: E402
    BUCKET,
    Operator,
    RallyStandIn,
    example,
    install_crds,
    install_rbac,
    owned,
    results_store,
    s3_client,
)
from wanwide.providers.kubernetes.kube.client import Kube, load_config  # noqa: E402

PHASES = ("Planning", "Pending", "Provisioning", "VerifyingNetwork", "Injecting", "Loading", "Collecting",
          "CleaningUp")
NAME = "soak"
API = "wanwide.io/v1alpha1"


class SlowStandIn(RallyStandIn):
    """The Rally stand-in, uploading each bundle after a random delay (so Collecting sometimes waits)."""

    def __init__(self, tc: TestCluster, bucket: str, rng: random.Random, max_delay_s: float):
        super().__init__(tc, bucket)
        self.rng, self.max_delay_s = rng, max_delay_s

    def upload(self, cfg: dict[str, Any]) -> None:
        threading.Timer(self.rng.uniform(0, self.max_delay_s), self._retrying, [cfg]).start()

    def _retrying(self, cfg: dict[str, Any]) -> None:
        for _ in range(30):
            try:
                RallyStandIn.upload(self, cfg)
                return
            except Exception as e:  # noqa: BLE001 - S3 busy: again
                print(f"stand-in upload failed, again: {e}", file=sys.stderr)
                time.sleep(2)


def benchmark(tc: TestCluster, trials: int) -> str:
    """The soak's Topology and Benchmark: ``trials`` RTT values x 1, 3 regions, faults during the load."""
    extra = {"matrix": {"rtt": [f"{10 * (i + 1)}ms" for i in range(trials)], "parallelism": 2},
             "faults": {"lossWindows": [{"regions": ["r2"], "loss": "5%", "start": "0s", "duration": "2s"}],
                        "partitions": [{"regions": ["r3"], "start": "1s", "duration": "2s"}]}}
    docs = list(yaml.safe_load_all(example(tc, "uniform-9.yaml", extra=extra)))
    for d in docs:
        d["metadata"]["name"] = NAME
    docs[0]["spec"]["generate"]["count"] = 3
    docs[1]["spec"]["topologyRef"] = NAME
    docs[1]["spec"]["workload"]["load"] = "high"
    # Kills every few seconds slow every phase down (each restart resumes, re-lists, re-applies a stage):
    # timeouts generous enough that they do not end a trial.
    docs[1]["spec"]["timeouts"].update(provisioning="15m", verifyingNetwork="5m", injecting="5m", loading="5m",
                                       collecting="5m", cleaningUp="5m")
    return yaml.safe_dump_all(docs)


class Soak:
    def __init__(self, args: argparse.Namespace, tc: TestCluster, workdir: Path):
        self.args, self.tc = args, tc
        self.rng = random.Random(args.seed)
        self.kube = Kube(load_config(str(tc.kubeconfig)))
        self.kills: Counter[str] = Counter()
        self.kill_log: list[dict[str, Any]] = []
        self.max_running = 0  # trials seen running at once (parallelism 2)
        self.hooks: dict[tuple[str, str], set[str]] = defaultdict(set)  # keystone hook Job -> uids seen
        self.ns = tc.namespace("soak")
        install_crds(tc)
        kubeconfig = install_rbac(tc, [self.ns])
        results_store(tc, self.ns)
        self.log = workdir / "operator.log"
        self.op = Operator(tc, kubeconfig, [self.ns], self.log)
        self.standin = SlowStandIn(tc, BUCKET, random.Random(args.seed + 1), args.upload_delay)

    # ---- observing ----------------------------------------------------------------------

    def trials(self) -> list[dict[str, Any]]:
        return self.kube.list(API, "Trial", {"wanwide.io/benchmark": NAME}, self.ns)

    def bench(self) -> dict[str, Any] | None:
        return self.kube.get(API, "Benchmark", NAME, self.ns)

    def phases_now(self) -> set[str]:
        """The phases something is in now: each live trial's, and Planning while the Benchmark is planned."""
        b = self.bench()
        ts = self.trials()
        out = {(t.get("status") or {}).get("phase") or "Pending" for t in ts}
        running = sum((t.get("status") or {}).get("phase") not in (None, "Pending", "Succeeded", "Failed") for t in ts)
        self.max_running = max(self.max_running, running)
        planned = b is not None and (b.get("status") or {}).get("planGeneration") == b["metadata"]["generation"]
        if b is not None and (len(ts) < self.args.trials or not planned):
            out.add("Planning")
        return out & set(PHASES)

    def track_hooks(self) -> None:
        """The keystone hook Jobs seen so far: one made again after a kill shows a second uid."""
        with contextlib.suppress(Exception):  # the API server may be busy: next time
            for j in self.kube.list("batch/v1", "Job", {"wanwide.io/benchmark": NAME, "wanwide.io/role": "keystone"}):
                self.hooks[(j["metadata"]["namespace"], j["metadata"]["name"])].add(j["metadata"]["uid"])

    def healthy(self, timeout: float = 60) -> bool:
        end = time.time() + timeout
        while time.time() < end:
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"http://127.0.0.1:{self.op.health_port}/healthz", timeout=2).read()
                return True
            time.sleep(0.2)
        return False

    # ---- killing ------------------------------------------------------------------------

    def kill(self, why: str) -> set[str]:
        self.track_hooks()
        at = self.phases_now()
        n_trials = len(self.trials()) if "Planning" in at else None
        self.op.kill()
        for p in at:
            self.kills[p] += 1
        self.kill_log.append({"t": round(time.time() - self.t0, 1), "why": why, "phases": sorted(at),
                              **({"trials_existing": n_trials} if n_trials is not None else {})})
        if not self.args.json:
            print(f"  kill {len(self.kill_log):2d} at {self.kill_log[-1]['t']:6.1f}s ({why}): {', '.join(sorted(at)) or '-'}"
                  + (f" ({n_trials} trials exist)" if n_trials is not None else ""), flush=True)
        time.sleep(self.rng.uniform(0.2, 2.0))  # down for a while, as a pod being rescheduled
        self.op.start()
        return at

    def plan_kills(self) -> None:
        """Kills while the Benchmark is planned: right after apply, then (each restart resumes it) whenever
        the restarted operator is up and planning, until its trials exist and its status says so."""
        self.tc.apply(benchmark(self.tc, self.args.trials), self.ns)
        time.sleep(self.rng.uniform(0.0, 0.3))
        self.kill("right after apply")
        for _ in range(6):
            if not self.healthy() or "Planning" not in self.phases_now():
                break
            time.sleep(self.rng.uniform(0.0, 1.2))
            self.kill("resuming")
        self.healthy()

    def due(self, present: set[str], quota: int) -> str | None:
        """The present phase most behind its share of kills (None: none is)."""
        behind = [p for p in PHASES if p in present and self.kills[p] < quota]
        return min(behind, key=lambda p: self.kills[p]) if behind else None

    def phase_kills(self) -> None:
        quota = max(1, math.ceil(self.args.kills / len(PHASES)))
        end = time.time() + self.args.bound
        while time.time() < end:
            b = self.bench() or {}
            if (b.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return
            total = len(self.kill_log)
            self.track_hooks()
            present = self.phases_now()
            target = self.due(present, quota)
            later = [p for p in PHASES if p != "Planning"]  # the planning is over by now
            if target is None and total < self.args.kills and all(self.kills[p] >= quota for p in later):
                target = "any"  # every phase has its share: the rest at random points
            if target is None or total >= self.args.kills and all(self.kills[p] for p in later):
                time.sleep(0.3)
                continue
            time.sleep(self.rng.uniform(0.0, 1.5) if target != "any" else self.rng.uniform(1.0, 8.0))
            self.kill(f"in {target}")
            self.healthy()
            time.sleep(self.rng.uniform(0.5, 3.0))  # let it work a while before the next kill

    # ---- the checks ---------------------------------------------------------------------

    def wait_final(self) -> None:
        end = time.time() + self.args.bound
        while time.time() < end:
            b = self.bench() or {}
            if (b.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return
            self.track_hooks()
            time.sleep(2)

    def wait_gone(self, kind: str, timeout: float) -> list[dict[str, Any]]:
        end = time.time() + timeout
        while True:
            left = owned(self.tc, kind, self.ns, NAME)
            if not left or time.time() > end:
                return left
            time.sleep(3)

    def bundles(self, trials: list[dict[str, Any]]) -> tuple[int, int, list[str]]:
        """(duplicated, missing, details) over trial x region x attempt, from S3's listing."""
        s3 = s3_client(self.tc)
        runs: dict[tuple[str, str, int], set[str]] = defaultdict(set)
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"e2e/{self.ns}/"):
            for o in page.get("Contents", []):
                parts = o["Key"].split("/")
                if parts[-1] != "manifest.json" or parts[-5] != NAME:
                    continue
                attempt, run_id = parts[-2].removeprefix("attempt-").split("-", 1)
                runs[(parts[-4], parts[-3], int(attempt))].add(run_id)
        dup, missing, details = 0, 0, []
        succeeded = {t["spec"]["index"] for t in trials if (t.get("status") or {}).get("phase") == "Succeeded"}
        final = {t["spec"]["index"]: int((t.get("status") or {}).get("attempt") or 1) for t in trials}
        for (trial, region, attempt), ids in sorted(runs.items()):
            extra = len(ids) - 1 if attempt == final.get(int(trial.lstrip("t")), 1) else len(ids)
            if extra:
                dup += extra
                details.append(f"{trial}/{region}/attempt-{attempt}: {len(ids)} bundles")
        for idx, att in final.items():
            if idx not in succeeded:  # a failed trial is counted as lost
                continue
            for region in ("r1", "r2", "r3"):
                if not runs.get((f"t{idx:03d}", region, att)):
                    missing += 1
                    details.append(f"t{idx:03d}/{region}/attempt-{att}: no bundle")
        return dup, missing, details

    def check(self, elapsed: float) -> dict[str, Any]:
        trials = self.trials()
        by_index = Counter(t["spec"]["index"] for t in trials)
        phases = {t["metadata"]["name"]: (t.get("status") or {}).get("phase") or "Pending" for t in trials}
        jobs = Counter((s["trial"], s["region"]) for s in self.standin.seen.values() if s["benchmark"] == NAME)
        rerun = {t for (t, _), n in jobs.items() if n > 1}
        rerun |= {f"t{t['spec']['index']:03d}" for t in trials if int((t.get("status") or {}).get("attempt") or 1) > 1}
        duplicated = sum(n - 1 for n in by_index.values()) + len(rerun)
        lost = sum(1 for i in range(self.args.trials) if i not in by_index)
        failed = [n for n, p in phases.items() if p == "Failed"]
        stuck = [n for n, p in phases.items() if p not in ("Succeeded", "Failed")]
        chaos = self.wait_gone("networkchaos", 60) + self.wait_gone("schedules.chaos-mesh.org", 10)
        namespaces = self.wait_gone("namespaces", 180)
        ns_leaked = [n["metadata"]["name"] for n in namespaces if not n["metadata"].get("deletionTimestamp")]
        dup_b, miss_b, bundle_details = self.bundles(trials)
        report = {
            "seed": self.args.seed, "trials": self.args.trials, "kills": len(self.kill_log),
            "kills_per_phase": {p: self.kills[p] for p in PHASES},
            "trials_duplicated": duplicated, "trials_lost": lost + len(failed), "trials_stuck": len(stuck),
            "hooks_rerun": sum(len(u) > 1 for u in self.hooks.values()), "hooks_seen": len(self.hooks),
            "chaos_leaked": len(chaos), "namespaces_leaked": len(ns_leaked),
            "namespaces_terminating": len(namespaces) - len(ns_leaked),
            "bundles_duplicated": dup_b, "bundles_missing": miss_b,
            "parallelism_exceeded": max(0, self.max_running - 2), "max_running": self.max_running,
            "benchmark_phase": ((self.bench() or {}).get("status") or {}).get("phase"),
            "operator_starts": self.op.starts, "seconds": round(elapsed),
            "loadavg": Path("/proc/loadavg").read_text().split()[:3],
            "details": {"failed": {n: (t.get("status") or {}).get("reason") for t in trials
                                   if (n := t["metadata"]["name"]) in failed},
                        "stuck": {n: phases[n] for n in stuck}, "rerun": sorted(rerun),
                        "chaos": [c["metadata"]["name"] for c in chaos], "namespaces": ns_leaked,
                        "bundles": bundle_details[:20],
                        "planning_kills_trials_existing": [k["trials_existing"] for k in self.kill_log
                                                           if "trials_existing" in k]},
        }
        return report

    def run(self) -> dict[str, Any]:
        self.op.start()
        self.standin.start()
        self.healthy()
        self.t0 = time.time()
        try:
            self.plan_kills()
            self.phase_kills()
            self.wait_final()
            report = self.check(time.time() - self.t0)
            self.tc.kubectl("delete", "benchmark", NAME, "-n", self.ns, "--timeout=240s", check=False)
            # its Trials go after it (garbage collection); the operator removes their finalizers
            self.tc.kubectl("wait", "--for=delete", "trials", "--all", "-n", self.ns, "--timeout=120s", check=False)
        finally:
            self.standin.stop_flag.set()
            self.op.stop()
        self.tc.kubectl("delete", "namespace", self.ns, "--wait=false", check=False)
        return report


FAIL_KEYS = ("trials_duplicated", "trials_lost", "trials_stuck", "hooks_rerun", "chaos_leaked", "namespaces_leaked",
             "bundles_duplicated", "bundles_missing", "parallelism_exceeded")


def table(r: dict[str, Any]) -> str:
    rows = ["| phase | kills |", "|---|---|"] + [f"| {p} | {n} |" for p, n in r["kills_per_phase"].items()]
    rows += ["", "| check | count |", "|---|---|"] + [f"| {k.replace('_', ' ')} | {r[k]} |" for k in FAIL_KEYS]
    rows += ["", f"{r['kills']} kills, {r['operator_starts']} operator starts, {r['trials']} trials, "
                 f"Benchmark {r['benchmark_phase']}, {r['seconds']} s, seed {r['seed']}, load {' '.join(r['loadavg'])}"]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=24, help="kills at least (default 24)")
    ap.add_argument("--trials", type=int, default=6, help="trials of the Benchmark, parallelism 2 (default 6)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: chosen and printed)")
    ap.add_argument("--bound", type=float, default=900, help="seconds a trial may take to finish after the kills")
    ap.add_argument("--upload-delay", type=float, default=8, help="the Rally stand-in uploads after 0..this s")
    ap.add_argument("--json", action="store_true", help="print only the JSON line")
    ap.add_argument("--keep", action="store_true", help="keep the test cluster up if this run started it")
    args = ap.parse_args(argv)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    if not 1 <= args.trials <= 20:
        ap.error("--trials: 1..20 (one RTT value each)")
    os.environ.setdefault("PYTHONPATH", str(REPO / "operator"))
    started = not cluster_running()
    tc = connect()
    subprocess.run([str(SCRIPT), "nodes", "3"], check=True, capture_output=True)
    try:
        with tempfile.TemporaryDirectory(prefix="kill-soak-") as d:
            if not args.json:
                print(f"kill soak: seed {args.seed}, {args.trials} trials, >= {args.kills} kills", flush=True)
            soak = Soak(args, tc, Path(d))
            try:
                report = soak.run()
            finally:
                if os.environ.get("KILL_SOAK_LOG"):
                    Path(os.environ["KILL_SOAK_LOG"]).write_text(soak.log.read_text())
    finally:
        if started and not args.keep:
            subprocess.run([str(SCRIPT), "down"], capture_output=True, text=True, timeout=180)
    missed = [p for p, n in report["kills_per_phase"].items() if not n]
    report["phases_missed"] = missed
    if not args.json:
        print(table(report))
    print(json.dumps(report, sort_keys=True))
    return 1 if any(report[k] for k in FAIL_KEYS) or missed or report["kills"] < args.kills else 0


if __name__ == "__main__":
    sys.exit(main())
