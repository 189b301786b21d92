"""The control plane a trial runs (core/plan/controlplane.py): each region's processes, the links between
them, where the databases are, the deployment's stages and the pairs the network check measures, in both
shapes (issue 45 item 2)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.plan.hostile import at
from wanwide.core.lifecycle.deploy import stages
from wanwide.core.lifecycle.network import probe_pairs
from wanwide.core.plan import controlplane as ctl
from wanwide.core.plan.errors import PlanError
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import TrialPlan, plan

REGIONS = ["paris", "rennes", "chicago"]


def trial(changes: dict[str, Any], n: int | None = None) -> TrialPlan:
    doc = at(changes)
    if n is not None:
        doc["spec"]["topology"] = {"generate": {"count": n}, "network": {"default": {"rtt": "10ms"}}}
    docs = load_documents([yaml.safe_dump(doc)])
    b = docs.benchmarks[0]
    return plan(b, docs.topology_for(b))[0]


def refused(changes: dict[str, Any], n: int | None = None) -> list[str]:
    with pytest.raises(PlanError) as e:
        trial(changes, n)
    return [str(p) for p in e.value.problems]


NOVA = {"enabled": True, "computes": 2}


def roles(p: TrialPlan, region: str) -> dict[str, int]:
    assert p.control_plane is not None
    return {pr.role: pr.count for pr in p.control_plane.processes_in(region)}


def test_keystone_alone_by_default():
    p = trial({})
    cp = p.control_plane
    assert cp is not None and cp.services == ()
    assert all(roles(p, r) == {"keystone-api": 1} for r in REGIONS)
    assert [s.name for s in stages(p)] == ["namespaces", "database", "keystone-schema", "keystone"]
    assert ctl.describe(cp) == []


def test_regions_shape_every_region_its_own_plane():
    p = trial({"spec.openstack": {"nova": NOVA}})
    cp = p.control_plane
    assert cp is not None and cp.shape == "regions" and cp.control_region is None
    assert [pl.name for pl in cp.planes] == REGIONS
    for r in REGIONS:
        assert roles(p, r) == {"keystone-api": 1, "nova-api": 1, "nova-conductor": 1, "nova-scheduler": 1,
                               "placement-api": 1, "glance-api": 1, "rabbitmq": 1, "openstack-db": 1,
                               "nova-compute": 2}
        assert cp.plane_of(r).name == r
        assert cp.plane_of(r).databases["nova"] == ctl.DatabaseAt("local", r, ("nova_api", "nova_cell0", "nova"))
    # nothing of Nova crosses the WAN: only each Keystone to the central MariaDB in paris
    assert cp.wan_pairs() == [("rennes", "paris"), ("chicago", "paris")]
    assert {(lk.src, lk.dst) for lk in cp.links if lk.wan} == {("keystone-api", "database")}


def test_stretched_one_plane_computes_everywhere_across_the_wan():
    p = trial({"spec.openstack": {"shape": "stretched", "nova": NOVA}})
    cp = p.control_plane
    assert cp is not None and cp.control_region == "paris"  # the database's primary by default
    assert len(cp.planes) == 1 and cp.planes[0].regions == tuple(REGIONS)
    assert roles(p, "paris")["nova-conductor"] == 1 and roles(p, "paris")["rabbitmq"] == 1
    assert roles(p, "rennes") == roles(p, "chicago") == {"keystone-api": 1, "nova-compute": 2}
    assert {pr.plane for pr in cp.processes_in("chicago") if pr.role == "nova-compute"} == {"paris"}
    crossing = {(lk.src, lk.src_region, lk.dst, lk.dst_region, lk.protocol) for lk in cp.links if lk.wan}
    for far in ("rennes", "chicago"):
        assert ("nova-compute", far, "rabbitmq", "paris", "amqp") in crossing
        assert ("nova-compute", far, "placement-api", "paris", "http") in crossing
    # Rally in the first region (load light): its Nova is paris's, no WAN
    assert ("rally", "paris", "nova-api", "paris", "http") in {
        (lk.src, lk.src_region, lk.dst, lk.dst_region, lk.protocol) for lk in cp.links}


def test_stretched_services_and_databases_where_asked():
    p = trial({"spec.openstack": {"shape": "stretched", "controlRegion": "rennes", "nova": {**NOVA, "database": "shared",
                                                                                            "computeRegions": ["chicago"]},
                                  "messaging": {"region": "chicago"}},
               "spec.database.backend": "galera"})
    cp = p.control_plane
    assert cp is not None
    pl = cp.planes[0]
    assert dict(pl.where) == {"nova": "rennes", "placement": "rennes", "glance": "rennes", "messaging": "chicago"}
    # shared: the trial's Galera, its member in Nova's region; one plane: the plain schema names
    assert pl.databases["nova"] == ctl.DatabaseAt("shared", "rennes", ("nova_api", "nova_cell0", "nova"))
    assert pl.databases["placement"].place == "local"
    assert roles(p, "chicago") == {"keystone-api": 1, "rabbitmq": 1, "nova-compute": 2}
    assert "nova-compute" not in roles(p, "paris")
    links = {(lk.src, lk.src_region, lk.dst, lk.dst_region) for lk in cp.links}
    assert ("nova-conductor", "rennes", "rabbitmq", "chicago") in links
    assert ("nova-conductor", "rennes", "database", "rennes") in links
    assert ("placement-api", "rennes", "openstack-db", "rennes") in links


def test_regions_sharing_the_database_name_their_schemas():
    p = trial({"spec.openstack": {"nova": {**NOVA, "database": "shared"}}})
    cp = p.control_plane
    assert cp is not None
    assert cp.plane_of("chicago").databases["nova"] == ctl.DatabaseAt(
        "shared", "paris", ("nova_api_chicago", "nova_cell0_chicago", "nova_chicago"))
    assert ("nova-conductor", "chicago", "database", "paris") in {
        (lk.src, lk.src_region, lk.dst, lk.dst_region) for lk in cp.links}


def test_cockroachdb_shared_with_the_services_is_refused_local_is_not():
    lines = refused({"spec.database.backend": "cockroachdb", "spec.openstack": {"nova": {**NOVA, "database": "shared"}}})
    assert len(lines) == 1 and "spec.openstack.nova.database: " in lines[0], lines
    assert "not rendered on CockroachDB" in lines[0] and "database: local" in lines[0]
    p = trial({"spec.database.backend": "cockroachdb", "spec.openstack": {"nova": NOVA}})
    assert p.control_plane is not None and p.control_plane.plane_of("paris").databases["nova"].place == "local"


def test_stages_bring_the_services_up_in_order():
    p = trial({"spec.openstack": {"shape": "stretched", "nova": NOVA, "neutron": {"enabled": True}}})
    got = {s.name: s for s in stages(p)}
    assert list(got) == ["namespaces", "database", "keystone-schema", "keystone", "openstack-db", "messaging",
                         "placement", "glance", "neutron", "nova", "nova-compute"]
    assert got["nova"].regions == ("paris",) and got["nova"].schema
    assert set(got["nova"].after) == {"keystone", "openstack-db", "messaging", "placement", "glance", "neutron"}
    assert got["nova-compute"].regions == tuple(REGIONS) and got["nova-compute"].after == ("nova",)
    assert got["neutron"].after == ("keystone", "openstack-db", "messaging")
    for s in got.values():  # every stage waits only on stages before it
        assert all(list(got).index(a) < list(got).index(s.name) for a in s.after)


def test_the_network_check_measures_the_pairs_the_services_use():
    # 6 regions, one link class: the classes alone measure 6 pairs, not every far region to the control plane
    base = trial({}, n=6)
    stretched = trial({"spec.openstack": {"shape": "stretched", "nova": NOVA}}, n=6)
    assert stretched.control_plane is not None
    have = {frozenset(p) for p in probe_pairs(stretched)}
    for a, b in stretched.control_plane.wan_pairs():
        assert frozenset((a, b)) in have, (a, b)
    missing = [pr for pr in stretched.control_plane.wan_pairs()
               if frozenset(pr) not in {frozenset(p) for p in probe_pairs(base)}]
    assert missing, "the case must need the service pairs"
    assert probe_pairs(trial({}, n=6)) == probe_pairs(base)  # Keystone alone: as before


@pytest.mark.parametrize(("changes", "field", "words"), [
    ({"spec.openstack": {"shape": "stretched", "controlRegion": "tokyo", "nova": NOVA}}, "spec.openstack.controlRegion",
     "unknown region 'tokyo'"),
    ({"spec.openstack": {"shape": "stretched", "nova": NOVA, "messaging": {"region": "tokyo"}}},
     "spec.openstack.messaging.region", "unknown region 'tokyo'"),
    ({"spec.openstack": {"nova": {**NOVA, "computeRegions": ["paris", "tokyo"]}}},
     "spec.openstack.nova.computeRegions[1]", "unknown region 'tokyo'"),
    ({"spec.openstack": {"nova": {**NOVA, "computeRegions": ["paris", "paris"]}}},
     "spec.openstack.nova.computeRegions", "listed twice"),
])
def test_unknown_places_are_refused(changes: dict[str, Any], field: str, words: str):
    lines = refused(changes)
    assert len(lines) == 1 and f"{field}: " in lines[0] and words in lines[0], lines


def test_computes_are_bounded_per_trial():
    lines = refused({"spec.openstack": {"nova": {"enabled": True, "computes": 500}}}, n=5)
    assert len(lines) == 1 and "spec.openstack.nova.computes: " in lines[0] and "2,500" in lines[0]
    assert "more than 2,000 in a trial" in lines[0]
    p = trial({"spec.openstack": {"nova": {"enabled": True, "computes": 500, "computeRegions": ["r1", "r2"]}}}, n=5)
    assert p.control_plane is not None and p.control_plane.count("r1", "nova-compute") == 500


def test_compute_hosts_are_unique_names():
    hosts = ctl.compute_hosts("rennes", 500) + ctl.compute_hosts("paris", 500)
    assert len(set(hosts)) == 1000 and hosts[0] == "rennes-c001" and hosts[499] == "rennes-c500"


def test_a_stretched_planes_other_regions_copy_its_catalog_entries_under_their_own_name():
    """The runner of a region a stretched plane serves from afar finds the plane's services under its own region
    (the lab registers them so; openstack-helm's ks-endpoints under the plane's region only): the plan names what
    to copy from where; a plane's own region, and every region of shape ``regions``, copies nothing."""
    from wanwide.core.plan.runner import catalog_copy

    p = trial({"spec.openstack": {"shape": "stretched", "controlRegion": "rennes", "nova": NOVA,
                                  "neutron": {"enabled": True}}})
    assert catalog_copy(p, "rennes") is None
    for r in ("paris", "chicago"):
        assert catalog_copy(p, r) == {"source": "rennes", "types": ["compute", "placement", "image", "network"]}
    assert all(catalog_copy(trial({"spec.openstack": {"shape": "regions", "nova": NOVA}}), r) is None for r in REGIONS)
    assert all(catalog_copy(trial({}), r) is None for r in REGIONS)  # Keystone alone: nothing to copy
