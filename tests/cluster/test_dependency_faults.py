"""Dependencies failing under a running trial, on the loopback control plane.

Each fault is real, not mocked: the S3 server is stopped (``testcluster.sh s3 stop``)
while the real runner code (``wanwide runner upload``) sends a bundle, the API server
is restarted (``testcluster.sh restart-apiserver``), helm is a wrapper that fails its
first ``template`` calls and then runs the real helm, Chaos Mesh's CRDs are deleted, a
region namespace keeps a finalizer nobody removes. docs/operations.md, "Dependency
faults", says what the user sees for each.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.cluster.operator_env import BUNDLE, example, owned, s3_client
from tests.cluster.test_monitoring import scrape, value
from tests.cluster.test_operator import wait_phase
from wanwide.core import timestamps as ts

pytestmark = [pytest.mark.cluster, pytest.mark.extended]  # ~22 min: not in CI's gate (hack/test.sh --extended)
REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "hack" / "testcluster.sh"
WANWIDE = REPO / ".venv" / "bin" / "wanwide"


def bench(tc, name: str, regions: int = 3, **extra) -> str:
    topo, b = yaml.safe_load_all(example(tc, "uniform-9.yaml", extra=extra))
    topo["metadata"]["name"] = b["metadata"]["name"] = b["spec"]["topologyRef"] = name
    topo["spec"]["generate"]["count"] = regions
    b["spec"]["workload"]["scenarios"] = b["spec"]["workload"]["scenarios"][:1]
    return yaml.safe_dump_all([topo, b])


def trial(tc, ns: str, name: str) -> dict:
    p = tc.kubectl("get", "trial", name, "-n", ns, "-o", "json", check=False)
    return json.loads(p.stdout) if p.returncode == 0 else {}


def wait_trial(tc, ns: str, name: str, pred, timeout: float, what: str) -> dict:
    deadline = time.time() + timeout
    t: dict = {}
    while time.time() < deadline:
        t = trial(tc, ns, name)
        if t and pred(t.get("status") or {}):
            return t
        time.sleep(1)
    raise AssertionError(f"{name}: timed out after {timeout:.0f}s waiting for {what}: {t.get('status')}")


def events(tc, ns: str, name: str, kind: str = "Trial") -> list[dict]:
    sel = f"involvedObject.name={name},involvedObject.kind={kind}"
    return tc.kubectl_json("get", "events", "-n", ns, "--field-selector", sel)["items"]


def reasons(tc, ns: str, name: str, kind: str = "Trial") -> dict[str, str]:
    return {e["reason"]: e["type"] for e in events(tc, ns, name, kind)}


def manifests(tc, ns: str, bench_name: str, trial_id: str) -> list[str]:
    """Bundle manifests of a trial of this session (the bucket outlives sessions: the prefix has the namespace)."""
    s3 = s3_client(tc)
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket="wanwide-e2e", Prefix=f"e2e/{ns}/")
    keys = [o["Key"] for page in pages for o in page.get("Contents", [])]
    return [k for k in keys if f"/{bench_name}/{trial_id}/" in k and k.endswith("/manifest.json")]


def delete(tc, ns: str, name: str) -> None:
    tc.kubectl("delete", "benchmark", name, "-n", ns, "--timeout=180s")


# ---- 1. the results store down during the upload --------------------------------------------

def _bundle_for(cfg: dict, where: Path) -> Path:
    """The captured real bundle, re-keyed for this trial and region (as the run would have written it)."""
    m = json.loads((BUNDLE / "manifest.json").read_text())
    m.update({"benchmark": cfg["benchmark"], "namespace": cfg["namespace"], "region": cfg["region"],
              "attempt": cfg["attempt"], "trial": cfg["trial"], "run_id": "20261123t000000z-faults0000s3"})
    for f in BUNDLE.rglob("*"):
        if f.is_file():
            dst = where / f.relative_to(BUNDLE)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(json.dumps(m).encode() if f.name == "manifest.json" else f.read_bytes())
    return where


def test_s3_down_during_upload_the_bundle_waits_and_arrives_once(env, tmp_path):
    tc, ns, standin = env["tc"], env["ns"], env["standin"]
    name = "s3-down"
    standin.hold.add(name)  # the real runner code uploads this one, below
    tc.apply(bench(tc, name), ns)
    t = wait_trial(tc, ns, f"{name}-t000", lambda s: "load-1" in (s.get("done") or []), 300, "the Rally Job")
    job_ns = owned(tc, "jobs", ns, name)[0]["metadata"]["namespace"]
    cfg = json.loads(tc.kubectl_json("get", "configmap", "rally-config", "-n", job_ns)["data"]["runner.json"])
    assert cfg["results"]["s3"]["upload_deadline_s"] == 120  # the Collecting timeout (example(): 2m)
    (tmp_path / "runner.json").write_text(json.dumps(cfg))
    bundle = _bundle_for(cfg, tmp_path / "bundle")
    subprocess.run([SCRIPT, "s3", "stop"], check=True, capture_output=True)
    try:
        runner = subprocess.Popen([WANWIDE, "runner", "upload", "--config", str(tmp_path / "runner.json"),
                                   str(bundle)], env={**tc.env, "WANWIDE_UPLOAD_BACKOFF_S": "0.5"},
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # the Job ends (kwok), the bundle is not there: the Trial says why it waits, once as an event
        t = wait_trial(tc, ns, f"{name}-t000",
                       lambda s: s.get("phase") == "Collecting" and "results store" in (s.get("message") or ""),
                       180, "Collecting to say the store is down")
        msg = t["status"]["message"]
        assert tc.s3["S3_ENDPOINT"] in msg and "unreachable" in msg and "retrying" in msg, msg
        assert reasons(tc, ns, f"{name}-t000").get("ResultsStoreUnavailable") == "Warning"
        time.sleep(8)  # a few of the runner's retries against the stopped server
        assert runner.poll() is None, runner.communicate()
    finally:
        subprocess.run([SCRIPT, "s3", "start"], check=True, capture_output=True)
    out, err = runner.communicate(timeout=90)
    assert runner.returncode == 0, err
    assert "retrying in" in err and "attempt 1" in err, err  # it did retry, with back-off
    b = wait_phase(tc, ns, name, ("Succeeded", "Failed"), 180)
    assert b["status"]["phase"] == "Succeeded", b["status"]
    assert "ResultsStoreAvailable" in reasons(tc, ns, f"{name}-t000")
    assert len(manifests(tc, ns, name, "t000")) == 1  # the bundle arrived, once
    delete(tc, ns, name)


# ---- 2. the API server restarted mid-trial ------------------------------------------------

def test_api_server_restart_mid_trial_finishes_exactly_once(env):
    tc, ns, op, standin = env["tc"], env["ns"], env["op"], env["standin"]
    name = "apiserver-restart"
    tc.apply(bench(tc, name), ns)
    wait_trial(tc, ns, f"{name}-t000", lambda s: s.get("phase") in ("Provisioning", "VerifyingNetwork"),
               120, "the trial to run")
    t0 = time.time()
    subprocess.run([SCRIPT, "restart-apiserver"], check=True, capture_output=True, timeout=180)
    print(f"API server down and back in {time.time() - t0:.0f}s")
    b = wait_phase(tc, ns, name, ("Succeeded", "Failed"), 360)
    assert b["status"]["phase"] == "Succeeded", b["status"]
    assert op.proc.poll() is None, "the operator exited"  # it reconnected, not restarted
    mine = standin.runs(name)
    assert [(s["trial"], s["attempt"]) for s in mine] == [("t000", 1)], mine  # one Rally run
    assert len(manifests(tc, ns, name, "t000")) == 1
    ends = [e for e in events(tc, ns, f"{name}-t000") if e["reason"] == "Succeeded"]
    assert sum(e.get("count", 1) for e in ends) == 1, ends  # finished once
    delete(tc, ns, name)


# ---- 3. helm template failing transiently -------------------------------------------------

WRAPPER = """#!/bin/sh
# fault injection: each `helm template` takes a token from {tokens} and fails; then the real helm
if [ "$1" = template ]; then
  for f in {tokens}/fail.*; do
    if rm "$f" 2>/dev/null; then echo "Error: injected fault: chart unreadable" >&2; exit 1; fi
  done
fi
exec {helm} "$@"
"""


def test_helm_template_failing_transiently_is_retried_and_counted(env, tmp_path):
    tc, ns, op = env["tc"], env["ns"], env["op"]
    tokens = tmp_path / "tokens"
    tokens.mkdir()
    for i in range(2):
        (tokens / f"fail.{i}").touch()
    wrapper = tmp_path / "helm"
    wrapper.write_text(WRAPPER.format(tokens=tokens, helm=tc.bin_dir / "helm"))
    wrapper.chmod(0o755)
    name = "helm-flaky"
    op.stop()
    op.extra_env["WANWIDE_HELM"] = str(wrapper)
    op.start()
    try:
        tc.apply(bench(tc, name), ns)
        b = wait_phase(tc, ns, name, ("Succeeded", "Failed"), 420)
        assert b["status"]["phase"] == "Succeeded", b["status"]
        assert not list(tokens.iterdir())  # both injected failures happened
        t = trial(tc, ns, f"{name}-t000")
        assert 1 <= sum(t["status"]["deployTries"].values()) <= 2  # two renders may fail in one step
        retry = [e for e in events(tc, ns, f"{name}-t000") if e["reason"] == "DeployRetry"]
        assert retry and retry[0]["type"] == "Warning" and "injected fault" in retry[0]["message"], retry
        assert value(scrape(env), "wanwide_chart_errors_total", step="template") == 2
    finally:
        op.stop()
        op.extra_env.pop("WANWIDE_HELM", None)
        op.start()
    delete(tc, ns, name)


# ---- 4. Chaos Mesh's CRDs removed mid-run -------------------------------------------------

def test_chaos_mesh_crds_removed_mid_run_fail_clearly_and_delete_completes(env):
    tc, ns, standin = env["tc"], env["ns"], env["standin"]
    name = "chaos-gone"
    standin.hold.add(name)  # Rally never delivers
    # and its pods wait for a node none has (the stand-in answers the probes from their Jobs): the load is
    # still running when the CRDs go, under the 60 s after which an unschedulable pod fails the trial. (On
    # kwok a runner pod that runs completes in 1-6 s, before the operator's discovery (10 s) sees them go.)
    topo, b = yaml.safe_load_all(bench(tc, name))
    b["spec"].setdefault("runner", {}).setdefault("pod", {})["nodeSelector"] = {"wanwide.io/test": "no-such-node"}
    tc.apply(yaml.safe_dump_all([topo, b]), ns)
    wait_trial(tc, ns, f"{name}-t000", lambda s: s.get("phase") == "Loading", 300, "Loading")
    assert owned(tc, "networkchaos", ns, name)
    try:
        tc.kubectl("delete", "crd", "networkchaos.chaos-mesh.org", "schedules.chaos-mesh.org", "--timeout=60s")
        t = wait_trial(tc, ns, f"{name}-t000", lambda s: s.get("phase") in ("Succeeded", "Failed"), 120,
                       "the trial to end")
        s = t["status"]
        assert (s["phase"], s["reason"]) == ("Failed", "ShaperMissing"), s
        assert "reinstall Chaos Mesh" in s["message"]
        failed = {c["type"]: c for c in s["conditions"]}["Failed"]
        assert failed["status"] == "True" and failed["reason"] == "ShaperMissing"
        t0 = time.time()
        delete(tc, ns, name)  # no finalizer left waiting on a kind that is gone
        assert time.time() - t0 < 60
    finally:
        files = [str(f) for f in tc.upstream_crds("chaos-mesh")]
        tc.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=wanwide-testcluster",
                   *[a for f in files for a in ("-f", f)])
        tc.kubectl("wait", "--for=condition=Established", "crd/networkchaos.chaos-mesh.org",
                   "crd/schedules.chaos-mesh.org", "--timeout=60s")


# ---- 5. a region namespace stuck terminating ----------------------------------------------

def test_namespace_stuck_terminating_is_reported_bounded_and_blocks_nothing(env):
    tc, ns = env["tc"], env["ns"]
    name, other = "ns-stuck", "ns-after"
    text = bench(tc, name)
    docs = list(yaml.safe_load_all(text))
    docs[1]["spec"]["timeouts"]["cleaningUp"] = "60s"  # the other namespaces go in time
    tc.apply(yaml.safe_dump_all(docs), ns)
    wait_trial(tc, ns, f"{name}-t000", lambda s: "namespaces" in (s.get("done") or []), 120, "the namespaces")
    held = sorted(n["metadata"]["name"] for n in owned(tc, "namespaces", ns, name))[0]
    tc.apply(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "held", "namespace": held, "finalizers": ["example.com/hold"]}}))
    try:
        t = wait_trial(tc, ns, f"{name}-t000", lambda s: s.get("phase") in ("Succeeded", "Failed"), 240,
                       "the trial to end despite the namespace")
        s = t["status"]
        assert (s["phase"], s["reason"]) == ("Succeeded", "NamespacesStuck"), s
        assert held in s["message"] and "example.com/hold" in s["message"], s["message"]
        assert reasons(tc, ns, f"{name}-t000").get("NamespacesStuck") == "Warning"
        assert tc.kubectl_json("get", "namespace", held)["status"]["phase"] == "Terminating"
        # a new Benchmark runs to the end
        tc.apply(bench(tc, other), ns)
        b = wait_phase(tc, ns, other, ("Succeeded", "Failed"), 300)
        assert b["status"]["phase"] == "Succeeded", b["status"]
        # deleting the Benchmark does not wait for the stuck namespace forever
        t0 = time.time()
        delete(tc, ns, name)
        assert time.time() - t0 < 60
        assert reasons(tc, ns, name, "Benchmark").get("NamespacesStuck") == "Warning"
    finally:
        tc.kubectl("patch", "configmap", "held", "-n", held, "--type=merge", "-p",
                   '{"metadata":{"finalizers":null}}', check=False)
    delete(tc, ns, other)


# ---- 5. a bug in a step -------------------------------------------------------------------

BUG = """# loaded at the operator's start (PYTHONPATH): the apply of a Secret of Benchmark {name!r} meets the
# bug issue 24 found (a rendered Secret's null annotations read as a map), in its Trial's steps
import wanwide.providers.kubernetes.kube.client as client

_apply = client.Kube.apply


def apply(self, obj):
    labels = obj["metadata"].get("labels") or {{}}
    if obj["kind"] == "Secret" and labels.get("wanwide.io/benchmark") == {name!r} and "wanwide.io/trial" in labels:
        return "wanwide.io/copy-from" in {{"annotations": None}}["annotations"]
    return _apply(self, obj)


client.Kube.apply = apply
"""


def test_a_bug_in_a_step_fails_the_trial_in_seconds_with_a_traceback_in_the_log(env, tmp_path):
    """Not retried as if transient (issue 24: 25 minutes of 'step failed … again in 60s', no traceback)."""
    tc, ns, op, log = env["tc"], env["ns"], env["op"], env["log"]
    name = "bug-in-step"
    (tmp_path / "sitecustomize.py").write_text(BUG.format(name=name))
    op.stop()
    op.extra_env["PYTHONPATH"] = str(tmp_path)
    op.start()
    try:
        tc.apply(bench(tc, name), ns)
        # the bug meets the first Provisioning step: the trial may be past Provisioning before a poll sees it
        t = wait_trial(tc, ns, f"{name}-t000", lambda s: s.get("phase") in ("Succeeded", "Failed"), 210,
                       "the trial to fail")
        s = t["status"]
        took = (ts.parse(s["completionTime"]) - ts.parse(s["startTime"])).total_seconds()
        assert (s["phase"], s["reason"]) == ("Failed", "InternalError"), s
        assert "TypeError: argument of type 'NoneType' is not iterable" in s["message"], s["message"]
        assert "Provisioning step" in s["message"] and "a bug in wanwide" in s["message"]
        failed = {c["type"]: c for c in s["conditions"]}["Failed"]
        assert failed["status"] == "True" and failed["reason"] == "InternalError"
        assert took < 60, f"{took:.0f} s from Provisioning to Failed"
        text = log.read_text()
        mine = [ln for ln in text.splitlines() if f"{name}-t000" in ln and "step failed" in ln]
        assert len(mine) == 1 and "with a bug (TypeError" in mine[0], mine  # once, not retried
        tb = text[text.index(mine[0]):][:6000]  # the traceback follows the line, down to the bug's frame
        assert "Traceback (most recent call last)" in tb and "sitecustomize.py" in tb and "in apply" in tb, tb
        assert owned(tc, "networkchaos", ns, name) == []  # it went through CleaningUp
        assert [e for e in events(tc, ns, f"{name}-t000") if e["reason"] == "Failed"]
    finally:
        op.stop()
        op.extra_env.pop("PYTHONPATH", None)
        op.start()
    delete(tc, ns, name)


# ---- 6. the WAN shaped wrong ----------------------------------------------------------------

def test_a_wan_measured_off_twice_fails_the_trial_naming_the_pair(env):
    """The probes find every RTT half of what the plan asks (as a Service's ClusterIP shaped one way only
    would): VerifyingNetwork measures again, then fails the trial before any load, naming the pairs."""
    tc, ns, standin = env["tc"], env["ns"], env["standin"]
    name = "wan-off"
    standin.off[name] = 0.5
    tc.apply(bench(tc, name), ns)  # 100 ms between every two regions
    t = wait_trial(tc, ns, f"{name}-t000", lambda s: s.get("phase") in ("Succeeded", "Failed"), 300,
                   "the trial to end")
    s = t["status"]
    assert (s["phase"], s["reason"]) == ("Failed", "NetworkOff"), s
    assert "measured twice" in s["message"] and "requested 100 ms, measured 50.20 ms" in s["message"], s["message"]
    assert s["networkCheck"] == 2 and not s.get("loadStartAt")  # never loaded
    mine = [c for c in standin.probed if c["benchmark"] == name]
    assert sorted({c["check"] for c in mine}) == [1, 2]
    assert [e for e in events(tc, ns, f"{name}-t000") if e["reason"] == "NetworkOff" and e["type"] == "Warning"]
    assert not [j for j in tc.kubectl_json("get", "jobs", "-A", "-l", f"wanwide.io/benchmark={name}")["items"]
                if j["metadata"]["labels"].get("wanwide.io/role") == "load"]
    delete(tc, ns, name)
    standin.off.pop(name, None)
