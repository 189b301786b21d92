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

from tests.plan.specs import TOPOLOGIES, benchmark
from wanwide.api.units import mbit, ms, pct
from wanwide.lab import faults as lab_faults
from wanwide.lab import services as lab
from wanwide.plan.links import OneWay, Pair
from wanwide.plan.load import load_documents
from wanwide.plan.runner import Addresses, config_json, runner_config
from wanwide.plan.trial import TrialPlan, plan
from wanwide.render import chaos, database, keystone, rally, render_trial

EXAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "examples"
LOSS_WINDOW = {"start": "40s", "duration": "15s", "loss": "7%"}


def _with_all_faults(backend: str, topology: str) -> dict[str, Any]:
    b = benchmark(backend, topology)
    first = TOPOLOGIES[topology]["regions"][0]["name"] if "regions" in TOPOLOGIES[topology] else "r1"
    b["spec"]["faults"]["lossWindows"] = [{**LOSS_WINDOW, "regions": [first]}]
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


def _k8s_window(p: TrialPlan, f: chaos.FaultObjects) -> dict[Pair, OneWay]:
    """Read the directed links a fault's Chaos Mesh objects change back out of their selectors."""
    region_of = {p.namespace(r): r for r in p.region_names}

    def regions(sel: dict[str, Any]) -> list[str]:
        if "namespaces" in sel:
            return [region_of[n] for n in sel["namespaces"]]
        members = {pod: r for r, pod in database.members(p).items()}
        return [members[pod] for pods in sel["pods"].values() for pod in pods]

    out: dict[Pair, OneWay] = {}
    for o in f.objects:
        spec = o["spec"].get("networkChaos", o["spec"])
        srcs, dsts = regions(spec["selector"]), regions(spec["target"]["selector"])
        pairs = [(a, b) for a in srcs for b in dsts]
        if spec["action"] == "partition":
            assert spec["direction"] == "both"
            pairs += [(b, a) for a, b in pairs]
            for a, b in pairs:
                base = p.links[(a, b)]
                out[(a, b)] = OneWay(base.delay_ms, base.jitter_ms, 100.0, base.rate_mbit)
            continue
        assert spec["action"] == "netem" and spec["direction"] == "to"
        shaped = OneWay(ms(spec.get("delay", {}).get("latency", "0ms")), ms(spec.get("delay", {}).get("jitter", "0ms")),
                        pct(spec.get("loss", {}).get("loss", "0%")), mbit(spec.get("rate", {}).get("rate")))
        for pair in pairs:
            out.setdefault(pair, shaped)
            assert out[pair] == shaped, pair
    replaced = {o["metadata"]["name"] for o in f.replaces}
    wan = {o["metadata"]["name"] for o in chaos.wan(p)}
    assert replaced <= wan
    return out


@pytest.mark.parametrize("p", [p for _, p in PLANS if p.faults], ids=[n for n, p in PLANS if p.faults])
def test_fault_windows_and_directions_agree(p: TrialPlan) -> None:
    rendered = chaos.faults(p)
    assert [f.window for f in rendered] == p.faults
    events = lab_faults.events(p, until_s=3600)
    for f in rendered:
        w = f.window
        k8s = _k8s_window(p, f)
        begins = [e for e in events if e.window == w and e.begins]
        ends = [e for e in events if e.window == w and not e.begins]
        assert begins and len(begins) == len(ends)
        lab_links = {pair: lab_faults.shaping(p, [w], pair) for pair in w.links}
        if w.kind == "loss":
            # Chaos Mesh re-applies each changed source's whole outgoing shaping; unchanged links keep the plan's.
            for (a, b), v in k8s.items():
                assert v == lab_links.get((a, b), p.links[(a, b)]), (a, b)
            assert {pair for pair in lab_links if not lab_links[pair].is_noop} <= set(k8s)
            assert all(k8s[pair].loss_pct == min(100.0, p.links[pair].loss_pct + w.extra_loss_pct)
                       for pair in w.links)
            assert {a for a, _ in w.links} == {a for a, _ in k8s}
            assert all((o, r) in k8s and (r, o) in k8s for r in w.regions for o in p.region_names if o != r), \
                "extra loss on all links of the listed regions, both directions"
            assert f.ends_by_removal and ends[0].at_s == w.start_s + w.duration_s
            assert begins[0].at_s == w.start_s
        else:
            assert k8s == lab_links
            assert all(v.loss_pct == 100.0 for v in k8s.values())
        if w.kind == "partition":
            assert begins[0].at_s == w.start_s and ends[0].at_s == w.start_s + w.duration_s
            assert all(o["spec"]["duration"] == w.duration for o in f.objects)
        if w.kind == "dropout":
            assert all(o["spec"]["schedule"] == f"@every {w.every}" for o in f.objects)
            assert all(o["spec"]["networkChaos"]["duration"] == w.duration for o in f.objects)
            assert [e.at_s for e in begins[:2]] == [w.every_s, 2 * w.every_s]
            assert all(e.at_s - b.at_s == w.duration_s for b, e in zip(begins, ends, strict=True))


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
