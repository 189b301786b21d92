"""The lab's OpenStack files (providers/lab/openstack.py) for a 3-region Benchmark with Nova in each shape, rendered
in full against a golden file; and what each must hold whatever the rendering.

Regenerate on purpose with ``UPDATE_GOLDEN=1 pytest tests/test_lab_openstack_config.py`` and review the diff.
"""

from __future__ import annotations

import configparser
import os
import re
from pathlib import Path

import pytest
import yaml

from tests.plan.specs import benchmark
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import TrialPlan, plan
from wanwide.providers.lab import openstack as ost
from wanwide.providers.lab.services import render_ini

GOLDEN = Path(__file__).parent / "golden"
SHAPES = {
    "regions": {"nova": {"enabled": True, "computes": 2}, "neutron": {"enabled": True}},
    "stretched": {"shape": "stretched", "nova": {"enabled": True, "computes": 2}, "neutron": {"enabled": True}},
}


def _plan(shape: str) -> TrialPlan:
    spec = benchmark("mariadb", "uniform")
    spec["spec"]["openstack"] = SHAPES[shape]
    spec["spec"]["workload"] = {"load": "light", "scenarios": [{"name": "NovaServers.boot_and_delete_server"}]}
    docs = load_documents([yaml.safe_dump(spec)])
    b = docs.benchmarks[0]
    return plan(b, docs.topology_for(b))[0]


def _address(names: list[str], region: str) -> str:
    return f"10.77.{1 + names.index(region)}.1"


def render(shape: str) -> str:
    """Every file the lab writes for the trial's control planes, as :mod:`cloud` would, at fixed addresses."""
    p = _plan(shape)
    cp = p.control_plane
    names = p.region_names
    run = Path("/var/tmp/run")
    out = []

    def where(plane, region: str) -> ost.Where:
        return ost.Where(region, _address(names, region), f"http://{_address(names, region)}:5000",
                         ost.transport_url(_address(names, plane.where["messaging"])),
                         (f"{_address(names, region)}:11211",))

    for plane in cp.planes:
        def conn(service: str, i: int = 0, plane=plane) -> str:
            at = plane.databases[service]
            port = ost.PORTS["openstack-db"] if at.place == "local" else 3306
            return ost.connection(ost.DB_USER[service], ost.DB_PASSWORD, _address(names, at.region), port,
                                  at.schemas[i])

        r = plane.where["nova"]
        d = run / f"{r}-nova"
        out.append((f"{plane.name}/rabbitmq.conf", ost.rabbitmq_conf(_address(names, plane.where["messaging"]))))
        out.append((f"{plane.name}/placement.conf", render_ini(ost.placement_conf(where(plane, r), conn("placement")))))
        out.append((f"{plane.name}/glance-api.conf",
                    render_ini(ost.glance_conf(where(plane, r), conn("glance"), run / f"{r}-glance"))))
        out.append((f"{plane.name}/neutron.conf",
                    render_ini(ost.neutron_conf(where(plane, r), conn("neutron"), run / f"{r}-neutron"))))
        out.append((f"{plane.name}/nova.conf", render_ini(ost.nova_conf(
            cp.nova_sections, where(plane, r), d, databases=(conn("nova", 0), conn("nova", 2)),
            workers={"conductor": 1, "scheduler": 1}))))
        out.append((f"{plane.name}/control.conf", render_ini(ost.control_conf(plane.name))))
        for c in sorted(plane.computes):
            out.append((f"{plane.name}/compute-{c}/nova.conf", render_ini(ost.nova_conf(
                cp.nova_sections, where(plane, c), run / f"{c}-nova-compute-{plane.name}", databases=None))))
        for service in ("nova", "placement", "glance", "neutron"):
            rows = ost.catalog(service, _address(names, plane.where[service]), plane.regions)
            out.append((f"{plane.name}/catalog-{service}", "".join(" ".join(row) + "\n" for row in rows)))
    for service in ("nova", "placement", "glance", "neutron"):
        out.append((f"wanwide_{service}_wsgi.py", ost.wsgi_module(service)))
    return "".join(f"# ---- {name}\n{text}" for name, text in out)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_golden(shape: str) -> None:
    text = render(shape)
    path = GOLDEN / f"lab-openstack-{shape}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"the lab's OpenStack files changed: review, then UPDATE_GOLDEN=1 ({path})"


def _ini(text: str) -> configparser.ConfigParser:
    c = configparser.ConfigParser(interpolation=None)
    c.read_string(text)
    return c


def test_a_compute_reaches_its_planes_bus_its_own_keystone_and_no_database() -> None:
    p = _plan("stretched")
    cp = p.control_plane
    (plane,) = cp.planes
    w = ost.Where("r3", "10.77.3.1", "http://10.77.3.1:5000", ost.transport_url("10.77.1.1"))
    c = _ini(render_ini(ost.nova_conf(cp.nova_sections, w, Path("/x"), databases=None)))
    assert c["DEFAULT"]["transport_url"] == "rabbit://openstack:wanwide-bus@10.77.1.1:5672/"
    assert c["DEFAULT"]["compute_driver"] == "fake.FakeDriver"
    assert c["keystone_authtoken"]["auth_url"] == "http://10.77.3.1:5000/v3"
    assert c["keystone_authtoken"]["region_name"] == "r3"  # its own region's identity endpoint, not any
    assert c["placement"]["region_name"] == c["neutron"]["region_name"] == c["glance"]["region_name"] == "r3"
    assert not c.has_section("database") and not c.has_section("api_database")
    assert c["service_user"]["send_service_user_token"] == "true"
    own = _ini(render_ini(ost.compute_conf("r3-c001", Path("/x/r3-c001"))))
    assert own["DEFAULT"]["host"] == "r3-c001" and own["DEFAULT"]["state_path"] == "/x/r3-c001"


def test_a_stretched_plane_is_in_every_regions_catalog_and_a_regions_plane_in_its_own() -> None:
    (plane,) = _plan("stretched").control_plane.planes
    rows = ost.catalog("nova", "10.77.1.1", plane.regions)
    assert {r for _, r, _, _ in rows} == {"r1", "r2", "r3"}
    assert {u for *_, u in rows} == {"http://10.77.1.1:8774/v2.1"}
    assert len(rows) == 9  # public, internal, admin in each
    planes = _plan("regions").control_plane.planes
    assert [pl.regions for pl in planes] == [("r1",), ("r2",), ("r3",)]
    assert {r for _, r, _, _ in ost.catalog("glance", "10.77.2.1", planes[1].regions)} == {"r2"}


def test_the_wsgi_modules_reset_argv_before_the_application_loads() -> None:
    for service in ost.WSGI_APPS:
        text = ost.wsgi_module(service)
        assert text.index("sys.argv = sys.argv[:1]") < text.index(f"from {ost.WSGI_APPS[service]} import application")
        compile(text, f"wanwide_{service}_wsgi.py", "exec")
    assert "orm.configure_mappers()" in ost.wsgi_module("neutron")


@pytest.mark.parametrize("shape", ["stretched", "regions"])
def test_every_service_validates_tokens_in_its_own_region(shape: str) -> None:
    """Every [keystone_authtoken] names its region: the catalog lists every region's identity endpoint, and one
    left to choose validated r1's tokens at r2's Keystone across the WAN (a hung nova-api under loss)."""
    text = render(shape)
    sections = re.findall(r"\[keystone_authtoken\]\n(.*?)(?:\n\[|\Z)", text, re.S)
    assert len(sections) >= 4, text[:2000]
    for s in sections:
        auth = re.search(r"^auth_url = http://10\.77\.(\d+)\.1:5000/v3$", s, re.M)
        region = re.search(r"^region_name = r(\d+)$", s, re.M)
        assert auth and region and auth[1] == region[1], s
