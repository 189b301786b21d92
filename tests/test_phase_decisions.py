"""Every Trial phase decision, without a cluster: a status dict and an observation dict in, a Decision out."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json

import pytest
import yaml

from tests.chartdata import RENDERED, release
from tests.plan.specs import benchmark
from wanwide.core import lifecycle as lc
from wanwide.core import timestamps as ts
from wanwide.core.api.units import seconds
from wanwide.core.contracts import S3Target, WatchConfig
from wanwide.core.lifecycle import probe_pairs, rtt_requested
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.matrix import expand
from wanwide.core.plan.trial import TrialPlan, plan
from wanwide.providers.kubernetes.controller import deploy, phases, trialstate
from wanwide.providers.kubernetes.controller.actions import (
    Apply,
    Decision,
    Delete,
    DropFinalizer,
    Emit,
)
from wanwide.providers.kubernetes.controller.benchmark import with_runner_image
from wanwide.providers.kubernetes.controller.trial import (
    A_PLAN_INPUT,
    InvalidPlan,
    plan_input,
    trial_plan,
)
from wanwide.providers.kubernetes.kube import readiness
from wanwide.providers.kubernetes.render import chaos, render_trial
from wanwide.providers.kubernetes.render.chart import documents, stages
from wanwide.providers.kubernetes.render.rally import WATCH

T0 = dt.datetime(2026, 11, 23, 10, 0, 0, tzinfo=dt.UTC)


def _plan(**spec) -> TrialPlan:
    b = benchmark("galera", "explicit", **spec)
    b["spec"]["faults"]["lossWindows"] = [{"regions": ["paris"], "start": "40s", "duration": "15s", "loss": "7%"}]
    docs = load_documents([yaml.safe_dump(b)])
    (bench,) = docs.benchmarks
    return plan(bench, docs.topology_for(bench))[0]


P = _plan()
CHART_NS = release().namespace  # the namespace the fixture chart was rendered for


def _status(phase: str, *done: str, at: dt.datetime = T0, **more) -> dict:
    return {"phase": phase, "phaseStartTime": ts.iso(at), "attempt": 1, "done": sorted(done), **more}


def _applied(d: Decision) -> list[dict]:
    return [a.obj for a in d.actions if isinstance(a, Apply)]


def _said(d: Decision) -> list[str]:
    return [a.reason for a in d.actions if isinstance(a, Emit)]


def _names(objs) -> set[str]:
    return {o["metadata"]["name"] for o in objs}


# ---- Provisioning: the lifecycle's stages (core/lifecycle/deploy.py) as objects (controller/deploy.py) ----------

FIRST, *OTHERS = P.region_names  # the schema owner first
PLACED = {"applied": ["namespaces"]}


def test_provisioning_applies_the_place_once_each_namespace_with_the_operators_rolebinding_first():
    rbs = {ns: {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "wanwide-operator", "namespace": ns}} for ns in P.namespaces}
    d = phases.decide(P, _status("Provisioning"), {"rolebindings": rbs}, T0)
    objs = _applied(d)
    kinds = [o["kind"] for o in objs]
    assert "Trial" not in kinds and "MariaDB" in kinds and kinds.count("RoleBinding") == len(P.namespaces)
    for ns in P.namespaces:  # the operator may write in a namespace only once its RoleBinding is there
        first = min(i for i, o in enumerate(objs) if o["metadata"].get("namespace") == ns and o["kind"] != "RoleBinding")
        at = next(i for i, o in enumerate(objs) if o["kind"] == "RoleBinding" and o["metadata"]["namespace"] == ns)
        assert kinds[at - 1] == "Namespace" and at < first
        # namespaces are applied side by side, each in this order (its lane)
        assert {a.lane for a in d.actions if isinstance(a, Apply) and ns in (a.obj["metadata"].get("namespace"),
                                                                           a.obj["metadata"]["name"])} == {ns}
    assert d.recorded == PLACED and d.step.phase is None
    assert any(isinstance(a, Emit) and a.reason == "Provisioning" for a in d.actions)
    again = phases.decide(P, _status("Provisioning", **PLACED), {"database_ready": {"MariaDB/galera": False}}, T0)
    assert not _applied(again) and "StageDeployed" in _said(again)  # the place is done
    assert again.step.status["done"] == ["namespaces"]


def _charts(*regions: str) -> dict:
    """Each region's keystone chart, from the fixture chart's rendering of rennes (namespace swapped)."""
    text = RENDERED.read_text()
    return {("keystone", r): stages(documents(text.replace(CHART_NS, P.namespace(r))), "keystone", P.namespace(r),
                                    P.labels(r, "keystone"), (P.db_namespace,)) for r in regions}


DB_READY = {"MariaDB/galera": True, "User/keystone": True, "Grant/keystone": True}


def _deploying(*done: str, charts: dict | None = None, jobs: dict | None = None, **more) -> tuple[dict, dict]:
    """A status with the place applied and ``done`` stages, and what is observed of the charts."""
    st = _status("Provisioning", "namespaces", *done, **PLACED, **more)
    return st, {"passwords": {}, "charts": _charts(*P.region_names) if charts is None else charts,
                "jobs": jobs or {}, "database_ready": DB_READY, "deployments": {}}


def test_keystone_is_deployed_schema_owner_first_stage_by_stage_in_parallel_lanes():
    ns0 = P.namespace(FIRST)
    st, obs = _deploying("database")
    d = phases.decide(P, st, obs, T0)
    schema = [a for a in d.actions if isinstance(a, Apply) and a.obj["kind"] == "Job"]
    assert [(a.lane, a.obj["metadata"]["name"]) for a in schema] == [(ns0, "keystone-db-sync")]  # its first hook
    assert d.step.phase is None and d.wake_s and "post-install -4" in d.step.message
    sync = {f"{ns0}/keystone-db-sync": "running"}
    assert not [a for a in phases.decide(P, st, {**obs, "jobs": sync}, T0).actions if a.lane == ns0]
    complete = {f"{ns0}/keystone-{j}": "complete" for j in ("db-sync", "domain-manage", "bootstrap")}
    d = phases.decide(P, st, {**obs, "jobs": complete}, T0)
    assert d.step.status.get("done") == ["database", "namespaces"] and "Deployment(s)" in d.step.message
    available = {k: True for k in deploy.awaited(P, lc.stages(P)[2], phases.rendered(P, st, obs), obs["charts"])}
    assert f"{ns0}/keystone-api" in available and f"{ns0}/memcached" in available
    d = phases.decide(P, st, {**obs, "jobs": complete, "deployments": available}, T0)
    assert "keystone-schema" in d.step.status["done"] and "StageDeployed" in _said(d)
    st1, obs1 = _deploying("database", "keystone-schema", charts={**_charts(OTHERS[0]), ("keystone", OTHERS[1]): None})
    d = phases.decide(P, st1, obs1, T0)
    assert not _applied(d) and "rendering" in d.step.message  # one release not rendered yet: none is applied


def test_keystone_waits_for_the_database_objects_while_the_objects_before_its_hooks_go_ahead():
    """Keystone's db-sync before mariadb-operator made its User and Grant was refused ("Access denied") and backed
    off for minutes on the real node: the schema stage starts once every database object is Ready."""
    st, obs = _deploying()
    obs["database_ready"] = {"MariaDB/galera": True, "User/keystone": False, "Grant/keystone": False}
    d = phases.decide(P, st, obs, T0)
    assert "Job" not in {o["kind"] for o in _applied(d)} and "User/keystone" in d.step.message and d.wake_s <= 5
    assert {a.lane for a in d.actions if isinstance(a, Apply)} == set(map(P.namespace, P.region_names))  # ahead
    assert d.recorded == {"ahead": {"keystone-schema": 1, "keystone": len(OTHERS)}}
    st, obs = _deploying("database", ahead={"keystone-schema": 1, "keystone": len(OTHERS)})
    d = phases.decide(P, st, obs, T0)
    assert [o["metadata"]["name"] for o in _applied(d)] == ["keystone-db-sync"]  # ahead already: its first hook


def test_the_other_regions_objects_go_ahead_while_the_schema_owner_runs_and_are_not_applied_again():
    ns0 = P.namespace(FIRST)
    st, obs = _deploying("database", jobs={f"{ns0}/keystone-db-sync": "running"}, ahead={"keystone-schema": 1})
    d = phases.decide(P, st, obs, T0)
    assert d.recorded == {"ahead": {"keystone-schema": 1, "keystone": len(OTHERS)}} and d.wake_s
    assert {a.lane for a in d.actions if isinstance(a, Apply)} == set(map(P.namespace, OTHERS))
    assert "Job" not in {o["kind"] for o in _applied(d)} and "Deployment" in {o["kind"] for o in _applied(d)}
    st, obs = _deploying("database", jobs={f"{ns0}/keystone-db-sync": "running"},
                         ahead={"keystone-schema": 1, "keystone": len(OTHERS)})
    assert not _applied(phases.decide(P, st, obs, T0))  # all ahead: nothing more while db-sync runs
    st, obs = _deploying("database", "keystone-schema", ahead={"keystone-schema": 1, "keystone": 1})  # a kill after one
    d = phases.decide(P, st, obs, T0)
    by_ns = {ns: [o["kind"] for o in _applied(d) if o["metadata"]["namespace"] == ns] for ns in map(P.namespace, OTHERS)}
    assert by_ns[P.namespace(OTHERS[0])] == ["Job"]  # ahead already: its first hook only
    assert by_ns[P.namespace(OTHERS[1])][-1] == "Job" and len(by_ns[P.namespace(OTHERS[1])]) > 10


def test_a_failed_hook_job_is_deleted_to_run_again_then_fails_the_trial():
    ns0 = P.namespace(FIRST)
    st, obs = _deploying("database", jobs={f"{ns0}/keystone-db-sync": "failed"})
    d = phases.decide(P, st, obs, T0)
    assert d.step.status["deployTries"] == {"keystone-schema": 1} and d.step.phase is None
    (retry,) = [a for a in d.actions if isinstance(a, Emit) and a.reason == "DeployRetry"]
    assert "keystone-db-sync" in retry.message and "1 of 3" in retry.message and retry.type == "Warning"
    assert [(a.kind, a.name, a.namespace) for a in d.actions if isinstance(a, Delete)] == [("Job", "keystone-db-sync", ns0)]
    st, obs = _deploying("database", jobs={f"{ns0}/keystone-db-sync": "failed"},
                         deployTries={"keystone-schema": lc.STAGE_TRIES - 1})
    d = phases.decide(P, st, obs, T0)
    assert (d.step.phase, d.step.reason) == ("CleaningUp", "DeployFailed") and "keystone-db-sync" in d.step.message


def test_a_failed_render_is_tried_again_and_said_then_fails_the_trial():
    st, obs = _deploying("database", charts=_charts(*OTHERS))
    obs["render_failed"] = {("keystone", FIRST): "helm exited 1"}
    d = phases.decide(P, st, obs, T0)
    assert d.step.phase is None and d.step.status["deployTries"] == {"keystone-schema": 1} and not _applied(d)
    assert [(a.reason, a.type) for a in d.actions if isinstance(a, Emit)] == [("DeployRetry", "Warning")]
    assert "helm exited 1" in d.actions[0].message and d.wake_s == 5
    st, obs2 = _deploying("database", deployTries={"keystone-schema": lc.STAGE_TRIES - 1})
    d = phases.decide(P, st, {**obs2, "render_failed": obs["render_failed"]}, T0)
    assert (d.step.phase, d.step.reason, d.step.status["outcome"]) == ("CleaningUp", "DeployFailed", "Failed")


def test_a_chart_wanwide_does_not_apply_refuses_the_trial_at_once_with_nothing_of_it_applied():
    st, obs = _deploying("database")
    obs["chart_refused"] = {("keystone", OTHERS[-1]): f"{P.namespace(OTHERS[-1])}: ClusterRole x is not a kind ..."}
    d = phases.decide(P, st, obs, T0)
    assert (d.step.phase, d.step.reason) == ("CleaningUp", "ChartRefused") and not _applied(d)


def test_provisioning_waits_for_the_deployments_then_moves_on():
    st, obs = _deploying("database", "keystone-schema")
    complete = {f"{P.namespace(r)}/keystone-{j}": "complete" for r in OTHERS for j in ("db-sync", "domain-manage",
                                                                                        "bootstrap")}
    d = phases.decide(P, st, {**obs, "jobs": complete}, T0)
    assert d.step.phase is None and f"{P.namespace(OTHERS[0])}/keystone-api" in d.step.message
    available = {k: True for k in deploy.awaited(P, lc.stages(P)[3], phases.rendered(P, st, obs), obs["charts"])}
    d = phases.decide(P, st, {**obs, "jobs": complete, "deployments": available}, T0)
    assert d.step.phase == "Injecting" and "4 stage(s) deployed" in d.step.message


def test_a_secret_the_operator_made_that_lacks_a_key_is_retried_then_fails_the_trial():
    st = _status("Provisioning", "namespaces", "database", **PLACED, deployTries={"keystone-schema": 2})
    d = phases.decide(P, st, {"missing": "Secret lab/x lacks admin-password", "database_ready": DB_READY}, T0)
    assert (d.step.phase, d.step.reason, d.step.status["outcome"]) == ("CleaningUp", "DeployFailed", "Failed")
    assert "lacks admin-password" in d.step.message


def test_each_phase_times_out_into_cleaning_up():
    for phase, field in lc.TIMEOUT_FIELD.items():
        limit = seconds(getattr(P.spec.timeouts, field))
        st = _status(phase, at=T0)
        late = T0 + dt.timedelta(seconds=limit + 1)
        c = {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "NetworkChaos", "metadata": {"name": "c", "namespace": "n"}}
        d = phases.decide(P, st, {"chaos": [c]}, late)
        if phase == "CleaningUp":
            assert (d.step.phase, d.step.reason) == ("Failed", "ChaosNotRecovered")
        else:
            assert (d.step.phase, d.step.reason, d.step.status["outcome"]) == ("CleaningUp", f"{phase}Timeout", "Failed")
        in_time = phases.decide(P, st, {"chaos": []}, T0 + dt.timedelta(seconds=limit - 1))
        assert in_time.step.reason != f"{phase}Timeout"


def test_a_timeout_names_its_field_and_what_the_phase_was_waiting_for():
    """A user reading a timeout learns which field to raise and what held the phase (its last status message)."""
    st = {**_status("Injecting", at=T0), "message": "Chaos Mesh has injected 1 of 2 WAN object(s);\n waiting"}
    late = T0 + dt.timedelta(seconds=seconds(P.spec.timeouts.injecting) + 1)
    d = phases.decide(P, st, {"chaos": []}, late)
    assert d.step.message == (f"Injecting took longer than its timeout (spec.timeouts.injecting: {P.spec.timeouts.injecting}); "
                              "its last status: Chaos Mesh has injected 1 of 2 WAN object(s); waiting; cleaning up")
    st = {**_status("VerifyingNetwork", at=T0), "message": "x" * 5000}
    d = phases.decide(P, st, {}, T0 + dt.timedelta(seconds=seconds(P.spec.timeouts.verifying_network) + 1))
    assert d.step.message.startswith("VerifyingNetwork took longer than its timeout (spec.timeouts.verifyingNetwork: ")
    assert len(d.step.message) < 600 and d.step.message.endswith("x…; cleaning up")


# ---- Injecting, VerifyingNetwork ------------------------------------------------------------

def _injected(objs: list[dict], failed: str | None = None) -> list[dict]:
    """The objects as Chaos Mesh reports them once injected (or failed with ``failed``)."""
    out = []
    for o in objs:
        st = {"conditions": [{"type": "AllInjected", "status": "False" if failed else "True"}]}
        if failed:
            st["experiment"] = {"containerRecords": [{"id": "ns/keystone-api-0/keystone-api", "events": [
                {"type": "Failed", "operation": "Apply", "message": failed}]}]}
        out.append({**o, "status": st})
    return out


def test_injecting_applies_the_wan_removes_any_other_chaos_and_waits_for_all_injected():
    st = _status("Injecting")
    d = phases.decide(P, st, {"chaos_installed": False}, T0)
    assert d.step.reason == "ShaperMissing" and "install Chaos Mesh first" in d.step.message
    pods = {r: r != "chicago" for r in P.region_names}
    d = phases.decide(P, st, {"chaos_installed": True, "chaos": [], "running_pods": pods}, T0)
    assert d.step.phase is None and "chicago" in d.step.message and not d.actions
    wan = render_trial(P).wan
    left = {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "NetworkChaos", "metadata": {"name": "old", "namespace": "n"},
            "spec": {"action": "netem"}}
    ready = {"chaos_installed": True, "chaos": [left], "running_pods": dict.fromkeys(P.region_names, True)}
    d = phases.decide(P, st, ready, T0)
    assert d.actions[0] == Delete("chaos-mesh.org/v1alpha1", "NetworkChaos", "old", "n")  # leftovers first
    assert _names(_applied(d)) == _names(wan) and d.step.status["done"] == ["wan"] and d.step.phase is None
    st = _status("Injecting", "wan")
    some = _injected(wan[1:]) + [wan[0]]
    d = phases.decide(P, st, {"chaos_installed": True, "chaos": some}, T0)
    assert d.step.phase is None and not d.actions and "AllInjected" in d.step.message
    d = phases.decide(P, st, {"chaos_installed": True, "chaos": _injected(wan)}, T0)
    assert d.step.phase == "VerifyingNetwork" and "wan-injected" in d.step.status["done"] and not d.actions


def test_a_wan_chaos_mesh_cannot_inject_fails_the_trial_saying_where_and_why():
    """The real node's kernel has no netem: chaos-daemon records a Failed event on the pod's record."""
    wan = render_trial(P).wan
    why = "unable to set tcs for pod ns/keystone-api-0: rpc error: code = Unknown"
    d = phases.decide(P, _status("Injecting", "wan"), {"chaos_installed": True, "chaos": _injected(wan, why)}, T0)
    assert (d.step.phase, d.step.reason, d.step.status["outcome"]) == ("CleaningUp", "ChaosFailed", "Failed")
    assert why in d.step.message and "netem" in d.step.message and f"{len(wan)} of {len(wan)}" in d.step.message


def test_a_failed_injection_chaos_mesh_is_retrying_waits_and_fails_only_when_it_keeps_failing():
    """VM node, try 4: MariaDB's liveness probe restarted db-0 in the second chaos-daemon entered its network
    namespace (PID gone: /proc/0/ns/net). Chaos Mesh retries such an apply; the trial waits for it, saying so,
    and fails only when the same pod's injection still fails CHAOS_RETRY_S after its first failure."""
    wan = render_trial(P).wan
    why = "unable to set tcs for pod db/db-0: open /proc/0/ns/net: no such file or directory"
    first = T0 - dt.timedelta(seconds=10)

    def failing(o: dict, events: list[dict], injected: bool = False) -> dict:
        return {**o, "status": {"conditions": [{"type": "AllInjected", "status": "True" if injected else "False"}],
                                "experiment": {"containerRecords": [{"id": "db/db-0", "events": events}]}}}

    def ev(kind: str, at: dt.datetime, msg: str = "") -> dict:
        return {"type": kind, "operation": "Apply", "message": msg, "timestamp": at.strftime("%Y-%m-%dT%H:%M:%SZ")}

    st = _status("Injecting", "wan")
    retrying = [failing(wan[0], [ev("Failed", first, why), ev("Failed", T0, why)]), *_injected(wan[1:])]
    d = phases.decide(P, st, {"chaos_installed": True, "chaos": retrying}, T0)
    assert d.step.phase is None and not d.actions, d.step
    assert "retries 1" in d.step.message and why in d.step.message and wan[0]["metadata"]["name"] in d.step.message
    late = first + dt.timedelta(seconds=readiness.CHAOS_RETRY_S)
    d = phases.decide(P, st, {"chaos_installed": True, "chaos": retrying}, late)
    assert (d.step.phase, d.step.reason) == ("CleaningUp", "ChaosFailed") and why in d.step.message
    # the retry took: the failures before it are history
    took = [failing(wan[0], [ev("Failed", first, why), ev("Succeeded", T0)], injected=True), *_injected(wan[1:])]
    d = phases.decide(P, st, {"chaos_installed": True, "chaos": took}, late)
    assert d.step.phase == "VerifyingNetwork", d.step
    # a new run of failures after a success is timed from its own start
    again = [failing(wan[0], [ev("Failed", first - dt.timedelta(hours=1), why), ev("Succeeded", first),
                              ev("Failed", T0, why)]), *_injected(wan[1:])]
    d = phases.decide(P, st, {"chaos_installed": True, "chaos": again}, T0 + dt.timedelta(seconds=60))
    assert d.step.phase is None and "retries" in d.step.message


def test_a_plan_that_shapes_nothing_needs_no_chaos_mesh():
    flat = _plan()
    flat = dataclasses.replace(flat, classes={r: [] for r in flat.region_names}, faults=[])
    d = phases.decide(flat, _status("Injecting"), {}, T0)
    assert (d.step.phase, d.step.reason) == ("VerifyingNetwork", "Injected")


S3 = S3Target(endpoint="http://s3:9000", bucket="b", prefix="e2e")


def _measured(p: TrialPlan, scale: float = 1.0) -> dict:
    """Five probes per pair around its RTT × ``scale``, spread as its jitter asks (0.64 × it, (p90−p10)/2)."""
    from wanwide.core.lifecycle import jitter_requested

    return {pair: [rtt_requested(p, pair) * scale + 0.3 + jitter_requested(p, pair) * f
                   for f in (-0.8, -0.4, 0.0, 0.4, 0.8)] for pair in probe_pairs(p)}


def test_verifying_network_measures_every_probed_pair_and_moves_on_when_it_is_what_the_plan_asks():
    st = _status("VerifyingNetwork")
    d = phases.decide(P, st, {"results": S3}, T0)
    jobs = [o for o in _applied(d) if o["kind"] == "Job"]
    sources = sorted({a for a, _ in probe_pairs(P)}, key=P.region_names.index)
    assert [j["metadata"]["namespace"] for j in jobs] == [P.namespace(r) for r in sources]
    assert {j["metadata"]["name"] for j in jobs} == {"network-probe-1"} and d.step.status["networkCheck"] == 1
    assert all(j["spec"]["template"]["spec"]["containers"][0]["args"][:2] == ["runner", "probe"] for j in jobs)
    cfg = json.loads(next(o for o in _applied(d) if o["kind"] == "ConfigMap")["data"]["probe.json"])
    assert cfg["results"]["bucket"] == "b" and cfg["check"] == 1 and cfg["targets"][0]["port"] == 5000
    st = _status("VerifyingNetwork", "probe-1", networkCheck=1)
    d = phases.decide(P, st, {"results": S3, "probes": ({}, sources, None)}, T0)
    assert d.step.phase is None and "waiting for the probes" in d.step.message
    d = phases.decide(P, st, {"results": S3, "probes": (_measured(P), [], None)}, T0)
    assert (d.step.phase, d.step.reason) == ("Loading", "NetworkVerified") and "within tolerance" in d.step.message


def test_a_network_off_is_measured_again_then_fails_the_trial_naming_the_pair():
    """The old operator never measured the WAN it asked for (VerifyingNetwork ran before any chaos)."""
    half = _measured(P, 0.5)  # e.g. a Service's ClusterIP shaped one way only
    st = _status("VerifyingNetwork", "probe-1", networkCheck=1)
    d = phases.decide(P, st, {"results": S3, "probes": (half, [], None)}, T0)
    assert d.step.phase is None and d.step.status == {"networkCheck": 2} and _said(d) == ["NetworkOff"]
    st = _status("VerifyingNetwork", "probe-1", networkCheck=2)
    d = phases.decide(P, st, {"results": S3}, T0)
    assert {o["metadata"]["name"] for o in _applied(d) if o["kind"] == "Job"} == {"network-probe-2"}
    st = _status("VerifyingNetwork", "probe-1", "probe-2", networkCheck=2)
    d = phases.decide(P, st, {"results": S3, "probes": (half, [], None)}, T0)
    assert (d.step.phase, d.step.reason, d.step.status["outcome"]) == ("CleaningUp", "NetworkOff", "Failed")
    a, b = probe_pairs(P)[0]
    want = rtt_requested(P, (a, b))
    assert f"{a}↔{b}: requested {want:g} ms, measured {want / 2 + 0.3:.2f} ms" in d.step.message
    d = phases.decide(P, st, {"results": S3, "probes": ({}, [a], None), "probe_jobs": {a: "failed"}}, T0)
    assert d.step.reason == "NetworkNotMeasured" and f"job/network-probe-2 -n {P.namespace(a)}" in d.step.message


def test_without_a_results_store_the_network_is_not_verified_and_said_so():
    d = phases.decide(P, _status("VerifyingNetwork"), {"results": None}, T0)
    assert (d.step.phase, d.step.reason) == ("Loading", "NetworkNotMeasured")
    assert [(a.reason, a.type) for a in d.actions] == [("NetworkNotMeasured", "Warning")]


# ---- Loading, faults ----------------------------------------------------------------------

def _loading(*done: str, started: dt.datetime = T0, attempt: int = 1) -> dict:
    return _status("Loading", "base", "wan", "wan-injected", *done, loadStartAt=ts.iso(started), attempt=attempt)


def test_loading_chooses_a_start_then_applies_the_runners_with_it():
    d = phases.decide(P, _status("Loading"), {}, T0)
    delay = seconds(P.spec.workload.start_delay)  # prepare and warm up before the common start
    assert delay == 120 and d.recorded["loadStartAt"] == ts.iso(T0 + dt.timedelta(seconds=delay)) and not d.actions
    d = phases.decide(P, _loading(), {}, T0)
    cms = [o for o in _applied(d) if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "rally-config"]
    assert len(cms) == len(P.load_regions) and "load-1" in d.step.status["done"]
    assert all(json.loads(c["data"]["runner.json"])["start_at"] == ts.iso(T0) for c in cms)
    # the pairs' watches start with them: a Job in each source region (paris probes rennes and chicago, rennes
    # chicago), from the same start; the first load region's runner collects them
    watches = [o for o in _applied(d) if o["kind"] == "ConfigMap" and o["metadata"]["name"] == WATCH]
    assert [w["metadata"]["namespace"] for w in watches] == [P.namespace(r) for r in P.region_names[:2]]
    docs = [WatchConfig.model_validate_json(w["data"]["watch.json"]) for w in watches]
    assert all(c.start_at == ts.iso(T0) for c in docs)
    assert [(c.region, t.region) for c in docs for t in c.targets] == list(itertools.combinations(P.region_names, 2))
    first = json.loads(cms[0]["data"]["runner.json"])
    assert cms[0]["metadata"]["namespace"] == P.namespace(P.load_regions[0])
    assert first["gauges"]["pair_watches"]["sources"] == P.region_names[:2]
    assert all("pair_watches" not in json.loads(c["data"]["runner.json"])["gauges"] for c in cms[1:])


def test_loading_retries_a_failed_runner_then_gives_up():
    jobs = dict.fromkeys(P.load_regions, "running") | {P.load_regions[-1]: "failed"}
    d = phases.decide(P, _loading("load-1"), {"jobs": jobs}, T0)
    assert d.step.status["attempt"] == 2 and d.step.status["loadStartAt"] is None and "load-1" not in d.step.status["done"]
    assert {a.namespace for a in d.actions if isinstance(a, Delete) and a.kind == "Job" and a.name == "rally"} == \
        {P.namespace(r) for r in P.load_regions}
    # the watches too: each stores its document on SIGTERM; the next attempt's go under during-2
    assert {a.namespace for a in d.actions if isinstance(a, Delete) and a.kind == "Job" and a.name == WATCH} == \
        {P.namespace(r) for r in P.region_names[:2]}
    last = P.spec.runner.max_attempts
    d = phases.decide(P, _loading(f"load-{last}", attempt=last), {"jobs": jobs}, T0)
    assert (d.step.phase, d.step.reason, d.step.status["outcome"]) == ("CleaningUp", "LoadFailed", "Failed")
    d = phases.decide(P, _loading("load-1"), {"jobs": dict.fromkeys(P.load_regions, "complete")}, T0)
    assert d.step.phase == "Collecting"


def test_results_measured_but_not_stored_fail_the_trial_without_measuring_again():
    """A runner whose upload failed through the Collecting timeout exits 3; its Job's podFailurePolicy fails it
    with reason PodFailurePolicy (readiness: "stopped"). The old operator retried the whole load."""
    jobs = dict.fromkeys(P.load_regions, "complete") | {P.load_regions[0]: "stopped"}
    d = phases.decide(P, _loading("load-1"), {"jobs": jobs}, T0)
    assert (d.step.phase, d.step.reason, d.step.status["outcome"]) == ("CleaningUp", "UploadFailed", "Failed")
    assert P.load_regions[0] in d.step.message and "could not be stored" in d.step.message
    assert not [a for a in d.actions if isinstance(a, Delete) and a.kind == "Job"]  # no second attempt
    job = next(o for o in render_trial(P).load if o["kind"] == "Job")
    rule = job["spec"]["podFailurePolicy"]["rules"][0]
    assert rule["action"] == "FailJob" and rule["onExitCodes"]["values"] == [3]
    status = {"conditions": [{"type": "FailureTarget", "status": "True", "reason": "PodFailurePolicy"},
                             {"type": "Failed", "status": "True", "reason": "PodFailurePolicy"}]}
    assert readiness.job_state({"status": status}) == "stopped"
    status["conditions"][1]["reason"] = "BackoffLimitExceeded"
    status["conditions"][0]["reason"] = "BackoffLimitExceeded"
    assert readiness.job_state({"status": status}) == "failed"


class Cluster:
    """The trial's chaos objects as the API server would hold them after each decision's actions, each injected
    by Chaos Mesh ``lag_s`` after it was applied (``inject=False``: never, as on the real node once)."""

    def __init__(self, plan: TrialPlan = P, inject: bool = True, lag_s: float = 1,
                 addresses: dict[str, list[str]] | None = None):
        self.plan, self.inject, self.lag_s, self.addresses = plan, inject, lag_s, addresses
        self.live = {o["metadata"]["name"]: o for o in render_trial(plan).wan}
        self.events: list[str] = []
        self.said: list[Emit] = []

    def _chaos_mesh(self, o: dict, at: dt.datetime) -> dict:
        if not self.inject:
            return {**o, "status": {"conditions": [{"type": "AllInjected", "status": "False"}]}}
        applied = {"type": "Succeeded", "operation": "Apply", "timestamp": ts.iso(at + dt.timedelta(seconds=self.lag_s))}
        return {**o, "status": {"conditions": [{"type": "AllInjected", "status": "True"}],
                                "experiment": {"containerRecords": [{"id": f"{o['metadata']['namespace']}/p",
                                                                     "phase": "Injected", "events": [applied]}]}}}

    def step(self, status: dict, at: dt.datetime, jobs: str = "running") -> Decision:
        d = phases.decide(self.plan, status, {"jobs": dict.fromkeys(self.plan.load_regions, jobs),
                                              "chaos": list(self.live.values()),
                                              **({} if self.addresses is None else {"pod_addresses": self.addresses})},
                          at)
        for a in d.actions:
            if isinstance(a, Delete) and a.kind == "NetworkChaos":
                self.live.pop(a.name)
            elif isinstance(a, Apply) and a.obj["kind"] == "NetworkChaos":
                assert a.obj["metadata"]["name"] not in self.live, "applied twice"
                self.live[a.obj["metadata"]["name"]] = self._chaos_mesh(a.obj, at)
            elif isinstance(a, Emit) and a.reason == "Fault":
                self.events.append(f"{(at - T0).total_seconds():g}s {a.message}")
            elif isinstance(a, Emit):
                self.said.append(a)
        status.update({k: v for k, v in d.step.status.items() if k != "done"})
        return d

    def cut(self) -> set[str]:
        return {o["metadata"]["annotations"]["wanwide.io/fault"] for o in self.live.values()
                if o["spec"]["action"] == "partition"}

    def lossy(self) -> set[str]:
        return {n for n, o in self.live.items() if o["spec"].get("loss")}


def test_the_fault_schedule_is_kept_on_time_overlaps_included_and_a_retry_replays_it():
    """P: partition0 cuts paris 30–50 s, loss0 adds 7 % on paris's links 40–55 s (overlapping it), dropout0
    cuts rennes and chicago every 300 s for 10 s. The chaos in force is what core/lifecycle/schedule.py says, at
    every instant; the old operator left loss0's links at the plan's WAN when the partition ended."""
    c, st = Cluster(), _loading("load-1")
    base = set(c.live)
    at = lambda s: T0 + dt.timedelta(seconds=s)  # noqa: E731
    d = c.step(st, at(1))
    assert not d.actions and d.wake_s == pytest.approx(29)
    d = c.step(st, at(30))
    assert c.cut() == {"partition0"} and set(c.live) - base == {n for n in c.live if n.startswith("partition0")}
    assert st["faultsInForce"] == ["partition0"] and d.wake_s == pytest.approx(2)  # until Chaos Mesh says it is in
    c.step(st, at(41))
    assert c.cut() == {"partition0"} and c.lossy() and st["faultsInForce"] == ["partition0", "loss0"]
    lossy = c.lossy()
    d = c.step(st, at(50))  # the partition ends; loss0 stays in force on the same links
    assert c.cut() == set() and c.lossy() == lossy and st["faultsInForce"] == ["loss0"]
    assert [a for a in d.actions if isinstance(a, Apply)] == []
    assert all(a.name.startswith("partition0") for a in d.actions if isinstance(a, Delete))
    c.step(st, at(55))
    assert set(c.live) == base and st["faultsInForce"] == []
    d = c.step(st, at(56))
    assert not d.actions and d.wake_s == pytest.approx(244)  # the first dropout at 300 s
    c.step(st, at(300))
    assert c.cut() == {"dropout0-0"}
    c.step(st, at(310))
    assert set(c.live) == base
    assert c.events == ["30s partition0 began", "41s loss0 began", "50s partition0 ended", "55s loss0 ended",
                        "300s dropout0-0 began", "310s dropout0-0 ended"]
    # a retry at 45 s (a runner failed): the plan's WAN back at once, then the whole schedule from the new start
    c, st = Cluster(), _loading("load-1")
    c.step(st, at(30))
    c.step(st, at(45))
    assert c.cut() and c.lossy()
    d = c.step(st, at(45), jobs="failed")
    assert st["attempt"] == 2 and st["loadStartAt"] is None and set(c.live) == base and st["faultsInForce"] == []
    st.update(loadStartAt=ts.iso(at(100)), done=sorted(set(d.step.status["done"]) | {"load-2"}))
    c.step(st, at(129))
    assert set(c.live) == base
    c.step(st, at(130))
    assert c.cut() == {"partition0"}, "the retry replays the partition 30 s after its own start"
    assert c.events[-3:] == ["45s partition0 ended", "45s loss0 ended", "130s partition0 began"]


def test_a_cut_is_injected_on_its_own_side_with_the_others_addresses():
    """Seen on the real node: a 40 s partition of one region of 9 in force 14–21 s late, Chaos Mesh injecting
    both sides (≈ 54 pods). With the running pods' addresses the operator cuts paris on its own side: its
    namespace's pods and its member drop what goes to and comes from every other region's addresses, one
    object per pod set; a pod elsewhere that restarts with a new address does not re-create the cut (Chaos
    Mesh forbids changing it; the fault would be late again); it ends on time and its lag is recorded."""
    addrs = {"paris": ["10.244.0.11", "10.244.0.12", "10.244.0.13"], "rennes": ["10.244.0.21", "10.244.0.22"],
             "chicago": ["10.244.0.31", "10.244.0.32"]}
    c, st = Cluster(addresses=addrs, lag_s=2), _loading("load-1")
    at = lambda s: T0 + dt.timedelta(seconds=s)  # noqa: E731
    c.step(st, at(30))
    cuts = {n: o for n, o in c.live.items() if o["spec"]["action"] == "partition"}
    assert len(cuts) == 2, cuts  # paris's namespace, paris's Galera member: not 4 pairs of pod sets
    others = ["10.244.0.21", "10.244.0.22", "10.244.0.31", "10.244.0.32"]
    for o in cuts.values():
        spec = o["spec"]
        assert "target" not in spec and spec["direction"] == "both" and spec["externalTargets"] == others
        assert spec["duration"] == "20s"
    sel = sorted(json.dumps(o["spec"]["selector"], sort_keys=True) for o in cuts.values())
    assert sel == sorted([json.dumps({"namespaces": [P.namespace("paris")], **chaos.RUNNING}, sort_keys=True),
                          json.dumps({"pods": {P.db_namespace: ["galera-0"]}, **chaos.RUNNING}, sort_keys=True)])
    c.addresses = {**addrs, "rennes": ["10.244.0.21", "10.244.0.99"]}  # a rennes pod restarted elsewhere
    d = c.step(st, at(35))
    assert not [a for a in d.actions if isinstance(a, (Apply, Delete))] and set(c.live) >= set(cuts)
    assert st["faultsInjected"] == {"partition0": 2}
    c.step(st, at(50))
    assert c.cut() == set() and c.events[:2] == ["30s partition0 began", "50s partition0 ended"]
    # a region with no running pod (nothing to take the addresses of): both sides by selector, as before
    c, st = Cluster(addresses={k: v for k, v in addrs.items() if k != "chicago"}), _loading("load-1")
    c.step(st, at(30))
    assert {o["spec"].get("target") is not None for o in c.live.values() if o["spec"]["action"] == "partition"} == {True}


def test_a_regions_addresses_are_its_running_pods_and_its_members_not_anyone_elses():
    from wanwide.providers.kubernetes.controller.observe import pod_addresses

    def pod(ns: str, name: str, ip: str, **spec) -> dict:
        return {"metadata": {"namespace": ns, "name": name}, "status": {"podIP": ip, "podIPs": [{"ip": ip}]},
                "spec": spec}

    running = [pod(P.namespace("paris"), "keystone-api-1", "10.244.0.11"), pod(P.db_namespace, "galera-0", "10.244.0.12"),
               pod(P.db_namespace, "galera-1", "10.244.0.21"), pod(P.namespace("rennes"), "memcached-2", "10.244.0.22"),
               pod("kube-system", "coredns-3", "10.244.0.2"), pod(P.db_namespace, "galera-metrics-4", "10.244.0.5"),
               pod(P.namespace("chicago"), "on-the-host", "192.168.1.5", hostNetwork=True)]
    assert pod_addresses(P, running) == {"paris": ["10.244.0.11", "10.244.0.12"],
                                         "rennes": ["10.244.0.21", "10.244.0.22"]}


def test_each_fault_window_is_checked_in_force_and_its_lag_recorded():
    """Chaos Mesh applies each window's objects 2 s after the operator does: the trial records the lag of each
    occurrence from its start (partition0 applied at 30 s, loss0 at 41 s for a 40 s start), to the second
    (Kubernetes timestamps)."""
    c, st = Cluster(lag_s=2), _loading("load-1")
    at = lambda s: T0 + dt.timedelta(seconds=s)  # noqa: E731
    for s in (30, 33, 41, 44, 50, 55, 300, 303, 310):
        c.step(st, at(s))
    assert st["faultsInjected"] == {"partition0": 2, "loss0": 3, "dropout0-0": 2}
    assert [e.message for e in c.said if e.reason == "FaultInjected"] == [
        "partition0 in force 2.0 s after it began", "loss0 in force 3.0 s after it began",
        "dropout0-0 in force 2.0 s after it began"]
    assert not st.get("faultsLate") and st["phase"] == "Loading"


def test_a_fault_window_never_in_force_is_warned_of_then_fails_the_trial():
    """Seen on the real node: Chaos Mesh never injected a 30 s partition (AllInjected False throughout) and the
    trial went on to report a load that was never cut. Now: a FaultLate warning 10 s in, and when the window
    ends the trial fails saying which window and where to look."""
    c, st = Cluster(inject=False), _loading("load-1")
    at = lambda s: T0 + dt.timedelta(seconds=s)  # noqa: E731
    c.step(st, at(30))
    d = c.step(st, at(32))
    assert d.wake_s == pytest.approx(2) and d.step.phase is None
    c.step(st, at(40))
    (late,) = [e for e in c.said if e.reason == "FaultLate"]
    assert late.type == "Warning" and "partition0 began 10 s ago" in late.message and st["faultsLate"] == ["partition0"]
    d = c.step(st, at(50))
    assert (d.step.phase, d.step.reason, d.step.status["outcome"]) == ("CleaningUp", "FaultNotInjected", "Failed")
    assert "partition0 ended without ever being in force" in d.step.message and "networkchaos" in d.step.message
    # a window the load's end cut short before it was due is said, not failed
    c, st = Cluster(inject=False), _loading("load-1")
    c.step(st, at(30))
    d = c.step(st, at(33), jobs="complete")
    assert d.step.phase == "Collecting" and [e.reason for e in c.said] == ["FaultNotInjected"]


def test_a_finished_load_puts_the_plans_wan_back_on_its_way_to_collecting():
    c, st = Cluster(), _loading("load-1")
    c.step(st, T0 + dt.timedelta(seconds=42))
    d = c.step(st, T0 + dt.timedelta(seconds=43), jobs="complete")
    assert d.step.phase == "Collecting" and set(c.live) == {o["metadata"]["name"] for o in render_trial(P).wan}


def test_a_restarted_operator_repeats_nothing_already_in_force_and_decides_the_same():
    c, st = Cluster(), _loading("load-1")
    at = T0 + dt.timedelta(seconds=35)
    c.step(st, at)
    obs = {"jobs": dict.fromkeys(P.load_regions, "running"), "chaos": list(c.live.values())}
    first, again = phases.decide(P, st, obs, at), phases.decide(P, st, obs, at)
    assert first == again  # pure: actions lost to a kill before the status write are simply redone
    assert not [a for a in first.actions if not isinstance(a, Emit)]  # nothing in force is applied again
    assert [a.reason for a in first.actions] == ["FaultInjected"]  # its lag not yet in the status: said once


# ---- Collecting, CleaningUp -----------------------------------------------------------------

def test_collecting_waits_for_every_bundle():
    d = phases.decide(P, _status("Collecting"), {"bundles": (["paris"], ["rennes"], "s3://b/p/", None, None)}, T0)
    assert d.step.phase is None and "rennes" in d.step.message and not d.actions
    d = phases.decide(P, _status("Collecting"), {"bundles": (P.load_regions, [], "s3://b/p/", None, None)}, T0)
    assert (d.step.phase, d.step.status["outcome"], d.step.status["resultsURI"]) == ("CleaningUp", "Succeeded", "s3://b/p/")
    assert "objectives" not in d.step.status and not d.actions  # none recorded: none said
    # the objectives the bundles recorded: in the status, a warning naming the miss; the trial still succeeds
    rows = {"paris": [{"scenario": "KeystoneBasic.create_user", "passed": True, "detail": "ok"}],
            "rennes": [{"scenario": "KeystoneBasic.create_user", "passed": False, "detail": "p95 0.9 s > 0.5 s"}]}
    d = phases.decide(P, _status("Collecting"), {"bundles": (P.load_regions, [], "s3://b/p/", None, rows)}, T0)
    assert (d.step.phase, d.step.status["outcome"]) == ("CleaningUp", "Succeeded")
    assert d.step.status["objectives"]["summary"] == "1/2 met" and "objectives 1/2 met" in d.step.message
    assert [(a.reason, a.type) for a in d.actions if isinstance(a, Emit)] == [("ObjectivesMissed", "Warning")]
    assert "rennes create_user: p95 0.9 s > 0.5 s" in d.actions[0].message


def test_a_silent_results_store_is_said_once_and_its_return_too():
    down = "results store http://s3:9000 bucket b unreachable (EndpointConnectionError)"
    st = _status("Collecting")
    d = phases.decide(P, st, {"bundles": ([], ["rennes"], "s3://b/p/", down, None)}, T0)
    assert d.step.phase is None and down in d.step.message and "keep retrying" in d.step.message
    assert [(a.reason, a.type) for a in d.actions] == [("ResultsStoreUnavailable", "Warning")]
    st["message"] = d.step.message  # the next step, still down: no second event
    assert not phases.decide(P, st, {"bundles": ([], ["rennes"], "s3://b/p/", down, None)}, T0).actions
    d = phases.decide(P, st, {"bundles": ([], ["rennes"], "s3://b/p/", None, None)}, T0)  # back
    assert _said(d) == ["ResultsStoreAvailable"] and "results store" not in d.step.message
    # back, and the bundles arrived before the next step: said all the same (a CI run saw it unsaid)
    d = phases.decide(P, st, {"bundles": (P.load_regions, [], "s3://b/p/", None, None)}, T0)
    assert d.step.phase == "CleaningUp" and [a.reason for a in d.actions if isinstance(a, Emit)] == ["ResultsStoreAvailable"]
    # a runner still uploading in Loading: the same words
    ld = _loading("load-1")
    d = phases.decide(P, ld, {"jobs": dict.fromkeys(P.load_regions, "running"), "store": down}, T0)
    assert d.step.phase is None and d.step.message.startswith("Rally running") and down in d.step.message
    assert [a.reason for a in d.actions if isinstance(a, Emit)][-1:] == ["ResultsStoreUnavailable"]


def test_cleaning_up_removes_chaos_first_then_namespaces_then_ends_with_the_outcome():
    st = _status("CleaningUp", outcome="Failed", reason="LoadFailed", outcomeMessage="Rally failed in paris")
    gone = {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "NetworkChaos",
            "metadata": {"name": "a", "namespace": "n", "deletionTimestamp": "x"}}
    live = {**gone, "metadata": {"name": "b", "namespace": "n"}}
    d = phases.decide(P, st, {"chaos": [gone, live]}, T0)
    assert [a.name for a in d.actions] == ["b"] and d.step.phase is None
    d = phases.decide(P, st, {"chaos": [], "namespaces": {}}, T0)
    assert (d.step.phase, d.step.reason, d.step.message) == ("Failed", "LoadFailed", "Rally failed in paris")
    always = _plan(cleanup="Always")
    d = phases.decide(always, {**st, "outcome": "Succeeded"}, {"chaos": [], "namespaces": {"x": False, "y": True}}, T0)
    assert [a.name for a in d.actions] == ["x"] and d.step.phase is None
    d = phases.decide(always, {**st, "outcome": "Succeeded"}, {"chaos": [], "namespaces": {}}, T0)
    assert (d.step.phase, d.step.reason) == ("Succeeded", "Completed")


# ---- status, conditions, error policy -------------------------------------------------------

def _cond(status: dict, ctype: str) -> dict | None:
    return next((c for c in status.get("conditions", []) if c["type"] == ctype), None)


def test_conditions_follow_the_phase_and_carry_the_generation():
    st = _status("Collecting", conditions=[{"type": "Complete", "status": "False", "reason": "stale",
                                            "message": "", "lastTransitionTime": "x", "observedGeneration": 1}])
    def patch_of(current: dict, phase: str, reason: str, message: str, fields: dict) -> dict:
        new, _ = lc.apply(current, lc.Step(phase, reason, message, fields), T0)
        return trialstate.status_patch(current, new, 3, T0)

    patch = patch_of(st, "CleaningUp", "Collected", "2 bundles", {"outcome": "Succeeded"})
    assert patch["phase"] == "CleaningUp" and _cond(patch, "Complete") is None  # stale: removed
    assert _cond(patch, "Progressing")["status"] == "True" and patch["observedGeneration"] == 3
    st = {**st, **patch}
    patch = patch_of(st, "Succeeded", "Completed", "done", {})
    assert (_cond(patch, "Complete")["status"], _cond(patch, "Failed")["status"]) == ("True", "False")
    assert _cond(patch, "Progressing")["status"] == "False" and patch["completionTime"] == ts.iso(T0)
    assert all(c["observedGeneration"] == 3 for c in patch["conditions"])
    assert [c["type"] for c in patch["conditions"]].count("Complete") == 1  # a map keyed by type
    failed = patch_of(st, "Failed", "LoadFailed", "rally exited 1", {})
    assert (_cond(failed, "Complete")["status"], _cond(failed, "Failed")["status"]) == ("False", "True")
    assert _cond(failed, "Failed")["reason"] == "LoadFailed"
    back = patch_of({**st, **patch}, "Loading", "x", "", {})
    assert "phase" not in back  # forward only


def test_a_frozen_plan_that_no_longer_validates_is_a_permanent_failure():
    b = benchmark("galera", "explicit")
    docs = load_documents([yaml.safe_dump(b)])
    (bench,) = docs.benchmarks
    topo = docs.topology_for(bench)
    trial = {"metadata": {"annotations": {A_PLAN_INPUT: plan_input(b, topo, expand(bench.spec)[0])}}}
    assert trial_plan(trial).backend == "galera"
    data = json.loads(trial["metadata"]["annotations"][A_PLAN_INPUT])
    data["topology"]["regions"] = data["topology"]["regions"][:2]  # galera below quorum: no longer plans
    data["benchmark"]["spec"]["faults"] = {}
    trial["metadata"]["annotations"][A_PLAN_INPUT] = json.dumps(data)
    with pytest.raises(InvalidPlan, match="galera needs at least 3 regions"):
        trial_plan(trial)
    with pytest.raises(InvalidPlan, match=A_PLAN_INPUT):
        trial_plan({"metadata": {"annotations": {}}})
    st = _status("Loading")
    step = lc.decide(None, st, lc.Seen(refused=("InvalidPlan", "no longer validates")), T0)
    assert (step.phase, step.reason, step.actions) == ("Failed", "InvalidPlan", [])  # no clean-up: its plan is not its own
    new, events = lc.apply(st, step, T0)
    patch = trialstate.status_patch(st, new, 1, T0)
    assert patch["phase"] == "Failed" and _cond(patch, "Failed")["status"] == "True"
    assert [(e.reason, e.type) for e in events] == [("Failed", "Warning")]


def test_an_invalid_benchmark_is_failed_until_fixed():
    conds = trialstate.outcome_conditions([{"type": "Succeeded", "status": "False"}], "Invalid", "InvalidSpec",
                                          "spec.matrix.rtt: ...", 2, T0)
    assert {c["type"]: c["status"] for c in conds} == {"Progressing": "False", "Complete": "False", "Failed": "True"}
    fixed = trialstate.outcome_conditions(conds, "Running", "Running", "0/4 trials done", 3, T0)
    assert {c["type"]: c["status"] for c in fixed} == {"Progressing": "True"}  # no stale outcome left behind


def test_the_runner_image_defaults_to_the_operators_and_is_frozen_with_the_trial():
    b = benchmark("mariadb", "explicit")
    (bench,) = load_documents([yaml.safe_dump(b)]).benchmarks
    topo = load_documents([yaml.safe_dump(b)]).topology_for(bench)
    point = expand(bench.spec)[0]

    def job_image(spec_bench: dict) -> str:
        trial = {"metadata": {"annotations": {A_PLAN_INPUT: plan_input(spec_bench, topo, point)}}}
        jobs = [o for o in render_trial(trial_plan(trial)).objects if o["kind"] == "Job"]
        assert jobs, "no Rally Job rendered"
        return {c["image"] for j in jobs for c in j["spec"]["template"]["spec"]["containers"]}.pop()

    assert job_image(with_runner_image(b, "registry.example/wanwide:dev")) == "registry.example/wanwide:dev"
    b["spec"]["runner"] = {"image": "mine:1"}
    assert job_image(with_runner_image(b, "registry.example/wanwide:dev")) == "mine:1"  # the user's wins


def test_a_namespace_stuck_terminating_ends_the_clean_up_at_its_timeout_and_is_named():
    why = "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
    obs = {"chaos": [], "namespaces": {"ns-r1": True}, "namespaces_why": {"ns-r1": why}}
    st = _status("CleaningUp", outcome="Succeeded")
    d = phases.decide(P, st, obs, T0)
    assert d.step.phase is None and why in d.step.message  # within the timeout: waits, and says for what
    late = T0 + dt.timedelta(seconds=seconds(P.spec.timeouts.cleaning_up) + 1)
    d = phases.decide(P, st, obs, late)
    assert (d.step.phase, d.step.reason) == ("Succeeded", "NamespacesStuck")
    assert "ns-r1" in d.step.message and why in d.step.message and "results stored" in d.step.message
    assert [(a.reason, a.type) for a in d.actions] == [("NamespacesStuck", "Warning")]
    failed = _status("CleaningUp", outcome="Failed", reason="LoadFailed", outcomeMessage="Rally failed in paris")
    d = phases.decide(P, failed, obs, late)
    assert (d.step.phase, d.step.reason) == ("Failed", "LoadFailed") and d.step.message.startswith("Rally failed in paris; ")


@pytest.mark.parametrize("phase", ["Injecting", "Loading"])
def test_chaos_mesh_gone_mid_run_fails_the_trial_clearly(phase):
    st = _loading("load-1") if phase == "Loading" else _status("Injecting", "base", "wan")
    d = phases.decide(P, st, {"chaos_installed": False}, T0)
    assert (d.step.phase, d.step.reason, d.step.status["outcome"]) == ("CleaningUp", "ShaperMissing", "Failed")
    assert "reinstall Chaos Mesh" in d.step.message


def test_chaos_mesh_never_injected_keeps_its_finalizer_so_the_clean_up_releases_it():
    """Chaos Mesh v2.8 never removes chaos-mesh/records from an object whose injection only failed (a node
    without netem; seen on the real node): deleted for 30 s, never injected anywhere → the finalizer goes."""
    st = _status("CleaningUp", outcome="Failed", reason="ChaosFailed", outcomeMessage="no netem")
    failed = {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "NetworkChaos",
              "metadata": {"name": "wan-x", "namespace": "n", "finalizers": ["chaos-mesh/records"],
                           "deletionTimestamp": ts.iso(T0), "resourceVersion": "7"},
              "status": {"conditions": [{"type": "AllInjected", "status": "False"}],
                         "experiment": {"containerRecords": [{"id": "n/p/c", "events": [
                             {"type": "Failed", "operation": "Apply", "message": "unable to set tcs"}]}]}}}
    d = phases.decide(P, st, {"chaos": [failed]}, T0 + dt.timedelta(seconds=10))
    assert not [a for a in d.actions if isinstance(a, DropFinalizer)]  # Chaos Mesh may still recover it
    d = phases.decide(P, st, {"chaos": [failed]}, T0 + dt.timedelta(seconds=31))
    (drop,) = [a for a in d.actions if isinstance(a, DropFinalizer)]
    assert drop.obj["metadata"]["name"] == "wan-x" and "released" in d.step.message
    injected = {**failed, "status": {"experiment": {"containerRecords": [{"events": [
        {"type": "Succeeded", "operation": "Apply"}]}]}}}
    d = phases.decide(P, st, {"chaos": [injected]}, T0 + dt.timedelta(seconds=31))
    assert not [a for a in d.actions if isinstance(a, DropFinalizer)]  # injected once: its recovery is Chaos Mesh's


def test_two_chaos_objects_sharing_pods_on_a_node_without_netem_are_released_through_the_pods_sync():
    """Seen on the real node (two regions at 50 ms, no netem): each region's NetworkChaos has the other's pods as
    targets; Chaos Mesh wrote both into those pods' PodNetworkChaos (Apply Succeeded), and after the deletion each
    recovery waits on a sync that keeps failing on the other's netem entry. 30 s after the deletion the
    PodNetworkChaos whose sync failed is deleted, so Chaos Mesh records the pods recovered and drops its finalizer;
    a pod whose sync works is left to Chaos Mesh."""
    st = _status("CleaningUp", outcome="Failed", reason="ChaosFailed", outcomeMessage="no netem")

    def chaos(name: str, ns: str, waiting: list[str]) -> dict:
        return {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "NetworkChaos",
                "metadata": {"name": name, "namespace": ns, "finalizers": ["chaos-mesh/records"] * 4,
                             "deletionTimestamp": ts.iso(T0), "resourceVersion": "7"},
                "status": {"conditions": [{"type": "AllInjected", "status": "False"}],
                           "experiment": {"containerRecords": [
                               {"id": f"{ns}/db-0", "phase": "Not Injected/Wait", "events": [
                                   {"type": "Failed", "operation": "Apply", "message": "unable to set tcs for pod db-0"}]},
                               *({"id": pid, "phase": "Injected/Wait", "events": [
                                   {"type": "Succeeded", "operation": "Apply"},
                                   {"type": "Failed", "operation": "Recover", "message": "unable to set tcs"}]}
                                 for pid in waiting)]}}}

    def pnc(pid: str, failed: str) -> dict:
        ns, _, name = pid.partition("/")
        return {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "PodNetworkChaos",
                "metadata": {"name": name, "namespace": ns}, "status": {"failedMessage": failed}}

    a = chaos("wan-r1", "t-r1", ["t-r2/keystone-api-1", "t-r2/memcached-1"])
    b = chaos("wan-r2", "t-r2", ["t-r1/keystone-api-2"])
    pods = {"t-r2/keystone-api-1": pnc("t-r2/keystone-api-1", "unable to set tcs for pod keystone-api-1"),
            "t-r2/memcached-1": pnc("t-r2/memcached-1", ""),  # this one syncs: Chaos Mesh's to recover
            "t-r1/keystone-api-2": pnc("t-r1/keystone-api-2", "unable to set tcs for pod keystone-api-2")}
    obs = {"chaos": [a, b], "pod_chaos": pods}

    def deleted(d) -> list[str]:
        return sorted(f"{x.namespace}/{x.name}" for x in d.actions if isinstance(x, Delete) and x.kind == "PodNetworkChaos")

    assert deleted(phases.decide(P, st, obs, T0 + dt.timedelta(seconds=10))) == []  # Chaos Mesh may still sync them
    d = phases.decide(P, st, obs, T0 + dt.timedelta(seconds=31))
    assert deleted(d) == ["t-r1/keystone-api-2", "t-r2/keystone-api-1"]
    assert "cannot sync 2 pod(s)" in d.step.message and "unable to set tcs" in d.step.message
    assert not [x for x in d.actions if isinstance(x, DropFinalizer)]  # injected somewhere: not released by force
    assert deleted(phases.decide(P, st, {"chaos": [a, b]}, T0 + dt.timedelta(seconds=31))) == []  # none observed


def test_a_partition_whose_pods_left_to_recover_finished_is_released():
    """Seen on the real node (9 regions): a Rally pod finished inside a partition; Chaos Mesh cannot recover a
    pod without a running container ("no running task found", chaos-mesh#4827) and kept the deleted partition's
    finalizer for ever, so the clean-up hung. Released 30 s after the deletion once every pod it has not
    recovered no longer runs; one still running is left to Chaos Mesh."""
    st = _status("CleaningUp", outcome="Succeeded")
    cut = {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "NetworkChaos",
           "metadata": {"name": "partition0-x-nn", "namespace": "t-r2", "finalizers": ["chaos-mesh/records"],
                        "deletionTimestamp": ts.iso(T0), "resourceVersion": "9"},
           "status": {"conditions": [{"type": "AllInjected", "status": "True"}],
                      "experiment": {"containerRecords": [
                          {"id": "t-r2/rally-abc", "phase": "Injected", "events": [
                              {"type": "Succeeded", "operation": "Apply", "timestamp": ts.iso(T0)},
                              {"type": "Failed", "operation": "Recover", "message": "no running task found"}]},
                          {"id": "t-r2/keystone-api-0", "phase": "Not Injected", "events": [
                              {"type": "Succeeded", "operation": "Apply", "timestamp": ts.iso(T0)},
                              {"type": "Succeeded", "operation": "Recover", "timestamp": ts.iso(T0)}]}]}}}

    def dropped(running: set[str], after_s: float) -> list[str]:
        d = phases.decide(P, st, {"chaos": [cut], "running_pods_of_chaos": running}, T0 + dt.timedelta(seconds=after_s))
        assert d.step.phase is None  # the clean-up waits for the object to go
        return [a.obj["metadata"]["name"] for a in d.actions if isinstance(a, DropFinalizer)]

    assert dropped(set(), 10) == []  # Chaos Mesh may still recover it
    assert dropped({"t-r2/rally-abc"}, 31) == []  # still running: Chaos Mesh's to recover
    assert dropped(set(), 31) == ["partition0-x-nn"]
    assert readiness.unrecovered(cut) == ["t-r2/rally-abc"]
    d = phases.decide(P, st, {"chaos": [cut], "running_pods_of_chaos": set()}, T0 + dt.timedelta(seconds=31))
    assert "no longer run" in d.step.message


def test_the_pods_left_to_recover_are_read_in_one_list_and_only_when_some_are_left():
    from wanwide.providers.kubernetes.controller.observe import running_pods_of_chaos

    class Pods:  # the API server's cached pod list, counting the calls
        def __init__(self, phase: str) -> None:
            self.phase, self.calls = phase, 0

        def list(self, api_version, kind, selector=None, namespace=None, cached=False, fields=None):
            self.calls += 1
            pods = [{"metadata": {"namespace": "t-r2", "name": n}, "status": {"phase": self.phase}}
                    for n in ("rally-abc", "keystone-api-0")]
            return [p for p in pods if p["status"]["phase"] == (fields or {}).get("status.phase")]

    deleted = {"metadata": {"deletionTimestamp": ts.iso(T0)}, "status": {"experiment": {"containerRecords": [
        {"id": "t-r2/rally-abc", "phase": "Injected"}, {"id": "t-r2/keystone-api-0", "phase": "Not Injected"}]}}}
    running, finished = Pods("Running"), Pods("Succeeded")
    assert running_pods_of_chaos(running, [deleted, deleted]) == {"t-r2/rally-abc"} and running.calls == 1
    assert running_pods_of_chaos(finished, [deleted]) == set()
    live = Pods("Running")
    assert running_pods_of_chaos(live, [{**deleted, "metadata": {}}]) == set() and live.calls == 0


def test_a_new_service_is_new_stages_and_a_renderer_not_a_state_machine(monkeypatch):
    """Issue 45's way in: a message queue in the primary region, after the database and before Keystone, is a
    stage in the plan (core/lifecycle/deploy.py ``stages``) and its chart's renderer (``render.CHARTS``); the
    lifecycle steps through it and the operator deploys it with nothing else changed."""
    from wanwide.core.lifecycle import machine
    from wanwide.providers.kubernetes import render
    from wanwide.providers.kubernetes.render.keystone import releases

    real = lc.stages

    def with_queue(p):
        s = list(real(p))
        queue = lc.Stage("queue", "queue", (p.primary_region,), after=("database",))
        s[2] = dataclasses.replace(s[2], after=("database", "queue"))  # the schema owner's Keystone waits for it
        return tuple([*s[:2], queue, *s[2:]])

    def queue_releases(p, passwords=None):
        return [dataclasses.replace(r, name="queue") for r in releases(p, passwords) if r.region == p.primary_region]

    for m in (lc, machine):
        monkeypatch.setattr(m, "stages", with_queue)
    monkeypatch.setitem(render.CHARTS, "queue", queue_releases)
    st, obs = _deploying("database")
    obs["charts"] |= {("queue", P.primary_region): _charts(P.primary_region)[("keystone", P.primary_region)]}
    d = phases.decide(P, st, obs, T0)
    hooks = [(a.lane, a.obj["metadata"]["name"]) for a in d.actions if isinstance(a, Apply) and a.obj["kind"] == "Job"]
    assert hooks == [(P.namespace(P.primary_region), "keystone-db-sync")]  # the queue's first hook, nothing else's
    assert "queue" in d.step.message and d.step.phase is None
    ns = P.namespace(P.primary_region)
    complete = {f"{ns}/keystone-{j}": "complete" for j in ("db-sync", "domain-manage", "bootstrap")}
    available = dict.fromkeys(deploy.awaited(P, with_queue(P)[2], phases.rendered(P, st, obs), obs["charts"]), True)
    d = phases.decide(P, st, {**obs, "jobs": complete, "deployments": available}, T0)
    assert "queue" in d.step.status["done"] and "StageDeployed" in _said(d)
