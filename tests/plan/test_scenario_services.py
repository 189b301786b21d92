"""Which services a Rally scenario needs (core/api/scenarios.py), the plan refusing one whose services the
Benchmark does not deploy, and what the task of a Nova or Glance scenario carries (issue 45 items 1, 4)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.plan.hostile import at
from wanwide.core.api.scenarios import DEPLOYED, NOT_DEPLOYED, boots, needs, uploads
from wanwide.core.contracts import TINY_IMAGE_BYTES, TINY_IMAGE_FILE
from wanwide.core.plan.errors import PlanError
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.runner import shared_images, task, warmup_task
from wanwide.core.plan.trial import TrialPlan, plan
from wanwide.pipeline.runner.run import write_task
from wanwide.providers.lab.paths import rally_venv


def _plan(changes: dict[str, Any]) -> list[TrialPlan]:
    docs = load_documents([yaml.safe_dump(at(changes))])
    b = docs.benchmarks[0]
    return plan(b, docs.topology_for(b))


def refused(changes: dict[str, Any]) -> list[str]:
    with pytest.raises(PlanError) as e:
        _plan(changes)
    return [str(p) for p in e.value.problems]


BOOT = "NovaServers.boot_and_delete_server"
NOVA = {"nova": {"enabled": True}, "neutron": {"enabled": True}}


def test_what_scenarios_need():
    assert needs("get_entities") == needs("KeystoneBasic.create_and_list_users") == ()
    assert needs(BOOT) == ("nova", "neutron")
    assert needs("NovaFlavors.create_and_delete_flavor") == ("nova",)
    assert needs("GlanceImages.create_and_delete_image") == ("glance",)
    assert needs("NeutronNetworks.create_and_list_ports") == ("neutron",)
    assert needs("NovaServers.boot_server_from_volume") == ("nova", "neutron", "cinder")
    assert needs("Authenticate.validate_glance") == ("glance",)
    assert needs("Quotas.nova_update") == ("nova",)
    assert needs("Dummy.dummy") == ()  # unknown to wanwide: its own risk, as before


def test_a_nova_scenario_without_nova_names_the_field_and_the_scenario():
    lines = refused({"spec.workload.scenarios": [{"name": "get_entities"}, {"name": BOOT}]})
    assert lines == [f"Benchmark/hx: spec.workload.scenarios[1].name: {BOOT} needs Nova and Neutron: set "
                     "spec.openstack.nova.enabled: true; set spec.openstack.neutron.enabled: true"]
    lines = refused({"spec.workload.scenarios": [{"name": BOOT}], "spec.openstack": {"nova": {"enabled": True}}})
    assert lines == [f"Benchmark/hx: spec.workload.scenarios[0].name: {BOOT} needs Neutron: set "
                     "spec.openstack.neutron.enabled: true"]


def test_a_swept_scenario_names_its_place_in_the_matrix():
    lines = refused({"spec.matrix.scenario": ["get_entities", "GlanceImages.list_images"]})
    assert len(lines) == 1
    assert lines[0].startswith("Benchmark/hx: spec.matrix.scenario[1]: GlanceImages.list_images needs Glance: set "
                               "spec.openstack.glance.enabled: true (or enable Nova, which brings it)")


def test_a_service_wanwide_does_not_deploy_is_refused():
    lines = refused({"spec.workload.scenarios": [{"name": "CinderVolumes.create_and_delete_volume"}],
                     "spec.openstack": NOVA})
    assert len(lines) == 1 and "needs Cinder, which wanwide does not deploy" in lines[0]


def test_glance_alone_runs_glance_scenarios():
    p = _plan({"spec.workload.scenarios": [{"name": "GlanceImages.create_and_delete_image"}],
               "spec.openstack": {"glance": {"enabled": True}}})[0]
    sub = task(p, "paris")["subtasks"][0]
    assert sub["scenario"] == {"GlanceImages.create_and_delete_image": {
        "image_location": TINY_IMAGE_FILE, "container_format": "bare", "disk_format": "raw"}}


def test_a_boot_gets_its_flavor_and_image_named_for_its_region():
    p = _plan({"spec.workload": {"load": "high", "scenarios": [
        {"name": BOOT, "args": {"force_delete": True}}, {"name": "get_entities"}]}, "spec.openstack": NOVA})[0]
    for region in ("paris", "chicago"):
        boot, keystone = task(p, region)["subtasks"]
        assert boot["scenario"] == {BOOT: {"flavor": {"name": f"wanwide-tiny-{region}"},
                                           "image": {"name": f"wanwide-tiny-{region}"}, "force_delete": True}}
        assert boot["contexts"]["flavors"] == [{"name": f"wanwide-tiny-{region}", "ram": 64, "vcpus": 1, "disk": 1}]
        # one public image per region, made by its runner (Rally's images context names each tenant's copy alike:
        # more than one tenant made the name ambiguous and the workload stopped before its first iteration)
        assert "images" not in boot["contexts"] and shared_images(p, region) == [f"wanwide-tiny-{region}"]
        assert "nics" not in boot["scenario"][BOOT]  # no network: the projects have none (BOOTS_NEED_NEUTRON)
        assert keystone["contexts"] == {}
        warm = warmup_task(p, region)
        assert warm is not None and warm["subtasks"][0]["contexts"] == boot["contexts"]


def test_the_scenario_args_win():
    p = _plan({"spec.workload.scenarios": [{"name": "NovaServers.resize_server",
                                            "args": {"flavor": {"name": "m1.mine"}}}], "spec.openstack": NOVA})[0]
    args = task(p, "paris")["subtasks"][0]["scenario"]["NovaServers.resize_server"]
    assert args["flavor"] == {"name": "m1.mine"} and args["to_flavor"] == {"name": "wanwide-small-paris"}


def test_only_a_boot_asks_its_runner_for_the_shared_image():
    glance = _plan({"spec.workload.scenarios": [{"name": "GlanceImages.create_and_delete_image"}],
                    "spec.openstack": {"glance": {"enabled": True}}})[0]
    assert shared_images(glance, "paris") == [] and shared_images(_plan({})[0], "paris") == []


def test_the_runner_writes_the_tiny_image_beside_a_task_that_uploads_it(tmp_path: Path):
    p = _plan({"spec.workload.scenarios": [{"name": "GlanceImages.create_and_delete_image"}],
               "spec.openstack": {"glance": {"enabled": True}}})[0]
    write_task(task(p, "paris"), tmp_path / "task.json")
    assert (tmp_path / TINY_IMAGE_FILE).read_bytes() == bytes(TINY_IMAGE_BYTES)
    assert json.loads((tmp_path / "task.json").read_text()) == task(p, "paris")
    other = tmp_path / "keystone"
    other.mkdir()
    write_task(task(_plan({})[0], "paris"), other / "task.json")
    assert not (other / TINY_IMAGE_FILE).exists()


_DUMP = """
import inspect, json
from rally.common.plugin import discover
import rally_openstack  # noqa: F401
from rally.task import scenario
discover.import_modules_from_package("rally_openstack.task.scenarios")
out = {}
for p in scenario.Scenario.get_all():
    svcs = []
    for name, args, kw in p._meta_get("validators", []):
        if name == "required_services":
            s = kw.get("services", [])
            svcs += [s] if isinstance(s, str) else [str(x) for x in s]
    params = [k for k in inspect.signature(p.run).parameters if k not in ("self", "kwargs")]
    out[p.get_name()] = {"services": svcs, "params": params}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def rally_scenarios() -> dict[str, Any]:
    py = rally_venv() / "bin" / "python"
    if not py.exists():
        pytest.skip(f"rally-openstack is not installed ({py}): hack/install-lab.sh installs it")
    out = subprocess.run([str(py), "-c", _DUMP], capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout)


def test_needs_covers_what_rally_openstack_requires(rally_scenarios: dict[str, Any]):
    """Every scenario of the installed rally-openstack: every service it declares it requires
    (required_services) is one wanwide deploys or knows it does not; one needing a service wanwide does not
    deploy is refused for one of them; for the others, what it requires is among what wanwide says it needs."""
    assert len(rally_scenarios) > 200
    refused = 0
    for name, got in rally_scenarios.items():
        required = {s for s in got["services"] if s != "keystone"}
        assert required <= set(DEPLOYED) | set(NOT_DEPLOYED), (name, required)
        if required & set(NOT_DEPLOYED):
            assert set(needs(name)) & set(NOT_DEPLOYED), (name, required, needs(name))
            refused += 1
        elif set(needs(name)) & set(NOT_DEPLOYED):  # refused for what Rally does not declare (Elasticsearch's logs)
            refused += 1
        else:
            assert required <= set(needs(name)), (name, required, needs(name))
    assert 0 < refused < len(rally_scenarios)


def test_the_arguments_wanwide_fills_are_the_scenarios_own(rally_scenarios: dict[str, Any]):
    booting = [n for n in rally_scenarios if boots(n)]
    uploading = [n for n in rally_scenarios if uploads(n)]
    assert "NovaServers.boot_and_delete_server" in booting and len(booting) > 20
    assert "GlanceImages.create_and_delete_image" in uploading
    for n in booting:
        params = rally_scenarios[n]["params"]
        assert "flavor" in params and ("image" in params or {"from_image", "to_image"} <= set(params)), n
        if "resize" in n:
            assert "to_flavor" in params, n
    for n in uploading:
        assert {"image_location", "container_format", "disk_format"} <= set(rally_scenarios[n]["params"]), n


def test_the_admission_rules_say_what_needs_says(rally_scenarios: dict[str, Any]):
    """The API server's rules (core/api/scenarios.py ADMISSION_PATTERNS, the same patterns in CEL) name, for every
    scenario of rally-openstack and of wanwide's own tables, exactly the Nova, Neutron and Glance the planner's
    ``needs`` names: never more (the API server would refuse what the planner plans), never fewer."""
    from wanwide.core.api.scenarios import _GROUPS, _NAMES, CHECKED_AT_ADMISSION, needs_at_admission
    names = set(rally_scenarios) | set(_NAMES) | {f"{g}.x" for g in _GROUPS} | {"get_entities", "Dummy.boot_it"}
    wrong = [(n, sorted(needs_at_admission(n)), needs(n)) for n in sorted(names)
             if needs_at_admission(n) != set(needs(n)) & set(CHECKED_AT_ADMISSION)]
    assert not wrong, wrong
    assert needs_at_admission("NovaServers.list_servers") == {"nova"}
    assert needs_at_admission("NovaServers.snapshot_server") == {"nova", "neutron", "glance"}
