"""Where light load runs, as a swept parameter: beside the database (its region) or in a far one."""

from __future__ import annotations

import pytest

from tests.plan.specs import benchmark
from wanwide.core.api.benchmark import Benchmark
from wanwide.core.api.topology import TopologySpec
from wanwide.core.plan.errors import PlanError
from wanwide.core.plan.trial import plan


def _plans(load: str = "light", **matrix):
    b = benchmark("mariadb", "uniform", matrix=matrix)
    b["spec"]["workload"]["load"] = load
    topo = b["spec"].pop("topology")
    b["spec"]["topologyRef"] = "t"
    return plan(Benchmark.model_validate(b), TopologySpec.model_validate(topo))


def test_each_trial_loads_the_region_its_point_names_and_records_it():
    ps = _plans(loadRegion=["r1", "r3"], rtt=["0ms", "100ms"])
    assert [(p.parameters["rtt"], p.parameters["loadRegion"], p.load_regions) for p in ps] == [
        ("0ms", "r1", ["r1"]), ("0ms", "r3", ["r3"]), ("100ms", "r1", ["r1"]), ("100ms", "r3", ["r3"])]
    assert all(p.primary_region == "r1" for p in ps)  # r1: beside the central MariaDB


def test_a_region_the_topology_lacks_or_high_load_is_refused_naming_the_field():
    with pytest.raises(PlanError, match=r"spec\.matrix\.loadRegion: unknown region 'r9'"):
        _plans(loadRegion=["r1", "r9"])
    with pytest.raises(PlanError, match=r"spec\.matrix\.loadRegion: where light load runs: with load high"):
        _plans(load="high", loadRegion=["r1"])
