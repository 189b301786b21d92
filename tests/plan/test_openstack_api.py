"""spec.openstack beyond Keystone (issue 45): defaults that leave every Benchmark as it was, Nova's needs,
the shapes' fields, bounds; each refusal one line naming the field, as ``wanwide plan`` prints it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.plan.hostile import at
from wanwide.cli import plan_stream
from wanwide.core.api.benchmark import BenchmarkSpec
from wanwide.core.api.openstack import OpenStack
from wanwide.core.plan.errors import PlanError
from wanwide.crds import crds


def problems(changes: dict[str, Any]) -> list[str]:
    """The lines ``wanwide plan`` refuses the hostile corpus's base Benchmark with, ``changes`` applied."""
    try:
        plan_stream([yaml.safe_dump(at(changes))], 0, False, False)
    except PlanError as e:
        return [str(p) for p in e.problems]
    return []


def test_nothing_is_enabled_by_default():
    os_ = BenchmarkSpec.model_validate({"topology": {"generate": {"count": 3}},
                                        "workload": {"scenarios": [{"name": "get_entities"}]}}).openstack
    assert os_.shape == "regions"
    assert [s for s in ("nova", "placement", "glance", "messaging", "neutron") if os_.enabled(s)] == []
    assert os_.nova.computes == 1 and os_.nova.chart == "nova" and os_.nova.chart_version == "2026.1.0"
    assert (os_.placement.chart, os_.glance.chart, os_.messaging.chart, os_.neutron.chart) == (
        "placement", "glance", "rabbitmq", "neutron")


def test_nova_brings_placement_glance_and_the_bus():
    os_ = OpenStack.model_validate({"nova": {"enabled": True}})
    assert [s for s in ("nova", "placement", "glance", "messaging", "neutron") if os_.enabled(s)] == [
        "nova", "placement", "glance", "messaging"]
    # neutron brings the bus alone; glance may run without nova
    os_ = OpenStack.model_validate({"neutron": {"enabled": True}, "glance": {"enabled": True}})
    assert [s for s in ("nova", "placement", "glance", "messaging", "neutron") if os_.enabled(s)] == [
        "glance", "messaging", "neutron"]


@pytest.mark.parametrize(("service", "why"), [("placement", "Nova needs Placement"),
                                               ("glance", "Nova needs Glance"),
                                               ("messaging", "Nova needs the message bus")])
def test_switching_off_what_nova_needs_is_one_line_naming_the_field(service: str, why: str):
    lines = problems({"spec.openstack": {"nova": {"enabled": True}, service: {"enabled": False}}})
    assert len(lines) == 1, lines
    assert f"spec.openstack.{service}.enabled: {why}" in lines[0]
    assert "set spec.openstack.nova.enabled false" in lines[0]


def test_neutron_needs_the_bus():
    lines = problems({"spec.openstack": {"neutron": {"enabled": True}, "messaging": {"enabled": False}}})
    assert len(lines) == 1 and "spec.openstack.messaging.enabled: Neutron needs the message bus" in lines[0]


@pytest.mark.parametrize(("changes", "field", "words"), [
    ({"spec.openstack.nova": {"enabled": True, "computes": 501}}, "spec.openstack.nova.computes", "500 or less"),
    ({"spec.openstack.nova": {"enabled": True, "computes": -1}}, "spec.openstack.nova.computes", "0 or more"),
    ({"spec.openstack.nova": {"enabled": True, "api": {"replicas": 11}}}, "spec.openstack.nova.api.replicas",
     "10 or less"),
    ({"spec.openstack.messaging": {"replicas": 4}}, "spec.openstack.messaging.replicas", "3 or less"),
    ({"spec.openstack.messaging": {"fileDescriptors": 10}}, "spec.openstack.messaging.fileDescriptors", "64 or more"),
    ({"spec.openstack.messaging": {"backend": "kafka"}}, "spec.openstack.messaging.backend", "rabbitmq"),
    ({"spec.openstack.shape": "ring"}, "spec.openstack.shape", "'regions' or 'stretched'"),
    ({"spec.openstack.controlRegion": "paris"}, "spec.openstack.controlRegion", "only applies to shape stretched"),
    ({"spec.openstack.glance": {"region": "paris"}}, "spec.openstack.glance.region", "only applies to shape stretched"),
    ({"spec.openstack.nova": {"enabled": "yes"}}, "spec.openstack.nova.enabled", "write true or false"),
    ({"spec.openstack.placement": {"chartRepo": ""}}, "spec.openstack.placement.chart", "needs chartRepo"),
    ({"spec.openstack.neutron": {"chart": "--post-renderer=/bin/sh"}}, "spec.openstack.neutron.chart",
     "never starting with '-'"),
    ({"spec.openstack.nova": {"images": {"novaCompute": "a b"}}}, "spec.openstack.nova.images.novaCompute",
     "image reference"),
    ({"spec.openstack.nova": {"values": {f"k{i}": i for i in range(101)}}}, "spec.openstack.nova.values",
     "more than 100"),
    ({"spec.openstack.nova": {"hypervisor": "kvm"}}, "spec.openstack.nova.hypervisor", "unknown field"),
])
def test_bad_fields_are_one_line_each(changes: dict[str, Any], field: str, words: str):
    lines = problems(changes)
    assert len(lines) == 1, lines
    assert f"{field}: " in lines[0] and words in lines[0], lines[0]


def test_the_crd_says_the_same_rules():
    bench = next(c for c in crds() if c["spec"]["names"]["kind"] == "Benchmark")
    node = bench["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["openstack"]
    messages = [r["message"] for r in node["x-kubernetes-validations"]]
    assert any(m.startswith("Nova needs Placement") for m in messages)
    assert any(m.startswith("controlRegion only applies to shape stretched") for m in messages)
    props = node["properties"]
    assert props["nova"]["properties"]["computes"]["maximum"] == 500
    assert props["shape"]["enum"] == ["regions", "stretched"]
    for svc in ("nova", "placement", "glance", "messaging", "neutron"):
        assert props[svc]["properties"]["chartVersion"]["default"] == "2026.1.0"
        assert props[svc]["properties"]["values"]["maxProperties"] == 100
        assert {r["fieldPath"] for r in props[svc]["x-kubernetes-validations"]} == {".chartRepo", ".chart"}
