"""Both providers live the same lifecycle, event by event: the operator's real handlers and the lab's real trial loop.

Every example's trials (the first three of each, with every kind of fault added: a partition, a dropout, two
overlapping loss windows) are driven through both providers' own code on fakes of their lowest layer only:
the Kubernetes side as kopf drives it — the Benchmark's Trials made and started by its handler's code, then
each step by the Trial loop's step (``handlers.reconcile_trial``) on an API server of dicts whose Chaos Mesh
reads the NetworkChaos objects' contents (tests/fakekube.py); the lab's ``LabTrial`` on a fake ``LabOps``
(tests/fakelab.py). In each world — all goes well; a runner fails once; results measured but not stored; the
WAN at half its RTT; and, on each example's first trial, a bug in a step, a load that outlasts its timeout, a
deployment stage that keeps failing, chaos the shaper refuses, a cut in force 12 s late — their event logs
(every phase change and every event the lifecycle emits, with its attempt and its time from the load start;
the provider's own words in a few messages cut off), the WAN in force at each step (read from what each
provider set up), the pairs each measured, the runners each started and the outcome must be the same, and
the outcome the world's. A provider that decides on its own, a renderer that shapes what the plan does not
ask, or a lab that sets its links otherwise fails it (the mutants below).
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakekube import FakeKube, FakeS3, drive
from tests.fakelab import Clock, FakeLab
from wanwide.core import lifecycle as lc
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import TrialPlan, plan
from wanwide.providers.lab import trial as lab_trial
from wanwide.providers.lab.procs import LabError
from wanwide.providers.lab.trial import LabTrial

EXAMPLES = Path(__file__).resolve().parents[1] / "manifests" / "examples"
CORE = Path(lc.__file__).parent
FAULTS = {"partitions": [{"regions": ["@0"], "start": "30s", "duration": "20s"}],
          "dropouts": [{"every": "70s", "for": "5s", "regions": ["@1"]}],
          "lossWindows": [{"regions": ["@0"], "start": "40s", "duration": "15s", "loss": "7%"},
                          {"regions": ["@0"], "start": "44s", "duration": "6s", "loss": "30%"}]}
# where a lifecycle event carries the provider's own words (its store's error, why a fault is not in force, why
# a stage failed): cut off before comparing
PROVIDER_WORDS = {"DeployRetry": r", trying again: .*", "FaultLate": r" \(.*\)$", "FaultNotInjected": r" \(.*\)$",
                  "ResultsStoreUnavailable": r"; .*", "NamespacesStuck": r".*"}


@dataclass(frozen=True)
class World:
    outcome: tuple[str, str]
    kube: dict[str, Any]
    lab: dict[str, Any]
    spec: dict[str, Any] | None = None  # what the world changes in the Benchmark
    every_trial: bool = True  # else only each example's first trial


SLO_ROWS = [
    {"scenario": "KeystoneBasic.authenticate_user_and_validate_token", "criterion": "failure_rate", "bound": 0.0,
     "measured": 0.0, "unit": "%", "passed": True, "detail": "0 of 20 iterations failed: 0.00% <= 0%"},
    {"scenario": "KeystoneBasic.authenticate_user_and_validate_token", "criterion": "p95", "bound": 0.5,
     "measured": 0.71, "unit": "s", "passed": False, "detail": "95th percentile 0.710 s > 0.5 s"},
]

SAID = ("StartTooLate: start_at 2026-11-26T12:03:00Z is already 324.4s in the past, more than max_start_skew_s=10 "
        "(preparation and warm-up took longer than spec.workload.startDelay: raise it)")
WORLDS = {
    "fine": World(("Succeeded", "Completed"), {}, {}),
    "runner-fails-once": World(("Succeeded", "Completed"), {"results": {1: "failed"}}, {"results": {1: "failed"}}),
    # a runner that says why it failed (its bundle's status): both say it in LoadRetry and LoadFailed
    "runner-says-why": World(("Failed", "LoadFailed"), {"results": {1: "failed", 2: "failed"},
                                                        "runner_said": SAID}, {"results": {1: "failed", 2: "failed"},
                                                                               "runner_said": SAID}, every_trial=False),
    "not-stored": World(("Failed", "UploadFailed"), {"results": {1: "stopped"}}, {"upload_fails": True}),
    "wan-half": World(("Failed", "NetworkOff"), {"rtt_factor": 0.5}, {"rtt_factor": 0.5}),
    "bug": World(("Failed", "InternalError"), {"bug": True}, {"bug": True}, every_trial=False),
    "timeout": World(("Failed", "LoadingTimeout"), {"run_s": 1e6}, {"run_s": 1e6},
                     {"timeouts": {"loading": "150s"}, "workload": {"startDelay": "0s"}}, every_trial=False),
    "deploy-fails": World(("Failed", "DeployFailed"), {"hooks_fail": True},
                          {"deploy_fails": LabError("keystone did not come up")}, every_trial=False),
    "chaos-refused": World(("Failed", "ChaosFailed"), {"chaos_refused": True}, {"shaping_refused": True},
                           every_trial=False),
    # a runner's objective missed: the trial still Succeeds, both say so in status and a warning event
    "objectives-missed": World(("Succeeded", "Completed"), {"slo": SLO_ROWS}, {"slo": SLO_ROWS}, every_trial=False),
    "fault-late": World(("Succeeded", "Completed"), {"late_s": 12.0}, {"late_s": 12.0},  # the partition alone
                        {"faults": {"dropouts": [], "lossWindows": []}}, every_trial=False),
}


def _documents() -> list[tuple[str, list[dict[str, Any]]]]:
    """Each example's documents, its Benchmarks storing results in S3, cleaning up always, with every kind of
    fault (the first and last region cut)."""
    out = []
    for f in sorted(EXAMPLES.glob("*.yaml")):
        docs = list(yaml.safe_load_all(f.read_text()))
        loaded = load_documents([yaml.safe_dump_all(docs)])
        for b in loaded.benchmarks:
            regions = plan(b, loaded.topology_for(b))[0].region_names
            faults = yaml.safe_load(yaml.safe_dump(FAULTS).replace("'@0'", regions[0]).replace("'@1'", regions[-1]))
            mine = []
            for d in docs:
                d = copy.deepcopy(d)
                d["metadata"].setdefault("namespace", "default")
                if d["kind"] == "Benchmark" and d["metadata"]["name"] != b.metadata.name:
                    continue
                if d["kind"] == "Benchmark":
                    d["spec"]["results"] = {"s3": {"endpoint": "http://s3:9000", "bucket": "results",
                                                   "prefix": "e2e", "secretRef": {"name": "s3-keys"}}}
                    d["spec"]["cleanup"] = "Always"
                    d["spec"]["faults"] = faults
                mine.append(d)
            out.append((f.stem, mine))
    return out


DOCUMENTS = _documents()


def _in(world: World, docs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The documents as the world changes them, and the Benchmark."""
    docs = copy.deepcopy(docs)
    bench = next(d for d in docs if d["kind"] == "Benchmark")
    for k, v in (world.spec or {}).items():
        bench["spec"][k] = {**(bench["spec"].get(k) or {}), **v}
    return docs, bench


def _plans(docs: list[dict[str, Any]]) -> list[TrialPlan]:
    loaded = load_documents([yaml.safe_dump_all(docs)])
    (b,) = loaded.benchmarks
    return plan(b, loaded.topology_for(b))


CASES = [pytest.param(name, world, i, id=f"{name}/t{i:03d}-{world}")
         for name, docs in DOCUMENTS for n in [min(3, len(_plans(docs)))] for world in WORLDS
         for i in range(n if WORLDS[world].every_trial else 1)]


def normalised(log: list[dict[str, Any]]) -> list[tuple]:
    """The lifecycle's log: phase changes (from → to), its own events with attempt and time from the load start
    (the provider's words in them cut off, :data:`PROVIDER_WORDS`)."""
    out = []
    for e in log:
        if " → " in e["message"]:
            out.append(("phase", e["message"].split(":", 1)[0], e["type"]))
        elif e["reason"] in lc.EVENT_REASONS:
            message = re.sub(PROVIDER_WORDS.get(e["reason"], "$^"), "", e["message"])
            out.append((e["reason"], message, e["type"], e["attempt"], e.get("since_load_start_s")))
    return out


def _trace(p: TrialPlan, trace: list[tuple], status: dict[str, Any], links: dict, now: Any) -> None:
    """The WAN in force now (the links unlike the plan's), with the seconds since the attempt's load start, when
    it changed; until the clean-up (which takes the shaping away in Kubernetes, the deployment in the lab)."""
    if lc.phase_of(status) in ("CleaningUp", "Succeeded", "Failed") or (trace and trace[-1][3] == links):
        return
    diff = tuple(sorted((pair, s) for pair, s in links.items() if s != p.links[pair]))
    if trace and trace[-1][2] == diff:
        return
    at = lc.elapsed_s(status, now)
    trace.append((None if at is None else round(at, 3), lc.attempt_of(status) if at is not None else None, diff,
                  dict(links)))


def _changes(trace: list[tuple]) -> list[tuple]:
    """The WAN's changes: (seconds from the load start, attempt, the links unlike the plan's)."""
    return [t[:3] for t in trace]


def run_both(docs: list[dict[str, Any]], index: int, world: World, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Both providers through one trial in one world: what each did."""
    docs, bench = _in(world, docs)
    p = _plans(docs)[index]
    in_region = {a: {p.load_regions[0]: r} for a, r in world.kube.get("results", {}).items()}  # its first load region
    kclock = Clock()
    kube = FakeKube(kclock, p, FakeS3(), **{**world.kube, "results": in_region})
    for d in docs:
        if d["kind"] != "Benchmark":
            kube.apply(d)
    k_trace: list[tuple] = []

    def k_sample(status: dict[str, Any]) -> None:
        _trace(p, k_trace, status, kube.links_in_force(), kclock.now())

    k_final, k_log = drive(bench, p, kube, kclock, monkeypatch, k_sample)
    lclock = Clock()
    lab = FakeLab(lclock, **{**world.lab, **({"results": in_region} if "results" in world.lab else {})})
    l_trace: list[tuple] = []
    lt: LabTrial

    def l_sleep(s: float) -> None:
        if lt.dep is not None:
            _trace(p, l_trace, lt.status, lab.links(lt.dep), lclock.now())
        lclock.sleep(s)

    # polled as often as the operator's loop is driven (fakekube.drive): detection times compare too
    lt = LabTrial(lab, p, lambda *a, **k: None, clock=lclock.now, sleep=l_sleep, poll_s=1.0)
    l_final = lt.run()
    return {
        "k": {"outcome": (k_final["phase"], k_final["reason"]), "objectives": k_final.get("objectives"),
              "log": normalised(k_log), "wan": _changes(k_trace),
              "measured": sorted({(c["check"], c["region"], t["region"]) for c in kube.probed for t in c["targets"]}),
              "runners": kube.attempts_started, "message": k_final.get("message")},
        "l": {"outcome": (l_final["phase"], l_final["reason"]), "objectives": l_final.get("objectives"),
              "log": normalised(lt.log), "wan": _changes(l_trace),
              "measured": sorted({(check, *pair) for check, m in lt.measured.items() for pair in m}),
              "runners": [c[2] for c in lab.calls if c[0] == "start_runners"], "message": l_final.get("message")},
        "plan": p,
    }


def disagreements(r: dict[str, Any]) -> list[str]:
    """What the two providers did differently (empty: the same lifecycle)."""
    return [f"{what}: operator {r['k'][what]!r} ≠ lab {r['l'][what]!r}"
            for what in ("outcome", "objectives", "log", "wan", "measured", "runners") if r["k"][what] != r["l"][what]]


def expected(world: str, p: TrialPlan) -> tuple[str, str]:
    shaped = any(s.delay_ms for s in p.links.values())
    if world == "wan-half" and not shaped:
        return ("Succeeded", "Completed")  # a LAN measures 0.2 ms either way: within 1 ms
    if world == "chaos-refused" and not any(p.classes.values()):
        return ("Failed", "FaultNotInjected")  # nothing to shape but the faults: they never come into force
    return WORLDS[world].outcome


@pytest.mark.parametrize(("example", "world", "index"), CASES)
def test_the_operator_and_the_lab_live_the_same_lifecycle(example: str, world: str, index: int,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    docs = dict(DOCUMENTS)[example]
    r = run_both(docs, index, WORLDS[world], monkeypatch)
    assert disagreements(r) == []
    assert r["l"]["outcome"] == expected(world, r["plan"])
    log = r["l"]["log"]
    assert r["l"]["measured"] or world in ("bug", "deploy-fails", "chaos-refused"), "nothing was measured"
    if world == "runner-fails-once":  # the retry replays the fault schedule from its own start
        assert ("Fault", "partition0 began", "Normal", 2, 30.0) in log
    if world == "fault-late":  # said late, then in force 12 s after it began
        assert any(e[0] == "FaultLate" and e[1].startswith("partition0 began 10 s ago") for e in log), log
        assert ("FaultInjected", "partition0 in force 12.0 s after it began", "Normal", 1, 42.0) in log, log
    if world == "objectives-missed":  # the trial still Succeeds; its status and a warning say what was missed
        o = r["l"]["objectives"]
        assert (o["met"], o["missed"], o["summary"]) == (len(r["plan"].load_regions),) * 2 + (
            f"{len(r['plan'].load_regions)}/{2 * len(r['plan'].load_regions)} met",), o
        assert any(e[0] == "ObjectivesMissed" and e[2] == "Warning" and "95th percentile 0.710 s > 0.5 s" in e[1]
                   for e in log), log
    if world == "runner-says-why":  # the runner's own word, not "see the runners' logs", in the event and the status
        region = r["plan"].load_regions[0]
        assert any(e[0] == "LoadRetry" and f"({region}: {SAID})" in e[1] for e in log), log
        assert r["k"]["message"] == r["l"]["message"], (r["k"]["message"], r["l"]["message"])
        assert f"after 2 attempt(s): {region}: StartTooLate" in r["l"]["message"] and "raise it" in r["l"]["message"]
    if world == "fine":
        assert r["l"]["objectives"] is None  # no objectives recorded: none said
    if world == "deploy-fails":
        assert [e[0] for e in log].count("DeployRetry") == lc.STAGE_TRIES - 1
    if world in ("fine", "fault-late"):
        assert any(e[0] == "FaultInjected" for e in log) and any(e[0] == "StageDeployed" for e in log)


def test_every_event_the_lifecycle_emits_is_compared():
    """The reasons the agreement test compares are every reason the lifecycle's code emits (a phase change's
    reason is the phase it moves to: compared as a phase change)."""
    trees = [ast.parse(f.read_text()) for f in sorted(CORE.glob("*.py"))]
    consts = {t.id: n.value.value for tree in trees for n in ast.walk(tree) if isinstance(n, ast.Assign)
              and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
              for t in n.targets if isinstance(t, ast.Name)}
    emitted, unknown = set(), []
    for tree in trees:
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "Event" and n.args:
                a = n.args[0]
                if isinstance(a, ast.Constant):
                    emitted.add(a.value)
                elif isinstance(a, ast.Name) and a.id in consts:
                    emitted.add(consts[a.id])
                elif not (isinstance(a, ast.Attribute) and a.attr == "phase"):
                    unknown.append(ast.unparse(a))
    assert unknown == [] and emitted == set(lc.EVENT_REASONS), (unknown, emitted ^ set(lc.EVENT_REASONS))


# ---- mutants: each makes a provider shape otherwise; the agreement check must catch every one -----------------

def _mutants() -> dict[str, tuple[Any, str, Any]]:
    """(module, name, replacement): render/chaos.py's and the lab's shaping, each changed one way."""
    from wanwide.core.plan.links import OneWay
    from wanwide.providers.kubernetes.render import chaos

    real_cuts, real_netem, real_at = chaos.cuts, chaos.netem, chaos.at

    def netem_delay_doubled(shaping: OneWay) -> dict[str, Any]:
        return real_netem(OneWay(shaping.delay_ms * 2, shaping.jitter_ms, shaping.loss_pct, shaping.rate_mbit))

    def netem_without_loss(shaping: OneWay) -> dict[str, Any]:
        return real_netem(OneWay(shaping.delay_ms, shaping.jitter_ms, 0.0, shaping.rate_mbit))

    def cuts_one_way(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return [{**o, "spec": {**o["spec"], "direction": "to"}} for o in real_cuts(*args, **kwargs)]

    def faults_never_rendered(plan: TrialPlan, elapsed_s: float | None, addresses: Any = None) -> list[dict[str, Any]]:
        return real_at(plan, None, addresses)

    def lab_ignores_cuts(p: TrialPlan, elapsed_s: float | None) -> dict:
        return dict(lc.wan_in_force(p, elapsed_s).links)

    def lab_swaps_directions(p: TrialPlan, elapsed_s: float | None) -> dict:
        wan = lc.wan_in_force(p, elapsed_s)
        return {(a, b): wan.effective((b, a)) for a, b in p.links}

    def lab_never_shapes_faults(p: TrialPlan, elapsed_s: float | None) -> dict:
        return lab_trial_wanted(p, None)

    def lab_adds_overlapping_losses(p: TrialPlan, elapsed_s: float | None) -> dict:
        out = lab_trial_wanted(p, elapsed_s)
        active = lc.in_force(p.faults, elapsed_s) if elapsed_s is not None else ()
        for pair, s in out.items():
            extra = sum(a.window.extra_loss_pct or 0 for a in active if a.window.kind == "loss" and pair in a.window.links)
            if extra and s.loss_pct < 100:
                base = p.links[pair]
                out[pair] = OneWay(base.delay_ms, base.jitter_ms, min(100.0, base.loss_pct + extra), base.rate_mbit)
        return out

    return {
        "chaos: delay doubled": (chaos, "netem", netem_delay_doubled),
        "chaos: no loss": (chaos, "netem", netem_without_loss),
        "chaos: cuts one way": (chaos, "cuts", cuts_one_way),
        "chaos: faults never rendered": (chaos, "at", faults_never_rendered),
        "lab: cuts ignored": (lab_trial, "wanted", lab_ignores_cuts),
        "lab: directions swapped": (lab_trial, "wanted", lab_swaps_directions),
        "lab: faults never shaped": (lab_trial, "wanted", lab_never_shapes_faults),
        "lab: overlapping losses add up": (lab_trial, "wanted", lab_adds_overlapping_losses),
    }


lab_trial_wanted = lab_trial.wanted
MUTANTS = _mutants()


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_a_renderer_or_a_lab_that_shapes_otherwise_fails_the_agreement(mutant: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Each mutant of render/chaos.py or of the lab's shaping (providers/lab/trial.py ``wanted``), applied alone,
    makes the providers disagree on one trial with every kind of fault (the loss windows overlapping where no cut
    hides them) and an asymmetric WAN."""
    docs = copy.deepcopy(dict(DOCUMENTS)["hierarchical-9"])
    topology = next(d for d in docs if d["kind"] == "Topology")
    regions = _plans(docs)[0].region_names
    topology["spec"].setdefault("network", {}).setdefault("overrides", []).append(
        {"from": regions[0], "to": regions[1], "rtt": "300ms", "oneWay": True})
    next(d for d in docs if d["kind"] == "Benchmark")["spec"]["faults"]["partitions"][0]["start"] = "10s"
    assert disagreements(run_both(docs, 0, WORLDS["fine"], monkeypatch)) == []  # the real code agrees
    module, name, fake = MUTANTS[mutant]
    with monkeypatch.context() as m:
        m.setattr(module, name, fake)
        found = disagreements(run_both(docs, 0, WORLDS["fine"], m))
    assert found, f"{mutant}: not caught"
