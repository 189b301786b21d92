"""Both providers take the same lifecycle, decision by decision: compared on behaviour, not on helpers.

Every example's trials (the first three of each, with every kind of fault added: a partition, a dropout,
two overlapping loss windows), each in four worlds — all goes well; a runner fails in the first attempt;
results are measured but cannot be stored; the WAN is shaped at half its RTT — are driven through both
providers' real code on fakes of their lowest layer only: the operator's observe → decide → act on
an API server of dicts (tests/fakekube.py), the lab's LabTrial on a fake LabOps (tests/fakelab.py).
Their lifecycle event logs (every phase change; every event the lifecycle emits, with its attempt and
its time from the load start), what they shaped when (the WAN's changes from each attempt's load
start), what they measured and which runners they started, and their ends must be the same. A provider that starts deciding on its
own fails this test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakekube import FakeKube, FakeS3, drive
from tests.fakelab import Clock, FakeLab
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import TrialPlan, plan
from wanwide.providers.lab.trial import LabTrial

EXAMPLES = Path(__file__).resolve().parents[1] / "manifests" / "examples"
# the events the lifecycle itself emits (core/lifecycle.py Event); providers add their own (e.g. ChartRetry)
LIFECYCLE = {"Fault", "LoadRetry", "NetworkOff", "NetworkNotMeasured", "ResultsStoreUnavailable",
             "ResultsStoreAvailable", "NamespacesStuck", "VerifyingNetwork"}
WORLDS: dict[str, dict[str, Any]] = {
    "fine": {},
    "runner-fails-once": {"results": {1: "failed"}},
    "not-stored": {"results": {1: "stopped"}},
    "wan-half": {"rtt_factor": 0.5},
}
FAULTS = {"partitions": [{"regions": ["@0"], "start": "30s", "duration": "20s"}],
          "dropouts": [{"every": "70s", "for": "5s", "regions": ["@1"]}],
          "lossWindows": [{"regions": ["@0"], "start": "40s", "duration": "15s", "loss": "7%"},
                          {"regions": ["@0"], "start": "44s", "duration": "6s", "loss": "30%"}]}


def _plans() -> list[tuple[str, TrialPlan]]:
    out = []
    for f in sorted(EXAMPLES.glob("*.yaml")):
        docs = list(yaml.safe_load_all(f.read_text()))
        for d in docs:
            if d["kind"] == "Benchmark":
                d["spec"]["results"] = {"s3": {"endpoint": "http://s3:9000", "bucket": "results", "prefix": "e2e",
                                               "secretRef": {"name": "s3-keys"}}}
                d["spec"]["cleanup"] = "Always"
        loaded = load_documents([yaml.safe_dump_all(docs)])
        for b in loaded.benchmarks:
            trials = plan(b, loaded.topology_for(b))
            regions = trials[0].region_names
            faults = yaml.safe_load(yaml.safe_dump(FAULTS).replace("'@0'", regions[0]).replace("'@1'", regions[-1]))
            bf = b.model_copy(update={"spec": b.spec.model_copy(update={
                "faults": type(b.spec.faults).model_validate(faults)})})
            out += [(f"{f.stem}/{p.id}", p) for p in plan(bf, loaded.topology_for(bf))[:3]]
    return out


PLANS = _plans()


def normalised(log: list[dict[str, Any]]) -> list[tuple]:
    """The lifecycle's log: phase changes (from → to), its own events with attempt and time from the load start."""
    out = []
    for e in log:
        if " → " in e["message"]:
            out.append(("phase", e["message"].split(":", 1)[0], e["type"]))
        elif e["reason"] in LIFECYCLE:
            out.append((e["reason"], e["message"], e["attempt"], e.get("since_load_start_s")))
    return out


def _world(name: str, p: TrialPlan) -> dict[str, Any]:
    w = dict(WORLDS[name])
    if "results" in w:
        w["results"] = {a: {p.load_regions[0]: r} for a, r in w["results"].items()}
    return w


@pytest.mark.parametrize("world", list(WORLDS))
@pytest.mark.parametrize("p", [p for _, p in PLANS], ids=[n for n, _ in PLANS])
def test_the_operator_and_the_lab_live_the_same_lifecycle(p: TrialPlan, world: str) -> None:
    w = _world(world, p)
    kclock = Clock()
    kube = FakeKube(kclock, p, FakeS3(), **w)
    k_final, k_log, k_wan = drive(p, kube, kclock)
    lclock = Clock()
    unstored = any(s == "stopped" for rs in w.get("results", {}).values() for s in rs.values())
    lab = FakeLab(lclock, rtt_factor=w.get("rtt_factor", 1.0), upload_fails=unstored,
                  results={a: {r: s for r, s in rs.items() if s != "stopped"} for a, rs in w.get("results", {}).items()})
    # polled as often as the operator's loop is driven (fakekube.drive): detection times compare too
    lt = LabTrial(lab, p, lambda *a, **k: None, clock=lclock.now, sleep=lclock.sleep, poll_s=1.0)
    l_final = lt.run()
    assert (k_final["phase"], k_final["reason"]) == (l_final["phase"], l_final["reason"]), (k_final, l_final)
    assert normalised(k_log) == normalised(lt.log)
    # what each shaped, when: the same WAN changes at the same times from the same load start
    assert k_wan == lab.wan_trace(p)
    # the same pairs measured, the same runners started
    assert sorted(lt.measured) == sorted({c["check"] for c in kube.probed}) or not lt.measured
    assert [c[2] for c in lab.calls if c[0] == "start_runners"] == kube.attempts_started
    expected = {"fine": ("Succeeded", "Completed"), "runner-fails-once": ("Succeeded", "Completed"),
                "not-stored": ("Failed", "UploadFailed"), "wan-half": ("Failed", "NetworkOff")}[world]
    if world == "wan-half" and not any(s.delay_ms for s in p.links.values()):
        expected = ("Succeeded", "Completed")  # a LAN measures 0.2 ms either way: within 1 ms
    assert (l_final["phase"], l_final["reason"]) == expected
    if world == "runner-fails-once":  # the retry replays the fault schedule from its own start
        faults = [e for e in normalised(lt.log) if e[0] == "Fault" and e[2] == 2]
        assert ("Fault", "partition0 began", 2, 30.0) in faults
