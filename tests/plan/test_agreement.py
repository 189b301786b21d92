"""Both providers run the same experiment: every shared setting agrees between render/ and lab/.

Each case is planned once; the Kubernetes translation (objects, chart values,
Chaos Mesh) and the lab translation (my.cnf, keystone.conf, link changes) are
then read back into plain settings and compared. Pure: no cluster, no processes.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakelab import Clock, FakeLab
from tests.plan.specs import TOPOLOGIES, benchmark
from wanwide.core import lifecycle as lc
from wanwide.core.api.units import mbit, ms, pct
from wanwide.core.lifecycle import ShapeWan, fault_events, in_force, wan_at
from wanwide.core.plan.links import OneWay, Pair
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.runner import Addresses, config_json, runner_config
from wanwide.core.plan.trial import TrialPlan, plan
from wanwide.providers.kubernetes.render import chaos, database, keystone, rally, render_trial
from wanwide.providers.lab import services as lab
from wanwide.providers.lab.trial import LabTrial

EXAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "examples"
LOSS_WINDOW = {"start": "40s", "duration": "15s", "loss": "7%"}


def _with_all_faults(backend: str, topology: str) -> dict[str, Any]:
    b = benchmark(backend, topology)
    first = TOPOLOGIES[topology]["regions"][0]["name"] if "regions" in TOPOLOGIES[topology] else "r1"
    # two loss windows on the same region, the lossier inside the other (it ends first: 7 % again, not the plan's)
    b["spec"]["faults"]["lossWindows"] = [{**LOSS_WINDOW, "regions": [first]},
                                          {"start": "44s", "duration": "6s", "loss": "30%", "regions": [first]}]
    b["spec"]["faults"]["dropouts"].append({"every": "90s", "for": "5s", "regions": [first]})
    return b


def _plans() -> list[tuple[str, TrialPlan]]:
    out = []
    for f in sorted(EXAMPLES.glob("*.yaml")):
        docs = load_documents([f.read_text()])
        for b in docs.benchmarks:
            out += [(f"{f.stem}/{p.id}", p) for p in plan(b, docs.topology_for(b))[:4]]
    for backend in ("mariadb", "galera"):
        for topology in TOPOLOGIES:
            docs = load_documents([yaml.safe_dump(_with_all_faults(backend, topology))])
            (b,) = docs.benchmarks
            out += [(f"{backend}-{topology}", p) for p in plan(b, docs.topology_for(b))]
    return out


PLANS = _plans()
IDS = [name for name, _ in PLANS]


@pytest.mark.parametrize("p", [p for _, p in PLANS], ids=IDS)
def test_database_server_and_galera_options_agree(p: TrialPlan) -> None:
    objs = database.render(p)
    mariadb = next((o for o in objs if o["kind"] == "MariaDB"), None)
    if mariadb is None:
        pytest.skip("cockroachdb: no lab translation")
    k8s_server = dict(line.split("=", 1) for line in mariadb["spec"]["myCnf"].splitlines()[1:])
    lab_server = lab.mariadb_cnf(Path("/d"), Path("/d/data"), "10.0.0.1", 3306, p.database.server)
    assert {k: str(lab_server[k]) for k in k8s_server} == k8s_server
    assert k8s_server == p.database.server
    if p.backend != "galera":
        return
    lab_galera = lab._parse_options(lab.galera_cnf("10.0.0.1", "gcomm://x", "c", "r1", p.database.galera)
                                    ["wsrep_provider_options"].strip('"'))
    for where in ("gmcast.listen_addr", "ist.recv_addr"):  # the member's own address: the lab's
        lab_galera.pop(where)
    assert mariadb["spec"]["galera"]["providerOptions"] == lab_galera
    assert lab_galera["gcs.fc_limit"] == "64"
    assert "evs.suspect_timeout" in lab_galera


@pytest.mark.parametrize("p", [p for _, p in PLANS], ids=IDS)
def test_keystone_settings_agree(p: TrialPlan) -> None:
    if p.spec.openstack.keystone.values:
        pytest.skip("chart values set by the user apply to the Kubernetes provider only")
    for r in p.region_names:
        k8s = keystone.values(p, r)["conf"]["keystone"]
        servers = ["10.0.0.1:11211"] if p.keystone.cache else []
        here = lab.keystone_conf(p.keystone.conf(servers), public_endpoint="http://x", connection="mysql://",
                                 keys=Path("/k"))
        assert set(k8s) <= set(here)
        for section, options in k8s.items():
            for key, value in options.items():
                if key == "memcache_servers":
                    assert bool(value) == bool(here[section][key])
                    continue
                assert here[section][key] == value, f"[{section}] {key}"
        assert k8s["cache"]["enabled"] is p.spec.openstack.keystone.cache
        if p.keystone.cache:
            assert k8s["cache"]["backend"] == here["cache"]["backend"] == "dogpile.cache.pymemcache"
        assert k8s["DEFAULT"]["max_token_size"] == here["DEFAULT"]["max_token_size"] == 255


def _k8s_links(p: TrialPlan, objs: list[dict[str, Any]]) -> tuple[dict[Pair, OneWay], set[Pair]]:
    """Read what Chaos Mesh objects shape back out of their selectors: netem links, and the pairs cut."""
    region_of = {p.namespace(r): r for r in p.region_names}

    def regions(sel: dict[str, Any]) -> list[str]:
        if "namespaces" in sel:
            return [region_of[n] for n in sel["namespaces"]]
        members = {pod: r for r, pod in database.members(p).items()}
        return [members[pod] for pods in sel["pods"].values() for pod in pods]

    links: dict[Pair, OneWay] = {}
    cut: set[Pair] = set()
    for o in objs:
        spec = o["spec"]
        srcs, dsts = regions(spec["selector"]), regions(spec["target"]["selector"])
        pairs = [(a, b) for a in srcs for b in dsts]
        if spec["action"] == "partition":
            assert spec["direction"] == "both"
            cut |= set(pairs) | {(b, a) for a, b in pairs}
            continue
        assert spec["action"] == "netem" and spec["direction"] == "to"
        shaped = OneWay(ms(spec.get("delay", {}).get("latency", "0ms")), ms(spec.get("delay", {}).get("jitter", "0ms")),
                        pct(spec.get("loss", {}).get("loss", "0%")), mbit(spec.get("rate", {}).get("rate")))
        for pair in pairs:
            links.setdefault(pair, shaped)
            assert links[pair] == shaped, pair
    return links, cut


@pytest.mark.parametrize("p", [p for _, p in PLANS if p.faults], ids=[n for n, p in PLANS if p.faults])
def test_both_providers_shape_the_wan_the_fault_schedule_puts_in_force_at_every_instant(p: TrialPlan) -> None:
    """After every begin and end of every fault window (core/lifecycle/schedule.py), the lab's links (its side of
    the lifecycle carrying out ``ShapeWan`` on a fake of its lowest layer) and the Chaos Mesh objects the
    operator wants then (read back out of their selectors) are the WAN in force, overlaps included."""
    clock = Clock()
    lab = FakeLab(clock)
    lt = LabTrial(lab, p, lambda *a, **k: None, clock=clock.now, sleep=clock.sleep)
    lt.dep = lab.deploy(p, None, lc.stages(p)[0], False, False, None)
    events = fault_events(p.faults, 3600.0)
    for w in p.faults:  # every window begins and ends, dropouts once each period
        begins = [e for e in events if e.window == w and e.begins]
        assert begins and len(begins) == len([e for e in events if e.window == w and not e.begins])
        assert begins[0].at_s == (w.start_s + w.every_s if w.every_s else w.start_s)
    for e in events:
        lt.act(ShapeWan(e.at_s))
        wan = wan_at(p, in_force(p.faults, e.at_s))
        assert lab.links(lt.dep) == {pair: wan.effective(pair) for pair in p.links}, (e.name, e.at_s)
        netem, cut = _k8s_links(p, chaos.at(p, e.at_s))
        assert cut == set(wan.cut), (e.name, e.at_s)
        assert netem == {pair: s for pair, s in wan.links.items() if not s.is_noop}, (e.name, e.at_s)
    lt.act(ShapeWan(None))
    assert lab.links(lt.dep) == p.links


@pytest.mark.parametrize("p", [p for _, p in PLANS], ids=IDS)
def test_runner_config_agrees_but_for_addresses(p: TrialPlan) -> None:
    region = p.load_regions[0]
    k8s = rally.config_document(p, region, start_at="2026-11-23T10:00:00Z", attempt=1, results=None)
    where = Addresses(keystone_url="http://lab/v3", database=("10.0.0.1", 3306),
                      memcache_servers=["10.0.0.1:11211"] if p.keystone.cache else [],
                      targets={(r, k): (f"10.0.{i}.1", 1) for i, r in enumerate(p.region_names)
                               for k in ("keystone", "database")})
    here = config_json(runner_config(p, region, where, start_at="2026-11-23T10:00:00Z", local_dir="/x",
                                     namespace="lab"))
    for key in ("trial", "task", "max_start_skew_s", "network_requested", "attempt", "region"):
        assert here[key] == k8s[key], key
    assert [(t["region"], t["kind"]) for t in here["gauges"]["rtt_targets"]] == \
        [(t["region"], t["kind"]) for t in k8s["gauges"]["rtt_targets"]]
    strip = {"memcache_servers"}
    assert {k: v for k, v in here["keystone"]["cache"].items() if k not in strip} == \
        {k: v for k, v in k8s["keystone"]["cache"].items() if k not in strip}
    assert (here["gauges"]["database"] is None) == (k8s["gauges"]["database"] is None)


def test_render_trial_places_every_region_by_the_plans_node_selector() -> None:
    b = copy.deepcopy(benchmark("galera", "explicit"))
    b["spec"]["topology"]["placement"] = {"mode": "regionLabel", "label": "topology.kubernetes.io/region"}
    docs = load_documents([yaml.safe_dump(b)])
    (bench,) = docs.benchmarks
    p = plan(bench, docs.topology_for(bench))[0]
    r = render_trial(p)
    for region in p.region_names:
        sel = p.node_selector(region)
        assert sel == {"topology.kubernetes.io/region": region}
        jobs = [o for o in r.load if o["kind"] == "Job" and o["metadata"]["namespace"] == p.namespace(region)]
        assert all(j["spec"]["template"]["spec"]["nodeSelector"] == sel for j in jobs)
        vals = keystone.values(p, region)
        assert vals["labels"]["api"] == {"node_selector_key": "topology.kubernetes.io/region",
                                         "node_selector_value": region}
