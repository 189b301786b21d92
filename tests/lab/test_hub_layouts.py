"""The lab's WAN through hubs (issue 26 item 1): every pair gets its requested RTT through a star or a
two-level layout, an override pair keeps its own link, faults through a hub cut or thin exactly the pairs
they name, a new trial re-shapes the hub links, and nothing is left behind (real namespaces, wirefilter
here)."""

from __future__ import annotations

import pytest

from tests.lab.test_network import tolerance
from wanwide.core.plan.links import OneWay
from wanwide.providers.lab import netns

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("need_net")]

REGIONS = [f"r{i}" for i in range(1, 7)]
GROUP = {r: "eu" if i < 3 else "us" for i, r in enumerate(REGIONS)}


def _links(intra: float, inter: float, override: float | None = None) -> dict:
    links = {(a, b): OneWay(intra / 2 if GROUP[a] == GROUP[b] else inter / 2)
             for a in REGIONS for b in REGIONS if a != b}
    if override is not None:  # r1-r4: a per-pair override, on a link of its own
        links[("r1", "r4")] = links[("r4", "r1")] = OneWay(override / 2)
    return links


def _floor(net: netns.Network, a: str, b: str, samples: int = 7) -> float:
    """The lowest of a pair's RTT samples: its path's delay (see _rtts); nan when none came back."""
    seen = net.measure_rtt(a, b, samples=samples)
    return min(seen) if seen else float("nan")


def _rtts(net: netns.Network, links: dict) -> dict:
    """Every ordered pair's RTT floor against its request. The floor of a pair's samples is its path's
    delay (the user-space shaper and the machine's steal time only ever add to a sample): hops that give a
    pair the wrong delay move the floor, a busy moment moves the median (CI, 2026-11-28: two pairs'
    medians 2.6-3.4 ms over 40 ms twice, their lowest samples 1.1 and 1.2 ms over). The shaper's own
    precision is test_network's."""
    bad, got = {}, {}
    for a in REGIONS:
        for b in REGIONS:
            if a == b:
                continue
            want = links[(a, b)].delay_ms + links[(b, a)].delay_ms
            seen = [net.measure_rtt(a, b, samples=7)]
            if not seen[0] or abs(min(seen[0]) - want) > tolerance(want):  # once more, as the lifecycle does
                seen.append(net.measure_rtt(a, b, samples=7))
            floor = min(seen[-1]) if seen[-1] else float("nan")
            got[(a, b)] = floor
            if not abs(floor - want) <= tolerance(want):
                bad[(a, b)] = (want, seen)
    return {"got": got, "bad": bad}


@pytest.fixture
def two_level(leftovers):
    links = _links(40, 200, override=60)
    net = netns.build(REGIONS, links, layout="auto", group_of=GROUP, shapeable=True)
    yield net, links
    tag = net.tag
    net.destroy()
    assert leftovers(tag) == []


@pytest.mark.timeout(600)
def test_two_level_gives_every_pair_its_rtt_and_reshapes(two_level) -> None:
    net, links = two_level
    d = net.describe()
    # 6 spokes + 2 group uplinks + the override's own link, not 15 links
    assert d["layout"] == "two-level" and d["hubs"] == ["_hub-eu", "_hub-us", "_hub"]
    assert len(net.edges) == 8 and list(net.pairs) == [("r1", "r4")]
    r = _rtts(net, links)
    assert r["bad"] == {}, r["bad"]
    print({f"{a}->{b}": round(v, 1) for (a, b), v in r["got"].items()})
    # a cut through the hubs: r2 from r5 both ways, nothing else
    for pair in (("r2", "r5"), ("r5", "r2")):
        net.set_link(*pair, OneWay(100, loss_pct=100))
    assert net.measure_rtt("r2", "r5", samples=3, timeout=0.5) == []
    assert net.measure_rtt("r5", "r2", samples=3, timeout=0.5) == []
    assert len(net.measure_rtt("r2", "r6", samples=3)) == 3 and len(net.measure_rtt("r1", "r5", samples=3)) == 3
    for pair in (("r2", "r5"), ("r5", "r2")):
        net.set_link(*pair, OneWay(100))
    assert len(net.measure_rtt("r2", "r5", samples=3)) == 3 and net.drops == {}
    # the next trial: 60 ms within groups, 300 ms between them, the override at 100 ms
    new = _links(60, 300, override=100)
    net.reshape(new)
    r = _rtts(net, new)
    assert r["bad"] == {}, r["bad"]


@pytest.mark.timeout(300)
def test_loss_through_a_hub_is_the_pairs_loss_exactly(leftovers) -> None:
    """A loss window on one pair through the star's hub: ~20 % of that pair's pings lost, none of another's."""
    links = {(a, b): OneWay(20) for a in REGIONS[:4] for b in REGIONS[:4] if a != b}
    net = netns.build(REGIONS[:4], links, layout="star", shapeable=True)
    try:
        assert net.describe()["layout"] == "star" and len(net.edges) == 4 and not net.pairs
        net.set_link("r1", "r2", OneWay(20, loss_pct=20))
        n = 300
        lost = 1 - len(net.measure_rtt("r1", "r2", samples=n, method="ping", interval=0.01, timeout=1)) / n
        other = 1 - len(net.measure_rtt("r1", "r3", samples=100, method="ping", interval=0.01, timeout=1)) / 100
        assert 0.12 <= lost <= 0.29, lost
        assert other <= 0.02, other
        # another pair's delay is untouched (its floor: CI, 2026-11-28, a median of 5 was 43.8 ms, busy)
        assert _floor(net, "r3", "r4") == pytest.approx(40, abs=tolerance(40))
    finally:
        tag = net.tag
        net.destroy()
    assert leftovers(tag) == []


def test_a_delay_change_through_a_hub_is_refused_naming_reshape(leftovers) -> None:
    links = {(a, b): OneWay(20) for a in REGIONS[:3] for b in REGIONS[:3] if a != b}
    net = netns.build(REGIONS[:3], links, layout="star", shapeable=True)
    try:
        with pytest.raises(netns.LabError, match="only its loss can change.*reshape"):
            net.set_link("r1", "r2", OneWay(50))
    finally:
        tag = net.tag
        net.destroy()
    assert leftovers(tag) == []


@pytest.mark.timeout(300)
@pytest.mark.parametrize("layout", ["mesh", "star"])
def test_services_start_on_an_unconstrained_wan_then_every_pair_has_its_rtt_back(layout, leftovers) -> None:
    """A new deployment's services start with every link unshaped, as the studies' harness deployed before
    it constrained (44 Galera members joining at 300 ms RTT did not reach a primary view at 45 regions),
    and every pair is shaped as asked after, also when the deployment fails inside."""
    regions = REGIONS[:3]
    links = {(a, b): OneWay(50) for a in regions for b in regions if a != b}
    net = netns.build(regions, links, layout=layout, shapeable=True)
    try:
        assert net.describe()["layout"] == layout
        with net.unconstrained():
            assert _floor(net, "r1", "r3") < 5 and _floor(net, "r2", "r1") < 5
            assert net.links == links  # what the trial asked for is not forgotten
        for a, b in (("r1", "r3"), ("r2", "r1")):
            assert _floor(net, a, b) == pytest.approx(100, abs=tolerance(100))
        with pytest.raises(RuntimeError, match="a service did not come up"), net.unconstrained():
            raise RuntimeError("a service did not come up")
        assert _floor(net, "r3", "r2") == pytest.approx(100, abs=tolerance(100))
    finally:
        tag = net.tag
        net.destroy()
    assert leftovers(tag) == []
