"""The WAN for pods that start after its NetworkChaos objects (render/chaos.py ``late``, ``late_pods``).

Chaos Mesh selects a chaos object's pods, and its target's, once, when the object is created (its records
controller, ``if records == nil``): measured on real netem (tests/cluster/test_chaos_vm.py), a pod started
afterwards crosses the WAN unshaped both ways. The operator shapes such pods with objects of their own;
these tests check that each such pod then gets exactly the plan's links, both ways, and nothing else.
"""

from __future__ import annotations

import re

import pytest

from wanwide.core.api.benchmark import Benchmark
from wanwide.core.plan.trial import plan
from wanwide.providers.kubernetes.render import chaos
from wanwide.providers.kubernetes.render.database import members


def _trial(backend: str = "galera", **more):
    bench = Benchmark.model_validate({"metadata": {"name": "late", "namespace": "t"}, "spec": {**more,
        "topology": {"regions": [{"name": "r1"}, {"name": "r2"}, {"name": "r3"}],
                     "network": {"default": {"rtt": "60ms"}, "overrides": [
                         {"from": "r1", "to": "r2", "rtt": "100ms"},
                         {"from": "r1", "to": "r3", "rtt": "160ms", "oneWay": True}]}},
        "database": {"backend": backend}, "workload": {"scenarios": [{"name": "get_entities"}]}}})
    (trial,) = plan(bench, bench.spec.topology)
    return trial


def _ms(text: str) -> float:
    m = re.match(r"^([0-9.]+)(us|ms)$", text)
    assert m, text
    return float(m.group(1)) / (1000 if m.group(2) == "us" else 1)


def _pods(trial, sel: dict) -> set[tuple[str, str]]:
    """(region, pod) a selector picks among: each region's namespace pod "k", the late pod "probe" of r1, and
    the Galera members ("*" stands for any pod of a namespace selector)."""
    region_of = {trial.namespace(r): r for r in trial.region_names}
    member_of = {(trial.db_namespace, m): r for r, m in members(trial).items()}
    out = {(region_of[ns], "*") for ns in sel.get("namespaces", [])}
    for ns, pods in (sel.get("pods") or {}).items():
        out |= {(region_of.get(ns) or member_of[(ns, p)], p) for p in pods}
    return out


@pytest.mark.parametrize("backend", ["mariadb", "galera"])
def test_a_late_pod_gets_exactly_its_regions_links_both_ways(backend):
    trial = _trial(backend)
    objs = chaos.late(trial, {"r1": ["probe"]})
    assert objs
    shaped: dict[tuple[str, str], set[float]] = {}
    for o in objs:
        spec = o["spec"]
        assert spec["action"] == "netem" and spec["direction"] == "to" and "target" in spec  # a band of its own
        assert o["metadata"]["annotations"][chaos.A_FOR_POD] == f"{trial.namespace('r1')}/probe"
        src, dst = _pods(trial, spec["selector"]), _pods(trial, spec["target"]["selector"])
        assert ("r1", "probe") in src | dst  # every object is for the late pod, on one side
        for a in src:
            for b in dst:
                assert a[0] != b[0], "traffic inside a region is never shaped"
                # the late pod's own objects toward whole regions; the others' toward the late pod alone
                key = (a[0], b[0]) if a == ("r1", "probe") or b == ("r1", "probe") else None
                assert key, (a, b)
                shaped.setdefault(key, set()).add(_ms(spec["delay"]["latency"]))
    want = {(a, b): {trial.links[(a, b)].delay_ms} for a in trial.region_names for b in trial.region_names
            if a != b and "r1" in (a, b) and trial.links[(a, b)].delay_ms}
    assert shaped == want
    assert shaped[("r1", "r3")] == {80.0} and shaped[("r3", "r1")] == {30.0}  # one-way override: its own direction
    if backend == "galera":  # with members, the late pod reaches them too, and they it
        member_targets = [o for o in objs if trial.db_namespace in (o["spec"]["target"]["selector"].get("pods") or {})]
        member_sources = [o for o in objs if trial.db_namespace in (o["spec"]["selector"].get("pods") or {})]
        assert member_targets and member_sources


def test_late_objects_agree_with_the_wan_where_both_cover_a_pair():
    """A pod the WAN selected later (a loss window's objects are made anew) and its own objects both cover
    its pairs: Chaos Mesh then classifies its packets into one of the two bands, so the two must shape alike."""
    trial = _trial()
    by_pair: dict[tuple[str, str], set[str]] = {}
    for o in chaos.wan(trial) + chaos.late(trial, {"r1": ["probe"], "r2": ["runner"]}):
        for a in _pods(trial, o["spec"]["selector"]):
            for b in _pods(trial, o["spec"]["target"]["selector"]):
                by_pair.setdefault((a[0], b[0]), set()).add(o["spec"]["delay"]["latency"])
    assert all(len(v) == 1 for v in by_pair.values()), by_pair


def test_late_object_names_are_unique_stable_and_per_pod():
    trial = _trial()
    a = chaos.late(trial, {"r1": ["probe", "runner"], "r3": ["probe"]})
    names_ = [o["metadata"]["name"] for o in a]
    assert len(names_) == len(set(names_))
    assert not set(names_) & {o["metadata"]["name"] for o in chaos.wan(trial)}
    assert [o["metadata"]["name"] for o in chaos.late(trial, {"r3": ["probe"], "r1": ["runner", "probe"]})] == names_
    only = {o["metadata"]["name"] for o in chaos.late(trial, {"r1": ["probe"]})}
    assert only < set(names_)  # another pod's coming or going leaves a pod's objects alone
    assert chaos.late(trial, {}) == [] and chaos.late(trial, {"r1": []}) == []


def _live(o: dict, records: list[tuple[str, str]], deleting: bool = False) -> dict:
    live = {**o, "status": {"experiment": {"containerRecords": [
        {"id": f"{pid}/main", "selectorKey": key, "phase": "Injected"} for key, pid in records]}}}
    if deleting:
        live["metadata"] = {**o["metadata"], "deletionTimestamp": "2026-11-29T00:00:00Z"}
    return live


def _pod(ns: str, name: str, host_network: bool = False) -> dict:
    return {"metadata": {"namespace": ns, "name": name}, "spec": {"hostNetwork": host_network},
            "status": {"phase": "Running"}}


def test_late_pods_are_those_a_wan_object_selects_by_namespace_but_did_not_select():
    trial = _trial("mariadb")
    n1, n2, n3 = (trial.namespace(r) for r in trial.region_names)
    wan = {o["metadata"]["namespace"]: o for o in chaos.wan(trial)}
    # r1's object selected r1's keystone and targeted r2's; r2's selected r2's keystone, targeted r1's
    r1 = next(o for o in chaos.wan(trial) if o["metadata"]["namespace"] == n1
              and o["spec"]["target"]["selector"]["namespaces"] == [n2])
    r2 = next(o for o in chaos.wan(trial) if o["metadata"]["namespace"] == n2
              and n1 in o["spec"]["target"]["selector"]["namespaces"])
    live = [_live(r1, [(".", f"{n1}/ks"), (".Target", f"{n2}/ks")]),
            _live(r2, [(".", f"{n2}/ks"), (".Target", f"{n1}/ks")])]
    running = [_pod(n1, "ks"), _pod(n2, "ks"), _pod(n1, "probe"), _pod(n2, "runner"), _pod(n3, "ks"),
               _pod(n1, "hostnet", host_network=True), _pod("elsewhere", "x")]
    assert wan  # (r3's objects are not live yet: its pods are Chaos Mesh's to select when they are made)
    assert chaos.late_pods(trial, running, live) == {"r1": ["probe"], "r2": ["runner"]}
    # an object being deleted, one whose pods are not selected yet, and the late pods' own objects say nothing
    assert chaos.late_pods(trial, running, [_live(r1, [(".", f"{n1}/ks")], deleting=True)]) == {}
    assert chaos.late_pods(trial, running, [{**r1, "status": {}}]) == {}
    own = chaos.late(trial, {"r1": ["probe"]})
    assert chaos.late_pods(trial, running, [_live(o, []) | {"status": {"experiment": {"containerRecords": [
        {"id": f"{n2}/ks/main", "selectorKey": "."}]}}} for o in own]) == {}


# ---- the operator's steps ---------------------------------------------------------------------------------

def _selected(trial, objs: list[dict]) -> list[dict]:
    """``objs`` as Chaos Mesh reports them once injected: each region pod "ks" selected (and targeted)."""
    out = []
    for o in objs:
        sel, tgt = o["spec"]["selector"], o["spec"]["target"]["selector"]
        recs = [{"id": f"{ns}/ks/keystone", "selectorKey": "."} for ns in sel.get("namespaces", [])]
        recs += [{"id": f"{ns}/ks/keystone", "selectorKey": ".Target"} for ns in tgt.get("namespaces", [])]
        recs += [{"id": f"{ns}/{p}/main", "selectorKey": key} for key, s in ((".", sel), (".Target", tgt))
                 for ns, ps in (s.get("pods") or {}).items() for p in ps]
        out.append({**o, "status": {"conditions": [{"type": "AllInjected", "status": "True"}],
                                    "experiment": {"containerRecords": recs}}})
    return out


def test_the_operator_shapes_the_network_probes_while_they_run_and_removes_that_after():
    """VerifyingNetwork: the probe Jobs' pods start after the WAN: once running they get objects of their own
    (said in an event) before they measure (their config makes them wait PROBE_SETTLE_S); a probe gone takes
    its objects with it; the WAN's own objects are never touched."""
    import datetime as dt

    from wanwide.core.contracts import S3Target
    from wanwide.providers.kubernetes.controller import phases
    from wanwide.providers.kubernetes.controller.actions import Apply, Delete, Emit
    from wanwide.providers.kubernetes.render.rally import PROBE_SETTLE_S

    trial = _trial("mariadb")
    s3 = S3Target(endpoint="http://s3:9000", bucket="b", prefix="e2e")
    now = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.UTC)
    st = {"phase": "VerifyingNetwork", "phaseStartTime": "2026-11-29T10:00:00Z", "attempt": 1, "done": []}
    wan = _selected(trial, chaos.wan(trial))
    ks = [_pod(trial.namespace(r), "ks") for r in trial.region_names]
    d = phases.decide(trial, st, {"results": s3, "chaos": wan, "running": ks}, now)
    cfg = [a.obj for a in d.actions if isinstance(a, Apply) and a.obj["kind"] == "ConfigMap"]
    assert cfg and all(f'"settle_s": {PROBE_SETTLE_S}' in c["data"]["probe.json"] for c in cfg)
    assert not [a for a in d.actions if (isinstance(a, Apply) and a.obj["kind"] == "NetworkChaos")
                or (isinstance(a, Delete) and a.kind == "NetworkChaos")]

    st["done"], st["networkCheck"] = ["probe-1"], 1
    probe = _pod(trial.namespace("r2"), "network-probe-1-x7k2p")
    d = phases.decide(trial, st, {"results": s3, "chaos": wan, "running": [*ks, probe]}, now)
    applied = [a.obj for a in d.actions if isinstance(a, Apply)]
    assert applied and {o["kind"] for o in applied} == {"NetworkChaos"}
    assert {o["metadata"]["name"] for o in applied} == {o["metadata"]["name"] for o in
                                                         chaos.late(trial, {"r2": [probe["metadata"]["name"]]})}
    said = [a for a in d.actions if isinstance(a, Emit)]
    assert [a.reason for a in said] == ["ShapingLatePods"] and "network-probe-1-x7k2p" in said[0].message
    assert not [a for a in d.actions if isinstance(a, Delete)] and d.wake_s <= 3

    live = wan + _selected(trial, applied)
    d = phases.decide(trial, st, {"results": s3, "chaos": live, "running": [*ks, probe]}, now)
    assert not [a for a in d.actions if isinstance(a, (Apply, Delete))]  # in force: nothing to do
    d = phases.decide(trial, st, {"results": s3, "chaos": live, "running": ks}, now)  # the probe finished
    assert {a.name for a in d.actions if isinstance(a, Delete)} == {o["metadata"]["name"] for o in applied}
    assert not [a for a in d.actions if isinstance(a, Apply)]


def test_the_runners_get_theirs_with_the_fault_schedule_in_force():
    """Loading with a loss window: the chaos in force (the fault schedule's) and the runner pods' own objects are
    made together, the latter with the links in force; neither removes the other."""
    import datetime as dt

    from wanwide.core import timestamps as ts
    from wanwide.providers.kubernetes.controller import phases
    from wanwide.providers.kubernetes.controller.actions import Apply, Delete

    trial = _trial("mariadb", faults={"lossWindows": [{"regions": ["r2"], "start": "10s", "duration": "20s",
                                                       "loss": "5%"}]})
    start = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.UTC)
    st = {"phase": "Loading", "phaseStartTime": ts.iso(start), "attempt": 1, "done": ["load-1"],
          "loadStartAt": ts.iso(start)}
    ks = [_pod(trial.namespace(r), "ks") for r in trial.region_names]
    runner = _pod(trial.namespace("r3"), "rally-abc12")
    live = _selected(trial, chaos.wan(trial))
    obs = {"jobs": dict.fromkeys(trial.load_regions, "running"), "chaos": live, "running": [*ks, runner]}
    d = phases.decide(trial, st, obs, start + dt.timedelta(seconds=1))
    mine = {o["metadata"]["name"] for o in chaos.late(trial, {"r3": ["rally-abc12"]})}
    assert {a.obj["metadata"]["name"] for a in d.actions if isinstance(a, Apply)} == mine
    assert not [a for a in d.actions if isinstance(a, Delete)]
    live += _selected(trial, [a.obj for a in d.actions if isinstance(a, Apply)])
    d = phases.decide(trial, st, {**obs, "chaos": live}, start + dt.timedelta(seconds=15))  # loss0 in force
    lossy = [a.obj for a in d.actions if isinstance(a, Apply) and a.obj["spec"].get("loss")]
    assert lossy and any(chaos.A_FOR_POD in (o["metadata"].get("annotations") or {}) for o in lossy)
    gone = {a.name for a in d.actions if isinstance(a, Delete)}
    assert gone and gone <= {o["metadata"]["name"] for o in live}  # replaced by the lossy ones, WAN and runner's
