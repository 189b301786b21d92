"""Kills, deletes mid-run, admission errors and scale, against the real API server."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from tests.argocd import healths
from tests.cluster.operator_env import example, owned, session_events
from tests.cluster.test_operator import wait_phase

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
PHASES_RUNNING = ("Provisioning", "Injecting", "VerifyingNetwork", "Loading", "Collecting", "CleaningUp")


def _trial_phase(tc, ns, name):
    p = tc.kubectl("get", "trial", name, "-n", ns, "-o", "json", check=False)
    if p.returncode != 0:
        return None
    return (json.loads(p.stdout).get("status") or {}).get("phase")


def test_killed_operator_resumes_each_trial_exactly_once(env):
    tc, ns, op, standin = env["tc"], env["ns"], env["op"], env["standin"]
    # one point, two repetitions: run one after the other in their planned order (spec.position)
    text = example(tc, "uniform-9.yaml", extra={"matrix": {"rtt": ["20ms"], "repetitions": 2, "parallelism": 1}})
    docs = list(yaml.safe_load_all(text))
    for d in docs:
        d["metadata"]["name"] = "kills"
    docs[0]["spec"]["generate"]["count"] = 3  # several kills per trial, not a scale test
    docs[1]["spec"]["topologyRef"] = "kills"
    tc.apply(yaml.safe_dump_all(docs), ns)
    rng = random.Random(7)
    seen_phases: set[str] = set()
    killed_in: list[str] = []  # bench/kill_soak.py does >= 20 kills in every phase; this is the quick version
    deadline = time.time() + 600
    while time.time() < deadline:
        phases = {_trial_phase(tc, ns, f"kills-t00{i}") for i in range(2)}
        seen_phases |= {p for p in phases if p}
        b = tc.kubectl_json("get", "benchmark", "kills", "-n", ns)
        if (b.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            break
        # a phase not killed in yet (the short ones too: VerifyingNetwork, Injecting, Collecting), at most 8
        fresh = [p for p in phases if p in PHASES_RUNNING and p not in killed_in]
        if fresh and len(killed_in) < 8:
            time.sleep(rng.uniform(0.0, 1.0))
            op.kill()
            killed_in.append(fresh[0])
            time.sleep(rng.uniform(0.5, 2))
            op.start()
        time.sleep(0.5)
    assert len(killed_in) >= 3, f"only {len(killed_in)} kills happened (phases seen {seen_phases})"
    b = wait_phase(tc, ns, "kills", ("Succeeded", "Failed"), 60)
    trials = {t["metadata"]["name"]: {k: (t.get("status") or {}).get(k) for k in ("phase", "reason", "message")}
              for t in tc.kubectl_json("get", "trials", "-n", ns)["items"]}
    assert b["status"]["phase"] == "Succeeded", f"after kills in {killed_in}: {trials}"
    assert b["status"]["trials"]["succeeded"] == 2
    mine_trials = [t for t in tc.kubectl_json("get", "trials", "-n", ns)["items"] if t["spec"]["benchmark"] == "kills"]
    assert sorted(t["spec"]["repetition"] for t in mine_trials) == [0, 1]
    by_start = sorted(mine_trials, key=lambda t: t["status"]["startTime"])
    assert [t["spec"]["position"] for t in by_start] == [0, 1], [(t["metadata"]["name"], t["spec"]) for t in by_start]
    # exactly once: one Rally Job (one attempt) per trial, one bundle each
    mine = standin.runs("kills")
    assert sorted(s["trial"] for s in mine) == ["t000", "t001"], mine
    assert all(s["attempt"] == 1 for s in mine)
    # nothing orphaned
    assert all(n["metadata"].get("deletionTimestamp") for n in owned(tc, "namespaces", ns, "kills"))
    assert owned(tc, "networkchaos", ns, "kills") == []
    tc.kubectl("delete", "benchmark", "kills", "-n", ns, "--timeout=120s")


def test_delete_mid_load_leaves_no_chaos(env):
    tc, ns, standin = env["tc"], env["ns"], env["standin"]
    standin.hold.add("hierarchical-9")  # Rally never delivers: the trial stays with the WAN injected
    tc.apply(example(tc, "hierarchical-9.yaml"), ns)
    deadline = time.time() + 300
    while _trial_phase(tc, ns, "hierarchical-9-t000") not in ("Loading", "Collecting"):
        assert time.time() < deadline, "never reached Loading"
        time.sleep(2)
    b, t = (tc.kubectl_json("get", kind, name, "-n", ns) for kind, name in
            (("benchmark", "hierarchical-9"), ("trial", "hierarchical-9-t000")))
    (b_health, b_msg), (t_health, t_msg) = healths([b, t])  # what Argo CD shows mid-run
    assert (b_health, t_health) == ("Progressing", "Progressing"), (b_msg, t_msg)
    assert b_msg.startswith("phase Running, trials 0/1") and t_msg.startswith(t["status"]["phase"]), (b_msg, t_msg)
    chaos = owned(tc, "networkchaos", ns, "hierarchical-9")
    assert len(chaos) > 0
    log, since = env["op"].log, env["op"].log.stat().st_size
    trial_ns = {n["metadata"]["name"] for n in owned(tc, "namespaces", ns, "hierarchical-9")}
    started = datetime.now(UTC)
    tc.kubectl("delete", "benchmark", "hierarchical-9", "-n", ns, "--timeout=240s")
    assert owned(tc, "networkchaos", ns, "hierarchical-9") == []
    assert tc.kubectl_json("get", "trials", "-n", ns, "-l", "wanwide.io/benchmark=hierarchical-9")["items"] == []
    deadline = time.time() + 120
    while owned(tc, "namespaces", ns, "hierarchical-9"):
        assert time.time() < deadline, "trial namespaces not gone"
        time.sleep(2)
    # the trial stopped before its namespaces went: no step ran into them while they were terminating
    after = log.read_bytes()[since:].decode(errors="replace")
    assert [x for x in after.splitlines() if "hierarchical-9-t000" in x and "step failed" in x] == []
    # ... and none at all by the operator once it had asked a namespace to go (the API server's audit log)
    events = sorted(session_events(tc.state, started), key=lambda e: e["requestReceivedTimestamp"])
    gone = next((e["requestReceivedTimestamp"] for e in events if e["verb"] == "delete"
                 and (e.get("objectRef") or {}).get("resource") == "namespaces"
                 and e["objectRef"].get("name") in trial_ns), None)
    assert gone, "the operator never deleted the trial namespaces"
    teardown = ("networkchaos", "schedules", "namespaces")  # the teardown's own checks and deletes
    late = [f"{e['verb']} {e['requestURI']}" for e in events if e["requestReceivedTimestamp"] > gone
            and (e.get("objectRef") or {}).get("namespace") in trial_ns
            and e["objectRef"].get("resource") not in teardown]
    assert late == [], f"requests into terminating namespaces: {late[:5]}"


def test_a_trial_deleted_behind_the_operators_back_ends_its_loop(env):
    """kopf stops a Trial's daemon only when it sees the deletion held by its finalizer. A Trial gone
    without that (deleted before the finalizer landed: CI caught it on a busy machine, the loop then
    failed on a 404 every 60 s and re-created namespaces, so its Benchmark's deletion never ended) must
    still end its loop, and its Benchmark's deletion must complete."""
    tc, ns, op, standin = env["tc"], env["ns"], env["op"], env["standin"]
    standin.hold.add("orphan")  # Rally never delivers: the trial stays in Loading
    docs = list(yaml.safe_load_all(example(tc, "uniform-9.yaml")))
    for d in docs:
        d["metadata"]["name"] = "orphan"
    docs[1]["spec"]["topologyRef"] = "orphan"
    tc.apply(yaml.safe_dump_all(docs), ns)
    deadline = time.time() + 300
    while _trial_phase(tc, ns, "orphan-t000") not in ("Loading", "Collecting"):
        assert time.time() < deadline, "never reached Loading"
        time.sleep(2)
    since = op.log.stat().st_size
    # the operator paused, the Trial's finalizer removed and the Trial deleted: kopf never sees it held
    os.killpg(op.proc.pid, signal.SIGSTOP)
    try:
        tc.kubectl("patch", "trial", "orphan-t000", "-n", ns, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
        tc.kubectl("delete", "trial", "orphan-t000", "-n", ns, "--wait=true", "--timeout=30s")
    finally:
        os.killpg(op.proc.pid, signal.SIGCONT)
    deadline = time.time() + 60
    while "orphan-t000: deleted" not in op.log.read_bytes()[since:].decode(errors="replace"):
        assert time.time() < deadline, "the deleted Trial's loop still runs:\n" + op.log.read_text()[-3000:]
        time.sleep(1)
    tc.kubectl("delete", "benchmark", "orphan", "-n", ns, "--timeout=240s")
    deadline = time.time() + 120
    while owned(tc, "namespaces", ns, "orphan"):
        assert time.time() < deadline, "trial namespaces not gone"
        time.sleep(2)
    assert owned(tc, "networkchaos", ns, "orphan") == []
    time.sleep(5)  # the loop ended: nothing more about that trial
    after = op.log.read_bytes()[since:].decode(errors="replace").split("orphan-t000: deleted", 1)[1]
    assert [x for x in after.splitlines() if "orphan-t000" in x] == [], after[-2000:]


def test_a_trial_is_gone_by_uid_as_the_operators_role_may_ask(testcluster):
    """After a failed step the loop asks whether its Trial is gone: by name and uid (a namesake made
    since is not it), with a list the operator's Role grants (a get is not granted: test_rbac)."""
    from wanwide.providers.kubernetes.controller.benchmark import API, trial_gone
    from wanwide.providers.kubernetes.kube.client import Kube, load_config

    kube = Kube(load_config(str(testcluster.kubeconfig)))
    ns = f"gone-{random.randrange(16**6):06x}"
    testcluster.kubectl("create", "namespace", ns)
    try:
        def create() -> str:
            kube.apply({"apiVersion": API, "kind": "Trial", "metadata": {"name": "x-t000", "namespace": ns},
                        "spec": {"benchmark": "x", "index": 0}})
            return kube.get(API, "Trial", "x-t000", ns)["metadata"]["uid"]

        first = create()
        kube.apply({"apiVersion": API, "kind": "Trial", "metadata": {"name": "x-t001", "namespace": ns},
                    "spec": {"benchmark": "x", "index": 1}})
        assert [t["metadata"]["name"] for t in kube.list(API, "Trial", namespace=ns, fields={"metadata.name": "x-t000"})
                ] == ["x-t000"]  # the field selector reaches the API server
        assert not trial_gone(kube, ns, "x-t000", first)
        kube.delete(API, "Trial", "x-t000", ns)
        deadline = time.time() + 30
        while kube.get(API, "Trial", "x-t000", ns) is not None:
            assert time.time() < deadline
            time.sleep(0.5)
        assert trial_gone(kube, ns, "x-t000", first)
        second = create()  # a namesake
        assert second != first
        assert trial_gone(kube, ns, "x-t000", first)
        assert not trial_gone(kube, ns, "x-t000", second)
    finally:
        testcluster.kubectl("delete", "namespace", ns, "--wait=false")


def _api_requests(env) -> dict[str, float]:
    """The operator's API requests so far, by verb."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{env['op'].metrics_port}/metrics", timeout=10).read().decode()
    return {line.split('verb="')[1].split('"')[0]: float(line.split()[-1])
            for line in text.splitlines() if line.startswith("wanwide_api_requests_total{")}


@pytest.mark.extended  # ~5 min; bench/scale.py measures the same at 45-500 regions
def test_45_regions_reconcile(env, record_property):
    tc, ns = env["tc"], env["ns"]
    subprocess.run([str(REPO / "hack" / "testcluster.sh"), "nodes", "45"], check=True, capture_output=True)
    text = example(tc, "regions-sweep.yaml", extra={"matrix": {"backend": ["galera"], "regions": [45], "load": ["high"]}})
    docs = list(yaml.safe_load_all(text))
    docs[1]["spec"]["workload"]["scenarios"] = docs[1]["spec"]["workload"]["scenarios"][:1]
    docs[1]["spec"]["timeouts"]["provisioning"] = "20m"  # ~2 min here (bench/scale.py); room for a loaded machine
    docs[1]["spec"]["timeouts"]["cleaningUp"] = "10m"
    before = _api_requests(env)
    t0 = time.time()
    tc.apply(yaml.safe_dump_all(docs), ns)
    b = wait_phase(tc, ns, "regions-sweep", ("Succeeded", "Failed"), 1800)
    took = time.time() - t0
    after = _api_requests(env)
    by_verb = {v: after[v] - before.get(v, 0) for v in sorted(after)}
    requests = sum(by_verb.values())
    record_property("seconds_45_regions", round(took, 1))
    record_property("api_requests", requests)
    print(f"45 regions: {took:.0f}s; operator API requests during the trial: {requests:.0f} (helm's not counted): "
          + ", ".join(f"{v} {n:.0f}" for v, n in by_verb.items()))
    assert b["status"]["phase"] == "Succeeded", b["status"]
    tc.kubectl("delete", "benchmark", "regions-sweep", "-n", ns, "--timeout=300s")
