"""`wanwide lab run` end to end on this machine (reduced: 2 regions), and clean-up on Ctrl-C."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.ports import free_port
from wanwide.providers.lab import paths, services, shaping

pytestmark = [pytest.mark.lab, pytest.mark.slow]
WANWIDE = str(Path(sys.executable).with_name("wanwide"))
QUICK_GATE = ["--quiet-settle", "5", "--quiet-max-wait", "120"]  # the gate, shortened for the test


def _spec(tmp: Path, rtt: str = "50ms", matrix: dict | None = None, results: dict | None = None) -> Path:
    docs = [
        {"apiVersion": "wanwide.io/v1alpha1", "kind": "Topology", "metadata": {"name": "ci-lab"},
         "spec": {"generate": {"count": 2}, "network": {"default": {"rtt": rtt}}}},
        {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": "ci-lab"},
         "spec": {"topologyRef": "ci-lab",
                  "workload": {"load": "light", "loadRegion": "r2", "startDelay": "3s",
                               "scenarios": [{"name": "authenticate_user_and_validate_token", "times": 4,
                                              "concurrency": 2}]},
                  "timeouts": {"loading": "6m"}, **({"matrix": matrix} if matrix else {}),
                  **({"results": results} if results else {})}},
    ]
    f = tmp / "ci-lab.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    return f


def _leftovers(state_dir: Path) -> list[str]:
    out = []
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    states = [json.loads(p.read_text()) for p in state_dir.glob("*.json")]
    for st in states:
        out += [n for n in st.get("netns", []) if n in ns]
        for p in st.get("processes", []):
            pid = p.get("pid") if isinstance(p, dict) else p
            if pid and Path(f"/proc/{pid}").exists():
                status = Path(f"/proc/{pid}/status").read_text()
                if "State:\tZ" not in status:
                    out.append(f"pid {pid}")
    return out


def _env(tmp: Path) -> dict[str, str]:
    work = Path("/var/tmp") / f"wanwide-test-{os.getpid()}"
    return dict(os.environ, WANWIDE_LAB_WORK=str(work))


def test_reduced_lab_end_to_end(tmp_path, lab_state_dir):
    """Two trials (0 and 50 ms) on one deployment, re-shaped between them; bundles also to S3."""
    boto3 = pytest.importorskip("boto3")
    if not paths.versitygw().exists():
        pytest.skip("versitygw not built (hack/install-lab.sh without WANWIDE_LAB_SKIP_S3)")
    out = tmp_path / "out"
    s3dir = Path("/var/tmp") / f"wanwide-test-s3-{os.getpid()}"  # traversable (tmp_path is 0700)
    s3svc = services.Services(None, s3dir)
    s3 = s3svc.start_s3(port=free_port())
    client = boto3.client("s3", endpoint_url=s3.info["url"], aws_access_key_id=s3.info["access_key"],
                          aws_secret_access_key=s3.info["secret_key"], region_name="us-east-1",
                          config=boto3.session.Config(s3={"addressing_style": "path"}))
    client.create_bucket(Bucket="lab-results")
    f = _spec(tmp_path, matrix={"rtt": ["0ms", "50ms"]},
              results={"s3": {"endpoint": s3.info["url"], "bucket": "lab-results", "prefix": "ci",
                              "secretRef": {"name": "lab-keys"}}})
    env = dict(_env(tmp_path), AWS_ACCESS_KEY_ID=s3.info["access_key"], AWS_SECRET_ACCESS_KEY=s3.info["secret_key"])
    try:
        p = subprocess.run([WANWIDE, "lab", "run", "-f", str(f), "-o", str(out), *QUICK_GATE], capture_output=True,
                           text=True, timeout=1500, env=env)
        keys = [o["Key"] for o in client.list_objects_v2(Bucket="lab-results").get("Contents", [])]
    finally:
        s3svc.stop_all()
        shutil.rmtree(s3dir, ignore_errors=True)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "trial 2/2 t00" in p.stdout and "Loading" in p.stdout  # live status
    assert "re-shaping the links of deployment" in p.stdout
    assert "released together" in p.stdout
    # the network was verified before each trial and recorded: 0 ms, then 50 ms on the same links
    nets = [json.loads((out / "network" / "ci-lab" / f"{t}.json").read_text()) for t in ("t000", "t001")]
    assert {n["shaper"] for n in nets} <= set(shaping.SHAPERS)
    (zero,), (pair,) = nets[0]["pairs"], nets[1]["pairs"]
    assert zero["ok"] and zero["measured_rtt_ms"] < 1.5
    assert pair["ok"] and abs(pair["measured_rtt_ms"] - 50) <= 2.5
    assert nets[0]["deployment"]["id"] == nets[1]["deployment"]["id"]
    # each bundle says which deployment it ran on and what ran there before
    ms = {}
    for t in ("t000", "t001"):
        (mf,) = list((out / "bundles" / "ci-lab" / t / "r2").glob("attempt-1-*/manifest.json"))
        ms[t] = json.loads(mf.read_text())
    # the run order: interleaved by a seed recorded in each bundle, the positions 0 and 1
    first, second = sorted(ms, key=lambda t: ms[t]["trial"]["position"])
    assert [ms[first]["trial"]["position"], ms[second]["trial"]["position"]] == [0, 1]
    assert ms[first]["trial"]["seed"] == ms[second]["trial"]["seed"] is not None
    deps = [ms[first]["deployment"], ms[second]["deployment"]]
    assert deps[0]["id"] == deps[1]["id"] and deps[0]["shared"] is True
    assert (deps[0]["trial_index"], deps[1]["trial_index"]) == (0, 1)
    assert deps[1]["previous_trials"] == [first]
    assert {(d["services_started_on"], d["layout"], d["links"]) for d in deps} == {("unconstrained WAN", "mesh", 1)}
    # the warm-up ran once, before the deployment's first trial, and is not in the measured results
    warm = ms[first]["warmup"]
    assert warm["iterations"] == 4 and warm["failed_iterations"] == 0 and ms[second]["warmup"] is None
    (bundle_dir,) = list((out / "bundles" / "ci-lab" / first / "r2").glob("attempt-1-*"))
    assert (bundle_dir / "logs" / "warmup.json").is_file()
    # released by the coordinator after the quiet-machine gate; skew from the release; contention recorded
    for m in ms.values():
        assert m["start"]["barrier"] == "release" and 0 <= m["start"]["skew_s"] < 2, m["start"]
        c = m["contention"]
        assert c["psi"] is True and c["window_s"] > 0 and c["cpu_some_pct"] is not None
        assert c["foreign_cpu_pct"] is not None and c["busy_pct"] is not None
        assert c["gate"]["settle_s"] == 5 and c["gate"]["passed"] in (True, False)
        assert c["gate"]["waited_s"] >= 5 or c["gate"]["passed"] is False
        assert c["gate"]["pressure_pct"] is not None and c["gate"]["foreign_cpu_pct"] is not None  # both watched
    # the runner's own gauge saw the re-shaped WAN during the second trial
    (mf,) = list((out / "bundles" / "ci-lab" / "t001" / "r2").glob("attempt-1-*/manifest.json"))
    measured = json.loads(mf.read_text())["network"]["measured"]
    assert measured and all(45 <= m["median_ms"] <= 60 for m in measured), measured
    # the same bundles in S3, under the Benchmark's prefix
    for t in ("t000", "t001"):
        (mf,) = list((out / "bundles" / "ci-lab" / t / "r2").glob("attempt-1-*/manifest.json"))
        assert f"ci/{mf.relative_to(out / 'bundles')}" in keys, keys
    # the record of the run a user reads: each trial, its bundles and the network measured before its load
    record = {t["trial"]: t for t in json.loads((out / "trials.json").read_text())}
    assert sorted(record) == ["t000", "t001"] and {t["result"] for t in record.values()} == {"succeeded"}
    for t in ("t000", "t001"):
        (b,) = record[t]["bundles"]
        assert (Path(b) / "manifest.json").is_file() and Path(b).parent.name == "r2"
        (pair,) = record[t]["network"]["pairs"]
        assert pair["ok"] and {pair["src"], pair["dst"]} == {"r1", "r2"}
        assert record[t]["earlier_attempts"] == []
    # one complete bundle, self-describing
    (manifest,) = list((out / "bundles" / "ci-lab" / "t001" / "r2").glob("attempt-1-*/manifest.json"))
    m = json.loads(manifest.read_text())
    assert m["status"]["result"] == "succeeded"
    assert m["trial"]["parameters"]["rtt"] == "50ms"
    assert m["keystone"]["cache"]["enabled"] is True
    assert m["database"]["reads"] > 0 and m["database"]["writes"] >= 0
    # the network: the check before the load in brief with its rule, the targets probed through the load, and
    # the shaper's own counters over it (issue 48 item 4)
    net = m["network"]
    assert net["check"]["rule"].startswith("RTT: ") and [(c["sent"], c["ok"]) for c in net["check"]["pairs"]] == [
        (20, True)]
    during = {t["dst"] + "/" + t["kind"]: t for t in net["during"]["targets"]}
    assert during and all(t["sent"] >= 1 and t["lost"] == 0 for t in during.values()), during
    assert 45 <= during["r1/keystone"]["median_ms"] <= 60, during
    assert all(s[0] >= 0 for t in during.values() for s in t["samples"])  # seconds from the load start
    # …and the regions' pairs between themselves, from inside the source region (issue 46 item 5): here r1→r2
    (pair,) = net["during"]["pairs"]
    assert (pair["src"], pair["dst"], pair["lost"]) == ("r1", "r2", 0) and pair["sent"] >= 1, pair
    assert 45 <= pair["median_ms"] <= 60 and pair["requested_rtt_ms"] == 50 and pair["requested_loss_pct"] == 0, pair
    assert net["during"]["coverage"] == {"pairs": 1, "of": 1, "how": "every pair of regions"}
    grew = net["shaper_counters"]["delta"]
    assert nets[1]["shaper_counters"] and "error" not in net["shaper_counters"]["after"], net["shaper_counters"]
    if nets[1]["shaper"] == "linkemu":  # the load crossed the link both ways, nothing dropped or overflowed
        assert all(grew[d]["frames"] > 0 and grew[d]["lost"] == grew[d]["overflow"] == 0
                   for d in ("r1→r2", "r2→r1")), grew
    # the report, with the atomic actions of the scenario
    runs = list(csv.DictReader((out / "report" / "runs.csv").open()))
    assert len(runs) == 2 and all(r["foreign_cpu_pct"] and r["noisy"] in ("True", "False") for r in runs)
    rows = list(csv.DictReader((out / "report" / "summary.csv").open()))
    actions = {r["action"] for r in rows}
    assert "keystone_v3.fetch_token" in actions and "Total" in actions
    totals = {r["rtt"]: r for r in rows if r["action"] == "Total"}
    assert set(totals) == {"0ms", "50ms"}
    for total in totals.values():
        assert int(float(total["count"])) == 4 and float(total["failure_rate"]) == 0.0
    assert _leftovers(lab_state_dir) == []
    # a rerun skips the trial whose bundles are complete
    before = sorted(mf.relative_to(out) for mf in (out / "bundles").rglob("manifest.json"))
    again = subprocess.run([WANWIDE, "lab", "run", "-f", str(f), "-o", str(out), "--no-report", *QUICK_GATE],
                           capture_output=True, text=True, timeout=300, env=env)
    assert again.returncode == 0 and "Skipped" in again.stdout
    assert "Provisioning" not in again.stdout and "Loading" not in again.stdout
    assert sorted(mf.relative_to(out) for mf in (out / "bundles").rglob("manifest.json")) == before
    # and its record keeps what the first run measured of the trials it skipped
    assert {t["trial"]: t for t in json.loads((out / "trials.json").read_text())} == record


def test_ctrl_c_leaves_nothing_behind(tmp_path, lab_state_dir):
    out = tmp_path / "out"
    proc = subprocess.Popen([WANWIDE, "lab", "run", "-f", str(_spec(tmp_path)), "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(tmp_path))
    seen = ""
    deadline = time.time() + 300
    assert proc.stdout is not None
    while time.time() < deadline:
        line = proc.stdout.readline()
        seen += line
        if "VerifyingNetwork" in line:  # namespaces, links and soon services exist
            time.sleep(8)
            break
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=180)
    assert proc.returncode == 130, seen + rest
    assert _leftovers(lab_state_dir) == []
    # every trial is in trials.json, left for the next run (the same command resumes)
    record = json.loads((out / "trials.json").read_text())
    assert record and {(t["result"], t["reason"]) for t in record} == {
        ("pending", "the run was interrupted before it ended")}, record
