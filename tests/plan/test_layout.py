"""The lab's WAN layouts give every pair exactly the shaping asked, with far fewer links than a mesh."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from wanwide.core.plan.layout import _same, plan_layout
from wanwide.core.plan.links import OneWay


def _regions(n: int) -> list[str]:
    return [f"r{i + 1}" for i in range(n)]


def _uniform(regions: list[str], ow: OneWay) -> dict:
    return {(a, b): ow for a, b in itertools.permutations(regions, 2)}


def _exact(lay, links) -> None:
    for (a, b), want in links.items():
        got = lay.effective(a, b)
        assert _same(got, want), (a, b, got, want, lay.path(a, b))


def test_45_uniform_regions_are_45_spokes_not_990_links():
    rs = _regions(45)
    links = _uniform(rs, OneWay(delay_ms=75.0, loss_pct=1.0))
    lay = plan_layout(links, rs)
    assert lay.kind == "star" and len(lay.edges) == 45 and lay.hubs == ["_hub"]
    assert len(plan_layout(links, rs, prefer="mesh").edges) == 990
    _exact(lay, links)


def test_two_levels_are_one_hub_per_group_and_a_core():
    rs = _regions(45)
    group_of = {r: f"g{i // 9}" for i, r in enumerate(rs)}
    links = {(a, b): OneWay(delay_ms=10.0) if group_of[a] == group_of[b] else OneWay(delay_ms=75.0, loss_pct=0.5)
             for a, b in itertools.permutations(rs, 2)}
    lay = plan_layout(links, rs, group_of)
    assert lay.kind == "two-level" and len(lay.edges) == 45 + 5
    _exact(lay, links)


def test_per_pair_overrides_get_their_own_link_and_stay_exact():
    rs = _regions(9)
    links = _uniform(rs, OneWay(delay_ms=50.0))
    links[("r1", "r7")] = OneWay(delay_ms=120.0, jitter_ms=2.0)
    links[("r7", "r1")] = OneWay(delay_ms=120.0, jitter_ms=2.0)
    links[("r2", "r3")] = OneWay(delay_ms=5.0, loss_pct=3.0)  # one way only
    lay = plan_layout(links, rs)
    assert lay.kind == "star" and lay.direct == {frozenset(("r1", "r7")), frozenset(("r2", "r3"))}
    assert len(lay.edges) == 9 + 2
    _exact(lay, links)


def test_jitter_or_rate_on_the_common_class_keeps_the_mesh():
    rs = _regions(5)
    for ow in (OneWay(delay_ms=50.0, jitter_ms=5.0), OneWay(delay_ms=50.0, rate_mbit=100.0)):
        lay = plan_layout(_uniform(rs, ow), rs)
        assert lay.kind == "mesh" and len(lay.edges) == 10


@settings(max_examples=60, deadline=None)
@given(n=st.integers(3, 12), delay=st.floats(0, 200), loss=st.floats(0, 20),
       overrides=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11), st.floats(0, 300), st.floats(0, 50)),
                          max_size=6))
def test_any_uniform_wan_with_overrides_is_exact(n, delay, loss, overrides):
    rs = _regions(n)
    links = _uniform(rs, OneWay(delay_ms=delay, loss_pct=loss))
    for i, j, d, p in overrides:
        if i < n and j < n and i != j:
            links[(rs[i], rs[j])] = OneWay(delay_ms=d, loss_pct=p)
    lay = plan_layout(links, rs)
    _exact(lay, links)
    assert len(lay.edges) <= n * (n - 1) // 2


def test_the_lab_wires_hubs_only_where_the_extra_hop_fits_the_tolerance():
    """auto: a 9-region WAN at 100 ms goes through a star; at 20 ms it stays a mesh (two shaped hops each way
    add more than max(1 ms, 5 %) there); a deployment whose trials need other hubs is a mesh."""
    from tests.plan.specs import benchmark
    from wanwide.core.api.benchmark import Benchmark
    from wanwide.core.api.topology import TopologySpec
    from wanwide.core.plan.trial import plan
    from wanwide.providers.lab.layout import group_layout

    def trials(rtts: list[str]):
        b = benchmark("mariadb", "uniform", faults={}, matrix={"rtt": rtts})
        b["spec"].pop("topology")
        b["spec"]["topologyRef"] = "t"
        return plan(Benchmark.model_validate(b), TopologySpec.model_validate(
            {"generate": {"count": 9}, "network": {"default": {"rtt": "100ms"}}}))

    assert group_layout(trials(["100ms"]), "auto") == "star"
    assert group_layout(trials(["0ms", "300ms"]), "auto") == "star"  # the same star, re-shaped
    assert group_layout(trials(["20ms"]), "auto") == "mesh"
    assert group_layout(trials(["100ms", "20ms"]), "auto") == "mesh"
    assert group_layout(trials(["20ms"]), "star") == "star"  # asked for: as asked


def test_every_trial_gets_its_own_deployments_layout_in_a_campaign() -> None:
    """Two Benchmarks with the same trial ids (a campaign), 3 regions (a mesh) and 9 at 100 ms (a star):
    each trial gets its own group's layout, also one that is not its group's first (a resumed run deploys
    for the first trial not yet complete)."""
    from tests.plan.specs import benchmark
    from wanwide.core.api.benchmark import Benchmark
    from wanwide.core.api.topology import TopologySpec
    from wanwide.core.lifecycle import deployments
    from wanwide.core.plan.trial import plan
    from wanwide.providers.lab.layout import trial_layouts

    def trials(name: str, count: int) -> list:
        b = benchmark("mariadb", "uniform", faults={}, matrix={"rtt": ["100ms", "300ms"]})
        b["metadata"]["name"] = name
        b["spec"].pop("topology")
        b["spec"]["topologyRef"] = "t"
        return plan(Benchmark.model_validate(b), TopologySpec.model_validate({"generate": {"count": count}}))

    small, big = trials("small", 3), trials("big", 9)
    assert [p.id for p in small] == [p.id for p in big]  # the same ids
    groups = deployments(small + big)
    got = trial_layouts(groups, "auto")
    assert {k: v for k, v in got.items() if k[0] == "small"} == {("small", p.id): "mesh" for p in small}
    assert {k: v for k, v in got.items() if k[0] == "big"} == {("big", p.id): "star" for p in big}
    assert trial_layouts(groups, "mesh") == {(p.benchmark, p.id): "mesh" for p in small + big}
