"""A region's Services are shaped like its pods (render/chaos.py ``externalTargets``, observe.py ``service_addresses``).

Chaos Mesh filters a netem or partition object by the addresses of its target's pods and its ``externalTargets``
only; kube-proxy turns a Service's cluster IP into a pod's address outside the sending pod, where the filter is.
On the real node a partition let every request to the Service's cluster IP through and cut every one to the pod
(tests/cluster/test_chaos_real.py, ``test_a_partition_cuts_a_service_path``); on the VM node a 100 ms WAN measured
50–55 ms over Services (docs/chaos-mesh.md, "Stop 55"). These tests classify a packet the way Chaos Mesh's filters
do (by destination address, in the sending pod) and check that every address of another region gets that pair's
shaping, whether a pod's or a Service's, and no address of the sender's own region any.
"""

from __future__ import annotations

import datetime as dt

import pytest

from tests.test_chaos_late import _ms, _trial
from wanwide.providers.kubernetes.controller import observe, phases
from wanwide.providers.kubernetes.controller.actions import Apply
from wanwide.providers.kubernetes.render import chaos
from wanwide.providers.kubernetes.render.database import members


class World:
    """Each region: one pod "k" in its namespace (10.1.i.1) behind a Service (10.96.i.1), and with members its
    database member (10.2.i.1) behind the member's Service in the database namespace (10.96.i.2); a late pod
    "probe" in r1 (10.3.0.1)."""

    def __init__(self, trial) -> None:
        self.trial = trial
        self.idx = {r: i for i, r in enumerate(trial.region_names)}
        self.members = members(trial)

    def pod_ip(self, region: str, pod: str) -> str:
        if pod == "probe":
            return "10.3.0.1"
        return f"10.2.{self.idx[region]}.1" if pod == self.members.get(region) else f"10.1.{self.idx[region]}.1"

    def services(self) -> list[dict]:
        t = self.trial
        out = [{"metadata": {"namespace": t.namespace(r), "name": "keystone-api"},
                "spec": {"type": "ClusterIP", "clusterIP": f"10.96.{i}.1", "clusterIPs": [f"10.96.{i}.1"]}}
               for r, i in self.idx.items()]
        out += [{"metadata": {"namespace": t.db_namespace, "name": f"galera-{r}", "labels": t.labels(r, "database")},
                 "spec": {"clusterIP": f"10.96.{self.idx[r]}.2"}} for r in self.members]
        return out

    def region_addresses(self) -> dict[str, set[tuple[str, str]]]:
        """Region → (kind, address) of what another region's pod may send to."""
        out: dict[str, set[tuple[str, str]]] = {r: {("pod", self.pod_ip(r, "k")), ("svc", f"10.96.{i}.1")}
                                                for r, i in self.idx.items()}
        for r in self.members:
            out[r] |= {("pod", self.pod_ip(r, self.members[r])), ("svc", f"10.96.{self.idx[r]}.2")}
        return out

    def picks(self, sel: dict) -> set[tuple[str, str]]:
        """(region, pod) a selector picks: "k" and "probe" of a namespace, or the named pods."""
        region_of = {self.trial.namespace(r): r for r in self.trial.region_names}
        out = {(region_of[ns], p) for ns in sel.get("namespaces", []) for p in ("k", *(("probe",) if region_of[ns] == "r1" else ()))}
        member_of = {(self.trial.db_namespace, m): r for r, m in self.members.items()}
        for ns, pods in (sel.get("pods") or {}).items():
            out |= {(region_of.get(ns) or member_of[(ns, p)], p) for p in pods}
        return out

    def delays(self, objs: list[dict], sender: tuple[str, str], address: str) -> list[float]:
        """The delays the netem objects give a packet from ``sender`` to ``address``: one per object whose selector
        picks the sender and whose target's pods or external targets hold the address (Chaos Mesh's ipset)."""
        got = []
        for o in objs:
            spec = o["spec"]
            if spec["action"] != "netem" or sender not in self.picks(spec["selector"]):
                continue
            held = {self.pod_ip(*p) for p in self.picks(spec["target"]["selector"])} | set(spec.get("externalTargets", ()))
            if address in held:
                got.append(_ms(spec["delay"]["latency"]))
        return got


def _senders(w: World) -> list[tuple[str, str]]:
    return [(r, "k") for r in w.trial.region_names] + [(r, m) for r, m in w.members.items()] + [("r1", "probe")]


@pytest.mark.parametrize("backend", ["mariadb", "galera"])
def test_every_address_of_another_region_gets_the_pairs_delay_once(backend):
    trial = _trial(backend)
    w = World(trial)
    svc = observe.service_addresses(trial, w.services())
    objs = chaos.wan(trial, services=svc) + chaos.late(trial, {"r1": ["probe"]}, services=svc)
    for sender in _senders(w):
        for region, addrs in w.region_addresses().items():
            for kind, address in addrs:
                got = w.delays(objs, sender, address)
                want = trial.links[(sender[0], region)].delay_ms if region != sender[0] else 0.0
                if not want:
                    assert got == [], (sender, kind, address)  # the own region, never shaped
                elif sender[1] == "probe":  # its own objects, and (in this model) the WAN's: alike
                    assert got and set(got) == {want}, (sender, kind, address, got)
                else:  # one object: the pair's delay, not twice
                    assert got == [want], (sender, kind, address, got)


def test_without_the_services_observed_a_service_path_is_unshaped():
    """The control: the WAN as rendered before this change (no Services) leaves every cluster IP unshaped, which
    is the real node's and the VM node's finding, so the test above can fail."""
    trial = _trial("galera")
    w = World(trial)
    objs = chaos.wan(trial)
    unshaped = [(s, a) for s in _senders(w)[:3] for r, addrs in w.region_addresses().items() if r != s[0]
                for kind, a in addrs if kind == "svc" and not w.delays(objs, s, a)]
    assert len(unshaped) == 3 * 2 * 2  # each of 3 senders, 2 other regions, 2 Services each
    assert all(w.delays(objs, ("r1", "k"), w.pod_ip(r, "k")) for r in ("r2", "r3"))  # pods were shaped


def test_the_service_addresses_of_a_region_are_its_namespaces_and_its_members():
    trial = _trial("galera")
    w = World(trial)
    extra = [
        {"metadata": {"namespace": trial.namespace("r2"), "name": "headless"}, "spec": {"clusterIP": "None"}},
        {"metadata": {"namespace": trial.namespace("r2"), "name": "ext"}, "spec": {"type": "ExternalName"}},
        {"metadata": {"namespace": trial.db_namespace, "name": "galera-primary"}, "spec": {"clusterIP": "10.96.9.9"}},
        {"metadata": {"namespace": "elsewhere", "name": "x", "labels": trial.labels("r1")}, "spec": {"clusterIP": "10.9.9.9"}},
        {"metadata": {"namespace": trial.namespace("r3"), "name": "dual"},
         "spec": {"clusterIP": "10.96.2.7", "clusterIPs": ["10.96.2.7", "fd00::7"]}},
    ]
    got = observe.service_addresses(trial, w.services() + extra)
    assert got == {"r1": ["10.96.0.1", "10.96.0.2"], "r2": ["10.96.1.1", "10.96.1.2"],
                   "r3": ["10.96.2.1", "10.96.2.2", "10.96.2.7", "fd00::7"]}


def test_objects_list_only_other_regions_services_and_only_toward_namespaces():
    trial = _trial("galera")
    w = World(trial)
    svc = observe.service_addresses(trial, w.services())
    objs = chaos.wan(trial, services=svc)
    listing = [o for o in objs if o["spec"].get("externalTargets")]
    assert listing
    for o in objs:
        ext = set(o["spec"].get("externalTargets", ()))
        target = o["spec"]["target"]["selector"]
        src = {r for r, _ in w.picks(o["spec"]["selector"])}
        assert not ext & {ip for r in src for ip in svc[r]}, "a region's own Services are never shaped"
        if "pods" in target:  # toward members: their Services are on the namespace objects, not twice
            assert not ext
        else:
            dst = {r for r, _ in w.picks(target)}
            assert ext == {ip for r in dst for ip in svc[r]}


def test_a_cut_drops_the_other_regions_services_too():
    trial = _trial("galera", faults={"partitions": [{"regions": ["r2"], "start": "10s", "duration": "20s"}]})
    w = World(trial)
    svc = observe.service_addresses(trial, w.services())
    pods = {r: sorted({w.pod_ip(r, "k"), *([w.pod_ip(r, w.members[r])] if r in w.members else [])})
            for r in trial.region_names}
    objs = [o for o in chaos.at(trial, 15.0, pods, svc) if o["spec"]["action"] == "partition"]
    assert objs
    for o in objs:
        peers = set(o["spec"]["externalTargets"])
        assert peers == {*pods["r1"], *pods["r3"], *svc["r1"], *svc["r3"]}
        assert not peers & {*pods["r2"], *svc["r2"]}


def test_injecting_applies_the_wan_with_the_services_observed():
    """The operator's step: what Injecting applies lists the Services it observed."""
    trial = _trial("mariadb")
    w = World(trial)
    svc = observe.service_addresses(trial, w.services())
    now = dt.datetime(2026, 11, 30, 10, 0, tzinfo=dt.UTC)
    st = {"phase": "Injecting", "phaseStartTime": "2026-11-30T10:00:00Z", "attempt": 1, "done": []}
    obs = {"chaos_installed": True, "chaos": [], "running_pods": dict.fromkeys(trial.region_names, True),
           "service_addresses": svc}
    d = phases.decide(trial, st, obs, now)
    applied = [a.obj for a in d.actions if isinstance(a, Apply) and a.obj["kind"] == "NetworkChaos"]
    assert applied and all(o["spec"].get("externalTargets") for o in applied)
    assert {ip for o in applied for ip in o["spec"]["externalTargets"]} == {ip for v in svc.values() for ip in v}


def test_the_operator_puts_the_services_it_finds_into_the_wan_and_the_cuts(monkeypatch):
    """The whole loop on the fake API server (which allocates cluster IPs as the real one does): while loading,
    every WAN object toward a region's namespaces lists that region's Services, and a cut the other regions'."""
    from tests.fakekube import FakeKube, FakeS3, drive
    from tests.fakelab import Clock
    from tests.test_providers_agree import DOCUMENTS, _plans

    name, docs = next((n, d) for n, d in DOCUMENTS if len(_plans(d)[0].region_names) >= 3)
    p = _plans(docs)[0]
    clock = Clock()
    kube = FakeKube(clock, p, FakeS3())
    for d in docs:
        if d["kind"] != "Benchmark":
            kube.apply(d)
    seen: dict[str, list[dict]] = {}
    region_of = {p.namespace(r): r for r in p.region_names}
    svc: dict[str, set[str]] = {}

    def sample(status: dict) -> None:
        if status.get("phase") == "Loading":
            for (kind, ns, n), o in kube.objects.items():
                if kind == "NetworkChaos":
                    seen.setdefault(n, []).append(o)
                elif kind == "Service" and ns in region_of and o["spec"].get("clusterIP") not in (None, "None"):
                    svc.setdefault(region_of[ns], set()).add(o["spec"]["clusterIP"])

    final, _ = drive(next(d for d in docs if d["kind"] == "Benchmark"), p, kube, clock, monkeypatch, sample)
    assert (final["phase"], final["reason"]) == ("Succeeded", "Completed"), name
    assert len(svc) == len(p.region_names), "every region has a Service"
    wan = [o for objs in seen.values() for o in objs if o["spec"]["action"] == "netem"]
    cuts = [o for objs in seen.values() for o in objs if o["spec"]["action"] == "partition"]
    assert wan and cuts
    for o in wan:
        target = o["spec"]["target"]["selector"]
        if "pods" not in target and "namespaces" in target:
            dst = {region_of[ns] for ns in target["namespaces"]}
            assert set(o["spec"]["externalTargets"]) == {ip for r in dst for ip in svc[r]}, o["metadata"]["name"]
    for o in cuts:
        cut = region_of[o["metadata"]["namespace"]]
        peers = set(o["spec"]["externalTargets"])
        assert {ip for r in p.region_names if r != cut for ip in svc[r]} <= peers
        assert not peers & svc[cut]
